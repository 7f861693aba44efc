// SPDX-License-Identifier: MIT
// The vocabulary of the I/O layer: element types, byte orders, extents and the
// description of a volume. Dimensions are in file order [z][y][x], x fastest,
// as NetCDF stores them.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace volseg::io {

// Every integer and float type NetCDF has (char and string aside).
enum class DType { i8, u8, i16, u16, i32, u32, i64, u64, f32, f64 };
enum class ByteOrder { little, big };

std::size_t dtype_size(DType dtype);
std::string_view dtype_name(DType dtype);  // "u8", "f32", ...
bool dtype_is_float(DType dtype);
// Accepts volseg names ("f32") and the usual aliases ("float32", "float").
std::optional<DType> parse_dtype(std::string_view name);
// The lowest and highest value the type holds (for clamping generated data).
double dtype_lowest(DType dtype);
double dtype_highest(DType dtype);

ByteOrder native_byte_order();
std::string_view byte_order_name(ByteOrder order);

using Index3 = std::array<std::int64_t, 3>;  // [z, y, x]

// Whether the values of a volume of dims in dtype fit in one file (at most
// 2^63 - 1 bytes, so that voxels() and bytes() hold them): false for the
// sizes of a damaged header.
bool fits_in_a_file(const Index3& dims, DType dtype);

// A box of voxels: offset and count per axis, in file order [z][y][x].
struct Extent {
  Index3 offset{0, 0, 0};
  Index3 count{0, 0, 0};

  std::int64_t voxels() const { return count[0] * count[1] * count[2]; }
  bool empty() const { return voxels() == 0; }
  bool operator==(const Extent&) const = default;
};

std::string to_string(const Extent& extent);
// The voxels in both (an empty extent when they do not meet).
Extent intersect(const Extent& a, const Extent& b);
// An extent grown by `layers` on every side, clipped to dims.
Extent with_ghost(const Extent& extent, const Index3& dims, int layers);
// Throws volseg::Error when the extent is not inside dims.
void check_inside(const Extent& extent, const Index3& dims);
// Throws volseg::Error ("WHAT: ...") unless every axis is positive and the
// volume's bytes fit a signed 64-bit count (files, offsets, MPI_Offset).
void check_volume_size(const Index3& dims, DType dtype, const std::string& what);

// A CF coordinate variable of one axis (NetCDF, and HDF5 files netCDF-C
// reads): a 1D variable named as its dimension, its value at every index.
struct Coordinate {
  std::string name;  // the variable's (and its dimension's) name
  std::string units;
  bool down = false;           // positive = "down": values grow downwards (depth, pressure)
  std::vector<double> values;  // one per index along the axis, strictly monotonic
  // CF's attributes of a coordinate variable, as C writers leave them too
  // (trailing NULs and spaces, any case): positive = "down"; units of time
  // ("hours since 1900-01-01"), which is no spatial axis.
  static bool positive_down(const std::string& positive);
  static bool time_units(const std::string& units);
  // Finite and strictly increasing or decreasing: what CF readers place by.
  bool monotonic() const;
  // Equal steps (to 1e-6 of a step, or float32's rounding of the values).
  bool uniform() const;
  double step() const { return values.size() > 1 ? (values.back() - values.front()) / double(values.size() - 1) : 1; }
};

struct VolumeInfo {
  Index3 dims{0, 0, 0};
  DType dtype = DType::f32;
  ByteOrder byte_order = ByteOrder::little;
  std::string variable;  // name inside the file, if the format has names
  // Voxels equal to these are missing. long double holds every 64-bit
  // integer exactly (the NetCDF default fills of int64/uint64 do not fit a double).
  std::optional<long double> fill_value;
  std::optional<long double> missing_value;          // a second such value (NetCDF missing_value)
  std::optional<std::array<double, 2>> valid_range;  // voxels outside are missing
  // CF packing: value = stored * scale_factor + add_offset. Thresholds are
  // given in unpacked units and converted (see segment::Threshold).
  std::optional<double> scale_factor, add_offset;
  std::array<double, 3> spacing{1, 1, 1};  // x, y, z (NRRD order)
  std::array<double, 3> origin{0, 0, 0};   // x, y, z: position of voxel (0,0,0)
  // x, y, z: the axes' coordinate variables, where the file has them. A
  // uniform increasing one also sets spacing and origin; set_coordinate.
  std::array<std::optional<Coordinate>, 3> coordinates;
  // A 4D variable's time (record) axis: how many steps it has and the one
  // read (--time); 1 and none for a 3D volume.
  std::int64_t steps = 1;
  std::optional<std::int64_t> step;
  // That step's value of the time coordinate variable, and its units
  // ("days since 2000-01-01"), where the file has one.
  std::optional<double> step_time;
  std::string time_units;
  std::map<std::string, std::string> attributes;

  std::int64_t voxels() const { return dims[0] * dims[1] * dims[2]; }
  // Keeps c as axis xyz's coordinate (0 x, 1 y, 2 z) when it is monotonic,
  // a uniform increasing one setting spacing and origin (voxel k at origin +
  // k * spacing; a decreasing or uneven one leaves index space, and the
  // renderer places it by the values); returns whether it was kept.
  bool set_coordinate(std::size_t xyz, Coordinate c);
  std::uint64_t bytes() const { return static_cast<std::uint64_t>(voxels()) * dtype_size(dtype); }
  Extent whole() const { return Extent{{0, 0, 0}, dims}; }
};

}  // namespace volseg::io
