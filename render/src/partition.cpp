// SPDX-License-Identifier: MIT
#include "volseg/render/partition.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace volseg::render {

std::vector<io::Extent> partition(const io::Index3& dims, int parts) {
  std::vector<io::Extent> result(static_cast<std::size_t>(parts));
  int axis = 0;
  if (dims[0] - 1 < parts)
    for (int a = 1; a < 3; ++a)
      if (dims[a] > dims[axis]) axis = a;
  const std::int64_t cells = std::max<std::int64_t>(dims[axis] - 1, 0);
  if (cells == 0) {  // one plane: rank 0 owns it all
    result[0] = io::Extent{{0, 0, 0}, dims};
    return result;
  }
  for (int r = 0; r < parts; ++r) {
    const std::int64_t c0 = cells * r / parts, c1 = cells * (r + 1) / parts;
    if (c1 == c0) continue;  // more ranks than cells
    io::Extent e{{0, 0, 0}, dims};
    e.offset[axis] = c0;
    e.count[axis] = c1 - c0 + 1;  // points c0..c1: the plane c1 is shared with the next rank
    result[static_cast<std::size_t>(r)] = e;
  }
  return result;
}

namespace {

bool empty_box(const Box& box) {
  for (int a = 0; a < 3; ++a)
    if (box.lo[a] > box.hi[a]) return true;
  return false;
}

// Is the lower side (coordinates below `plane` on `axis`) nearer the camera?
bool lower_side_first(const Viewpoint& view, int axis, double plane) {
  if (view.parallel) return view.direction[axis] > 0;  // looking towards +axis: low side is in front
  return view.position[axis] < plane;
}

void order(const std::vector<Box>& boxes, std::vector<int> subset, const Viewpoint& view, std::vector<int>& out) {
  if (subset.size() <= 1) {
    out.insert(out.end(), subset.begin(), subset.end());
    return;
  }
  for (int axis = 0; axis < 3; ++axis) {
    for (int candidate : subset) {
      const double plane = boxes[candidate].hi[axis];
      std::vector<int> below, above;
      bool separates = true;
      for (int i : subset) {
        if (boxes[i].hi[axis] <= plane)
          below.push_back(i);
        else if (boxes[i].lo[axis] >= plane)
          above.push_back(i);
        else {
          separates = false;
          break;
        }
      }
      if (!separates || below.empty() || above.empty()) continue;
      const bool low_first = lower_side_first(view, axis, plane);
      order(boxes, low_first ? below : above, view, out);
      order(boxes, low_first ? above : below, view, out);
      return;
    }
  }
  // No plane separates them (not a k-d partition): nearest centre first.
  auto key = [&](int i) {
    double d = 0;
    for (int a = 0; a < 3; ++a) {
      const double c = 0.5 * (boxes[i].lo[a] + boxes[i].hi[a]);
      d += view.parallel ? c * view.direction[a] : (c - view.position[a]) * (c - view.position[a]);
    }
    return d;
  };
  std::stable_sort(subset.begin(), subset.end(), [&](int a, int b) { return key(a) < key(b); });
  out.insert(out.end(), subset.begin(), subset.end());
}

}  // namespace

std::vector<int> visibility_order(const std::vector<Box>& boxes, const Viewpoint& viewpoint) {
  std::vector<int> filled, empty, result;
  for (int i = 0; i < static_cast<int>(boxes.size()); ++i) (empty_box(boxes[i]) ? empty : filled).push_back(i);
  order(boxes, filled, viewpoint, result);
  result.insert(result.end(), empty.begin(), empty.end());
  return result;
}

}  // namespace volseg::render
