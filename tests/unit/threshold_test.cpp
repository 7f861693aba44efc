// SPDX-License-Identifier: MIT
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "volseg/io/byteswap.hpp"
#include "volseg/io/error.hpp"
#include "volseg/segment/threshold.hpp"

using namespace volseg::segment;
using volseg::io::DType;

namespace {

template <class T>
std::vector<std::uint8_t> run(DType dtype, const std::vector<T>& values, Threshold threshold, Stats& stats,
                              bool swapped = false) {
  std::vector<T> input = values;
  if constexpr (sizeof(T) > 1) {
    if (swapped) {
      for (T& v : input) {
        using U = std::conditional_t<sizeof(T) == 2, std::uint16_t,
                                     std::conditional_t<sizeof(T) == 4, std::uint32_t, std::uint64_t>>;
        v = std::bit_cast<T>(volseg::io::byteswap(std::bit_cast<U>(v)));
      }
    }
  }
  std::vector<std::uint8_t> mask(values.size(), 7);
  ThresholdKernel(dtype, threshold)
      .run(reinterpret_cast<const std::byte*>(input.data()), static_cast<std::int64_t>(input.size()), swapped,
           mask.data(), stats);
  return mask;
}

}  // namespace

TEST(Threshold, InclusiveBoundsAreExactForFloats) {
  // 0.1 is not a float; the nearest float above it is in range, the one
  // below is not, whatever the rounding of lo to float would say.
  const float below = std::nextafter(static_cast<float>(0.1), 0.f) < 0.1 ? std::nextafter(static_cast<float>(0.1), 0.f)
                                                                         : static_cast<float>(0.1);
  std::vector<float> v = {0.0f, 0.1f, below, 0.5f, 1.0f, std::nextafter(1.0f, 2.0f)};
  Stats stats;
  auto mask = run<float>(DType::f32, v, {0.1, 1.0, {}, {}, {}}, stats);
  for (std::size_t i = 0; i < v.size(); ++i)
    EXPECT_EQ(mask[i], static_cast<double>(v[i]) >= 0.1 && static_cast<double>(v[i]) <= 1.0) << v[i];
  EXPECT_EQ(stats.in_range, 3u);  // 0.1f (> 0.1), 0.5, 1.0
}

TEST(Threshold, NaNFillAndValidRangeAreOutside) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  std::vector<double> v = {1, 2, nan, -9999, 3, 50, 4};
  Stats stats;
  auto mask = run<double>(DType::f64, v, {0, 100, -9999.0, std::array<double, 2>{0, 10}, 4.0}, stats);
  EXPECT_EQ(mask, (std::vector<std::uint8_t>{1, 1, 0, 0, 1, 0, 0}));  // 4 is the missing_value
  EXPECT_EQ(stats.valid, 3u);
  EXPECT_EQ(stats.in_range, 3u);
  EXPECT_EQ(stats.min, 1);
  EXPECT_EQ(stats.max, 3);
}

TEST(Threshold, IntegerThresholdsRoundInward) {
  std::vector<std::int16_t> v = {-3, -2, -1, 0, 1, 2, 3};
  Stats stats;
  auto mask = run<std::int16_t>(DType::i16, v, {-1.5, 1.5, {}, {}, {}}, stats);
  EXPECT_EQ(mask, (std::vector<std::uint8_t>{0, 0, 1, 1, 1, 0, 0}));
  Stats none;
  auto empty = run<std::int16_t>(DType::i16, v, {0.2, 0.8, {}, {}, {}}, none);
  EXPECT_EQ(none.in_range, 0u);
  EXPECT_EQ(none.valid, v.size());
  Stats beyond;
  run<std::int16_t>(DType::i16, v, {40000, 50000, {}, {}, {}}, beyond);
  EXPECT_EQ(beyond.in_range, 0u);
  EXPECT_EQ(beyond.min, -3);
}

TEST(Threshold, SwappedInputGivesTheSameMask) {
  std::mt19937 generator(3);
  std::uniform_int_distribution<int> values(0, 65535);
  std::vector<std::uint16_t> v(10007);
  for (auto& x : v) x = static_cast<std::uint16_t>(values(generator));
  Stats plain, swapped;
  auto a = run<std::uint16_t>(DType::u16, v, {1000, 40000, 7.0, {}, {}}, plain);
  auto b = run<std::uint16_t>(DType::u16, v, {1000, 40000, 7.0, {}, {}}, swapped, true);
  EXPECT_EQ(a, b);
  EXPECT_EQ(plain.in_range, swapped.in_range);
  EXPECT_EQ(plain.histogram, swapped.histogram);
  EXPECT_EQ(plain.min, swapped.min);
}

