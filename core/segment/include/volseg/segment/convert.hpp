// SPDX-License-Identifier: MIT
// `volseg convert IN OUT`: a volume copied from any format volseg reads into
// any it writes, bricked and parallel like segment: each rank reads its
// bricks with the input's backend and writes them with the output's, one
// brick in memory at a time. Values are copied as stored (type, byte order,
// spacing, origin, NetCDF attributes and packing where the output holds them).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "volseg/io/comm.hpp"
#include "volseg/io/selection.hpp"
#include "volseg/io/types.hpp"
#include "volseg/segment/progress.hpp"

namespace volseg::segment {

struct ConvertOptions {
  std::string input, output;
  std::string format;  // --format: raw | cdf2 | cdf5 | netcdf4 | zarr | ome-zarr (default: by extension)
  std::string backend = "auto", output_backend;
  io::Selection selection;  // which volume of input: --var, --time, --glob, --expr
  std::vector<std::string> hints, input_hints, output_hints;
  std::optional<io::Index3> brick_shape;
  bool force = false;
  ProgressMode progress = ProgressMode::automatic;
  std::string command_line;  // the output's history
};

struct ConvertResult {
  std::string backend, output_backend, output_format;
  io::VolumeInfo info;  // the output's
  io::Index3 brick_shape{};
  std::int64_t bricks = 0;
  double seconds = 0;
  std::vector<std::string> dropped;  // what the output's format could not keep (said on stderr)
};

// Collective. Throws volseg::Error (one line) on bad input or a failure on any rank; no output is left then.
ConvertResult run_convert(const Comm& comm, const ConvertOptions& options);

}  // namespace volseg::segment
