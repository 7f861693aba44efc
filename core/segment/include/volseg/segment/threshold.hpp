// SPDX-License-Identifier: MIT
// The threshold kernel: a voxel is in the mask when it is valid and
// lo <= v <= hi. Invalid voxels (NaN, equal to the fill value, outside the
// valid range) are never in it. Thresholds are compared exactly against the
// stored values (no rounding of lo/hi to the data type).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>

#include "volseg/io/types.hpp"
#include "volseg/segment/stats.hpp"

namespace volseg::segment {

struct Threshold {
  double lo = 0, hi = 0;
  std::optional<long double> fill_value;  // exact for 64-bit integers
  std::optional<std::array<double, 2>> valid_range;
  std::optional<long double> missing_value;  // a second excluded value
};

// Statistics of what a kernel saw (Stats, stats.hpp): the histogram has 256
// bins over [lo, hi] and counts the voxels in the mask.

// Prepared once per volume: thresholds converted to the data type.
class ThresholdKernel {
 public:
  // histogram: also count the voxels in the mask into Stats::histogram.
  // Binning costs as much as the rest of the pass where much is in range
  // (one increment a voxel), so a batch job asks for it only when wanted.
  ThresholdKernel(io::DType dtype, const Threshold& threshold, bool histogram = true);
  io::DType dtype() const { return dtype_; }
  bool histogram() const { return histogram_; }

  // Thresholds count values at input (file order if swapped) into mask
  // (0 or 1 per voxel) and adds to stats.
  void run(const std::byte* input, std::int64_t count, bool swapped, std::uint8_t* mask, Stats& stats) const;

 private:
  io::DType dtype_;
  Threshold threshold_;
  bool histogram_ = true;
};

}  // namespace volseg::segment
