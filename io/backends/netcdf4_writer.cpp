// SPDX-License-Identifier: MIT
// The NetCDF-4 backend's writer: parallel netCDF-C (nc_create_par) into a
// temporary file renamed at close, collective by default; with append=1 a
// record along an unlimited time dimension (a time series in one file).
#include <mpi.h>
#include <netcdf.h>
#include <netcdf_par.h>

#include <algorithm>
#include <atomic>
#include <charconv>
#include <filesystem>
#include <span>
#include <sstream>
#include <utility>
#include <vector>

#include "mpi_support.hpp"
#include "netcdf/conventions.hpp"
#include "netcdf4_support.hpp"
#include "volseg/io/error.hpp"
#include "volseg/io/files.hpp"
#include "volseg/io/registry.hpp"
#include "volseg/io/rounds.hpp"
#include "volseg/io/trace.hpp"

namespace volseg::io {

namespace netcdf4 {

std::vector<std::size_t> parse_chunks(const std::string& text) {
  std::vector<std::size_t> sizes;
  std::stringstream stream(text);
  for (std::string part; std::getline(stream, part, ',');) {
    std::size_t value = 0;
    auto [end, ec] = std::from_chars(part.data(), part.data() + part.size(), value);
    if (ec != std::errc() || end != part.data() + part.size() || value == 0)
      throw Error("netcdf4: chunks=" + text + ": expected contiguous or Z,Y,X");
    sizes.push_back(value);
  }
  if (sizes.size() != 3) throw Error("netcdf4: chunks=" + text + ": expected contiguous or Z,Y,X");
  return sizes;
}

namespace {

class Netcdf4Writer final : public VolumeWriter {
 public:
  Netcdf4Writer(const CreateRequest& request, const Comm& comm, Options options)
      : VolumeWriter({.collective = !options.independent}),
        comm_(comm.duplicate()),
        path_(request.path),
        info_(request.info),
        options_(std::move(options)) {
    check_parallel_netcdf();
    if (request.partial != Partial::none)
      throw Error(path_ +
                  ": a NetCDF-4 output cannot be resumed: a file HDF5 1.10 left behind when its writer was "
                  "killed is often unreadable, so it is never kept");
    // append=1 to a file that exists: a record added in place (a series
    // writes its file under a temporary name and renames it at the end).
    const bool appending = netcdf::append_or_create(
        comm_, path_, options_.append,
        [&] {
          if (!options_.append) refuse_existing(path_, request.overwrite);
          commit_ = AtomicCommit(path_, temporary_path(path_));
          return commit_.temporary();
        },
        temp_path_);
    MpiInfo info(options_.library_hints);
    if (appending) {
      collectively(comm_, [&] {
        trace::Span span(trace::Op::open);
        check_nc(nc_open_par(path_.c_str(), NC_WRITE, comm_.get(), info.get(), &ncid_), "open " + path_);
        find_record_variable();
      });
      return;
    }
    collectively(comm_, [&] {
      trace::Span span(trace::Op::open);  // the create and the definitions
      check_nc(nc_create_par(temp_path_.c_str(), NC_NETCDF4 | NC_CLOBBER, comm_.get(), info.get(), &ncid_),
               "create " + path_);
      define();
    });
  }

  ~Netcdf4Writer() override {
    if (ncid_ >= 0) nc_close(ncid_);
  }

  const VolumeInfo& info() const override { return info_; }
  std::string backend_name() const override { return "netcdf4"; }

  void do_write(const Extent& extent, const void* buffer) override {
    auto [start, count] = corners(extent);
    trace::Span span(trace::Op::write, -1, static_cast<std::uint64_t>(extent.voxels()) * dtype_size(info_.dtype));
    check_nc(nc_put_vara(ncid_, varid_, start.data(), count.data(), buffer), "write " + path_);
    bytes_written_ += static_cast<std::uint64_t>(extent.voxels()) * dtype_size(info_.dtype);
  }

  void do_write_all(std::span<const Extent> extents, std::span<const void* const> buffers) override {
    if (options_.independent) return VolumeWriter::do_write_all(extents, buffers);
    in_rounds(comm_, extents, buffers, [&](const Extent* extent, const void* buffer) {
      if (extent && !extent->empty()) return do_write(*extent, buffer);
      auto [start, count] = corners(Extent{});
      std::byte none{};
      trace::Span span(trace::Op::write);
      check_nc(nc_put_vara(ncid_, varid_, start.data(), count.data(), &none), "write " + path_);
    });
  }

