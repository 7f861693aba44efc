// SPDX-License-Identifier: MIT
#include "netcdf/hdf5_catalog.hpp"

#include <hdf5.h>

#include <algorithm>
#include <sstream>
#include <vector>

namespace volseg::io::netcdf {
namespace {

// A contiguous integer or float dataset's place in the file, noted.
void note_contiguous(hid_t dataset, hid_t create, const std::string& name, Hdf5Catalog& catalog) {
  const hid_t type = H5Dget_type(dataset);
  const hid_t space = H5Dget_space(dataset);
  const haddr_t offset = H5Dget_offset(dataset);
  // A dimension scale (CLASS attribute) is a coordinate, never the variable:
  // netCDF stores a variable named like an unused dimension as _nc4_non_coord_NAME.
  const bool scale = H5Aexists(dataset, "CLASS") > 0;
  if (type >= 0 && space >= 0 && offset != HADDR_UNDEF && !scale && H5Pget_external_count(create) == 0) {
    const H5T_class_t kind = H5Tget_class(type);
    if (kind == H5T_INTEGER || kind == H5T_FLOAT) {
      Contiguous place;
      place.offset = offset;
      place.values = static_cast<std::uint64_t>(std::max<hssize_t>(H5Sget_simple_extent_npoints(space), 0));
      place.size = H5Tget_size(type);
      place.is_float = kind == H5T_FLOAT;
      place.is_signed = kind == H5T_FLOAT || H5Tget_sign(type) == H5T_SGN_2;
      place.big_endian = H5Tget_order(type) == H5T_ORDER_BE;
      catalog.contiguous[name] = place;
    }
  }
  if (space >= 0) H5Sclose(space);
  if (type >= 0) H5Tclose(type);
}

// A chunk longer than its dataset's maximum along a dimension that cannot
// grow, noted with what is wrong.
void note_chunk(hid_t dataset, hid_t create, const std::string& name, Hdf5Catalog& catalog) {
  const hid_t space = H5Dget_space(dataset);
  const int rank = space >= 0 ? H5Sget_simple_extent_ndims(space) : -1;
  if (rank > 0 && rank <= H5S_MAX_RANK) {
    std::vector<hsize_t> chunk(static_cast<std::size_t>(rank)), dims(chunk.size()), maximum(chunk.size());
    if (H5Pget_chunk(create, rank, chunk.data()) == rank &&
        H5Sget_simple_extent_dims(space, dims.data(), maximum.data()) == rank) {
      bool impossible = false;
      std::string chunk_text, maximum_text;
      for (std::size_t a = 0; a < chunk.size(); ++a) {
        impossible |= maximum[a] != H5S_UNLIMITED && chunk[a] > maximum[a];
        chunk_text += (a ? " x " : "") + std::to_string(chunk[a]);
        maximum_text +=
            (a ? " x " : "") + (maximum[a] == H5S_UNLIMITED ? std::string("unlimited") : std::to_string(maximum[a]));
      }
      if (impossible)
        catalog.impossible_chunks[name] = "chunk " + chunk_text + " is larger than the dataset (" + maximum_text +
                                          " at most) along a fixed dimension";
    }
  }
  if (space >= 0) H5Sclose(space);
}

// H5Ovisit's callback (C: it must not throw).
herr_t note_dataset(hid_t object, const char* name, const H5O_info_t* info, void* data) {
  if (info->type != H5O_TYPE_DATASET) return 0;
  const hid_t dataset = H5Dopen2(object, name, H5P_DEFAULT);
  if (dataset < 0) return 0;  // netCDF's open says what is wrong with it
  auto& catalog = *static_cast<Hdf5Catalog*>(data);
  if (const hid_t create = H5Dget_create_plist(dataset); create >= 0) {
    const H5D_layout_t layout = H5Pget_layout(create);
    if (layout == H5D_CONTIGUOUS) note_contiguous(dataset, create, name, catalog);
    if (layout == H5D_CHUNKED) note_chunk(dataset, create, name, catalog);
    H5Pclose(create);
  }
  H5Dclose(dataset);
  return 0;
}

}  // namespace

Hdf5Catalog hdf5_catalog(const std::string& path) {
  Hdf5Catalog found;
  H5E_auto2_t report = nullptr;
  void* report_data = nullptr;
  H5Eget_auto2(H5E_DEFAULT, &report, &report_data);
  H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
  const hid_t file = H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
  if (file >= 0) {
    H5Ovisit2(file, H5_INDEX_NAME, H5_ITER_NATIVE, note_dataset, &found, H5O_INFO_BASIC);
    H5Fclose(file);
  }
  H5Eset_auto2(H5E_DEFAULT, report, report_data);
  return found;
}

// A line a dataset: its name's length, the name, then "c" and its place,
// or "x" and what is wrong with its chunk.
std::string serialize(const Hdf5Catalog& catalog) {
  std::ostringstream out;
  for (const auto& [name, p] : catalog.contiguous)
    out << name.size() << ' ' << name << " c " << p.offset << ' ' << p.values << ' ' << p.size << ' ' << p.is_float
        << p.is_signed << p.big_endian << '\n';
  for (const auto& [name, what] : catalog.impossible_chunks)
    out << name.size() << ' ' << name << " x " << what.size() << ' ' << what << '\n';
  return out.str();
}

Hdf5Catalog deserialize(const std::string& text) {
  Hdf5Catalog catalog;
  std::istringstream in(text);
  auto counted = [&in](std::size_t length) {
    in.get();
    std::string value(length, '\0');
    in.read(value.data(), static_cast<std::streamsize>(length));
    return value;
  };
  for (std::size_t length = 0; in >> length;) {
    const std::string name = counted(length);
    std::string kind;
    in >> kind;
    if (kind == "x") {
      std::size_t size = 0;
      if (!(in >> size)) break;
      catalog.impossible_chunks[name] = counted(size);
      continue;
    }
    Contiguous p;
    std::string flags;
    in >> p.offset >> p.values >> p.size >> flags;
    if (!in || kind != "c" || flags.size() != 3) break;
    p.is_float = flags[0] == '1';
    p.is_signed = flags[1] == '1';
    p.big_endian = flags[2] == '1';
    catalog.contiguous[name] = p;
  }
  return catalog;
}

}  // namespace volseg::io::netcdf
