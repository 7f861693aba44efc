// SPDX-License-Identifier: MIT
// The closed-form lattice count of the shells field against a voxel-by-voxel
// count of the generator's own values.
#include <gtest/gtest.h>

#include <vector>

#include "volseg/datasets/generate.hpp"

using namespace volseg;
using io::DType;
using io::Index3;

namespace {
std::uint64_t brute_force(const Index3& dims, DType dtype, std::int64_t width, double lo, double hi) {
  io::VolumeInfo info;
  info.dims = dims;
  info.dtype = DType::f64;
  std::vector<double> values(static_cast<std::size_t>(info.voxels()));
  datasets::fill({datasets::Field::shells, width, 1}, info, info.whole(), values.data());
  const double top = io::dtype_highest(dtype);
  std::uint64_t count = 0;
  for (double v : values) {
    double stored = std::min(v, top);
    count += stored >= lo && stored <= hi;
  }
  return count;
}
}  // namespace

TEST(Shells, ExactCountMatchesBruteForce) {
  for (Index3 dims : {Index3{16, 16, 16}, Index3{17, 23, 30}, Index3{1, 9, 40}, Index3{33, 1, 2}}) {
    for (std::int64_t width : {1, 2, 5}) {
      for (auto [lo, hi] : {std::pair{0.0, 0.0}, {1.0, 3.0}, {2.5, 4.5}, {0.0, 1000.0}, {7.0, 7.0}, {-5.0, -1.0}}) {
        EXPECT_EQ(datasets::shells_in_range(dims, DType::f32, width, lo, hi),
                  brute_force(dims, DType::f32, width, lo, hi))
            << dims[0] << "x" << dims[1] << "x" << dims[2] << " w" << width << " [" << lo << "," << hi << "]";
      }
    }
  }
}

TEST(Shells, SaturatingTypesKeepOuterShellsAtTheMaximum) {
  // width 1 on 600^2 x 2 reaches shell 424: u8 stores every k >= 255 as 255.
  Index3 dims{2, 600, 600};
  EXPECT_EQ(datasets::shells_in_range(dims, DType::u8, 1, 250, 255), brute_force(dims, DType::u8, 1, 250, 255));
  EXPECT_EQ(datasets::shells_in_range(dims, DType::u8, 1, 255, 255), brute_force(dims, DType::u8, 1, 255, 255));
  EXPECT_GT(datasets::shells_in_range(dims, DType::u8, 1, 255, 255), 0u);
}
