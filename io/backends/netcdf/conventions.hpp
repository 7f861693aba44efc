// SPDX-License-Identifier: MIT
// NetCDF conventions shared by the PnetCDF and netCDF-4 backends: which
// variable a file offers, how a 3D or 4D (record/time) variable maps to a
// volume, and what the NUG/CF attributes say about missing values and packing.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "volseg/io/hints.hpp"
#include "volseg/io/types.hpp"

namespace volseg::io::netcdf {

// What the user asked for: hints var=NAME, time=INDEX (the CLI's --var/--time).
struct Selection {
  std::string variable;
  std::optional<std::int64_t> time;
};
Selection read_selection(const Hints& hints);

struct VariableShape {
  std::string name;
  std::vector<std::string> dim_names;
  std::vector<std::int64_t> dim_lengths;
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
};
VolumeShape volume_shape(const VariableShape& variable, const Selection& selection, const std::string& path);

// Reads a numeric attribute of the variable (empty if absent).
using NumberAttribute = std::function<std::optional<std::vector<double>>(const std::string& name)>;

// _FillValue (or the type's default fill), missing_value, valid_min,
// valid_max, valid_range, scale_factor, add_offset.
void apply_attributes(VolumeInfo& info, const NumberAttribute& number, bool is_signed_byte_type);

// The netCDF default fill value of a type (NUG), used when _FillValue is absent.
std::optional<double> default_fill(DType dtype);

// Every CLI/engine option that reaches a NetCDF backend as a hint.
bool is_selection_hint(const std::string& key);

}  // namespace volseg::io::netcdf
