// SPDX-License-Identifier: MIT
#include "volseg/io/types.hpp"

#include <algorithm>
#include <bit>
#include <cctype>
#include <cmath>
#include <limits>
#include <string>

#include "volseg/io/dtype_dispatch.hpp"
#include "volseg/io/error.hpp"

namespace volseg::io {

namespace {

// Every name a dtype is known by. The first name of each type is volseg's own
// (dtype_name); the others are the usual aliases parse_dtype accepts too.
struct DTypeName {
  std::string_view name;
  DType dtype;
};
constexpr DTypeName kNames[] = {
    {"i8", DType::i8},      {"int8", DType::i8},    {"byte", DType::i8},     {"u8", DType::u8},
    {"uint8", DType::u8},   {"uchar", DType::u8},   {"i16", DType::i16},     {"int16", DType::i16},
    {"short", DType::i16},  {"u16", DType::u16},    {"uint16", DType::u16},  {"ushort", DType::u16},
    {"i32", DType::i32},    {"int32", DType::i32},  {"int", DType::i32},     {"u32", DType::u32},
    {"uint32", DType::u32}, {"uint", DType::u32},   {"i64", DType::i64},     {"int64", DType::i64},
    {"u64", DType::u64},    {"uint64", DType::u64}, {"f32", DType::f32},     {"float32", DType::f32},
    {"float", DType::f32},  {"f64", DType::f64},    {"float64", DType::f64}, {"double", DType::f64},
};

}  // namespace

void throw_unknown_dtype(DType dtype) {
  throw Error("unknown data type (DType value " + std::to_string(static_cast<int>(dtype)) + ")");
}

std::size_t dtype_size(DType dtype) {
  return visit_dtype(dtype, []<class T>(std::type_identity<T>) { return sizeof(T); });
}

std::string_view dtype_name(DType dtype) {
  for (const auto& entry : kNames)
    if (entry.dtype == dtype) return entry.name;
  return "?";
}

bool dtype_is_float(DType dtype) { return dtype == DType::f32 || dtype == DType::f64; }

std::optional<DType> parse_dtype(std::string_view name) {
  for (const auto& entry : kNames)
    if (entry.name == name) return entry.dtype;
  return std::nullopt;
}

double dtype_lowest(DType dtype) {
  return visit_dtype(
      dtype, []<class T>(std::type_identity<T>) { return static_cast<double>(std::numeric_limits<T>::lowest()); });
}

double dtype_highest(DType dtype) {
  return visit_dtype(dtype,
                     []<class T>(std::type_identity<T>) { return static_cast<double>(std::numeric_limits<T>::max()); });
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
    text.append(std::to_string(extent.offset[a]))
        .append(1, ':')
        .append(std::to_string(extent.offset[a] + extent.count[a]));
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

namespace volseg::io {

bool Coordinate::positive_down(const std::string& positive) {
  std::string text = positive;
  while (!text.empty() && (text.back() == '\0' || std::isspace(static_cast<unsigned char>(text.back()))))
    text.pop_back();
  for (char& ch : text) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  return text == "down";
}

bool Coordinate::time_units(const std::string& units) { return units.find(" since ") != std::string::npos; }

bool Coordinate::monotonic() const {
  for (std::size_t i = 0; i < values.size(); ++i) {
    if (!std::isfinite(values[i])) return false;
    if (i > 0 && (values[i] == values[i - 1] || (values[i] > values[i - 1]) != (values[1] > values[0]))) return false;
  }
  return true;
}

bool VolumeInfo::set_coordinate(std::size_t xyz, Coordinate c) {
  if (xyz > 2 || c.values.empty() || !c.monotonic()) return false;
  if (c.uniform() && c.step() > 0) {  // voxel k at origin + k * spacing
    spacing[xyz] = c.values.size() > 1 ? std::abs(c.step()) : 1;
    origin[xyz] = c.values.front();
  }
  coordinates[xyz] = std::move(c);
  return true;
}

bool Coordinate::uniform() const {
  if (values.size() < 2) return true;
  const double step = this->step();
  if (step == 0) return false;
  // A regular grid stored as float32 (0.1 degrees to 360) is a few units
  // in its last place off: two of float32's at the largest value, at least.
  double largest = 0;
  for (double v : values) largest = std::max(largest, std::abs(v));
  const double tolerance = std::max(1e-6 * std::abs(step), 2.5e-7 * largest);
  for (std::size_t i = 1; i < values.size(); ++i)
    if (std::abs(values[i] - values[i - 1] - step) > tolerance) return false;
  return true;
}

}  // namespace volseg::io
