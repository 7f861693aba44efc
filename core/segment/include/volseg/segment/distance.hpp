// SPDX-License-Identifier: MIT
// `volseg distance`: the exact Euclidean distance of every foreground voxel
// to the nearest background voxel, as scipy.ndimage.distance_transform_edt
// gives it, over bricks and ranks in bounded memory (docs/split.md).
//
// Two sweeps. The first reads slabs whole along z (a few rows of y, every
// x), makes their mask and writes each voxel's offset to the nearest
// background voxel of its column to a temporary 16-bit volume beside the
// output. The second reads that volume a few whole planes at a time and
// finishes each plane along y and x. A rank holds one slab or one group of
// planes; the two sweeps meet through the temporary file, so the ranks
// exchange no voxels at all (docs/split.md, "Across bricks and ranks").
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "volseg/io/comm.hpp"
#include "volseg/io/selection.hpp"
#include "volseg/io/types.hpp"
#include "volseg/segment/operators.hpp"
#include "volseg/segment/progress.hpp"

namespace volseg::segment {

struct DistanceOptions {
  std::string input, output;
  bool mask_input = false;   // input is a mask, foreground nonzero; else lo <= v <= hi
  bool binary_mask = false;  // with mask_input: every voxel must be 0 or 1 (the first that is not is named)
  double lo = 0, hi = 0;
  std::string lo_rule, hi_rule;  // what chose lo and hi, for the summary; empty: numbers
  MaskOperators operators;       // hysteresis, open, close, fill holes, as segment's
  // z, y, x in the input's units; nullopt: the input's own spacing.
  std::optional<std::array<double, 3>> spacing;
  bool black_border = false;  // outside the volume is background (seung-lab edt's black_border)
  io::DType type = io::DType::f32;
  std::string backend = "auto", output_backend, format;
  io::Selection selection;
  std::vector<std::string> hints, input_hints, output_hints;
  std::uint64_t memory_bytes = 0;  // per rank; 0: this node's available memory shared by its ranks
  // Rows of y a slab of the first sweep, planes a group of the second;
  // nullopt: within a quarter of the bound, at most 64 MiB each.
  std::optional<std::int64_t> slab_rows, plane_group;
  // Also the foreground as a u8 0/1 volume (raw NRRD), from the second
  // sweep: the split's class image before its watershed; empty: none.
  std::string mask_output;
  bool force = false;
  ProgressMode progress = ProgressMode::automatic;
  std::string command_line;
};

struct DistanceResult {
  io::VolumeInfo input_info;
  std::string backend, output_backend, output_format;
  std::array<double, 3> spacing{};  // z, y, x, as used
  std::uint64_t foreground = 0;     // voxels with a distance above 0
  double largest = 0;               // the largest finite distance
  bool no_background = false;       // the volume has no background voxel: every distance is +inf
  io::Index3 slab{}, planes{};      // the first sweep's slabs and the second's groups of planes
  std::uint64_t memory_bound = 0;   // per rank
  std::string memory_source;
  std::uint64_t scratch_bytes = 0;  // the temporary volume between the sweeps
  struct Times {
    double columns = 0, planes = 0, total = 0;
    std::uint64_t max_rss = 0;
  };
  std::vector<Times> ranks;  // rank 0 holds all
  double seconds = 0;
  int comm_size = 1;
};

// "Z,Y,X" of positive spacings; throws naming --spacing on anything else.
std::array<double, 3> parse_spacing(const std::string& text);

// Collective. Throws volseg::Error on every rank when any fails, leaving no
// output behind.
DistanceResult run_distance(const Comm& comm, const DistanceOptions& options);
std::string distance_summary(const DistanceOptions& options, const DistanceResult& result);

}  // namespace volseg::segment
