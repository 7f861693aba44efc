// SPDX-License-Identifier: MIT
// What the PnetCDF backend's reader (pnetcdf.cpp) and writer
// (pnetcdf_writer.cpp) share: the error check, PnetCDF's side of
// netcdf/catalog.hpp, and the hints both take.
#pragma once

#include <mpi.h>
#include <pnetcdf.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "mpi_support.hpp"
#include "netcdf/conventions.hpp"
#include "volseg/io/error.hpp"
#include "volseg/io/hints.hpp"
#include "volseg/io/volume.hpp"

namespace volseg::io::pnetcdf {

inline void check_nc(int status, const std::string& what) {
  if (status != NC_NOERR) throw RankError(what + ": " + ncmpi_strerror(status));  // a rank's own, or every rank's
}

// PnetCDF's side of netcdf/catalog.hpp.
struct PnetcdfApi {
  static constexpr int max_name = NC_MAX_NAME;
  static void check(int status, const std::string& what) { check_nc(status, what); }
  static int inq_nvars(int ncid, int* count) { return ncmpi_inq_nvars(ncid, count); }
  static int inq_var(int ncid, int varid, char* name, int* type, int* dims) {
    nc_type t = 0;
    int status = ncmpi_inq_var(ncid, varid, name, &t, dims, nullptr, nullptr);
    *type = t;
    return status;
  }
  static int inq_vardimid(int ncid, int varid, int* ids) { return ncmpi_inq_vardimid(ncid, varid, ids); }
  static int inq_dim(int ncid, int id, char* name, std::int64_t* length) {
    MPI_Offset n = 0;
    int status = ncmpi_inq_dim(ncid, id, name, &n);
    *length = n;
    return status;
  }
  static bool inq_att(int ncid, int varid, const char* name, int* type, std::int64_t* length) {
    nc_type t = 0;
    MPI_Offset n = 0;
    if (ncmpi_inq_att(ncid, varid, name, &t, &n) != NC_NOERR) return false;
    *type = t;
    *length = n;
    return true;
  }
  static bool is_text(int type) { return type == NC_CHAR; }
  static int get_att_double(int ncid, int varid, const char* name, double* values) {
    return ncmpi_get_att_double(ncid, varid, name, values);
  }
  static int get_att_longlong(int ncid, int varid, const char* name, long long* values) {
    return ncmpi_get_att_longlong(ncid, varid, name, values);
  }
  static int get_att_ulonglong(int ncid, int varid, const char* name, unsigned long long* values) {
    return ncmpi_get_att_ulonglong(ncid, varid, name, values);
  }
  static int inq_varid(int ncid, const char* name, int* varid) { return ncmpi_inq_varid(ncid, name, varid); }
  // Collective: every rank reads the whole (small) variable.
  static int get_var_double(int ncid, int varid, double* values) {
    return ncmpi_get_var_double_all(ncid, varid, values);
  }
  static std::string text_attribute(int ncid, int varid, const char* name) {
    nc_type type = 0;
    MPI_Offset length = 0;
    if (ncmpi_inq_att(ncid, varid, name, &type, &length) != NC_NOERR || type != NC_CHAR) return {};
    std::string value(static_cast<std::size_t>(length), '\0');
    if (ncmpi_get_att_text(ncid, varid, name, value.data()) != NC_NOERR) return {};
    return value;
  }
};

struct Options {
  netcdf::Selection selection;
  bool nonblocking = false;
  // Writers: append one record along an unlimited "time" dimension (made
  // when the file is new), with this value in the time coordinate.
  bool append = false;
  std::optional<double> record_time;  // else the volume's own: its step's time (VolumeInfo::step_time), or its step
  int format = NC_FORMAT_CDF5;
  bool fsync = false;  // writers: ncmpi_sync before the close
  std::vector<std::pair<std::string, std::string>> library_hints;
};

// Reads and checks the hints of either role; throws volseg::Error.
Options read_options(const Hints& hints, const Selection& selection = {});

// The CDF writer, with where its variable's bytes begin in its temporary
// file, for volseg's own engines that write those bytes (cdf_placement.hpp).
struct PlacedWriter {
  std::unique_ptr<VolumeWriter> writer;
  std::string temp_path;
  std::uint64_t data_offset = 0;
};
PlacedWriter create_writer(const CreateRequest& request, const Comm& comm, Options options);

}  // namespace volseg::io::pnetcdf
