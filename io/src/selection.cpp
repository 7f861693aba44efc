// SPDX-License-Identifier: MIT
#include "volseg/io/selection.hpp"

#include "volseg/io/error.hpp"

namespace volseg::io {

namespace {

[[noreturn]] void refuse_netcdf_key(const std::string& key, std::string_view backend) {
  throw Error("--" + key + " names a NetCDF variable or step; backend " + std::string(backend) +
              " reads raw volumes, which have neither");
}

}  // namespace

Selection Selection::at_step(std::int64_t at) const {
  Selection result = *this;
  result.step = at;
  return result;
}

Selection Selection::of_variable(const std::string& name) const {
  Selection result;
  result.variable = name;
  result.step = step;
  return result;
}

void Selection::refuse_variable(std::string_view backend) const {
  if (!variable.empty()) refuse_netcdf_key("var", backend);
}

void Selection::refuse_step(std::string_view backend) const {
  if (step) refuse_netcdf_key("time", backend);
}

void Selection::refuse_glob(std::string_view backend) const {
  if (!glob.empty())
    throw Error("--glob names the slices of a folder of TIFF files; backend " + std::string(backend) +
                " does not read such folders");
}

void Selection::refuse_step_and_glob(std::string_view backend) const {
  refuse_glob(backend);
  refuse_step(backend);
}

}  // namespace volseg::io
