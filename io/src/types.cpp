// SPDX-License-Identifier: MIT
#include "volseg/io/types.hpp"

#include <algorithm>
#include <bit>
#include <limits>

#include "volseg/io/error.hpp"

namespace volseg::io {

std::size_t dtype_size(DType dtype) {
  switch (dtype) {
    case DType::i8: return 1;
    case DType::u8: return 1;
    case DType::i16: return 2;
    case DType::u16: return 2;
    case DType::i32: return 4;
    case DType::u32: return 4;
    case DType::i64: return 8;
    case DType::u64: return 8;
    case DType::f32: return 4;
    case DType::f64: return 8;
  }
  return 0;
}

std::string_view dtype_name(DType dtype) {
  switch (dtype) {
    case DType::i8: return "i8";
    case DType::u8: return "u8";
    case DType::i16: return "i16";
    case DType::u16: return "u16";
    case DType::i32: return "i32";
    case DType::u32: return "u32";
    case DType::i64: return "i64";
    case DType::u64: return "u64";
    case DType::f32: return "f32";
    case DType::f64: return "f64";
  }
  return "?";
}

bool dtype_is_float(DType dtype) { return dtype == DType::f32 || dtype == DType::f64; }

std::optional<DType> parse_dtype(std::string_view name) {
  struct Alias {
    std::string_view name;
    DType dtype;
  };
  static constexpr Alias aliases[] = {
      {"i8", DType::i8},      {"int8", DType::i8},      {"byte", DType::i8},
      {"u8", DType::u8},      {"uint8", DType::u8},     {"uchar", DType::u8},
      {"u32", DType::u32},    {"uint32", DType::u32},   {"uint", DType::u32},
      {"i64", DType::i64},    {"int64", DType::i64},
      {"u64", DType::u64},    {"uint64", DType::u64},
      {"i16", DType::i16},    {"int16", DType::i16},    {"short", DType::i16},
      {"u16", DType::u16},    {"uint16", DType::u16},   {"ushort", DType::u16},
      {"i32", DType::i32},    {"int32", DType::i32},    {"int", DType::i32},
      {"f32", DType::f32},    {"float32", DType::f32},  {"float", DType::f32},
      {"f64", DType::f64},    {"float64", DType::f64},  {"double", DType::f64},
  };
  for (const auto& alias : aliases)
    if (alias.name == name) return alias.dtype;
  return std::nullopt;
}

template <class T>
static double lowest() {
  return static_cast<double>(std::numeric_limits<T>::lowest());
}
template <class T>
static double highest() {
  return static_cast<double>(std::numeric_limits<T>::max());
}

double dtype_lowest(DType dtype) {
  switch (dtype) {
    case DType::i8: return lowest<std::int8_t>();
    case DType::u8: return lowest<std::uint8_t>();
    case DType::i16: return lowest<std::int16_t>();
    case DType::u16: return lowest<std::uint16_t>();
    case DType::i32: return lowest<std::int32_t>();
    case DType::u32: return lowest<std::uint32_t>();
    case DType::i64: return lowest<std::int64_t>();
    case DType::u64: return lowest<std::uint64_t>();
    case DType::f32: return lowest<float>();
    case DType::f64: return lowest<double>();
  }
  return 0;
}

double dtype_highest(DType dtype) {
  switch (dtype) {
    case DType::i8: return highest<std::int8_t>();
    case DType::u8: return highest<std::uint8_t>();
    case DType::i16: return highest<std::int16_t>();
    case DType::u16: return highest<std::uint16_t>();
    case DType::i32: return highest<std::int32_t>();
    case DType::u32: return highest<std::uint32_t>();
    case DType::i64: return highest<std::int64_t>();
    case DType::u64: return highest<std::uint64_t>();
    case DType::f32: return highest<float>();
    case DType::f64: return highest<double>();
  }
  return 0;
}

ByteOrder native_byte_order() {
  return std::endian::native == std::endian::little ? ByteOrder::little : ByteOrder::big;
}

std::string_view byte_order_name(ByteOrder order) { return order == ByteOrder::little ? "little" : "big"; }

bool fits_in_a_file(const Index3& dims, DType dtype) {
  auto bytes = static_cast<std::int64_t>(dtype_size(dtype));
  for (const std::int64_t n : dims) {
    if (n < 0 || (n > 0 && bytes > std::numeric_limits<std::int64_t>::max() / n)) return false;
    bytes *= n;
  }
  return true;
}

std::string to_string(const Extent& extent) {
  std::string text(1, '[');
  for (int a = 0; a < 3; ++a) {
    if (a > 0) text.append(", ");
    text.append(std::to_string(extent.offset[a])).append(1, ':').append(std::to_string(extent.offset[a] + extent.count[a]));
  }
  return text.append(1, ']');
}

Extent intersect(const Extent& a, const Extent& b) {
  Extent r;
  for (int i = 0; i < 3; ++i) {
    const auto lo = std::max(a.offset[i], b.offset[i]);
    const auto hi = std::min(a.offset[i] + a.count[i], b.offset[i] + b.count[i]);
    r.offset[i] = lo;
    r.count[i] = std::max<std::int64_t>(hi - lo, 0);
  }
  return r;
}

Extent with_ghost(const Extent& extent, const Index3& dims, int layers) {
  if (extent.empty()) return extent;
  Extent grown = extent;
  for (int a = 0; a < 3; ++a) {
    const std::int64_t lo = std::max<std::int64_t>(extent.offset[a] - layers, 0);
    const std::int64_t hi = std::min<std::int64_t>(extent.offset[a] + extent.count[a] + layers, dims[a]);
    grown.offset[a] = lo;
    grown.count[a] = hi - lo;
  }
  return grown;
}

void check_inside(const Extent& extent, const Index3& dims) {
  for (int a = 0; a < 3; ++a) {
    if (extent.offset[a] < 0 || extent.count[a] < 0 || extent.offset[a] + extent.count[a] > dims[a])
      throw Error("extent " + to_string(extent) + " is outside the volume " + std::to_string(dims[0]) + "x" +
                  std::to_string(dims[1]) + "x" + std::to_string(dims[2]));
  }
}

void check_volume_size(const Index3& dims, DType dtype, const std::string& what) {
  const auto text = [&] {
    return std::to_string(dims[2]) + "x" + std::to_string(dims[1]) + "x" + std::to_string(dims[0]);
  };
  std::int64_t bytes = static_cast<std::int64_t>(dtype_size(dtype));
  for (int a = 0; a < 3; ++a) {
    if (dims[a] <= 0) throw Error(what + ": a volume of " + text() + " voxels has an empty axis");
    if (__builtin_mul_overflow(bytes, dims[a], &bytes))
      throw Error(what + ": a volume of " + text() + " " + std::string(dtype_name(dtype)) +
                  " voxels is more than 2^63 bytes");
  }
}

}  // namespace volseg::io
