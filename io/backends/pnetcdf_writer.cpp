// SPDX-License-Identifier: MIT
// The PnetCDF backend's writer: CDF-2 or CDF-5 (hint format=), collective
// put_vara_all or iput + wait_all (nonblocking=1), a record appended along
// an unlimited time dimension (append=1), and the input's CF coordinate
// variables kept. Created under a hidden temporary name and renamed by rank
// 0 (AtomicCommit) after every rank's ncmpi_close succeeded.
#include <pnetcdf.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <filesystem>
#include <memory>
#include <vector>

#include "cdf_placement.hpp"
#include "mpi_support.hpp"
#include "netcdf/catalog.hpp"
#include "netcdf/cdf_header.hpp"
#include "netcdf/conventions.hpp"
#include "raw/raw_volume.hpp"
#include "volseg/io/error.hpp"
#include "volseg/io/files.hpp"
#include "volseg/io/registry.hpp"
#include "volseg/io/trace.hpp"

#include "pnetcdf_support.hpp"

namespace volseg::io::pnetcdf {
namespace {

class PnetcdfWriter final : public VolumeWriter {
 public:
  PnetcdfWriter(const CreateRequest& request, const Comm& comm, Options options)
      : VolumeWriter({.collective = true}),
        comm_(comm.duplicate()),
        path_(request.path),
        info_(request.info),
        options_(std::move(options)) {
    namespace fs = std::filesystem;
    if (options_.format == NC_FORMAT_CDF2 && (info_.dtype == DType::u16 || info_.dtype == DType::u32 ||
                                              info_.dtype == DType::i64 || info_.dtype == DType::u64))
      throw Error(path_ + ": CDF-2 has no " + std::string(dtype_name(info_.dtype)) +
                  " type (only byte, short, int, float, double); write CDF-5 (--format cdf5)");
    // Appending to a file that exists writes in place: PnetCDF updates the
    // record count in the header only at close, so a job that dies leaves
    // the earlier records and the old count, never a half record.
    const bool appending = netcdf::append_or_create(
        comm_, path_, options_.append,
        [&] {
          if (!options_.append) refuse_existing(path_, request.overwrite);
          if (!options_.append && fs::is_directory(path_))  // refused now, not at the commit after the job
            throw Error(path_ + " exists and is not a file: --force replaces files only");
          // A partial output stays for a rerun with --resume (its job decides).
          commit_ = request.partial != Partial::none
                        ? AtomicCommit(path_, partial_path(path_), AtomicCommit::Uncommitted::kept)
                        : AtomicCommit(path_, temporary_path(path_));
          return commit_.temporary();
        },
        temp_path_);
    MpiInfo info(options_.library_hints);
    if (appending) {
      collectively(comm_, [&] {
        trace::Span span(trace::Op::open);
        check_nc(ncmpi_open(comm_.get(), path_.c_str(), NC_WRITE, info.get(), &ncid_), "open " + path_);
        find_record_variable();
      });
      return;
    }
    partial_ = request.partial;
    if (partial_ == Partial::reopen) {  // an earlier job's file, header and all, kept for this one
      collectively(comm_, [&] {
        trace::Span span(trace::Op::open);
        check_nc(ncmpi_open(comm_.get(), temp_path_.c_str(), NC_WRITE, info.get(), &ncid_),
                 "open the partial output " + temp_path_);
        find_variable();
      });
      return;
    }
    // A partial output is never created over another job's (its journal decides).
    const int mode = (partial_ == Partial::none ? NC_CLOBBER : NC_NOCLOBBER) |
                     (options_.format == NC_FORMAT_CDF2 ? NC_64BIT_OFFSET : NC_64BIT_DATA);
    collectively(comm_, [&] {
      trace::Span span(trace::Op::open);  // the create, the definitions and enddef's header write
      check_nc(ncmpi_create(comm_.get(), temp_path_.c_str(), mode, info.get(), &ncid_), "create " + path_);
      define();
    });
  }

  ~PnetcdfWriter() override {
    if (ncid_ >= 0) ncmpi_close(ncid_);
  }

  const VolumeInfo& info() const override { return info_; }
  std::string backend_name() const override { return "pnetcdf"; }

