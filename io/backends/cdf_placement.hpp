// SPDX-License-Identifier: MIT
// PnetCDF parses and writes NetCDF classic headers; a backend that moves
// the variable's bytes itself (twophase) asks it where they are. CDF data
// are big-endian, and a fixed-size variable, or one record of a 4D record
// variable, is one contiguous [z][y][x] block at `offset`.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "volseg/io/comm.hpp"
#include "volseg/io/hints.hpp"
#include "volseg/io/selection.hpp"
#include "volseg/io/volume.hpp"

namespace volseg::io {

struct CdfPlacement {
  std::string data_path;  // a writer's temporary file until close() renames it
  std::uint64_t offset = 0;
};

// The hints PnetCDF's reader and writer read, with their roles.
std::vector<KnownHint> cdf_hints();

// Collective. The PnetCDF reader and writer, which keep the header (and, for
// the writer, the temporary-name protocol and the final rename in close()).
std::unique_ptr<VolumeReader> open_cdf_placed(const OpenRequest& request, const Comm& comm, const Hints& hints,
                                              CdfPlacement& placement);
std::unique_ptr<VolumeWriter> create_cdf_placed(const CreateRequest& request, const Comm& comm, const Hints& hints,
                                                CdfPlacement& placement);

}  // namespace volseg::io
