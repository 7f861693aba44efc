// SPDX-License-Identifier: MIT
#include "netcdf/contiguous.hpp"

#include <hdf5.h>

#include <algorithm>
#include <sstream>

namespace volseg::io::netcdf {
namespace {

herr_t note_contiguous(hid_t object, const char* name, const H5O_info_t* info, void* data) {
  if (info->type != H5O_TYPE_DATASET) return 0;
  const hid_t dataset = H5Dopen2(object, name, H5P_DEFAULT);
  if (dataset < 0) return 0;
  const hid_t create = H5Dget_create_plist(dataset);
  const hid_t type = H5Dget_type(dataset);
  const hid_t space = H5Dget_space(dataset);
  const haddr_t offset = H5Dget_offset(dataset);
  // A dimension scale (CLASS attribute) is a coordinate, never the variable:
  // netCDF stores a variable named like an unused dimension as _nc4_non_coord_NAME.
  const bool scale = H5Aexists(dataset, "CLASS") > 0;
  if (create >= 0 && type >= 0 && space >= 0 && offset != HADDR_UNDEF && !scale &&
      H5Pget_layout(create) == H5D_CONTIGUOUS && H5Pget_external_count(create) == 0) {
    const H5T_class_t kind = H5Tget_class(type);
    if (kind == H5T_INTEGER || kind == H5T_FLOAT) {
      Contiguous place;
      place.offset = offset;
      place.values = static_cast<std::uint64_t>(std::max<hssize_t>(H5Sget_simple_extent_npoints(space), 0));
      place.size = H5Tget_size(type);
      place.is_float = kind == H5T_FLOAT;
      place.is_signed = kind == H5T_FLOAT || H5Tget_sign(type) == H5T_SGN_2;
      place.big_endian = H5Tget_order(type) == H5T_ORDER_BE;
      (*static_cast<std::map<std::string, Contiguous>*>(data))[name] = place;
    }
  }
  if (space >= 0) H5Sclose(space);
  if (type >= 0) H5Tclose(type);
  if (create >= 0) H5Pclose(create);
  H5Dclose(dataset);
  return 0;
}

}  // namespace

std::map<std::string, Contiguous> contiguous_datasets(const std::string& path) {
  std::map<std::string, Contiguous> found;
  H5E_auto2_t report = nullptr;
  void* report_data = nullptr;
  H5Eget_auto2(H5E_DEFAULT, &report, &report_data);
  H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
  const hid_t file = H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
  if (file >= 0) {
    H5Ovisit2(file, H5_INDEX_NAME, H5_ITER_NATIVE, note_contiguous, &found, H5O_INFO_BASIC);
    H5Fclose(file);
  }
  H5Eset_auto2(H5E_DEFAULT, report, report_data);
  return found;
}

std::string serialize(const std::map<std::string, Contiguous>& places) {
  std::ostringstream out;
  for (const auto& [name, p] : places)
    out << name.size() << ' ' << name << ' ' << p.offset << ' ' << p.values << ' ' << p.size << ' ' << p.is_float
        << p.is_signed << p.big_endian << '\n';
  return out.str();
}

std::map<std::string, Contiguous> deserialize(const std::string& text) {
  std::map<std::string, Contiguous> places;
  std::istringstream in(text);
  for (std::size_t length = 0; in >> length;) {
    in.get();
    std::string name(length, '\0');
    in.read(name.data(), static_cast<std::streamsize>(length));
    Contiguous p;
    std::string flags;
    in >> p.offset >> p.values >> p.size >> flags;
    if (!in || flags.size() != 3) break;
    p.is_float = flags[0] == '1';
    p.is_signed = flags[1] == '1';
    p.big_endian = flags[2] == '1';
    places[name] = p;
  }
  return places;
}

}  // namespace volseg::io::netcdf
