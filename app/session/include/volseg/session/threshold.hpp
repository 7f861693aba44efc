// SPDX-License-Identifier: MIT
// Threshold picking on the one histogram definition (segment/histogram.hpp):
// counts that agree with segment's, and the window's presets. No Qt.
#pragma once

#include <utility>

#include "volseg/segment/histogram.hpp"

namespace volseg::session {

// Segment counts lo <= v <= hi; a bin holds edge(i) <= v < edge(i+1). So a
// range ending at an inner bin edge e ends at the largest double below e:
// then segment and the histogram count the same voxels, those below e, for
// every data type (values compare exactly as doubles). Integer bins, the
// outer edges and any other value are returned as they are.
double below_edge(const segment::HistogramEdges& edges, double edge);

// The histogram's count of [lo, hi]; exact when lo is a bin edge and hi is
// a bin edge or below_edge() of one (and for integer bins, on integers).
segment::Histogram::Count count_in_range(const segment::Histogram& histogram, double lo, double hi);

// Otsu's threshold, as segment's --lo otsu: the first value above the lower
// class (a bin edge, or for integer bins the integer after the class).
double otsu(const segment::Histogram& histogram);

// The bins around the tallest one, down to half its count: [lo edge, hi edge].
std::pair<double, double> around_mode(const segment::Histogram& histogram);

}  // namespace volseg::session
