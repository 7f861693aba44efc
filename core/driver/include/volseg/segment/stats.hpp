// SPDX-License-Identifier: MIT
// What a brick's pass counts: voxels seen, valid and in the mask, their
// range and a histogram of those in the mask. Bricks add theirs (merge), the
// journal keeps each finished brick's, ranks reduce them.
#pragma once

#include <array>
#include <cstdint>

namespace volseg::segment {

struct Stats {
  static constexpr int bins = 256;
  std::uint64_t voxels = 0;    // seen
  std::uint64_t valid = 0;     // not NaN, not fill, inside the valid range
  std::uint64_t in_range = 0;  // in the mask
  double min = 0, max = 0;     // over valid voxels; meaningful when valid > 0
  std::array<std::uint64_t, bins> histogram{};

  void merge(const Stats& other);
};

}  // namespace volseg::segment
