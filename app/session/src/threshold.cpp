// SPDX-License-Identifier: MIT
#include "volseg/session/threshold.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include "volseg/io/error.hpp"
#include "volseg/segment/operators.hpp"

namespace volseg::session {

double below_edge(const segment::HistogramEdges& e, double edge) {
  if (e.integers || edge >= e.hi || edge <= e.lo) return edge;
  return std::nextafter(edge, -std::numeric_limits<double>::infinity());
}

segment::Histogram::Count count_in_range(const segment::Histogram& histogram, double lo, double hi) {
  const auto& e = histogram.edges();
  if (!e.integers) {
    const double b = std::round((hi - e.lo) / e.width());
    if (b > 0 && b < e.bins) {
      const double edge = e.edge(static_cast<int>(b));
      if (hi == below_edge(e, edge)) return histogram.count_between(lo, edge);
    }
  }
  return histogram.count_between(lo, hi);
}

double otsu(const segment::Histogram& h) {
  // segment's rule (the job's --lo otsu), the lower class's upper edge.
  try {
    segment::ThresholdRule rule;
    return segment::choose_threshold(h, rule, true);
  } catch (const Error&) {  // one value (or none): no split
    return h.edges().edge(h.edges().bins / 2);
  }
}

std::pair<double, double> around_mode(const segment::Histogram& h) {
  const auto& counts = h.counts();
  const auto& e = h.edges();
  const int m = static_cast<int>(std::max_element(counts.begin(), counts.end()) - counts.begin());
  int a = m, b = m;
  while (a > 0 && counts[static_cast<std::size_t>(a - 1)] * 2 >= counts[static_cast<std::size_t>(m)]) --a;
  while (b + 1 < e.bins && counts[static_cast<std::size_t>(b + 1)] * 2 >= counts[static_cast<std::size_t>(m)]) ++b;
  return {e.edge(a), e.edge(b + 1)};
}

}  // namespace volseg::session
