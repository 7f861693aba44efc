// SPDX-License-Identifier: MIT
#include "volseg/session/threshold.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

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
  const auto& counts = h.counts();
  const auto& e = h.edges();
  double total = 0, sum = 0;
  for (int i = 0; i < e.bins; ++i) {
    const double c = static_cast<double>(counts[static_cast<std::size_t>(i)]);
    total += c;
    sum += c * (e.edge(i) + e.edge(i + 1)) / 2;
  }
  double weight = 0, partial = 0, best = -1;
  int at = e.bins / 2;
  for (int i = 0; i + 1 < e.bins; ++i) {
    const double c = static_cast<double>(counts[static_cast<std::size_t>(i)]);
    weight += c;
    partial += c * (e.edge(i) + e.edge(i + 1)) / 2;
    if (weight == 0 || weight == total) continue;
    const double m0 = partial / weight, m1 = (sum - partial) / (total - weight);
    const double between = weight * (total - weight) * (m0 - m1) * (m0 - m1);
    if (between > best) {
      best = between;
      at = i + 1;
    }
  }
  return e.edge(at);
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