  void do_write(const Extent& extent, const void* buffer) override {
    check_nc(ncmpi_begin_indep_data(ncid_), path_);
    auto [start, count] = corners(extent);
    int status = NC_NOERR;
    {
      trace::Span span(trace::Op::write, file_offset(extent), extent_bytes(extent));
      status =
          ncmpi_put_vara(ncid_, varid_, start.data(), count.data(), buffer, extent.voxels(), mpi_type(info_.dtype));
    }
    check_nc(ncmpi_end_indep_data(ncid_), path_);
    check_nc(status, "write " + path_);
    bytes_written_ += static_cast<std::uint64_t>(extent.voxels()) * dtype_size(info_.dtype);
  }

  void do_write_all(std::span<const Extent> extents, std::span<const void* const> buffers) override {
    if (options_.nonblocking) return write_all_nonblocking(extents, buffers);
    in_rounds(comm_, extents, buffers, [&](const Extent* extent, const void* buffer) {
      if (!extent || extent->empty()) {  // join the round with nothing to write
        auto [start, count] = corners(Extent{});
        trace::Span span(trace::Op::write);
        check_nc(ncmpi_put_vara_all(ncid_, varid_, start.data(), count.data(), nullptr, 0, mpi_type(info_.dtype)),
                 "write " + path_);
        return;
      }
      auto [start, count] = corners(*extent);
      trace::Span span(trace::Op::write, file_offset(*extent), extent_bytes(*extent));
      check_nc(ncmpi_put_vara_all(ncid_, varid_, start.data(), count.data(), buffer, extent->voxels(),
                                  mpi_type(info_.dtype)),
               "write " + path_);
      bytes_written_ += static_cast<std::uint64_t>(extent->voxels()) * dtype_size(info_.dtype);
    });
  }

  void do_close() override {
    if (options_.append)  // the record's time; rank 0 writes it, the others join empty
      collectively(comm_, [&] {
        const MPI_Offset start = record_, count = comm_.rank() == 0 ? 1 : 0;
        const double time = netcdf::record_time_of(options_.record_time, info_);
        check_nc(ncmpi_put_vara_double_all(ncid_, time_varid_, &start, &count, &time), "write the time of " + path_);
      });
    if (options_.fsync)
      collectively(comm_, [&] {
        trace::Span span(trace::Op::sync);
        check_nc(ncmpi_sync(ncid_), "fsync " + path_);
      });
    collectively(comm_, [&] {
      int ncid = std::exchange(ncid_, -1);
      trace::Span span(trace::Op::close);
      check_nc(ncmpi_close(ncid), "close " + path_);
    });
    collectively(comm_, [&] { commit_.commit(options_.fsync); });  // rank 0's; appended in place: none
  }
  std::uint64_t bytes_written() const override { return bytes_written_; }

 private:
  void write_all_nonblocking(std::span<const Extent> extents, std::span<const void* const> buffers) {
    std::vector<int> requests;
    for (std::size_t i = 0; i < extents.size(); ++i) {
      if (extents[i].empty()) continue;
      auto [start, count] = corners(extents[i]);
      int request = 0;
      trace::Span span(trace::Op::write, file_offset(extents[i]), extent_bytes(extents[i]));
      check_nc(ncmpi_iput_vara(ncid_, varid_, start.data(), count.data(), buffers[i], extents[i].voxels(),
                               mpi_type(info_.dtype), &request),
               "write " + path_);
      requests.push_back(request);
      bytes_written_ += static_cast<std::uint64_t>(extents[i].voxels()) * dtype_size(info_.dtype);
    }
    std::vector<int> statuses(requests.size());
    {
      trace::Span span(trace::Op::wait);
      check_nc(ncmpi_wait_all(ncid_, static_cast<int>(requests.size()), requests.data(), statuses.data()),
               "write " + path_);
    }
    for (int status : statuses) check_nc(status, "write " + path_);
  }

  std::int64_t file_offset(const Extent& extent) const {
    return static_cast<std::int64_t>(raw::first_byte(info_.dims, extent, dtype_size(info_.dtype), data_offset_));
  }
  std::uint64_t extent_bytes(const Extent& extent) const {
    return static_cast<std::uint64_t>(extent.voxels()) * dtype_size(info_.dtype);
  }

  std::pair<std::vector<MPI_Offset>, std::vector<MPI_Offset>> corners(const Extent& extent) const {
    std::vector<MPI_Offset> start(extent.offset.begin(), extent.offset.end());
    std::vector<MPI_Offset> count(extent.count.begin(), extent.count.end());
    if (options_.append) {  // the record this writer adds
      start.insert(start.begin(), record_);
      count.insert(count.begin(), extent.empty() ? 0 : 1);
    }
    return {start, count};
  }

