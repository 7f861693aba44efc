// SPDX-License-Identifier: MIT
// The one histogram definition of volseg: fixed bin edges over a variable's
// whole range, shared by the brick pyramid (per-brick histograms), the GUI
// (exact voxel counts of a threshold range) and the statistics of a job.
// Histograms with the same edges merge by adding counts, across bricks, ranks
// and pyramid levels.
//
// Edges: `bins` bins of equal width over [lo, hi]; a value v falls in bin
// floor((v - lo) / width), and v == hi in the last bin. For integer data
// whose range spans fewer values than the bins asked for, every bin holds
// exactly one integer (lo = min - 0.5, width 1), so counts at bin edges are
// exact for every integer threshold.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "volseg/io/types.hpp"

namespace volseg::segment {

struct HistogramEdges {
  static constexpr int default_bins = 1024;
  double lo = 0, hi = 1;  // in unpacked units (what thresholds are given in)
  int bins = default_bins;
  // Integer bins: bin i holds exactly the integer lo + 0.5 + i, so a count
  // between any two numbers is exact.
  bool integers = false;

  // Edges over [min, max], the valid range of the data (from valid_range or
  // a first pass). Integer bins when dtype is an integer type, min and max are
  // integers and max - min + 1 <= bins (pass a float dtype for packed data,
  // whose unpacked values need not be integers). A constant field (min ==
  // max) gets a small positive width around its value. Throws volseg::Error
  // when min > max, either is not finite, or bins < 1.
  static HistogramEdges over(double min, double max, io::DType dtype, int bins = default_bins);

  double width() const { return (hi - lo) / bins; }
  double edge(int i) const { return lo + (hi - lo) * i / bins; }  // i in [0, bins]
  // The bin of a value: i exactly when edge(i) <= value < edge(i + 1) (hi in
  // the last bin); -1 below lo (and for NaN), bins above hi.
  int bin(double value) const;
  bool operator==(const HistogramEdges&) const = default;
};

class Histogram {
 public:
  Histogram() = default;
  explicit Histogram(const HistogramEdges& edges) : edges_(edges), counts_(static_cast<std::size_t>(edges.bins)) {}

  const HistogramEdges& edges() const { return edges_; }
  const std::vector<std::uint64_t>& counts() const { return counts_; }
  std::vector<std::uint64_t>& counts() { return counts_; }
  std::uint64_t total() const;

  // Values outside [lo, hi] are counted in neither bin (below_, above_ keep them).
  void add(double value) {
    const int b = edges_.bin(value);
    if (b < 0)
      ++below_;
    else if (b >= edges_.bins)
      ++above_;
    else
      ++counts_[static_cast<std::size_t>(b)];
  }
  std::uint64_t below() const { return below_; }
  std::uint64_t above() const { return above_; }

  // Throws volseg::Error when the edges differ.
  void merge(const Histogram& other);

  // Voxels with lo <= v <= hi: exact when lo and hi fall on bin edges (and
  // for integer bins, on any integers); otherwise the bins cut by lo or hi
  // count in proportion to the part inside, and exact is false. At a bin
  // edge hi < edges().hi, the bin that opens at hi is not counted: a voxel
  // exactly equal to such an hi is left out (bins cannot tell it apart).
  struct Count {
    double voxels = 0;
    bool exact = true;
  };
  Count count_between(double lo, double hi) const;

 private:
  HistogramEdges edges_;
  std::vector<std::uint64_t> counts_;
  std::uint64_t below_ = 0, above_ = 0;
};

}  // namespace volseg::segment
