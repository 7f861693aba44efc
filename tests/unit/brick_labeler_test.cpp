// SPDX-License-Identifier: MIT
// BrickLabeler against a flood fill, numbered by first voxel: random masks
// sparse and dense (its row joins take a branch-free sweep above 3 runs in
// 20 voxels, a branchy one below), at 6, 18 and 26, with rows that start
// and end on the brick's faces; and a checkerboard, the most runs a row can
// hold, each touching its diagonal neighbours.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "label_kernel.hpp"

using namespace volseg;
using namespace volseg::segment;

namespace {

// Labels 1, 2, ... by first voxel in file order, by breadth-first search.
std::vector<std::uint32_t> flood_fill(const std::vector<std::uint8_t>& mask, const io::Index3& shape,
                                      int connectivity) {
  const std::int64_t nz = shape[0], ny = shape[1], nx = shape[2];
  std::vector<std::uint32_t> labels(mask.size(), 0);
  std::uint32_t next = 0;
  std::vector<std::int64_t> queue;
  for (std::int64_t start = 0; start < nz * ny * nx; ++start) {
    if (mask[static_cast<std::size_t>(start)] == 0 || labels[static_cast<std::size_t>(start)] != 0) continue;
    labels[static_cast<std::size_t>(start)] = ++next;
    queue.assign(1, start);
    while (!queue.empty()) {
      const std::int64_t at = queue.back();
      queue.pop_back();
      const std::int64_t z = at / (ny * nx), y = at / nx % ny, x = at % nx;
      for (int dz = -1; dz <= 1; ++dz)
        for (int dy = -1; dy <= 1; ++dy)
          for (int dx = -1; dx <= 1; ++dx) {
            const int steps = std::abs(dz) + std::abs(dy) + std::abs(dx);
            if (steps == 0 || (connectivity == 6 && steps > 1) || (connectivity == 18 && steps > 2)) continue;
            const std::int64_t z2 = z + dz, y2 = y + dy, x2 = x + dx;
            if (z2 < 0 || y2 < 0 || x2 < 0 || z2 >= nz || y2 >= ny || x2 >= nx) continue;
            const auto n = static_cast<std::size_t>((z2 * ny + y2) * nx + x2);
            if (mask[n] == 0 || labels[n] != 0) continue;
            labels[n] = next;
            queue.push_back(static_cast<std::int64_t>(n));
          }
    }
  }
  return labels;
}

}  // namespace

TEST(BrickLabeler, MatchesAFloodFillOnSparseAndDenseMasks) {
  const io::Index3 shape{9, 23, 67};
  BrickLabeler labeler6(6), labeler18(18), labeler26(26);
  std::mt19937 rng(29);
  for (const double density : {0.05, 0.1, 0.3, 0.5, 0.7, 0.95, -1.0}) {  // -1: the checkerboard
    std::bernoulli_distribution on(std::max(density, 0.0));
    std::vector<std::uint8_t> mask(static_cast<std::size_t>(shape[0] * shape[1] * shape[2]));
    for (std::size_t v = 0; v < mask.size(); ++v) {
      const auto x = static_cast<std::int64_t>(v) % shape[2], y = static_cast<std::int64_t>(v) / shape[2] % shape[1],
                 z = static_cast<std::int64_t>(v) / (shape[1] * shape[2]);
      mask[v] = density < 0 ? static_cast<std::uint8_t>((x + y + z + 1) % 2) : on(rng) ? 1 : 0;
    }
    for (BrickLabeler* labeler : {&labeler6, &labeler18, &labeler26}) {
      const int connectivity = labeler == &labeler6 ? 6 : labeler == &labeler18 ? 18 : 26;
      SCOPED_TRACE("density " + std::to_string(density) + ", " + std::to_string(connectivity) + "-connected");
      const auto want = flood_fill(mask, shape, connectivity);
      labeler->label(mask.data(), shape);
      std::vector<std::uint64_t> ids(labeler->objects() + 1u);
      for (std::size_t i = 0; i < ids.size(); ++i) ids[i] = i;
      std::vector<std::uint32_t> got(mask.size());
      labeler->paint(std::span<const std::uint64_t>(ids), got.data());
      std::uint32_t objects = 0;
      for (const auto label : want) objects = std::max(objects, label);
      EXPECT_EQ(labeler->objects(), objects);
      EXPECT_EQ(got, want);
    }
  }
}
