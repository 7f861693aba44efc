// SPDX-License-Identifier: MIT
// What the PnetCDF and netCDF-C backends ask of a file, written once: the
// two C APIs have the same shape under different names (ncmpi_*/MPI_Offset
// against nc_*/size_t) and their headers cannot share a file, so each backend
// includes this after its own header and passes a traits struct Api with:
//   check(status, what), inq_nvars, inq_var(ncid, v, name, &type, &ndims),
//   inq_vardimid, inq_dim(ncid, id, name, &length as int64), inq_att(ncid,
//   varid, name, &type, &length as int64), get_att_double/longlong/ulonglong,
//   and the type codes text_types (char, string) and int64, uint64.
#pragma once

#include <cctype>
#include <cmath>
#include <string>
#include <vector>

#include "netcdf/conventions.hpp"

namespace volseg::io::netcdf {

template <class Api>
VariableShape shape_of(int ncid, int varid, const std::string& path) {
  char name[Api::max_name + 1];
  int type = 0, dims = 0;
  Api::check(Api::inq_var(ncid, varid, name, &type, &dims), path);
  std::vector<int> ids(static_cast<std::size_t>(dims));
  Api::check(Api::inq_vardimid(ncid, varid, ids.data()), path);
  VariableShape shape{name, {}, {}, type};
  for (int id : ids) {
    char dim_name[Api::max_name + 1];
    std::int64_t length = 0;
    Api::check(Api::inq_dim(ncid, id, dim_name, &length), path);
    shape.dim_names.emplace_back(dim_name);
    shape.dim_lengths.push_back(length);
  }
  return shape;
}

template <class Api>
std::vector<VariableShape> variables(int ncid, const std::string& path) {
  int count = 0;
  Api::check(Api::inq_nvars(ncid, &count), path);
  std::vector<VariableShape> shapes;
  for (int v = 0; v < count; ++v) shapes.push_back(shape_of<Api>(ncid, v, path));
  return shapes;
}

// "name(dim=length, ...) type": one line of `volseg info`'s listing.
inline std::string listing_line(const VariableShape& shape) {
  std::string line = shape.name + "(";
  for (std::size_t d = 0; d < shape.dim_names.size(); ++d)
    line += (d ? ", " : "") + shape.dim_names[d] + "=" + std::to_string(shape.dim_lengths[d]);
  return line + ") " + type_name(shape.nc_type);
}

// listing_line for every variable of 3 or more dimensions.
template <class Api>
std::vector<std::string> listing(int ncid, const std::string& path) {
  int count = 0;
  Api::check(Api::inq_nvars(ncid, &count), path);
  std::vector<std::string> lines;
  for (int v = 0; v < count; ++v) {
    const VariableShape shape = shape_of<Api>(ncid, v, path);
    if (shape.dim_names.size() >= 3) lines.push_back(listing_line(shape));
  }
  return lines;
}

// A numeric attribute of a variable, exactly (64-bit integers are not read
// through a double); empty when absent or text.
template <class Api>
std::optional<std::vector<long double>> number_attribute(int ncid, int varid, const std::string& name,
                                                         const std::string& path) {
  int type = 0;
  std::int64_t length = 0;
  if (!Api::inq_att(ncid, varid, name.c_str(), &type, &length)) return std::nullopt;
  if (Api::is_text(type) || length <= 0) return std::nullopt;
  const auto n = static_cast<std::size_t>(length);
  const std::string what = path + ": attribute " + name;
  if (type == type::int64) {
    std::vector<long long> values(n);
    Api::check(Api::get_att_longlong(ncid, varid, name.c_str(), values.data()), what);
    return std::vector<long double>(values.begin(), values.end());
  }
  if (type == type::uint64) {
    std::vector<unsigned long long> values(n);
    Api::check(Api::get_att_ulonglong(ncid, varid, name.c_str(), values.data()), what);
    return std::vector<long double>(values.begin(), values.end());
  }
  std::vector<double> values(n);
  Api::check(Api::get_att_double(ncid, varid, name.c_str(), values.data()), what);
  return std::vector<long double>(values.begin(), values.end());
}

// The CF coordinate variables of the volume's three axes: for each of the
// variable's last three dimensions, a 1D variable of that name and
// dimension (a number per index, strictly monotonic, finite), with its
// units and positive attributes. Uniform ones set spacing and origin.
// Collective with PnetCDF (every rank reads the values). A coordinate
// variable that is not monotonic or holds NaN is passed by, as CF readers
// do, so the volume still opens in index space.
// A text attribute without the trailing NULs and spaces C writers leave
// ("down\0": strlen + 1).
inline std::string trimmed(std::string text) {
  while (!text.empty() && (text.back() == '\0' || std::isspace(static_cast<unsigned char>(text.back()))))
    text.pop_back();
  return text;
}

template <class Api>
void read_coordinates(int ncid, const VariableShape& variable, VolumeInfo& info, const std::string& path) {
  const std::size_t rank = variable.dim_names.size();
  if (rank == 4 && info.step) {  // the step's time, for a series' records
    int varid = -1;
    if (Api::inq_varid(ncid, variable.dim_names[0].c_str(), &varid) == 0) {
      const VariableShape shape = shape_of<Api>(ncid, varid, path);
      if (shape.dim_names.size() == 1 && shape.dim_lengths[0] == variable.dim_lengths[0] &&
          !Api::is_text(shape.nc_type)) {
        std::vector<double> times(static_cast<std::size_t>(shape.dim_lengths[0]));
        Api::check(Api::get_var_double(ncid, varid, times.data()), path + ": time variable " + variable.dim_names[0]);
        info.step_time = times[static_cast<std::size_t>(*info.step)];
        info.time_units = trimmed(Api::text_attribute(ncid, varid, "units"));
      }
    }
  }
  for (std::size_t a = 0; a < 3; ++a) {  // file order z, y, x
    const std::string& name = variable.dim_names[rank - 3 + a];
    const std::int64_t length = variable.dim_lengths[rank - 3 + a];
    int varid = -1;
    if (Api::inq_varid(ncid, name.c_str(), &varid) != 0) continue;
    const VariableShape shape = shape_of<Api>(ncid, varid, path);
    if (shape.dim_names.size() != 1 || shape.dim_names[0] != name || shape.dim_lengths[0] != length ||
        Api::is_text(shape.nc_type))
      continue;
    Coordinate c;
    c.name = name;
    c.values.resize(static_cast<std::size_t>(length));
    Api::check(Api::get_var_double(ncid, varid, c.values.data()), path + ": coordinate variable " + name);
    c.units = trimmed(Api::text_attribute(ncid, varid, "units"));
    // A time axis (units "hours since ...", axis T) is not a spatial one.
    if (Coordinate::time_units(c.units) || trimmed(Api::text_attribute(ncid, varid, "axis")) == "T") continue;
    c.down = Coordinate::positive_down(Api::text_attribute(ncid, varid, "positive"));
    info.set_coordinate(2 - a, std::move(c));
  }
}

}  // namespace volseg::io::netcdf
