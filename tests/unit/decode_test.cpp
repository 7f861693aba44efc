// SPDX-License-Identifier: MIT
// The decoder: every dtype to float and double, CF unpacking, and invalid
// voxels to NaN by exactly the threshold kernel's rules.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "volseg/io/error.hpp"
#include "volseg/segment/decode.hpp"
#include "volseg/segment/threshold.hpp"

using namespace volseg;
using segment::Decoder;

namespace {

template <class T>
std::vector<double> decode(const io::VolumeInfo& info, const std::vector<T>& values) {
  std::vector<double> out(values.size(), -12345);
  Decoder(info).to_double(values.data(), static_cast<std::int64_t>(values.size()), out.data());
  return out;
}

template <class T>
std::vector<float> decode_float(const io::VolumeInfo& info, const std::vector<T>& values) {
  std::vector<float> out(values.size(), -12345);
  Decoder(info).to_float(values.data(), static_cast<std::int64_t>(values.size()), out.data());
  return out;
}

io::VolumeInfo info_of(io::DType dtype) {
  io::VolumeInfo info;
  info.dtype = dtype;
  return info;
}

// The kernel's verdict on each value: valid when it is counted as valid with
// a threshold range that holds every value.
template <class T>
std::vector<bool> kernel_valid(const io::VolumeInfo& info, const std::vector<T>& values) {
  std::vector<bool> result;
  const segment::ThresholdKernel kernel(info.dtype,
                                        {-1e300, 1e300, info.fill_value, info.valid_range, info.missing_value});
  for (const T& value : values) {
    segment::Stats stats;
    std::uint8_t mask = 0;
    kernel.run(reinterpret_cast<const std::byte*>(&value), 1, false, &mask, stats);
    result.push_back(stats.valid == 1);
  }
  return result;
}

template <class T>
void expect_every_type_decodes(io::DType dtype) {
  SCOPED_TRACE(std::string(io::dtype_name(dtype)));
  const std::vector<T> values{std::numeric_limits<T>::lowest(), T(0), T(1), T(100), std::numeric_limits<T>::max()};
  const auto info = info_of(dtype);
  const auto out = decode(info, values);
  const auto out_float = decode_float(info, values);
  for (std::size_t i = 0; i < values.size(); ++i) {
    EXPECT_EQ(out[i], static_cast<double>(values[i])) << i;
    EXPECT_EQ(out_float[i], static_cast<float>(values[i])) << i;
  }
}

}  // namespace

TEST(Decoder, EveryDtypePlain) {
  expect_every_type_decodes<std::int8_t>(io::DType::i8);
  expect_every_type_decodes<std::uint8_t>(io::DType::u8);
  expect_every_type_decodes<std::int16_t>(io::DType::i16);
  expect_every_type_decodes<std::uint16_t>(io::DType::u16);
  expect_every_type_decodes<std::int32_t>(io::DType::i32);
  expect_every_type_decodes<std::uint32_t>(io::DType::u32);
  expect_every_type_decodes<std::int64_t>(io::DType::i64);
  expect_every_type_decodes<std::uint64_t>(io::DType::u64);
  expect_every_type_decodes<float>(io::DType::f32);
  expect_every_type_decodes<double>(io::DType::f64);
}

TEST(Decoder, NanIsInvalid) {
  const std::vector<float> values{1.5f, std::numeric_limits<float>::quiet_NaN(), -2.0f};
  const auto out = decode(info_of(io::DType::f32), values);
  EXPECT_EQ(out[0], 1.5);
  EXPECT_TRUE(std::isnan(out[1]));
  EXPECT_EQ(out[2], -2.0);
}

TEST(Decoder, FillMissingAndValidRangeGiveNan) {
  auto info = info_of(io::DType::i16);
  info.fill_value = -999;
  info.missing_value = -1;
  info.valid_range = std::array<double, 2>{0.5, 100};  // stored units; 0 is below it
  const std::vector<std::int16_t> values{-999, -1, 0, 1, 100, 101, 50};
  const auto out = decode(info, values);
  const auto kernel = kernel_valid(info, values);
  const std::vector<bool> expected{false, false, false, true, true, false, true};
  for (std::size_t i = 0; i < values.size(); ++i) {
    EXPECT_EQ(!std::isnan(out[i]), expected[i]) << i;
    EXPECT_EQ(!std::isnan(out[i]), kernel[i]) << "decoder and kernel disagree on value " << values[i];
    if (expected[i]) {
      EXPECT_EQ(out[i], values[i]);
    }
  }
}

TEST(Decoder, FloatFillIsComparedInTheStoredType) {
  auto info = info_of(io::DType::f32);
  info.fill_value = static_cast<long double>(9.96921e36f);  // NetCDF's default float fill
  const std::vector<float> values{9.96921e36f, 1.0f, std::nextafter(9.96921e36f, 0.0f)};
  const auto out = decode(info, values);
  EXPECT_TRUE(std::isnan(out[0]));
  EXPECT_EQ(out[1], 1.0);
  EXPECT_FALSE(std::isnan(out[2]));
}

