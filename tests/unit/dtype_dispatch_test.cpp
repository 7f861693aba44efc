// SPDX-License-Identifier: MIT
// visit_dtype, the one place a DType becomes a C++ type: every dtype reaches
// its own type exactly once, and a value outside the enumerators throws.
#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <string>
#include <type_traits>
#include <typeindex>
#include <typeinfo>

#include "volseg/io/dtype_dispatch.hpp"
#include "volseg/io/error.hpp"

using namespace volseg;
using io::DType;

namespace {

struct Expected {
  DType dtype;
  std::type_index type;
  const char* name;
};

const Expected kEvery[] = {
    {DType::i8, typeid(std::int8_t), "i8"},    {DType::u8, typeid(std::uint8_t), "u8"},
    {DType::i16, typeid(std::int16_t), "i16"}, {DType::u16, typeid(std::uint16_t), "u16"},
    {DType::i32, typeid(std::int32_t), "i32"}, {DType::u32, typeid(std::uint32_t), "u32"},
    {DType::i64, typeid(std::int64_t), "i64"}, {DType::u64, typeid(std::uint64_t), "u64"},
    {DType::f32, typeid(float), "f32"},        {DType::f64, typeid(double), "f64"},
};

}  // namespace

TEST(DTypeDispatch, EveryDTypeReachesItsOwnType) {
  for (const auto& expected : kEvery) {
    SCOPED_TRACE(expected.name);
    int calls = 0;
    const std::type_index reached = io::visit_dtype(expected.dtype, [&]<class T>(std::type_identity<T>) {
      ++calls;
      return std::type_index(typeid(T));
    });
    EXPECT_EQ(calls, 1);
    EXPECT_EQ(reached, expected.type);
  }
}

TEST(DTypeDispatch, SizeLimitsAndNameFollowTheType) {
  for (const auto& expected : kEvery) {
    SCOPED_TRACE(expected.name);
    io::visit_dtype(expected.dtype, [&]<class T>(std::type_identity<T>) {
      EXPECT_EQ(io::dtype_size(expected.dtype), sizeof(T));
      EXPECT_EQ(io::dtype_lowest(expected.dtype), static_cast<double>(std::numeric_limits<T>::lowest()));
      EXPECT_EQ(io::dtype_highest(expected.dtype), static_cast<double>(std::numeric_limits<T>::max()));
      EXPECT_EQ(io::dtype_is_float(expected.dtype), std::is_floating_point_v<T>);
    });
    EXPECT_EQ(io::dtype_name(expected.dtype), expected.name);
    EXPECT_EQ(io::parse_dtype(expected.name), expected.dtype);
  }
}

TEST(DTypeDispatch, ValueOutsideTheEnumThrows) {
  const auto bad = static_cast<DType>(42);
  bool called = false;
  try {
    io::visit_dtype(bad, [&]<class T>(std::type_identity<T>) { called = true; });
    FAIL() << "visit_dtype accepted DType value 42";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("42"), std::string::npos) << e.what();
  }
  EXPECT_FALSE(called);
  EXPECT_THROW(io::dtype_size(bad), Error);
  EXPECT_EQ(io::dtype_name(bad), "?");
}
