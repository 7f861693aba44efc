// SPDX-License-Identifier: MIT
#include "netcdf/conventions.hpp"

#include <cmath>
#include <exception>
#include <filesystem>
#include <string>

#include "volseg/io/error.hpp"

namespace volseg::io::netcdf {

std::optional<double> read_record_time(const Hints& hints, const std::string& backend) {
  if (!hints.has("record_time")) return std::nullopt;
  const std::string text = hints.get_string("record_time", "0");
  try {
    std::size_t used = 0;
    const double time = std::stod(text, &used);
    if (used == text.size()) return time;
  } catch (const std::exception&) {
  }
  throw Error(backend + " hint record_time='" + text + "' is not a number");
}

double record_time_of(const std::optional<double>& hint, const VolumeInfo& info) {
  return hint.value_or(info.step_time.value_or(static_cast<double>(info.step.value_or(0))));
}

bool append_or_create(const Comm& comm, const std::string& path, bool append,
                      const std::function<std::string()>& create, std::string& temporary) {
  int appending = 0;
  collectively(comm, [&] {
    if (comm.rank() != 0) return;
    appending = append && std::filesystem::exists(path);
    if (!appending) temporary = create();
  });
  check_mpi(MPI_Bcast(&appending, 1, MPI_INT, 0, comm.get()), "MPI_Bcast");
  temporary = comm.broadcast(temporary);
  return appending != 0;
}

Selection read_selection(const io::Selection& chosen) {
  Selection selection;
  selection.variable = chosen.variable;
  if (chosen.step) {
    if (*chosen.step < 0) throw Error("--time must be 0 or more");
    selection.time = chosen.step;
  }
  return selection;
}

namespace {

// One row per NetCDF numeric type, read and written alike.
struct TypePair {
  int nc_type;
  DType dtype;
};
constexpr TypePair kTypes[] = {
    {type::byte, DType::i8},     {type::ubyte, DType::u8},    {type::int16, DType::i16}, {type::uint16, DType::u16},
    {type::int32, DType::i32},   {type::uint32, DType::u32},  {type::int64, DType::i64}, {type::uint64, DType::u64},
    {type::float32, DType::f32}, {type::float64, DType::f64},
};

}  // namespace

std::optional<DType> dtype_of(int nc_type) {
  for (const auto& pair : kTypes)
    if (pair.nc_type == nc_type) return pair.dtype;
  return std::nullopt;
}

const char* type_name(int nc_type) {
  static const char* names[] = {"?",     "byte",   "char", "short", "int",    "float", "double",
                                "ubyte", "ushort", "uint", "int64", "uint64", "string"};
  return nc_type >= 1 && nc_type <= 12 ? names[nc_type] : "user-defined (compound, vlen, opaque or enum)";
}

int nc_type_for(DType dtype, bool cdf2) {
  if (dtype == DType::u8 && cdf2) return type::byte;  // CDF-2 has no ubyte (the _Unsigned convention)
  for (const auto& pair : kTypes)
    if (pair.dtype == dtype) return pair.nc_type;
  return type::byte;
}

void refuse_type(const std::string& path, const std::string& variable, int nc_type) {
  throw Error(path + ": variable " + variable + " has type " + type_name(nc_type) +
              ", which volseg does not segment (it reads every integer and float type)");
}

Layout plan_layout(const VolumeInfo& info) {
  Layout layout;
  layout.variable = info.variable.empty() ? "data" : info.variable;
  const char* defaults[3] = {"z", "y", "x"};
  for (std::size_t a = 0; a < 3; ++a) {
    auto it = info.attributes.find("dim" + std::to_string(a));
    layout.dim_names[a] = it != info.attributes.end() ? it->second : defaults[a];
  }
  const bool mask = info.variable == "mask";
  for (const auto& [key, value] : info.attributes) {
    if (key.size() == 4 && key.rfind("dim", 0) == 0) continue;  // dimension names
    if (mask && key == "flag_values") continue;                 // numeric below
    if (key == "history" || key == "source")
      layout.global_text.emplace_back(key, value);
    else
      layout.text.emplace_back(key, value);
  }
  for (std::size_t a = 0; a < 3; ++a) {
    const auto& c = info.coordinates[2 - a];
    if (!c || c->values.size() != static_cast<std::size_t>(info.dims[a])) continue;
    // Names the file already uses for something else keep the plain dimension.
    if (c->name.empty() || c->name == layout.variable || c->name == "time") continue;
    bool taken = false;
    for (std::size_t b = 0; b < 3; ++b) taken = taken || (b != a && layout.dim_names[b] == c->name);
    if (taken) continue;
    Layout::CoordinateVariable v{a, {}, &c->values};
    layout.dim_names[a] = c->name;  // the variable is named as its dimension
    if (!c->units.empty()) v.text.emplace_back("units", c->units);
    if (c->down) v.text.emplace_back("positive", "down");
    v.text.emplace_back("axis", a == 0 ? "Z" : a == 1 ? "Y" : "X");
    layout.coordinates.push_back(std::move(v));
  }
  layout.fill = info.fill_value;
  if (mask) {
    layout.numbers.push_back({"flag_values", {0, 1}});
    layout.numbers.push_back({"valid_range", {0, 1}});
  } else if (info.valid_range) {
    layout.numbers.push_back({"valid_range", {(*info.valid_range)[0], (*info.valid_range)[1]}});
  }
  return layout;
}

const VariableShape& choose_variable(const std::vector<VariableShape>& variables, const Selection& selection,
                                     const std::string& path) {
  std::string candidates;
  const VariableShape* only = nullptr;
  int count = 0;
  for (const auto& variable : variables) {
    if (!selection.variable.empty() && variable.name == selection.variable) return variable;
    if (variable.dim_names.size() >= 3) {
      candidates += (candidates.empty() ? "" : ", ") + variable.name;
      only = &variable;
      ++count;
    }
  }
  if (!selection.variable.empty())
    throw Error(path + ": no variable '" + selection.variable + "'" +
                (candidates.empty() ? std::string(" (and no 3D variable)") : " (3D and up: " + candidates + ")"));
  if (count == 1) return *only;
  if (count == 0) throw Error(path + ": no variable with 3 or more dimensions");
  throw Error(path + ": several variables to choose from, name one with --var: " + candidates);
}

VolumeShape volume_shape(const VariableShape& variable, const Selection& selection, const std::string& path) {
  const auto rank = variable.dim_names.size();
  VolumeShape shape;
  if (rank == 3) {
    if (selection.time) throw Error(path + ": variable " + variable.name + " is 3D; --time does not apply");
    for (std::size_t a = 0; a < 3; ++a) shape.dims[a] = variable.dim_lengths[a];
  } else if (rank == 4) {
    const std::int64_t steps = variable.dim_lengths[0];
    std::int64_t time = selection.time.value_or(0);
    if (!selection.time && steps != 1)
      throw StepRequired(path + ": variable " + variable.name + " has " + std::to_string(steps) + " steps along " +
                         variable.dim_names[0] + "; choose one with --time 0.." + std::to_string(steps - 1) +
                         ", or a range: --time all, A:B[:S]");
    if (time >= steps)
      throw Error(path + ": --time " + std::to_string(time) + " is past the last step " + std::to_string(steps - 1) +
                  " of " + variable.name);
    shape.time = time;
    shape.steps = steps;
    for (std::size_t a = 0; a < 3; ++a) shape.dims[a] = variable.dim_lengths[a + 1];
  } else {
    throw Error(path + ": variable " + variable.name + " is " + std::to_string(rank) +
                "D; volseg segments 3D variables (or 4D with a time dimension)");
  }
  for (auto n : shape.dims)
    if (n <= 0) throw Error(path + ": variable " + variable.name + " has an empty dimension");
  return shape;
}

std::optional<long double> default_fill(DType dtype) {
  switch (dtype) {
    case DType::i8:
    case DType::u8:
      return std::nullopt;  // NUG: no default fill check for bytes
    case DType::i16:
      return -32767.0L;
    case DType::u16:
      return 65535.0L;
    case DType::i32:
      return -2147483647.0L;
    case DType::u32:
      return 4294967295.0L;
    case DType::i64:
      return -9223372036854775806.0L;
    case DType::u64:
      return 18446744073709551614.0L;
    case DType::f32:
      return static_cast<long double>(9.9692099683868690e+36f);
    case DType::f64:
      return static_cast<long double>(9.9692099683868690e+36);
  }
  return std::nullopt;
}

void apply_attributes(VolumeInfo& info, const NumberAttribute& number, bool is_signed_byte_type) {
  auto exact = [&](const std::string& name) -> std::optional<long double> {
    auto values = number(name);
    if (!values || values->empty()) return std::nullopt;
    return (*values)[0];
  };
  auto first = [&](const std::string& name) -> std::optional<double> {
    auto value = exact(name);
    return value ? std::optional<double>(static_cast<double>(*value)) : std::nullopt;
  };
  info.fill_value = exact("_FillValue");
  if (!info.fill_value && !is_signed_byte_type) info.fill_value = default_fill(info.dtype);
  // missing_value: the first value counts (the kernel tests one besides the fill).
  info.missing_value = exact("missing_value");
  std::optional<double> low = first("valid_min"), high = first("valid_max");
  if (auto range = number("valid_range"); range && range->size() >= 2) {
    low = static_cast<double>((*range)[0]);
    high = static_cast<double>((*range)[1]);
  }
  if (low || high) info.valid_range = std::array<double, 2>{low.value_or(-INFINITY), high.value_or(INFINITY)};
  info.scale_factor = first("scale_factor");
  info.add_offset = first("add_offset");
}

}  // namespace volseg::io::netcdf
