// SPDX-License-Identifier: MIT
// The render partition and the visibility order of its parts.
#include <gtest/gtest.h>

#include <algorithm>

#include "volseg/render/partition.hpp"

using namespace volseg::render;
using volseg::io::Extent;
using volseg::io::Index3;

TEST(RenderPartition, SlabsShareOnePlaneAndCoverEveryCell) {
  const Index3 dims{37, 20, 11};
  for (int parts = 1; parts <= 7; ++parts) {
    const auto slabs = partition(dims, parts);
    ASSERT_EQ(static_cast<int>(slabs.size()), parts);
    std::int64_t next = 0;
    for (const auto& e : slabs) {
      EXPECT_EQ(e.offset[0], next) << parts;  // starts on the previous slab's last plane
      EXPECT_EQ(e.count[1], dims[1]);
      EXPECT_EQ(e.count[2], dims[2]);
      next = e.offset[0] + e.count[0] - 1;
    }
    EXPECT_EQ(next, dims[0] - 1) << parts;  // the last plane is covered
  }
}

TEST(RenderPartition, FewPlanesSplitTheLongestAxis) {
  const auto parts = partition(Index3{2, 5, 40}, 4);  // one cell along z: split x
  for (const auto& e : parts) {
    EXPECT_EQ(e.count[0], 2);
    EXPECT_LT(e.count[2], 40);
  }
  const auto empty = partition(Index3{3, 3, 3}, 4);  // 2 cells, 4 ranks: two get nothing
  EXPECT_EQ(std::count_if(empty.begin(), empty.end(), [](const Extent& e) { return e.empty(); }), 2);
}

TEST(RenderPartition, GhostLayersStopAtTheVolume) {
  const Index3 dims{10, 10, 10};
  const Extent inner{{4, 0, 0}, {3, 10, 10}};
  EXPECT_EQ(with_ghost(inner, dims, 1), (Extent{{3, 0, 0}, {5, 10, 10}}));
  const Extent first{{0, 0, 0}, {4, 10, 10}};
  EXPECT_EQ(with_ghost(first, dims, 1), (Extent{{0, 0, 0}, {5, 10, 10}}));
}

namespace {
Box box(double x0, double x1, double y0, double y1, double z0, double z1) { return Box{{x0, y0, z0}, {x1, y1, z1}}; }
}  // namespace

TEST(RenderPartition, SlabsOrderFromTheCamera) {
  const std::vector<Box> slabs = {box(0, 1, 0, 1, 0, 1), box(0, 1, 0, 1, 1, 2), box(0, 1, 0, 1, 2, 3)};
  Viewpoint above;  // perspective, camera above the top slab
  above.position = {0.5, 0.5, 10};
  EXPECT_EQ(visibility_order(slabs, above), (std::vector<int>{2, 1, 0}));
  Viewpoint below;
  below.position = {0.5, 0.5, -4};
  EXPECT_EQ(visibility_order(slabs, below), (std::vector<int>{0, 1, 2}));
  Viewpoint inside;  // within the middle slab: it is in front, then its neighbours by side
  inside.position = {0.5, 0.5, 1.5};
  const auto order = visibility_order(slabs, inside);
  ASSERT_EQ(order.size(), 3u);
  EXPECT_EQ(order[0], 1);  // the slab the camera is in is in front of both others
  Viewpoint parallel;      // orthographic, looking down -z
  parallel.parallel = true;
  parallel.direction = {0, 0, -1};
  EXPECT_EQ(visibility_order(slabs, parallel), (std::vector<int>{2, 1, 0}));
  parallel.direction = {0.3, 0.2, 0.9};
  EXPECT_EQ(visibility_order(slabs, parallel), (std::vector<int>{0, 1, 2}));
}

TEST(RenderPartition, GridsOrderByNestedPlanesAndEmptyPartsGoLast) {
  // A 2 x 2 grid in x, y; the camera near the (x high, y low) corner.
  const std::vector<Box> grid = {box(0, 1, 0, 1, 0, 1), box(1, 2, 0, 1, 0, 1), box(0, 1, 1, 2, 0, 1),
                                 box(1, 2, 1, 2, 0, 1), Box{{1, 1, 1}, {0, 0, 0}}};
  Viewpoint view;
  view.position = {3, -2, 0.5};
  const auto order = visibility_order(grid, view);
  ASSERT_EQ(order.size(), 5u);
  EXPECT_EQ(order.front(), 1);  // nearest box first
  EXPECT_EQ(order[3], 2);       // farthest box last among the filled ones
  EXPECT_EQ(order.back(), 4);   // the empty one
}