  void do_close() override {
    if (options_.append)  // the record's time; rank 0 writes it, the others join empty
      collectively(comm_, [&] {
        const std::size_t start = record_, count = comm_.rank() == 0 ? 1 : 0;
        const double time = netcdf::record_time_of(options_.record_time, info_);
        check_nc(nc_put_vara_double(ncid_, time_varid_, &start, &count, &time), "write the time of " + path_);
      });
    if (options_.fsync)
      collectively(comm_, [&] {
        trace::Span span(trace::Op::sync);
        check_nc(nc_sync(ncid_), "fsync " + path_);
      });
    collectively(comm_, [&] {
      int ncid = std::exchange(ncid_, -1);
      trace::Span span(trace::Op::close);
      check_nc(nc_close(ncid), "close " + path_);
    });
    collectively(comm_, [&] { commit_.commit(options_.fsync); });  // rank 0's
  }
  std::uint64_t bytes_written() const override { return bytes_written_; }

 private:
  std::pair<std::vector<std::size_t>, std::vector<std::size_t>> corners(const Extent& extent) const {
    std::vector<std::size_t> start, count;
    if (options_.append) {  // the record this writer adds
      start.push_back(record_);
      count.push_back(extent.empty() ? 0 : 1);
    }
    for (int a = 0; a < 3; ++a) {
      start.push_back(static_cast<std::size_t>(extent.offset[a]));
      count.push_back(static_cast<std::size_t>(extent.count[a]));
    }
    return {start, count};
  }

  // An existing file to append to: its variable must be (time, z, y, x)
  // with this volume's dims and type; the new record goes after the last.
  void find_record_variable() {
    const netcdf::Layout layout = netcdf::plan_layout(info_);
    check_nc(nc_inq_varid(ncid_, layout.variable.c_str(), &varid_), path_ + ": no variable " + layout.variable);
    int ndims = 0, unlimited = -1;
    nc_type type = 0;
    check_nc(nc_inq_varndims(ncid_, varid_, &ndims), path_);
    check_nc(nc_inq_unlimdim(ncid_, &unlimited), path_);
    int ids[NC_MAX_VAR_DIMS] = {};
    if (ndims == 4) check_nc(nc_inq_vardimid(ncid_, varid_, ids), path_);
    bool same = ndims == 4 && ids[0] == unlimited;
    for (int a = 0; same && a < 3; ++a) {
      std::size_t length = 0;
      check_nc(nc_inq_dimlen(ncid_, ids[a + 1], &length), path_);
      same = length == static_cast<std::size_t>(info_.dims[static_cast<std::size_t>(a)]);
    }
    check_nc(nc_inq_vartype(ncid_, varid_, &type), path_);
    if (!same || type != static_cast<nc_type>(netcdf::nc_type_for(info_.dtype, false)))
      throw Error(path_ + ": cannot append: its " + layout.variable + " is not (time, " +
                  std::to_string(info_.dims[0]) + ", " + std::to_string(info_.dims[1]) + ", " +
                  std::to_string(info_.dims[2]) + ") of " + std::string(dtype_name(info_.dtype)));
    check_nc(nc_inq_varid(ncid_, "time", &time_varid_), path_ + ": no time variable to append to");
    check_nc(nc_inq_dimlen(ncid_, unlimited, &record_), path_);
    check_nc(nc_var_par_access(ncid_, varid_, options_.independent ? NC_INDEPENDENT : NC_COLLECTIVE), path_);
    check_nc(nc_var_par_access(ncid_, time_varid_, NC_COLLECTIVE), path_);
  }