  // An existing file to append to: its variable must be (time, z, y, x)
  // with this volume's dims and type; the new record goes after the last.
  void find_record_variable() {
    const netcdf::Layout layout = netcdf::plan_layout(info_);
    check_nc(ncmpi_inq_varid(ncid_, layout.variable.c_str(), &varid_), path_ + ": no variable " + layout.variable);
    int ndims = 0, unlimited = -1, type = 0;
    check_nc(ncmpi_inq_varndims(ncid_, varid_, &ndims), path_);
    check_nc(ncmpi_inq_unlimdim(ncid_, &unlimited), path_);
    int ids[4] = {-1, -1, -1, -1};  // (PnetCDF's NC_MAX_VAR_DIMS is INT_MAX: no array of that)
    if (ndims == 4) check_nc(ncmpi_inq_vardimid(ncid_, varid_, ids), path_);
    bool same = ndims == 4 && ids[0] == unlimited;
    for (int a = 0; same && a < 3; ++a) {
      MPI_Offset length = 0;
      check_nc(ncmpi_inq_dimlen(ncid_, ids[a + 1], &length), path_);
      same = length == info_.dims[static_cast<std::size_t>(a)];
    }
    check_nc(ncmpi_inq_vartype(ncid_, varid_, &type), path_);
    if (!same || type != netcdf::nc_type_for(info_.dtype, options_.format == NC_FORMAT_CDF2))
      throw Error(path_ + ": cannot append: its " + layout.variable + " is not (time, " +
                  std::to_string(info_.dims[0]) + ", " + std::to_string(info_.dims[1]) + ", " +
                  std::to_string(info_.dims[2]) + ") of " + std::string(dtype_name(info_.dtype)));
    check_nc(ncmpi_inq_varid(ncid_, "time", &time_varid_), path_ + ": no time variable to append to");
    check_nc(ncmpi_inq_dimlen(ncid_, unlimited, &record_), path_);
  }

  // A partial output to go on with: its variable must be this volume's,
  // and its data where the header says.
  void find_variable() {
    const netcdf::Layout layout = netcdf::plan_layout(info_);
    check_nc(ncmpi_inq_varid(ncid_, layout.variable.c_str(), &varid_), temp_path_ + ": no variable " + layout.variable);
    int ndims = 0, type = 0;
    check_nc(ncmpi_inq_varndims(ncid_, varid_, &ndims), temp_path_);
    int ids[3] = {-1, -1, -1};
    if (ndims == 3) check_nc(ncmpi_inq_vardimid(ncid_, varid_, ids), temp_path_);
    bool same = ndims == 3;
    for (int a = 0; same && a < 3; ++a) {
      MPI_Offset length = 0;
      check_nc(ncmpi_inq_dimlen(ncid_, ids[a], &length), temp_path_);
      same = length == info_.dims[static_cast<std::size_t>(a)];
    }
    check_nc(ncmpi_inq_vartype(ncid_, varid_, &type), temp_path_);
    int format = 0;
    check_nc(ncmpi_inq_format(ncid_, &format), temp_path_);
    if (!same || type != netcdf::nc_type_for(info_.dtype, options_.format == NC_FORMAT_CDF2) ||
        format != options_.format)
      throw Error(temp_path_ + ": its " + layout.variable +
                  " is not this job's mask: it is not this job's partial output");
    MPI_Offset begin = 0;
    check_nc(ncmpi_inq_varoffset(ncid_, varid_, &begin), temp_path_);
    data_offset_ = static_cast<std::uint64_t>(begin);
  }

