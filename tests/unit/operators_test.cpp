// SPDX-License-Identifier: MIT
// The operators' kernels against brute force: ball erosion and dilation with
// scikit-image's border rule, Otsu and multi-Otsu by exhaustive search,
// percentiles, and the options' parsing.
#include <gtest/gtest.h>

#include <random>
#include <vector>

#include "volseg/io/error.hpp"
#include "volseg/segment/operators.hpp"

namespace volseg::segment {
namespace {

// Erosion: every ball offset inside the buffer is foreground (outside
// counts as foreground); dilation: some ball offset inside is foreground.
std::vector<std::uint8_t> brute_morph(const std::vector<std::uint8_t>& in, const io::Index3& s, int r, bool erode) {
  std::vector<std::uint8_t> out(in.size());
  for (std::int64_t z = 0; z < s[0]; ++z)
    for (std::int64_t y = 0; y < s[1]; ++y)
      for (std::int64_t x = 0; x < s[2]; ++x) {
        bool all = true, any = false;
        for (int dz = -r; dz <= r; ++dz)
          for (int dy = -r; dy <= r; ++dy)
            for (int dx = -r; dx <= r; ++dx) {
              if (dz * dz + dy * dy + dx * dx > r * r) continue;
              const std::int64_t zz = z + dz, yy = y + dy, xx = x + dx;
              if (zz < 0 || yy < 0 || xx < 0 || zz >= s[0] || yy >= s[1] || xx >= s[2]) continue;
              const bool v = in[static_cast<std::size_t>((zz * s[1] + yy) * s[2] + xx)] != 0;
              all = all && v;
              any = any || v;
            }
        out[static_cast<std::size_t>((z * s[1] + y) * s[2] + x)] = erode ? all : any;
      }
  return out;
}

TEST(Operators, BallRowsAreScikitImagesBall) {
  // ball(1): 7 voxels, ball(2): 33, ball(3): 123 (skimage.morphology.ball(r).sum())
  for (const auto& [radius, voxels] : {std::pair{1, 7}, std::pair{2, 33}, std::pair{3, 123}}) {
    int count = 0;
    for (const auto& row : ball_rows(radius)) count += 2 * row.half_width + 1;
    EXPECT_EQ(count, voxels) << "ball(" << radius << ")";
  }
}

TEST(Operators, ErosionAndDilationEqualBruteForce) {
  std::mt19937 rng(5);
  const io::Index3 shape{9, 11, 13};
  for (int radius : {1, 2, 3, 5, 6})  // 5 and 6: the run tables of larger balls
    for (double density : {0.3, 0.8}) {
      std::bernoulli_distribution on(density);
      std::vector<std::uint8_t> in(9 * 11 * 13), out(in.size());
      for (auto& v : in) v = on(rng);
      for (bool erode : {true, false}) {
        morph_ball(in.data(), out.data(), shape, radius, erode);
        EXPECT_EQ(out, brute_morph(in, shape, radius, erode))
            << (erode ? "erosion" : "dilation") << " radius " << radius << " density " << density;
      }
    }
}

TEST(Operators, ErosionKeepsABlockOnTheBoundary) {
  const io::Index3 shape{6, 6, 6};
  std::vector<std::uint8_t> in(216, 1), out(216);
  morph_ball(in.data(), out.data(), shape, 2, true);
  EXPECT_EQ(out, in);  // outside counts as foreground: nothing is eaten
}

Histogram counts_of(const std::vector<double>& values, int bins, double lo, double hi) {
  HistogramEdges edges;
  edges.lo = lo;
  edges.hi = hi;
  edges.bins = bins;
  Histogram h(edges);
  for (double v : values) h.add(v);
  return h;
}

// The between-class variance sum of S^2 / W over the classes that thresholds (last bins) make.
double objective(const Histogram& h, const std::vector<int>& last) {
  double total = 0;
  int begin = 0;
  std::vector<int> ends = last;
  ends.push_back(h.edges().bins - 1);
  for (int end : ends) {
    double w = 0, s = 0;
    for (int i = begin; i <= end; ++i) {
      const double c = static_cast<double>(h.counts()[static_cast<std::size_t>(i)]);
      w += c;
      s += c * (h.edges().edge(i) + h.edges().edge(i + 1)) / 2;
    }
    if (w > 0) total += s * s / w;
    begin = end + 1;
  }
  return total;
}

TEST(Operators, OtsuAndMultiOtsuMaximiseTheBetweenClassVariance) {
  std::mt19937 rng(11);
  std::normal_distribution<double> a(2, 0.5), b(5, 0.7), c(8, 0.4);
  std::vector<double> values;
  for (int i = 0; i < 3000; ++i) values.push_back(a(rng));
  for (int i = 0; i < 2000; ++i) values.push_back(b(rng));
  for (int i = 0; i < 1000; ++i) values.push_back(c(rng));
  const auto h = counts_of(values, 40, 0, 10);
  // Exhaustive: every pair of last bins for 3 classes, every bin for 2.
  double best2 = -1, best3 = -1;
  for (int i = 0; i + 1 < 40; ++i) {
    best2 = std::max(best2, objective(h, {i}));
    for (int j = i + 1; j + 1 < 40; ++j) best3 = std::max(best3, objective(h, {i, j}));
  }
  const auto two = otsu_bins(h, 2);
  const auto three = otsu_bins(h, 3);
  EXPECT_NEAR(objective(h, two), best2, 1e-9 * best2);
  EXPECT_NEAR(objective(h, three), best3, 1e-9 * best3);
  EXPECT_LT(three[0], three[1]);
  // The lower threshold of two classes falls between the first two modes.
  const double t = choose_threshold(h, parse_threshold_rule("--lo", "otsu"), true);
  EXPECT_GT(t, 2.5);
  EXPECT_LT(t, 5);
}

TEST(Operators, IntegerBinsGiveIntegersAndPercentiles) {
  const auto edges = HistogramEdges::over(0, 9, io::DType::u8);
  ASSERT_TRUE(edges.integers);
  Histogram h(edges);
  for (int v = 0; v < 10; ++v)
    for (int k = 0; k < (v < 5 ? 10 : 30); ++k) h.add(v);
  const double lo = choose_threshold(h, parse_threshold_rule("--lo", "otsu"), true);
  const double hi = choose_threshold(h, parse_threshold_rule("--hi", "otsu"), false);
  EXPECT_EQ(lo, hi + 1);
  EXPECT_EQ(lo, std::floor(lo));
  EXPECT_EQ(choose_threshold(h, parse_threshold_rule("--lo", "p50"), true), 6);  // 50 below 5, 200 in all
  EXPECT_EQ(choose_threshold(h, parse_threshold_rule("--lo", "p100"), true), 9);
}

TEST(Operators, BadRulesAndRadiiAreRefused) {
  EXPECT_THROW(parse_threshold_rule("--lo", "multiotsu:3:3"), Error);
  EXPECT_THROW(parse_threshold_rule("--lo", "multiotsu:1:1"), Error);
  EXPECT_THROW(parse_threshold_rule("--lo", "multiotsu:3"), Error);
  EXPECT_THROW(parse_threshold_rule("--lo", "p101"), Error);
  EXPECT_THROW(parse_threshold_rule("--lo", "px"), Error);
  EXPECT_THROW(parse_radius("--open", "-1"), Error);
  EXPECT_THROW(parse_radius("--open", "2.5"), Error);
  EXPECT_THROW(parse_radius("--open", "33"), Error);
  EXPECT_EQ(parse_radius("--open", "32"), 32);
  MaskOperators o;
  o.open = 2;
  o.close = 2;  // 8 ghost layers
  EXPECT_NO_THROW(check_operators(o, {8, 64, 64}));
  EXPECT_THROW(check_operators(o, {7, 64, 64}), Error);
  Histogram constant(HistogramEdges::over(3, 3, io::DType::f32));
  constant.add(3);
  EXPECT_THROW(otsu_bins(constant, 2), Error);
}

}  // namespace
}  // namespace volseg::segment