TEST(Decoder, PackedValuesAreUnpacked) {
  auto info = info_of(io::DType::i16);
  info.scale_factor = 0.5;
  info.add_offset = 10;
  info.fill_value = -32768;
  info.valid_range = std::array<double, 2>{-100, 100};  // stored units
  const std::vector<std::int16_t> values{-32768, -100, 0, 3, 100, 101};
  const auto out = decode(info, values);
  EXPECT_TRUE(std::isnan(out[0]));
  EXPECT_EQ(out[1], -40);
  EXPECT_EQ(out[2], 10);
  EXPECT_EQ(out[3], 11.5);
  EXPECT_EQ(out[4], 60);
  EXPECT_TRUE(std::isnan(out[5]));
  const auto floats = decode_float(info, values);
  EXPECT_EQ(floats[3], 11.5f);
  double lo = 0, hi = 0;
  ASSERT_TRUE(Decoder(info).declared_range(lo, hi));
  EXPECT_EQ(lo, -40);
  EXPECT_EQ(hi, 60);
  // A negative scale reverses the declared range.
  info.scale_factor = -2;
  info.add_offset = 0;
  ASSERT_TRUE(Decoder(info).declared_range(lo, hi));
  EXPECT_EQ(lo, -200);
  EXPECT_EQ(hi, 200);
  EXPECT_FALSE(Decoder(info_of(io::DType::f32)).declared_range(lo, hi));
}

TEST(Decoder, OnlyAScaleOrOnlyAnOffsetStillUnpacks) {
  auto info = info_of(io::DType::u8);
  info.add_offset = -0.5;
  EXPECT_EQ(decode(info, std::vector<std::uint8_t>{3})[0], 2.5);
  info = info_of(io::DType::u8);
  info.scale_factor = 4;
  EXPECT_EQ(decode(info, std::vector<std::uint8_t>{3})[0], 12);
  info.scale_factor = 0;
  EXPECT_THROW(Decoder{info}, Error);
}

TEST(Decoder, Int64FillThatNoDoubleHoldsIsComparedExactly) {
  // 2^53 + 1 has no double; rounded through a double it would equal 2^53,
  // and a decoder comparing in double would wrongly drop 2^53 as well.
  const std::int64_t big = (std::int64_t{1} << 53);
  auto info = info_of(io::DType::i64);
  info.fill_value = static_cast<long double>(big + 1);
  const std::vector<std::int64_t> values{big, big + 1, big + 2};
  const auto out = decode(info, values);
  const auto kernel = kernel_valid(info, values);
  EXPECT_FALSE(std::isnan(out[0]));
  EXPECT_EQ(out[0], static_cast<double>(big));
  EXPECT_TRUE(std::isnan(out[1]));
  EXPECT_FALSE(std::isnan(out[2]));
  for (std::size_t i = 0; i < values.size(); ++i) EXPECT_EQ(!std::isnan(out[i]), kernel[i]) << i;
  // The NetCDF default fill of uint64 (2^64 - 2): max stays valid.
  auto u = info_of(io::DType::u64);
  u.fill_value = 18446744073709551614.0L;
  const std::vector<std::uint64_t> unsigned_values{18446744073709551614ull, 18446744073709551615ull};
  const auto unsigned_out = decode(u, unsigned_values);
  EXPECT_TRUE(std::isnan(unsigned_out[0]));
  EXPECT_FALSE(std::isnan(unsigned_out[1]));
}

TEST(Decoder, AValidRangeNoValueReachesMakesEverythingInvalid) {
  auto info = info_of(io::DType::u8);
  info.valid_range = std::array<double, 2>{300, 400};
  const auto out = decode(info, std::vector<std::uint8_t>{0, 255});
  EXPECT_TRUE(std::isnan(out[0]));
  EXPECT_TRUE(std::isnan(out[1]));
}

TEST(Decoder, LongRunsMatchTheKernelValueByValue) {
  // Long enough for the vectorised loop body, with invalid values scattered.
  auto info = info_of(io::DType::i32);
  info.fill_value = 7;
  info.valid_range = std::array<double, 2>{-50, 50};
  std::vector<std::int32_t> values(1003);
  for (std::size_t i = 0; i < values.size(); ++i) values[i] = static_cast<std::int32_t>((i * 37) % 120) - 60;
  const auto out = decode(info, values);
  const auto kernel = kernel_valid(info, values);
  std::size_t invalid = 0;
  for (std::size_t i = 0; i < values.size(); ++i) {
    ASSERT_EQ(!std::isnan(out[i]), kernel[i]) << i;
    if (kernel[i]) {
      ASSERT_EQ(out[i], values[i]);
    }
    invalid += !kernel[i];
  }
  EXPECT_GT(invalid, 100u);
}
