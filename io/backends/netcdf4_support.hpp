// SPDX-License-Identifier: MIT
// What the NetCDF-4 backend's reader (netcdf4.cpp) and writer
// (netcdf4_writer.cpp) share: the error check and the hints both take.
#pragma once

#include <netcdf.h>

#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "netcdf/conventions.hpp"
#include "volseg/io/comm.hpp"
#include "volseg/io/error.hpp"
#include "volseg/io/hints.hpp"
#include "volseg/io/volume.hpp"

namespace volseg::io::netcdf4 {

inline void check_nc(int status, const std::string& what) {
  if (status != NC_NOERR) throw RankError(what + ": " + nc_strerror(status));  // a rank's own, or every rank's
}

struct Options {
  netcdf::Selection selection;
  bool independent = false;
  std::string chunks = "contiguous";
  int deflate = 0;
  bool shuffle = true;  // writers: HDF5's byte shuffle before deflate (shuffle=0: none)
  bool fsync = false;   // writers: nc_sync before the close
  bool pread = true;    // readers: contiguous datasets by pread at their offset
  // writers: append=1 adds a record along an unlimited time dimension (of
  // the file there, or a new one), at record_time or the input's step time.
  bool append = false;
  std::optional<double> record_time;
  std::vector<std::pair<std::string, std::string>> library_hints;
};

Options read_options(const Hints& hints, const Selection& selection = {});
// chunks=Z,Y,X as sizes (throws on anything else).
std::vector<std::size_t> parse_chunks(const std::string& text);

std::unique_ptr<VolumeWriter> make_writer(const CreateRequest& request, const Comm& comm, Options options);

}  // namespace volseg::io::netcdf4
