// SPDX-License-Identifier: MIT
// The brick labeller's class images (BrickLabeler::set_classes): runs of
// one class, joined only to runs of their class, and the classes on a
// brick's faces for the joins across bricks.
#include <algorithm>

#include "disjoint_set.hpp"
#include "label_kernel.hpp"

namespace volseg::segment {

// Runs of one class: a plain scan, a run ending where the byte changes.
void BrickLabeler::find_class_runs(const std::uint8_t* mask) {
  const std::int64_t rows = shape_[0] * shape_[1], width = shape_[2];
  runs_.clear();
  run_class_.clear();
  row_start_.resize(static_cast<std::size_t>(rows) + 1);
  for (std::int64_t r = 0; r < rows; ++r) {
    row_start_[static_cast<std::size_t>(r)] = static_cast<std::uint32_t>(runs_.size());
    const std::uint8_t* row = mask + r * width;
    std::int64_t x = 0;
    while (x < width) {
      const std::uint8_t c = row[x];
      std::int64_t end = x + 1;
      while (end < width && row[end] == c) ++end;
      if (c != 0) {
        runs_.push_back({static_cast<std::int32_t>(x), static_cast<std::int32_t>(end)});
        run_class_.push_back(c);
      }
      x = end;
    }
  }
  row_start_[static_cast<std::size_t>(rows)] = static_cast<std::uint32_t>(runs_.size());
}

// join_rows' sweep, joining only runs of one class.
template <int Connectivity>
void BrickLabeler::join_class_rows() {
  const std::int64_t depth = shape_[0], height = shape_[1];
  detail::DisjointSet<std::uint32_t> joined;
  joined.reset(runs_.size(), std::move(labels_));
  const Run* const runs = runs_.data();
  const std::uint8_t* const cls = run_class_.data();
  const std::uint32_t* const start = row_start_.data();
  constexpr auto before = rows_before<Connectivity>();
  for (std::int64_t z = 0; z < depth; ++z)
    for (std::int64_t y = 0; y < height; ++y) {
      const auto row = static_cast<std::size_t>(z * height + y);
      const std::uint32_t begin = start[row], end = start[row + 1];
      if (begin == end) continue;
      for (const RowBefore& b : before) {
        const std::int64_t nz = z + b.dz, ny = y + b.dy;
        if (nz < 0 || ny < 0 || ny >= height) continue;
        const auto other = static_cast<std::size_t>(nz * height + ny);
        // Runs of one row may abut (two classes side by side): each run
        // looks at every run of the other row within its reach, from the
        // first that reaches it (which only moves forward).
        std::uint32_t k = start[other];
        const std::uint32_t k_end = start[other + 1];
        for (std::uint32_t i = begin; i < end; ++i) {
          const Run a = runs[i];
          while (k < k_end && runs[k].end + b.reach <= a.begin) ++k;
          for (std::uint32_t j = k; j < k_end && runs[j].begin < a.end + b.reach; ++j)
            if (cls[i] == cls[j]) joined.join(i, j);
        }
      }
    }
  labels_ = joined.take_numbered(objects_, &first_run_);
}

template void BrickLabeler::join_class_rows<6>();
template void BrickLabeler::join_class_rows<18>();
template void BrickLabeler::join_class_rows<26>();

std::vector<std::uint8_t> BrickLabeler::face_classes(int axis, bool high) const {
  if (!classes_) return {};
  const std::int64_t depth = shape_[0], height = shape_[1], width = shape_[2];
  const std::int64_t across[3][2] = {{height, width}, {depth, width}, {depth, height}};
  std::vector<std::uint8_t> plane(static_cast<std::size_t>(across[axis][0] * across[axis][1]), 0);
  auto runs_of = [&](std::int64_t z, std::int64_t y) {
    return std::pair{row_start_[static_cast<std::size_t>(z * height + y)],
                     row_start_[static_cast<std::size_t>(z * height + y + 1)]};
  };
  auto fill = [&](std::int64_t z, std::int64_t y, std::uint8_t* out) {
    auto [begin, end] = runs_of(z, y);
    for (std::uint32_t i = begin; i < end; ++i) std::fill(out + runs_[i].begin, out + runs_[i].end, run_class_[i]);
  };
  if (axis == 0) {
    const std::int64_t z = high ? depth - 1 : 0;
    for (std::int64_t y = 0; y < height; ++y) fill(z, y, plane.data() + y * width);
  } else if (axis == 1) {
    const std::int64_t y = high ? height - 1 : 0;
    for (std::int64_t z = 0; z < depth; ++z) fill(z, y, plane.data() + z * width);
  } else {
    for (std::int64_t z = 0; z < depth; ++z)
      for (std::int64_t y = 0; y < height; ++y) {
        auto [begin, end] = runs_of(z, y);
        if (begin == end) continue;
        if (!high && runs_[begin].begin == 0) plane[static_cast<std::size_t>(z * height + y)] = run_class_[begin];
        if (high && runs_[end - 1].end == width) plane[static_cast<std::size_t>(z * height + y)] = run_class_[end - 1];
      }
  }
  return plane;
}

}  // namespace volseg::segment