  void define() {
    check_nc(ncmpi_set_fill(ncid_, NC_NOFILL, nullptr), path_);
    const netcdf::Layout layout = netcdf::plan_layout(info_);
    int dims[4];
    const int first = options_.append ? 1 : 0;  // a record variable: (time, z, y, x)
    if (options_.append) {
      check_nc(ncmpi_def_dim(ncid_, "time", NC_UNLIMITED, &dims[0]), path_);
      check_nc(ncmpi_def_var(ncid_, "time", NC_DOUBLE, 1, dims, &time_varid_), path_);
      const std::string axis = "T";
      check_nc(ncmpi_put_att_text(ncid_, time_varid_, "axis", 1, axis.c_str()), path_);
      if (!info_.time_units.empty())  // the input's, with its times in the records
        check_nc(ncmpi_put_att_text(ncid_, time_varid_, "units", static_cast<MPI_Offset>(info_.time_units.size()),
                                    info_.time_units.c_str()),
                 path_);
    }
    for (std::size_t a = 0; a < 3; ++a)
      check_nc(
          ncmpi_def_dim(ncid_, layout.dim_names[a].c_str(), info_.dims[a], &dims[a + static_cast<std::size_t>(first)]),
          path_);
    const auto type = static_cast<nc_type>(netcdf::nc_type_for(info_.dtype, options_.format == NC_FORMAT_CDF2));
    auto put_text = [&](int varid, const std::string& key, const std::string& value) {
      check_nc(ncmpi_put_att_text(ncid_, varid, key.c_str(), static_cast<MPI_Offset>(value.size()), value.c_str()),
               path_ + ": attribute " + key);
    };
    std::vector<int> coordinate_ids;
    for (const auto& c : layout.coordinates) {
      int id = -1;
      check_nc(ncmpi_def_var(ncid_, layout.dim_names[c.axis].c_str(), NC_DOUBLE, 1,
                             &dims[c.axis + static_cast<std::size_t>(first)], &id),
               path_ + ": coordinate variable " + layout.dim_names[c.axis]);
      for (const auto& [key, value] : c.text) put_text(id, key, value);
      coordinate_ids.push_back(id);
    }
    check_nc(ncmpi_def_var(ncid_, layout.variable.c_str(), type, 3 + first, dims, &varid_), path_);
    for (const auto& [key, value] : layout.text) put_text(varid_, key, value);
    if (info_.dtype == DType::u8 && options_.format == NC_FORMAT_CDF2) put_text(varid_, "_Unsigned", "true");
    for (const auto& [key, value] : layout.global_text) put_text(NC_GLOBAL, key, value);
    for (const auto& [key, values] : layout.numbers)
      check_nc(
          ncmpi_put_att_double(ncid_, varid_, key.c_str(), type, static_cast<MPI_Offset>(values.size()), values.data()),
          path_ + ": attribute " + key);
    if (layout.fill) {  // 64-bit integers exactly
      int status = info_.dtype == DType::i64
                       ? ncmpi_put_att_longlong(ncid_, varid_, "_FillValue", type, 1,
                                                std::array{static_cast<long long>(*layout.fill)}.data())
                   : info_.dtype == DType::u64
                       ? ncmpi_put_att_ulonglong(ncid_, varid_, "_FillValue", type, 1,
                                                 std::array{static_cast<unsigned long long>(*layout.fill)}.data())
                       : ncmpi_put_att_double(ncid_, varid_, "_FillValue", type, 1,
                                              std::array{static_cast<double>(*layout.fill)}.data());
      check_nc(status, path_ + ": attribute _FillValue");
    }
    check_nc(ncmpi_enddef(ncid_), "write the header of " + path_);
    for (std::size_t i = 0; i < coordinate_ids.size(); ++i)  // collective: every rank writes the same values
      check_nc(ncmpi_put_var_double_all(ncid_, coordinate_ids[i], layout.coordinates[i].values->data()),
               path_ + ": coordinate variable " + layout.dim_names[layout.coordinates[i].axis]);
    MPI_Offset begin = 0;
    check_nc(ncmpi_inq_varoffset(ncid_, varid_, &begin), path_);
    data_offset_ = static_cast<std::uint64_t>(begin);
  }

 public:
  std::uint64_t data_offset() const { return data_offset_; }
  const std::string& temp_path() const { return temp_path_; }

 private:
  Comm comm_;
  Partial partial_ = Partial::none;
  std::string path_, temp_path_;
  AtomicCommit commit_;  // rank 0's: removes the temporary of a writer that did not commit
  VolumeInfo info_;
  Options options_;
  int ncid_ = -1, varid_ = -1, time_varid_ = -1;
  MPI_Offset record_ = 0;  // appending: the record written
  std::uint64_t data_offset_ = 0;
  std::atomic<std::uint64_t> bytes_written_{0};
};

}  // namespace

PlacedWriter create_writer(const CreateRequest& request, const Comm& comm, Options options) {
  auto writer = std::make_unique<PnetcdfWriter>(request, comm, std::move(options));
  PlacedWriter placed;
  placed.temp_path = writer->temp_path();
  placed.data_offset = writer->data_offset();
  placed.writer = std::move(writer);
  return placed;
}

}  // namespace volseg::io::pnetcdf