TEST(Threshold, StatsMatchABruteForceCount) {
  std::mt19937 generator(5);
  std::normal_distribution<float> values(0.f, 1.f);
  std::vector<float> v(50000);
  for (auto& x : v) x = values(generator);
  Stats stats;
  auto mask = run<float>(DType::f32, v, {-0.5, 1.25, {}, {}, {}}, stats);
  std::uint64_t expected = 0, histogram_total = 0;
  float lo = v[0], hi = v[0];
  for (std::size_t i = 0; i < v.size(); ++i) {
    bool in = v[i] >= -0.5f && v[i] <= 1.25f;
    expected += in;
    ASSERT_EQ(mask[i], in);
    lo = std::min(lo, v[i]);
    hi = std::max(hi, v[i]);
  }
  for (auto count : stats.histogram) histogram_total += count;
  EXPECT_EQ(stats.in_range, expected);
  EXPECT_EQ(histogram_total, expected);
  EXPECT_EQ(stats.min, lo);
  EXPECT_EQ(stats.max, hi);
}

TEST(Threshold, HistogramBinsTheInRangeValuesOverLoHi) {
  // Values at bin centres (no rounding question), some outside [lo, hi].
  const double lo = -2, hi = 6, width = (hi - lo) / Stats::bins;
  std::mt19937 generator(9);
  std::uniform_int_distribution<int> bin_of(-20, Stats::bins + 19);
  std::array<std::uint64_t, Stats::bins> expected{};
  for (DType dtype : {DType::f32, DType::f64}) {
    std::vector<double> v(70001);
    expected.fill(0);
    for (auto& x : v) {
      int bin = bin_of(generator);
      x = lo + (bin + 0.5) * width;
      if (bin >= 0 && bin < Stats::bins) ++expected[static_cast<std::size_t>(bin)];
    }
    Stats stats;
    if (dtype == DType::f64) {
      run<double>(dtype, v, {lo, hi, {}, {}, {}}, stats);
    } else {
      std::vector<float> f(v.begin(), v.end());
      run<float>(dtype, f, {lo, hi, {}, {}, {}}, stats);
    }
    EXPECT_EQ(stats.histogram, expected) << volseg::io::dtype_name(dtype);
  }
}

TEST(Threshold, RefusesBadThresholds) {
  EXPECT_THROW(ThresholdKernel(DType::f32, Threshold{2, 1, {}, {}, {}}), volseg::Error);
  EXPECT_THROW(ThresholdKernel(DType::f32, Threshold{std::nan(""), 1, {}, {}, {}}), volseg::Error);
}

TEST(Stats, MergeCombinesCountsAndExtremes) {
  Stats a, b, empty;
  a.voxels = a.valid = a.in_range = 2;
  a.min = 1;
  a.max = 5;
  b.voxels = b.valid = 3;
  b.min = -1;
  b.max = 4;
  empty.voxels = 4;
  a.merge(b);
  a.merge(empty);
  EXPECT_EQ(a.voxels, 9u);
  EXPECT_EQ(a.valid, 5u);
  EXPECT_EQ(a.min, -1);
  EXPECT_EQ(a.max, 5);
}

TEST(Threshold, SixtyFourBitBoundsAreExactAtTheEndsOfTheType) {
  // The largest values do not survive a round trip through double; bounds
  // past the type's range must not overflow.
  const std::uint64_t top = std::numeric_limits<std::uint64_t>::max();
  std::vector<std::uint64_t> u = {0, 1, top - 1, top};
  Stats s1;
  EXPECT_EQ(run<std::uint64_t>(DType::u64, u, {1e19, 1e30, {}, {}, {}}, s1), (std::vector<std::uint8_t>{0, 0, 1, 1}));
  Stats s2;
  EXPECT_EQ(run<std::uint64_t>(DType::u64, u, {2e19, 3e19, {}, {}, {}}, s2), (std::vector<std::uint8_t>{0, 0, 0, 0}));
  const std::int64_t low = std::numeric_limits<std::int64_t>::lowest();
  std::vector<std::int64_t> i = {low, -1, 0, std::numeric_limits<std::int64_t>::max()};
  Stats s3;
  EXPECT_EQ(run<std::int64_t>(DType::i64, i, {-1e30, -0.5, {}, {}, {}}, s3), (std::vector<std::uint8_t>{1, 1, 0, 0}));
  Stats s4;
  EXPECT_EQ(run<std::int64_t>(DType::i64, i, {0, 1e30, {}, {}, {}}, s4), (std::vector<std::uint8_t>{0, 0, 1, 1}));
  std::vector<std::int8_t> b = {-128, -1, 0, 127};
  Stats s5;
  EXPECT_EQ(run<std::int8_t>(DType::i8, b, {-1, 200, {}, {}, {}}, s5), (std::vector<std::uint8_t>{0, 1, 1, 1}));
}

