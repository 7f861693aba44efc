// SPDX-License-Identifier: MIT
// The zarr backend's writer (zarr_writer.cpp): Zarr v2 arrays and OME-Zarr
// images, each rank writing its own chunks.
#pragma once

#include <memory>

#include "volseg/io/comm.hpp"
#include "volseg/io/hints.hpp"
#include "volseg/io/volume.hpp"

namespace volseg::io::zarr {

// Collective. The writer a request and the hints ask for (compressor=,
// level=, shuffle=, chunks=, dimension_separator=, fsync=, ome=, append=); refused
// before anything is written when chunks would have two writers.
std::unique_ptr<VolumeWriter> create_writer(const CreateRequest& request, const Comm& comm, const Hints& hints);

}  // namespace volseg::io::zarr
