// SPDX-License-Identifier: MIT
// NetCDF conventions shared by the PnetCDF and netCDF-4 backends: which
// variable a file offers, how a 3D or 4D (record/time) variable maps to a
// volume, and what the NUG/CF attributes say about missing values and packing.
#pragma once

#include <array>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "volseg/io/comm.hpp"
#include "volseg/io/hints.hpp"
#include "volseg/io/selection.hpp"
#include "volseg/io/types.hpp"

namespace volseg::io::netcdf {

// What the user asked for (the CLI's --var/--time), as the readers hold it.
struct Selection {
  std::string variable;
  std::optional<std::int64_t> time;
};
Selection read_selection(const io::Selection& chosen);

// Writers' hint record_time=T (append=1: the time of the record written);
// nullopt when absent. backend names the writer in the message.
std::optional<double> read_record_time(const Hints& hints, const std::string& backend);
// The time an appended record gets: the hint's, else the volume's step's
// time (VolumeInfo::step_time), else its step number.
double record_time_of(const std::optional<double>& hint, const VolumeInfo& info);

// Collective. Whether a writer asked to append adds a record in place to the
// file at `path` (append and the file exists: rank 0 decides). Otherwise
// rank 0 runs `create`, which refuses what it must and returns the temporary
// name the output is written under, and every rank gets that name.
bool append_or_create(const Comm& comm, const std::string& path, bool append,
                      const std::function<std::string()>& create, std::string& temporary);

struct VariableShape {
  std::string name;
  std::vector<std::string> dim_names;
  std::vector<std::int64_t> dim_lengths;
  int nc_type = 0;
};

// The variable to read: the one asked for, or the only one with 3 or more
// dimensions. Throws volseg::Error naming the candidates otherwise.
const VariableShape& choose_variable(const std::vector<VariableShape>& variables, const Selection& selection,
                                     const std::string& path);

// 3D -> no time; 4D -> the first dimension is time/record, index chosen by
// selection (0 when it has length 1). Anything else is refused.
struct VolumeShape {
  Index3 dims{};
  std::optional<std::int64_t> time;  // the index on the first axis of a 4D variable
  std::int64_t steps = 1;            // that axis's length
};
VolumeShape volume_shape(const VariableShape& variable, const Selection& selection, const std::string& path);

// Reads a numeric attribute of the variable (empty if absent); long double
// so 64-bit integer attributes arrive exactly.
using NumberAttribute = std::function<std::optional<std::vector<long double>>(const std::string& name)>;

// _FillValue (or the type's default fill), missing_value, valid_min,
// valid_max, valid_range, scale_factor, add_offset.
void apply_attributes(VolumeInfo& info, const NumberAttribute& number, bool is_signed_byte_type);

// The netCDF default fill value of a type (NUG), used when _FillValue is absent.
std::optional<long double> default_fill(DType dtype);

// NetCDF type codes, the same numbers in netCDF-C and PnetCDF (whose headers
// cannot both be included in one file).
namespace type {
constexpr int byte = 1, character = 2, int16 = 3, int32 = 4, float32 = 5, float64 = 6, ubyte = 7, uint16 = 8,
              uint32 = 9, int64 = 10, uint64 = 11;
}
std::optional<DType> dtype_of(int nc_type);
const char* type_name(int nc_type);
int nc_type_for(DType dtype, bool cdf2);  // CDF-2 has no ubyte: the mask is byte there
// The error for a variable of a type volseg does not read.
[[noreturn]] void refuse_type(const std::string& path, const std::string& variable, int nc_type);

// What a writer puts in the file for a VolumeInfo: dimension names, text
// attributes of the variable, global ones (history), numeric ones in the
// variable's type (_FillValue, valid_range, a mask's flag_values).
struct Layout {
  std::string variable;
  std::array<std::string, 3> dim_names;
  std::vector<std::pair<std::string, std::string>> text, global_text;
  std::vector<std::pair<std::string, std::vector<double>>> numbers;
  std::optional<long double> fill;  // _FillValue, written in the variable's type
  // CF coordinate variables, double, one per axis that has one (file order),
  // named as its dimension, with units, positive and axis attributes.
  struct CoordinateVariable {
    std::size_t axis = 0;  // 0 z, 1 y, 2 x
    std::vector<std::pair<std::string, std::string>> text;
    const std::vector<double>* values = nullptr;
  };
  std::vector<CoordinateVariable> coordinates;
};
Layout plan_layout(const VolumeInfo& info);

}  // namespace volseg::io::netcdf
