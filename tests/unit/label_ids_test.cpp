// SPDX-License-Identifier: MIT
// io::widen_labels, label_id and narrow_labels: every integer type to ids and
// back; a negative label and a float type refused, naming the file.
#include <gtest/gtest.h>

#include <array>
#include <cstdint>
#include <cstring>
#include <vector>

#include "volseg/io/error.hpp"
#include "volseg/io/label_ids.hpp"

namespace {

using volseg::io::DType;

TEST(LabelIds, EveryIntegerTypeWidensAndNarrowsBack) {
  const std::vector<std::uint64_t> ids{0, 1, 7, 127};
  for (const DType t : {DType::i8, DType::u8, DType::i16, DType::u16, DType::i32, DType::u32, DType::i64, DType::u64}) {
    std::vector<std::byte> raw(ids.size() * 8);
    volseg::io::narrow_labels(t, ids.data(), raw.data(), ids.size());
    std::vector<std::uint64_t> back(ids.size());
    volseg::io::widen_labels(t, raw.data(), back.data(), back.size(), "l.nhdr");
    EXPECT_EQ(back, ids) << static_cast<int>(t);
  }
}

TEST(LabelIds, TheWidestIdsKeepEveryBit) {
  const std::uint64_t big = 0xfedcba9876543210ull;
  std::uint64_t id = 0;
  volseg::io::widen_labels(DType::u64, &big, &id, 1, "l.nhdr");
  EXPECT_EQ(id, big);
  const std::uint32_t u = 0xfffffffeu;
  volseg::io::widen_labels(DType::u32, &u, &id, 1, "l.nhdr");
  EXPECT_EQ(id, 0xfffffffeull);
}

TEST(LabelIds, OneLabelAtAnyAlignment) {
  std::array<std::byte, 9> bytes{};
  const std::uint64_t v = 123456789012ull;
  std::memcpy(bytes.data() + 1, &v, 8);  // a voxel inside a strided plane
  EXPECT_EQ(volseg::io::label_id(bytes.data() + 1, DType::u64, "l.nhdr"), v);
}

TEST(LabelIds, ANegativeLabelIsRefusedNamingTheFile) {
  const std::int16_t raw[3] = {4, -3, 2};
  std::uint64_t ids[3];
  try {
    volseg::io::widen_labels(DType::i16, raw, ids, 3, "cells.nc");
    FAIL() << "a negative label was taken";
  } catch (const volseg::Error& e) {
    EXPECT_STREQ(e.what(), "cells.nc holds a negative label (-3): ids are >= 0");
  }
}

TEST(LabelIds, AFloatTypeIsRefused) {
  const float raw[1] = {1.0f};
  std::uint64_t id = 0;
  EXPECT_THROW(volseg::io::widen_labels(DType::f32, raw, &id, 1, "v.nc"), volseg::Error);
  EXPECT_THROW(volseg::io::label_id(reinterpret_cast<const std::byte*>(raw), DType::f64, "v.nc"), volseg::Error);
}

}  // namespace