  void define() {
    const netcdf::Layout layout = netcdf::plan_layout(info_);
    // With append=1 a record variable (time, z, y, x): chunked, a record at a time.
    const int first = options_.append ? 1 : 0;
    int dims[4];
    if (options_.append) {
      check_nc(nc_def_dim(ncid_, "time", NC_UNLIMITED, &dims[0]), path_);
      check_nc(nc_def_var(ncid_, "time", NC_DOUBLE, 1, dims, &time_varid_), path_);
      const std::string axis = "T";
      check_nc(nc_put_att_text(ncid_, time_varid_, "axis", axis.size(), axis.c_str()), path_);
      if (!info_.time_units.empty())  // the input's, with its times in the records
        check_nc(nc_put_att_text(ncid_, time_varid_, "units", info_.time_units.size(), info_.time_units.c_str()),
                 path_);
    }
    for (std::size_t a = 0; a < 3; ++a)
      check_nc(nc_def_dim(ncid_, layout.dim_names[a].c_str(), static_cast<std::size_t>(info_.dims[a]),
                          &dims[first + static_cast<int>(a)]),
               path_);
    const auto type = static_cast<nc_type>(netcdf::nc_type_for(info_.dtype, false));
    std::vector<int> coordinate_ids;
    for (const auto& c : layout.coordinates) {
      int id = -1;
      const std::string what = path_ + ": coordinate variable " + layout.dim_names[c.axis];
      check_nc(nc_def_var(ncid_, layout.dim_names[c.axis].c_str(), NC_DOUBLE, 1, &dims[first + c.axis], &id), what);
      for (const auto& [key, value] : c.text)
        check_nc(nc_put_att_text(ncid_, id, key.c_str(), value.size(), value.c_str()), what + " attribute " + key);
      coordinate_ids.push_back(id);
    }
    check_nc(nc_def_var(ncid_, layout.variable.c_str(), type, 3 + first, dims, &varid_), path_);
    if (options_.chunks == "contiguous" && !options_.append) {
      check_nc(nc_def_var_chunking(ncid_, varid_, NC_CONTIGUOUS, nullptr), path_ + ": chunks=contiguous");
    } else {
      // A record variable cannot be contiguous: by default a chunk is a
      // slab of whole planes of about 4 MiB (at most 1024x1024 of a plane).
      std::vector<std::size_t> sizes;
      if (options_.chunks == "contiguous") {
        const std::size_t y = std::min<std::size_t>(static_cast<std::size_t>(info_.dims[1]), 1024),
                          x = std::min<std::size_t>(static_cast<std::size_t>(info_.dims[2]), 1024);
        sizes = {std::max<std::size_t>(1, (std::size_t{4} << 20) / (y * x * dtype_size(info_.dtype))), y, x};
      } else {
        sizes = parse_chunks(options_.chunks);
      }
      for (std::size_t a = 0; a < 3; ++a)
        sizes[a] = std::min<std::size_t>(sizes[a], static_cast<std::size_t>(info_.dims[a]));
      if (options_.append) sizes.insert(sizes.begin(), 1);
      check_nc(nc_def_var_chunking(ncid_, varid_, NC_CHUNKED, sizes.data()), path_ + ": chunks=" + options_.chunks);
    }
    if (options_.deflate > 0) {
      if (options_.chunks == "contiguous")
        throw Error("netcdf4: deflate needs chunked storage (add chunks=Z,Y,X or chunks=brick)");
      int status = nc_def_var_deflate(ncid_, varid_, options_.shuffle ? 1 : 0, 1, options_.deflate);
      if (status != NC_NOERR)
        throw Error("netcdf4: this netCDF/HDF5 cannot write compressed data in parallel (" +
                    std::string(nc_strerror(status)) + "); write without deflate, then compress with nccopy -d");
    }
    check_nc(nc_def_var_fill(ncid_, varid_, NC_NOFILL, nullptr), path_);
    for (const auto& [key, value] : layout.text)
      check_nc(nc_put_att_text(ncid_, varid_, key.c_str(), value.size(), value.c_str()), path_ + ": attribute " + key);
    for (const auto& [key, value] : layout.global_text)
      check_nc(nc_put_att_text(ncid_, NC_GLOBAL, key.c_str(), value.size(), value.c_str()),
               path_ + ": attribute " + key);
    for (const auto& [key, values] : layout.numbers)
      check_nc(nc_put_att_double(ncid_, varid_, key.c_str(), type, values.size(), values.data()),
               path_ + ": attribute " + key);
    if (layout.fill) {  // 64-bit integers exactly
      const long long as_signed = info_.dtype == DType::i64 ? static_cast<long long>(*layout.fill) : 0;
      const unsigned long long as_unsigned =
          info_.dtype == DType::u64 ? static_cast<unsigned long long>(*layout.fill) : 0;
      const double as_double = static_cast<double>(*layout.fill);
      int status = info_.dtype == DType::i64 ? nc_put_att_longlong(ncid_, varid_, "_FillValue", type, 1, &as_signed)
                   : info_.dtype == DType::u64
                       ? nc_put_att_ulonglong(ncid_, varid_, "_FillValue", type, 1, &as_unsigned)
                       : nc_put_att_double(ncid_, varid_, "_FillValue", type, 1, &as_double);
      check_nc(status, path_ + ": attribute _FillValue");
    }
    check_nc(nc_enddef(ncid_), "write the header of " + path_);
    check_nc(nc_var_par_access(ncid_, varid_, options_.independent ? NC_INDEPENDENT : NC_COLLECTIVE), path_);
    if (options_.append) check_nc(nc_var_par_access(ncid_, time_varid_, NC_COLLECTIVE), path_);
    for (std::size_t i = 0; i < coordinate_ids.size(); ++i) {  // collective: every rank writes the same values
      const std::string what = path_ + ": coordinate variable " + layout.dim_names[layout.coordinates[i].axis];
      check_nc(nc_var_par_access(ncid_, coordinate_ids[i], NC_COLLECTIVE), what);
      check_nc(nc_put_var_double(ncid_, coordinate_ids[i], layout.coordinates[i].values->data()), what);
    }
  }

  Comm comm_;
  std::string path_, temp_path_;
  AtomicCommit commit_;  // rank 0's: removes the temporary of a writer that did not commit
  VolumeInfo info_;
  Options options_;
  int ncid_ = -1, varid_ = -1;
  int time_varid_ = -1;     // append=1: the time coordinate
  std::size_t record_ = 0;  // append=1: the record written
  std::atomic<std::uint64_t> bytes_written_{0};
};

}  // namespace

std::unique_ptr<VolumeWriter> make_writer(const CreateRequest& request, const Comm& comm, Options options) {
  return std::make_unique<Netcdf4Writer>(request, comm, std::move(options));
}

}  // namespace netcdf4
}  // namespace volseg::io
