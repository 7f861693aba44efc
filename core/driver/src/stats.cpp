// SPDX-License-Identifier: MIT
#include "volseg/segment/stats.hpp"

#include <algorithm>

namespace volseg::segment {

void Stats::merge(const Stats& other) {
  if (other.valid > 0) {
    min = valid > 0 ? std::min(min, other.min) : other.min;
    max = valid > 0 ? std::max(max, other.max) : other.max;
  }
  voxels += other.voxels;
  valid += other.valid;
  in_range += other.in_range;
  for (std::size_t i = 0; i < histogram.size(); ++i) histogram[i] += other.histogram[i];
}

}  // namespace volseg::segment
