// SPDX-License-Identifier: MIT
#include <gtest/gtest.h>

#include <set>
#include <vector>

#include "volseg/io/error.hpp"
#include "volseg/segment/brick_layout.hpp"

using namespace volseg::segment;
using volseg::io::Index3;

TEST(BrickLayout, BricksTileTheVolumeExactlyOnce) {
  for (Index3 dims : {Index3{13, 17, 19}, Index3{1, 1, 1}, Index3{8, 8, 8}, Index3{5, 40, 3}}) {
    for (Index3 shape : {Index3{4, 5, 6}, Index3{1, 1, 1}, Index3{100, 100, 100}, Index3{3, 17, 19}}) {
      BrickLayout layout(dims, shape);
      std::vector<int> covered(static_cast<std::size_t>(dims[0] * dims[1] * dims[2]), 0);
      for (std::int64_t b = 0; b < layout.count(); ++b) {
        auto e = layout.brick(b);
        ASSERT_FALSE(e.empty());
        for (std::int64_t z = e.offset[0]; z < e.offset[0] + e.count[0]; ++z)
          for (std::int64_t y = e.offset[1]; y < e.offset[1] + e.count[1]; ++y)
            for (std::int64_t x = e.offset[2]; x < e.offset[2] + e.count[2]; ++x)
              ++covered[static_cast<std::size_t>((z * dims[1] + y) * dims[2] + x)];
      }
      for (int c : covered) ASSERT_EQ(c, 1);
    }
  }
}

TEST(BrickLayout, LastBrickIsShort) {
  BrickLayout layout({10, 10, 10}, {4, 4, 4});
  EXPECT_EQ(layout.grid(), (Index3{3, 3, 3}));
  auto last = layout.brick(layout.count() - 1);
  EXPECT_EQ(last.offset, (Index3{8, 8, 8}));
  EXPECT_EQ(last.count, (Index3{2, 2, 2}));
}

TEST(BrickLayout, DefaultShapeIsAboutTwelveMiBOfWholeRows) {
  for (Index3 dims : {Index3{1024, 1024, 1024}, Index3{2048, 2048, 2048}, Index3{100, 3000, 5000}, Index3{37, 41, 53}}) {
    for (std::size_t element : {1u, 2u, 4u, 8u}) {
      Index3 shape = BrickLayout::default_shape(dims, element);
      EXPECT_EQ(shape[2], std::min<std::int64_t>(dims[2], static_cast<std::int64_t>((12u << 20) / element)));
      double bytes = static_cast<double>(shape[0] * shape[1] * shape[2] * static_cast<std::int64_t>(element));
      double whole = static_cast<double>(dims[0] * dims[1] * dims[2] * static_cast<std::int64_t>(element));
      if (whole >= 16.0 * (1 << 20)) {
        EXPECT_GE(bytes, 8.0 * (1 << 20)) << dims[0] << " " << element;
        EXPECT_LE(bytes, 16.0 * (1 << 20)) << dims[0] << " " << element;
      }
    }
  }
}

TEST(Assignment, EveryBrickGoesToExactlyOneRank) {
  for (auto assignment : {Assignment::block, Assignment::cyclic, Assignment::random}) {
    for (int size : {1, 2, 3, 4, 7}) {
      for (std::int64_t count : {0, 1, 5, 64, 101}) {
        std::multiset<std::int64_t> seen;
        for (int rank = 0; rank < size; ++rank) {
          auto mine = assign_bricks(count, rank, size, assignment, 42);
          EXPECT_TRUE(std::is_sorted(mine.begin(), mine.end()));
          seen.insert(mine.begin(), mine.end());
        }
        ASSERT_EQ(static_cast<std::int64_t>(seen.size()), count);
        for (std::int64_t b = 0; b < count; ++b) ASSERT_EQ(seen.count(b), 1u);
      }
    }
  }
}

TEST(Assignment, RandomDependsOnSeedAndBlockIsContiguous) {
  EXPECT_NE(assign_bricks(100, 0, 4, Assignment::random, 1), assign_bricks(100, 0, 4, Assignment::random, 2));
  auto block = assign_bricks(10, 1, 3, Assignment::block);
  EXPECT_EQ(block, (std::vector<std::int64_t>{4, 5, 6}));
  EXPECT_THROW(parse_assignment("diagonal"), volseg::Error);
  EXPECT_EQ(parse_shape("8"), (Index3{8, 8, 8}));
  EXPECT_EQ(parse_shape("1,2,3"), (Index3{1, 2, 3}));
  EXPECT_THROW(parse_shape("1,0,3"), volseg::Error);
  EXPECT_THROW(parse_shape("1,2"), volseg::Error);
}
