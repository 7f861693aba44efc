// SPDX-License-Identifier: MIT
#include "volseg/segment/histogram.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "volseg/io/error.hpp"

namespace volseg::segment {

HistogramEdges HistogramEdges::over(double min, double max, io::DType dtype, int bins) {
  if (!std::isfinite(min) || !std::isfinite(max))
    throw Error("histogram range [" + std::to_string(min) + ", " + std::to_string(max) + "] is not finite");
  if (min > max)
    throw Error("histogram range [" + std::to_string(min) + ", " + std::to_string(max) + "] is empty (min > max)");
  if (bins < 1) throw Error("a histogram needs at least one bin (asked for " + std::to_string(bins) + ")");
  HistogramEdges edges;
  // One bin per integer when the integers of the range fit: every integer
  // threshold then falls on a bin edge (and counts are exact).
  const bool integral_range = min == std::floor(min) && max == std::floor(max);
  if (!io::dtype_is_float(dtype) && integral_range && max - min + 1 <= bins) {
    edges.bins = static_cast<int>(max - min + 1);
    edges.lo = min - 0.5;
    edges.hi = max + 0.5;
    edges.integers = true;
    return edges;
  }
  edges.bins = bins;
  edges.lo = min;
  edges.hi = max;
  if (min == max) {  // a constant field: one value, still a range of positive width
    const double half = std::max(0.5, std::abs(min) * 1e-6);
    edges.lo = min - half;
    edges.hi = max + half;
  }
  return edges;
}

int HistogramEdges::bin(double value) const {
  if (!(value >= lo)) return -1;  // NaN lands below: it is no value at all
  if (value > hi) return bins;
  if (value == hi) return bins - 1;
  // The estimate from the width, then corrected against edge() itself, so
  // that bin(v) == i exactly when edge(i) <= v < edge(i + 1); counts at the
  // edges reported by edge() are then exact whatever the rounding.
  int b = static_cast<int>(std::floor((value - lo) / (hi - lo) * bins));
  b = std::clamp(b, 0, bins - 1);
  while (b > 0 && value < edge(b)) --b;
  while (b < bins - 1 && value >= edge(b + 1)) ++b;
  return b;
}

std::uint64_t Histogram::total() const { return std::accumulate(counts_.begin(), counts_.end(), std::uint64_t{0}); }

void Histogram::merge(const Histogram& other) {
  if (!(edges_ == other.edges_))
    throw Error("cannot merge histograms with different edges ([" + std::to_string(edges_.lo) + ", " +
                std::to_string(edges_.hi) + "] in " + std::to_string(edges_.bins) + " bins and [" +
                std::to_string(other.edges_.lo) + ", " + std::to_string(other.edges_.hi) + "] in " +
                std::to_string(other.edges_.bins) + " bins)");
  counts_.resize(static_cast<std::size_t>(edges_.bins));
  for (std::size_t i = 0; i < other.counts_.size(); ++i) counts_[i] += other.counts_[i];
  below_ += other.below_;
  above_ += other.above_;
}

Histogram::Count Histogram::count_between(double lo, double hi) const {
  Count result;
  if (std::isnan(lo) || std::isnan(hi) || lo > hi) return result;
  // Voxels outside the edges are counted nowhere: a range reaching past an
  // edge with such voxels on that side cannot be counted exactly.
  if ((below_ > 0 && lo < edges_.lo) || (above_ > 0 && hi > edges_.hi)) result.exact = false;
  for (int i = 0; i < edges_.bins && i < static_cast<int>(counts_.size()); ++i) {
    const std::uint64_t count = counts_[static_cast<std::size_t>(i)];
    if (count == 0) continue;
    if (edges_.integers) {  // the bin holds exactly one integer
      const double value = edges_.lo + 0.5 + i;
      if (lo <= value && value <= hi) result.voxels += static_cast<double>(count);
      continue;
    }
    // Bin i holds [a, b), the last one [a, b].
    const double a = edges_.edge(i), b = edges_.edge(i + 1);
    const bool last = i == edges_.bins - 1;
    const bool all_inside = a >= lo && b <= hi;
    // A bin that opens at hi counts as outside (see the header).
    const bool all_outside = a >= hi || (last ? b < lo : b <= lo);
    if (all_inside) {
      result.voxels += static_cast<double>(count);
    } else if (!all_outside) {
      const double overlap = std::min(b, hi) - std::max(a, lo);
      const double fraction = b > a ? std::clamp(overlap / (b - a), 0.0, 1.0) : 1.0;
      result.voxels += fraction * static_cast<double>(count);
      result.exact = false;
    }
  }
  return result;
}

}  // namespace volseg::segment
