// SPDX-License-Identifier: MIT
// Pieces the MPI-based backends (mpiio, pnetcdf, netcdf4) share.
#pragma once

#include <mpi.h>

#include <exception>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "volseg/io/comm.hpp"
#include "volseg/io/error.hpp"
#include "volseg/io/rounds.hpp"
#include "volseg/io/types.hpp"

namespace volseg::io {

// Collective. Calls fn(&extent, buffer) for each of this rank's extents in
// rounds that every rank joins (io::Rounds): a rank whose list is done, or
// whose call failed, joins with fn(nullptr, {}), because the library's
// collective calls need everyone; the outcome is agreed at the end.
template <class Buffer, class Fn>
void in_rounds(const Comm& comm, std::span<const Extent> extents, std::span<Buffer const> buffers, Fn&& fn) {
  Rounds(comm, static_cast<std::int64_t>(extents.size()), true).run([&](std::optional<std::int64_t> item) {
    if (item)
      fn(&extents[static_cast<std::size_t>(*item)], buffers[static_cast<std::size_t>(*item)]);
    else
      fn(nullptr, Buffer{});
  });
}

// An MPI_Info that frees itself; empty pairs give MPI_INFO_NULL.
class MpiInfo {
 public:
  explicit MpiInfo(const std::vector<std::pair<std::string, std::string>>& pairs) {
    if (pairs.empty()) return;
    check_mpi(MPI_Info_create(&info_), "MPI_Info_create");
    for (const auto& [key, value] : pairs) MPI_Info_set(info_, key.c_str(), value.c_str());
  }
  MpiInfo(const MpiInfo&) = delete;
  MpiInfo& operator=(const MpiInfo&) = delete;
  ~MpiInfo() {
    if (info_ != MPI_INFO_NULL) MPI_Info_free(&info_);
  }
  MPI_Info get() const { return info_; }

 private:
  MPI_Info info_ = MPI_INFO_NULL;
};

// MPI-IO's and PnetCDF's own hints, passed through as MPI_Info.
inline bool library_hint(const std::string& key) {
  return key.rfind("nc_", 0) == 0 || key.rfind("romio_", 0) == 0 || key.rfind("cb_", 0) == 0 ||
         key.rfind("striping_", 0) == 0 || key == "pnetcdf_subfiling";
}

inline MPI_Datatype mpi_type(DType dtype) {
  switch (dtype) {
    case DType::i8:
      return MPI_SIGNED_CHAR;
    case DType::u8:
      return MPI_UNSIGNED_CHAR;
    case DType::i16:
      return MPI_SHORT;
    case DType::u16:
      return MPI_UNSIGNED_SHORT;
    case DType::i32:
      return MPI_INT;
    case DType::u32:
      return MPI_UNSIGNED;
    case DType::i64:
      return MPI_LONG_LONG;
    case DType::u64:
      return MPI_UNSIGNED_LONG_LONG;
    case DType::f32:
      return MPI_FLOAT;
    case DType::f64:
      return MPI_DOUBLE;
  }
  return MPI_BYTE;
}

}  // namespace volseg::io