// The f32 loop written by hand for AVX2 (32 values a step, a scalar tail),
// with and without a valid range, against a brute force over lengths around
// its step and the kernel's chunk, with NaN and infinities among the values.
TEST(Threshold, Float32VectorLoopMatchesABruteForceWithNaNAndInfinities) {
  std::mt19937 generator(11);
  std::uniform_real_distribution<float> uniform(-2.f, 2.f);
  std::uniform_int_distribution<int> special(0, 40);
  const float inf = std::numeric_limits<float>::infinity(), nan = std::numeric_limits<float>::quiet_NaN();
  for (const std::size_t n : {0, 1, 31, 32, 33, 95, 4095, 4096, 4097, 12345}) {
    std::vector<float> v(n);
    for (auto& x : v) {
      const int s = special(generator);
      x = s == 0 ? nan : s == 1 ? inf : s == 2 ? -inf : uniform(generator);
    }
    for (const bool with_valid_range : {false, true}) {
      Threshold threshold{-0.75, 1.5, {}, {}, {}};
      if (with_valid_range) threshold.valid_range = std::array<double, 2>{-1.0, 1.0};
      const double vmin = with_valid_range ? -1.0 : -INFINITY, vmax = with_valid_range ? 1.0 : INFINITY;
      Stats stats;
      const auto mask = run<float>(DType::f32, v, threshold, stats);
      std::uint64_t valid = 0, inside = 0;
      double lo = INFINITY, hi = -INFINITY;
      for (std::size_t i = 0; i < n; ++i) {
        const double x = v[i];
        const bool ok = x >= vmin && x <= vmax;  // false for NaN
        const bool in = ok && x >= -0.75 && x <= 1.5;
        ASSERT_EQ(mask[i], in) << "n " << n << ", value " << v[i] << " at " << i;
        valid += ok;
        inside += in;
        if (ok) lo = std::min(lo, x), hi = std::max(hi, x);
      }
      EXPECT_EQ(stats.voxels, n);
      EXPECT_EQ(stats.valid, valid) << "n " << n;
      EXPECT_EQ(stats.in_range, inside) << "n " << n;
      if (valid > 0) {
        EXPECT_EQ(stats.min, lo) << "n " << n;
        EXPECT_EQ(stats.max, hi) << "n " << n;
      }
    }
  }
}

// Binning is optional (segment --histogram): without it the mask and every
// other statistic are the same and the histogram stays empty.
TEST(Threshold, WithoutTheHistogramEverythingElseIsTheSame) {
  std::mt19937 generator(3);
  std::uniform_real_distribution<float> uniform(0.f, 1.f);
  std::vector<float> v(100000);
  for (auto& x : v) x = uniform(generator);
  const Threshold threshold{0.25, 0.5, {}, {}, {}};
  Stats binned, plain;
  std::vector<std::uint8_t> with(v.size()), without(v.size());
  ThresholdKernel(DType::f32, threshold, true)
      .run(reinterpret_cast<const std::byte*>(v.data()), static_cast<std::int64_t>(v.size()), false, with.data(),
           binned);
  ThresholdKernel(DType::f32, threshold, false)
      .run(reinterpret_cast<const std::byte*>(v.data()), static_cast<std::int64_t>(v.size()), false, without.data(),
           plain);
  EXPECT_EQ(with, without);
  EXPECT_EQ(plain.in_range, binned.in_range);
  EXPECT_EQ(plain.valid, binned.valid);
  EXPECT_EQ(plain.min, binned.min);
  EXPECT_EQ(plain.max, binned.max);
  std::uint64_t total = 0;
  for (auto count : binned.histogram) total += count;
  EXPECT_EQ(total, binned.in_range);
  for (auto count : plain.histogram) EXPECT_EQ(count, 0u);
}
