// SPDX-License-Identifier: MIT
// The multiscale levels' kernels: mode for labels (non-zero first, ties to
// the smaller id), mean for images (missing values left out), odd edges,
// and the level count's rule.
#include "volseg/io/downsample.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <vector>

#include "volseg/io/error.hpp"

namespace volseg::io {
namespace {

TEST(Downsample, ModePrefersObjectsAndTheSmallerIdOnATie) {
  // One 2x2x2 block: 5 zeros, 2 of id 7, 1 of id 3 -> 7 (zeros do not vote).
  std::vector<std::uint32_t> fine{0, 0, 0, 7, 0, 7, 3, 0};
  std::uint32_t coarse = 99;
  downsample(Downsampling::mode, DType::u32, fine.data(), {2, 2, 2}, &coarse);
  EXPECT_EQ(coarse, 7u);
  fine = {5, 5, 2, 2, 0, 0, 0, 0};  // a tie: the smaller id
  downsample(Downsampling::mode, DType::u32, fine.data(), {2, 2, 2}, &coarse);
  EXPECT_EQ(coarse, 2u);
  fine.assign(8, 0);
  downsample(Downsampling::mode, DType::u32, fine.data(), {2, 2, 2}, &coarse);
  EXPECT_EQ(coarse, 0u);
}

TEST(Downsample, OddEdgesUseTheVoxelsThereAre) {
  // 1 x 1 x 3 voxels -> 1 x 1 x 2: the last coarse voxel has one voxel below.
  const std::vector<std::uint16_t> fine{4, 4, 9};
  std::vector<std::uint16_t> coarse(2);
  downsample(Downsampling::mode, DType::u16, fine.data(), {1, 1, 3}, coarse.data());
  EXPECT_EQ(coarse, (std::vector<std::uint16_t>{4, 9}));
  const std::vector<float> values{1, 2, 6};
  std::vector<float> means(2);
  downsample(Downsampling::mean, DType::f32, values.data(), {1, 1, 3}, means.data());
  EXPECT_FLOAT_EQ(means[0], 1.5f);
  EXPECT_FLOAT_EQ(means[1], 6.0f);
}

TEST(Downsample, MeanLeavesOutNaNAndTheFillValue) {
  const float nan = std::nanf("");
  std::vector<float> fine{1, nan, 3, nan, nan, nan, nan, nan};
  float coarse = 0;
  downsample(Downsampling::mean, DType::f32, fine.data(), {2, 2, 2}, &coarse);
  EXPECT_FLOAT_EQ(coarse, 2.0f);
  fine.assign(8, nan);
  downsample(Downsampling::mean, DType::f32, fine.data(), {2, 2, 2}, &coarse);
  EXPECT_TRUE(std::isnan(coarse));
  const std::vector<std::int16_t> ints{-999, 10, 11, -999, -999, -999, -999, -999};
  std::int16_t mean = 0;
  downsample(Downsampling::mean, DType::i16, ints.data(), {2, 2, 2}, &mean, -999.0L);
  EXPECT_EQ(mean, 11);  // 10.5, rounded to nearest, the fill left out
}

TEST(Downsample, LevelCount) {
  EXPECT_EQ(level_dims({100, 120, 140}, 1), (Index3{50, 60, 70}));
  EXPECT_EQ(level_dims({5, 5, 5}, 2), (Index3{2, 2, 2}));
  // Down to the first level that fits one chunk.
  EXPECT_EQ(level_count({60, 70, 80}, {16, 16, 16}, 0), 4);
  EXPECT_EQ(level_count({16, 16, 16}, {16, 16, 16}, 0), 1);
  EXPECT_EQ(level_count({60, 70, 80}, {16, 16, 16}, 6), 6);  // 60 -> 2 voxels at level 5
  EXPECT_THROW(level_count({60, 70, 80}, {16, 16, 16}, 8), Error);
  EXPECT_THROW(level_count({60, 70, 80}, {16, 16, 16}, -1), Error);
}

}  // namespace
}  // namespace volseg::io
