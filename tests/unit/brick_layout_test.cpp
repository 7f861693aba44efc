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
  for (Index3 dims :
       {Index3{1024, 1024, 1024}, Index3{2048, 2048, 2048}, Index3{100, 3000, 5000}, Index3{37, 41, 53}}) {
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

TEST(BrickLayout, ChunkAlignedShapesHoldWholeChunksUpToTheTarget) {
  using volseg::segment::BrickLayout;
  // 64^3 f32 chunks are 1 MiB: 12 along x fit 12 MiB, and the 16 of a whole row are within twice that.
  EXPECT_EQ(BrickLayout::chunk_aligned_shape({1024, 1024, 1024}, 4, {64, 64, 64}), (volseg::io::Index3{64, 64, 1024}));
  // 32^3 f32 chunks, 128 KiB: 96 along x fit, 64 make the row; then 1.5 rows of chunks fit, so one.
  EXPECT_EQ(BrickLayout::chunk_aligned_shape({2048, 2048, 2048}, 4, {32, 32, 32}), (volseg::io::Index3{32, 32, 2048}));
  // Whole planes of chunks fit (1 MiB for 16 planes): 12 of them fit, the whole 16 within twice the target.
  EXPECT_EQ(BrickLayout::chunk_aligned_shape({256, 256, 256}, 1, {16, 16, 16}), (volseg::io::Index3{256, 256, 256}));
  EXPECT_EQ(BrickLayout::chunk_aligned_shape({1024, 256, 256}, 1, {16, 16, 16}), (volseg::io::Index3{192, 256, 256}));
  EXPECT_EQ(BrickLayout::chunk_aligned_shape({100, 50, 30}, 1, {8, 8, 8}), (volseg::io::Index3{100, 50, 30}));
  // A chunk larger than the target is one brick; a chunk larger than the volume is clipped to it.
  EXPECT_EQ(BrickLayout::chunk_aligned_shape({512, 512, 512}, 8, {128, 256, 256}), (volseg::io::Index3{128, 256, 256}));
  EXPECT_EQ(BrickLayout::chunk_aligned_shape({10, 20, 30}, 4, {64, 64, 64}), (volseg::io::Index3{10, 20, 30}));
  // Every shape is a multiple of the chunks wherever it is not the whole axis.
  const volseg::io::Index3 dims{300, 200, 100}, chunks{7, 9, 11};
  const auto shape = BrickLayout::chunk_aligned_shape(dims, 2, chunks, 1 << 16);
  for (int a = 0; a < 3; ++a) EXPECT_TRUE(shape[a] == dims[a] || shape[a] % chunks[a] == 0) << a;
}

TEST(BrickLayout, JobShapesFollowTheInputAndOutput) {
  using volseg::io::Index3;
  using volseg::segment::BrickLayout;
  // A contiguous input: the default shape, whatever the output.
  EXPECT_EQ(BrickLayout::job_shape({1024, 1024, 1024}, 4, std::nullopt, true),
            BrickLayout::default_shape({1024, 1024, 1024}, 4));
  // A chunked input into a contiguous output: chunks grown to the target.
  EXPECT_EQ(BrickLayout::job_shape({1024, 1024, 1024}, 4, Index3{64, 64, 64}), (Index3{64, 64, 1024}));
  // Into a chunked output: a chunk of 256 KiB or more is a brick by itself ...
  EXPECT_EQ(BrickLayout::job_shape({1024, 1024, 1024}, 4, Index3{64, 64, 64}, true), (Index3{64, 64, 64}));
  EXPECT_EQ(BrickLayout::job_shape({1024, 1024, 1024}, 1, Index3{64, 64, 64}, true), (Index3{64, 64, 64}));
  EXPECT_EQ(BrickLayout::job_shape({40, 50, 60}, 4, Index3{64, 64, 64}, true), (Index3{40, 50, 60}));
  // ... and smaller ones are grown to about 1 MiB (16^3 f32: 16 KiB, 64 along x make a whole row).
  EXPECT_EQ(BrickLayout::job_shape({1024, 1024, 1024}, 4, Index3{16, 16, 16}, true), (Index3{16, 16, 1024}));
}
