// SPDX-License-Identifier: MIT
// The split of one component (split_flood.hpp).
#include "split_flood.hpp"

#include <algorithm>
#include <cmath>
#include <queue>
#include <tuple>

#include "volseg/io/error.hpp"

namespace volseg::segment::detail {

std::vector<std::int64_t> neighbour_steps(const io::Index3& shape, int connectivity) {
  const int most = connectivity == 6 ? 1 : connectivity == 18 ? 2 : 3;
  std::vector<std::pair<int, std::int64_t>> steps;  // (axes moved, flat step), raster order within each
  for (int dz = -1; dz <= 1; ++dz)
    for (int dy = -1; dy <= 1; ++dy)
      for (int dx = -1; dx <= 1; ++dx) {
        const int moved = (dz != 0) + (dy != 0) + (dx != 0);
        if (moved == 0 || moved > most) continue;
        steps.emplace_back(moved, (dz * shape[1] + dy) * shape[2] + dx);
      }
  std::stable_sort(steps.begin(), steps.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  std::vector<std::int64_t> out;
  for (const auto& [moved, step] : steps) out.push_back(step);
  return out;
}

std::uint64_t isolate(ComponentBox& box, const std::vector<std::uint8_t>& foreground, std::size_t seed,
                      int connectivity) {
  const auto steps = neighbour_steps(box.shape, connectivity);
  box.inside.assign(foreground.size(), 0);
  std::vector<std::size_t> stack{seed};
  box.inside[seed] = 1;
  std::uint64_t voxels = 0;
  while (!stack.empty()) {
    const std::size_t v = stack.back();
    stack.pop_back();
    ++voxels;
    for (const std::int64_t step : steps) {
      const auto u = static_cast<std::size_t>(static_cast<std::int64_t>(v) + step);
      if (foreground[u] && !box.inside[u]) {
        box.inside[u] = 1;
        stack.push_back(u);
      }
    }
  }
  return voxels;
}

// Reconstruction by dilation of (height - h - resolution) under height, as
// skimage's h_maxima forms it for float32 (numpy's float32 arithmetic), by
// a priority flood from the highest values down.
std::uint32_t h_maxima(const ComponentBox& box, double h, std::vector<std::uint32_t>& markers, bool zero_background) {
  const std::size_t n = box.height.size();
  markers.assign(n, 0);
  if (zero_background) {
    float top = 0;
    for (std::size_t i = 0; i < n; ++i)
      if (box.inside[i]) top = std::max(top, box.height[i]);
    if (static_cast<double>(top) < h) return 0;
  }
  const auto h32 = static_cast<float>(h);
  const auto resolution = static_cast<float>(2 * 1e-6);  // 2 * numpy.finfo(float32).resolution
  std::vector<float> rec(n, 0);
  using Entry = std::pair<float, std::size_t>;
  std::priority_queue<Entry> heap;
  for (std::size_t i = 0; i < n; ++i)
    if (box.inside[i]) {
      const float f = box.height[i];
      rec[i] = (f - h32) - resolution * std::fabs(f);
      heap.emplace(rec[i], i);
    }
  const auto steps = neighbour_steps(box.shape, 26);
  while (!heap.empty()) {
    const auto [r, v] = heap.top();
    heap.pop();
    if (r < rec[v]) continue;  // raised since
    for (const std::int64_t step : steps) {
      const auto u = static_cast<std::size_t>(static_cast<std::int64_t>(v) + step);
      if (!box.inside[u]) continue;
      const float candidate = std::min(r, box.height[u]);
      if (candidate > rec[u]) {
        rec[u] = candidate;
        heap.emplace(candidate, u);
      }
    }
  }
  // The maxima: residue >= h, in float64 as skimage compares; labelled
  // 26-connected in file order of their first voxel.
  std::vector<std::uint8_t> maximum(n, 0);
  for (std::size_t i = 0; i < n; ++i)
    maximum[i] = box.inside[i] && static_cast<double>(box.height[i]) - static_cast<double>(rec[i]) >= h;
  std::uint32_t count = 0;
  std::vector<std::size_t> stack;
  for (std::size_t i = 0; i < n; ++i) {
    if (!maximum[i] || markers[i]) continue;
    markers[i] = ++count;
    stack.push_back(i);
    while (!stack.empty()) {
      const std::size_t v = stack.back();
      stack.pop_back();
      for (const std::int64_t step : steps) {
        const auto u = static_cast<std::size_t>(static_cast<std::int64_t>(v) + step);
        if (maximum[u] && !markers[u]) {
          markers[u] = count;
          stack.push_back(u);
        }
      }
    }
  }
  return count;
}

namespace {

// scikit-image's heap (CellProfiler's, heap_general.pxi) step for step: the
// same pushes and pops order items of one (value, age) alike, so a flood
// from markers of equal heights (age 0) takes them in the order
// scikit-image takes them when the component is alone in the image.
class FloodHeap {
 public:
  struct Item {
    double value;
    std::uint64_t age;
    std::size_t index;
  };
  bool empty() const { return items_.empty(); }
  void push(const Item& item) {
    items_.push_back(item);
    std::size_t child = items_.size() - 1;
    while (child > 0) {
      const std::size_t parent = (child + 1) / 2 - 1;
      if (!smaller(items_[child], items_[parent])) break;
      std::swap(items_[parent], items_[child]);
      child = parent;
    }
  }
  Item pop() {
    const Item top = items_[0];
    const std::size_t count = items_.size() - 1;
    std::swap(items_[0], items_[count]);
    items_.pop_back();
    std::size_t i = 0;
    for (;;) {
      const std::size_t l = 2 * i + 1, r = 2 * i + 2;
      if (l >= count) break;
      std::size_t smallest = i;
      if (smaller(items_[l], items_[i])) smallest = l;
      if (r < count && smaller(items_[r], items_[smallest])) smallest = r;
      if (smallest == i) break;
      std::swap(items_[i], items_[smallest]);
      i = smallest;
    }
    return top;
  }

 private:
  static bool smaller(const Item& a, const Item& b) { return a.value != b.value ? a.value < b.value : a.age < b.age; }
  std::vector<Item> items_;
};

}  // namespace

// The flood's neighbours in the order scikit-image visits them: its
// offsets sorted by distance from the centre with numpy's argsort (not a
// stable sort), as Debian's scikit-image 0.19 and numpy 1.24 give them for
// 18 and 26; faces in raster order for 6. The order decides which of two
// voxels of one height floods first, so it is kept to agree with the
// reference where heights tie.
std::vector<std::int64_t> flood_steps(const io::Index3& shape, int connectivity) {
  static constexpr int edges[18][3] = {{1, 0, 0},   {-1, 0, 0}, {0, -1, 0}, {0, 1, 0},   {0, 0, -1},  {0, 0, 1},
                                       {1, 0, -1},  {1, -1, 0}, {0, 1, 1},  {0, 1, -1},  {-1, -1, 0}, {0, -1, 1},
                                       {0, -1, -1}, {-1, 1, 0}, {-1, 0, 1}, {-1, 0, -1}, {1, 0, 1},   {1, 1, 0}};
  static constexpr int corners[26][3] = {
      {0, 1, 0},  {-1, 0, 0},   {0, 0, 1},   {0, 0, -1}, {1, 0, 0},   {0, -1, 0},  {0, 1, 1},   {0, 1, -1}, {1, 1, 0},
      {0, -1, 1}, {0, -1, -1},  {-1, 1, 0},  {1, 0, 1},  {-1, 0, 1},  {-1, 0, -1}, {-1, -1, 0}, {1, 0, -1}, {1, -1, 0},
      {1, 1, -1}, {-1, -1, -1}, {1, -1, -1}, {-1, 1, 1}, {-1, 1, -1}, {-1, -1, 1}, {1, -1, 1},  {1, 1, 1}};
  if (connectivity == 6) return neighbour_steps(shape, 6);
  std::vector<std::int64_t> out;
  auto add = [&](const int(&d)[3]) { out.push_back((d[0] * shape[1] + d[1]) * shape[2] + d[2]); };
  if (connectivity == 18)
    for (const auto& d : edges) add(d);
  else
    for (const auto& d : corners) add(d);
  return out;
}

void flood(const ComponentBox& box, std::vector<std::uint32_t>& markers, int connectivity) {
  // The lowest (value, age) first; a voxel takes its label when it is pushed.
  FloodHeap heap;
  const std::size_t n = box.height.size();
  for (std::size_t i = 0; i < n; ++i) {
    if (!box.inside[i])
      markers[i] = 0;  // a marker outside the component is no marker
    else if (markers[i])
      heap.push({-static_cast<double>(box.height[i]), 0, i});
  }
  const auto steps = flood_steps(box.shape, connectivity);
  std::uint64_t age = 0;
  while (!heap.empty()) {
    const std::size_t v = heap.pop().index;
    for (const std::int64_t step : steps) {
      const auto u = static_cast<std::size_t>(static_cast<std::int64_t>(v) + step);
      if (!box.inside[u] || markers[u]) continue;
      markers[u] = markers[v];
      heap.push({-static_cast<double>(box.height[u]), ++age, u});
    }
  }
}

std::vector<std::uint8_t> colour_regions(const ComponentBox& box, const std::vector<std::uint32_t>& regions,
                                         std::uint32_t count, int connectivity) {
  std::vector<std::vector<std::uint32_t>> touching(count);
  const auto steps = neighbour_steps(box.shape, connectivity);
  for (std::size_t v = 0; v < regions.size(); ++v) {
    const std::uint32_t a = regions[v];
    if (a == 0) continue;
    for (const std::int64_t step : steps) {
      if (step < 0) continue;  // each pair once
      const std::uint32_t b = regions[static_cast<std::size_t>(static_cast<std::int64_t>(v) + step)];
      if (b != 0 && b != a) {
        touching[a - 1].push_back(b);
        touching[b - 1].push_back(a);
      }
    }
  }
  std::vector<std::uint8_t> colour(count, 0);
  for (std::uint32_t r = 0; r < count; ++r) {
    std::array<bool, 256> used{};
    for (const std::uint32_t other : touching[r]) used[colour[other - 1]] = true;
    int c = 1;
    while (c < 256 && used[static_cast<std::size_t>(c)]) ++c;
    if (c == 256) throw Error("split: a region touches 255 others of distinct colours; the class image holds no more");
    colour[r] = static_cast<std::uint8_t>(c);
  }
  return colour;
}

}  // namespace volseg::segment::detail
