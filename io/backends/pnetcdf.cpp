// SPDX-License-Identifier: MIT
// Backend "pnetcdf": NetCDF classic files through PnetCDF. Reads CDF-1,
// CDF-2 ("NetCDF-64") and CDF-5; writes CDF-2 or CDF-5 (hint format=).
// Collective ncmpi_get_vara_all/put_vara_all by default; with hint
// nonblocking=1, ncmpi_iget_vara/iput_vara posted for every extent of a
// round and completed by one ncmpi_wait_all. PnetCDF and MPI-IO hints
// (nc_header_align_size, nc_var_align_size, cb_buffer_size, ...) pass
// through to the library as MPI_Info.
//
// Outputs follow io's protocol (files.hpp): the file is created under a
// hidden temporary name and renamed by rank 0 (AtomicCommit) after every
// rank's ncmpi_close succeeded; with fsync=1 the folder is synced after.
#include <mpi.h>
#include <pnetcdf.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <filesystem>
#include <memory>
#include <vector>

#include "mpi_support.hpp"
#include "cdf_placement.hpp"
#include "netcdf/catalog.hpp"
#include "netcdf/cdf_header.hpp"
#include "netcdf/conventions.hpp"
#include "raw/raw_volume.hpp"
#include "volseg/io/error.hpp"
#include "volseg/io/files.hpp"
#include "volseg/io/registry.hpp"
#include "volseg/io/trace.hpp"

namespace volseg::io {
namespace {

void check_nc(int status, const std::string& what) {
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
  static int get_var_double(int ncid, int varid, double* values) { return ncmpi_get_var_double_all(ncid, varid, values); }
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
  double record_time = 0;
  int format = NC_FORMAT_CDF5;
  bool fsync = false;  // writers: ncmpi_sync before the close
  std::vector<std::pair<std::string, std::string>> library_hints;
};

Options read_options(const Hints& hints) {
  Options options;
  options.selection = netcdf::read_selection(hints);
  options.nonblocking = hints.get_bool("nonblocking", false);
  std::string format = hints.get_string("format", "cdf5");
  if (format == "cdf2") options.format = NC_FORMAT_CDF2;
  else if (format == "cdf5") options.format = NC_FORMAT_CDF5;
  else throw Error("pnetcdf writes format=cdf2 or format=cdf5, not '" + format + "'");
  options.fsync = hints.get_bool("fsync", false);
  options.append = hints.get_bool("append", false);
  const std::string record_time = hints.get_string("record_time", "0");
  try {
    std::size_t used = 0;
    options.record_time = std::stod(record_time, &used);
    if (used != record_time.size()) throw std::invalid_argument(record_time);
  } catch (const std::exception&) {
    throw Error("pnetcdf hint record_time='" + record_time + "' is not a number");
  }
  options.library_hints = hints.take_matching(library_hint);
  hints.reject_unused("pnetcdf");
  return options;
}

class PnetcdfReader final : public VolumeReader {
 public:
  PnetcdfReader(const std::string& path, const Comm& comm, Options options)
      : VolumeReader({.collective = true}), comm_(comm.duplicate()), path_(path), options_(std::move(options)) {
    MpiInfo info(options_.library_hints);
    trace::Span span(trace::Op::open);  // the open and the header's inquiries
    collectively(comm_, [&] {
      if (comm_.rank() == 0) netcdf::refuse_header_past_end(path);
    });
    collectively(comm_,
                 [&] { check_nc(ncmpi_open(comm_.get(), path.c_str(), NC_NOWRITE, info.get(), &ncid_), "open " + path); });
    try {
      collectively(comm_, [&] { describe(); });
    } catch (...) {
      // A refused file is closed too (by every rank: all opened it), or a
      // long-lived process (the GUI) runs out of descriptors and PnetCDF ids.
      ncmpi_close(std::exchange(ncid_, -1));
      throw;
    }
  }
  ~PnetcdfReader() override {
    if (ncid_ >= 0) ncmpi_close(ncid_);
  }

  const VolumeInfo& info() const override { return info_; }
  std::string backend_name() const override { return "pnetcdf"; }
  std::string implementation() const override {
    const std::string version = ncmpi_inq_libvers();
    return "PnetCDF " + version.substr(0, version.find(' ')) + " on " + kind_ +
           (options_.nonblocking ? ", non-blocking" : "");
  }

  // Independent reads of a collective-mode file: every rank enters and
  // leaves independent mode together, so read() is meant for one-off use.
  void do_read(const Extent& extent, void* buffer) override {
    check_nc(ncmpi_begin_indep_data(ncid_), path_);
    auto [start, count] = corners(extent);
    int status = NC_NOERR;
    {
      trace::Span span(trace::Op::read, file_offset(extent), extent_bytes(extent));
      status = ncmpi_get_vara(ncid_, varid_, start.data(), count.data(), buffer, extent.voxels(), mpi_type(info_.dtype));
    }
    check_nc(ncmpi_end_indep_data(ncid_), path_);
    check_nc(status, "read " + path_);
    bytes_read_ += static_cast<std::uint64_t>(extent.voxels()) * dtype_size(info_.dtype);
  }

  void do_read_all(std::span<const Extent> extents, std::span<void* const> buffers) override {
    if (options_.nonblocking) return read_all_nonblocking(extents, buffers);
    in_rounds(comm_, extents, buffers, [&](const Extent* extent, void* buffer) {
      if (!extent || extent->empty()) {  // join the round with nothing to read
        auto [start, count] = corners(Extent{});
        trace::Span span(trace::Op::read);
        check_nc(ncmpi_get_vara_all(ncid_, varid_, start.data(), count.data(), nullptr, 0, mpi_type(info_.dtype)),
                 "read " + path_);
        return;
      }
      auto [start, count] = corners(*extent);
      trace::Span span(trace::Op::read, file_offset(*extent), extent_bytes(*extent));
      check_nc(ncmpi_get_vara_all(ncid_, varid_, start.data(), count.data(), buffer, extent->voxels(),
                                  mpi_type(info_.dtype)),
               "read " + path_);
      bytes_read_ += static_cast<std::uint64_t>(extent->voxels()) * dtype_size(info_.dtype);
    });
  }

  void do_close() override {
    collectively(comm_, [&] {
      int ncid = std::exchange(ncid_, -1);
      trace::Span span(trace::Op::close);
      check_nc(ncmpi_close(ncid), "close " + path_);
    });
  }
  std::uint64_t bytes_read() const override { return bytes_read_; }
  std::vector<std::string> files() const override { return {path_}; }

 private:
  void read_all_nonblocking(std::span<const Extent> extents, std::span<void* const> buffers) {
    std::vector<int> requests;
    for (std::size_t i = 0; i < extents.size(); ++i) {
      if (extents[i].empty()) continue;
      auto [start, count] = corners(extents[i]);
      int request = 0;
      // The request as posted; the transfer's time goes to the wait below.
      trace::Span span(trace::Op::read, file_offset(extents[i]), extent_bytes(extents[i]));
      check_nc(ncmpi_iget_vara(ncid_, varid_, start.data(), count.data(), buffers[i], extents[i].voxels(),
                               mpi_type(info_.dtype), &request),
               "read " + path_);
      requests.push_back(request);
      bytes_read_ += static_cast<std::uint64_t>(extents[i].voxels()) * dtype_size(info_.dtype);
    }
    std::vector<int> statuses(requests.size());
    {
      trace::Span span(trace::Op::wait);
      check_nc(ncmpi_wait_all(ncid_, static_cast<int>(requests.size()), requests.data(), statuses.data()),
               "read " + path_);
    }
    for (int status : statuses) check_nc(status, "read " + path_);
  }

  // Where a trace record of extent starts: the variable's (or the record's)
  // bytes begin at data_offset_, laid out [z][y][x].
  std::int64_t file_offset(const Extent& extent) const {
    return static_cast<std::int64_t>(raw::first_byte(info_.dims, extent, dtype_size(info_.dtype), data_offset_));
  }
  std::uint64_t extent_bytes(const Extent& extent) const {
    return static_cast<std::uint64_t>(extent.voxels()) * dtype_size(info_.dtype);
  }

  std::pair<std::vector<MPI_Offset>, std::vector<MPI_Offset>> corners(const Extent& extent) const {
    std::vector<MPI_Offset> start, count;
    if (time_) {
      start.push_back(*time_);
      count.push_back(1);
    }
    for (int a = 0; a < 3; ++a) {
      start.push_back(extent.offset[a]);
      count.push_back(extent.count[a]);
    }
    return {start, count};
  }

  void describe() {
    int format = 0;
    check_nc(ncmpi_inq_format(ncid_, &format), path_);
    kind_ = format == NC_FORMAT_CLASSIC ? "CDF-1" : format == NC_FORMAT_CDF2 ? "CDF-2" : "CDF-5";
    const auto shapes = netcdf::variables<PnetcdfApi>(ncid_, path_);
    const auto& chosen = netcdf::choose_variable(shapes, options_.selection, path_);
    check_nc(ncmpi_inq_varid(ncid_, chosen.name.c_str(), &varid_), path_);
    const auto shape = netcdf::volume_shape(chosen, options_.selection, path_);
    nc_type type;
    check_nc(ncmpi_inq_vartype(ncid_, varid_, &type), path_);
    auto dtype = netcdf::dtype_of(type);
    if (!dtype) netcdf::refuse_type(path_, chosen.name, type);
    if (type == NC_BYTE && text_attribute("_Unsigned") == "true") dtype = DType::u8;  // NUG: unsigned bytes in CDF-1/2
    data_offset_ = refuse_truncated(chosen, *dtype, shape.time.value_or(0));
    info_.dims = shape.dims;
    info_.dtype = *dtype;
    info_.byte_order = ByteOrder::big;  // CDF files are big-endian; PnetCDF converts
    info_.variable = chosen.name;
    time_ = shape.time;
    netcdf::apply_attributes(
        info_,
        [&](const std::string& name) { return netcdf::number_attribute<PnetcdfApi>(ncid_, varid_, name, path_); },
        type == NC_BYTE);
    netcdf::read_coordinates<PnetcdfApi>(ncid_, chosen, info_, path_);
    if (auto units = PnetcdfApi::text_attribute(ncid_, varid_, "units"); !units.empty()) info_.attributes["units"] = units;
    for (int a = 0; a < 3; ++a) info_.attributes["dim" + std::to_string(a)] = chosen.dim_names[chosen.dim_names.size() - 3 + static_cast<std::size_t>(a)];
  }

  std::string text_attribute(const std::string& name) const {
    nc_type type;
    MPI_Offset length = 0;
    if (ncmpi_inq_att(ncid_, varid_, name.c_str(), &type, &length) != NC_NOERR || type != NC_CHAR) return {};
    std::string value(static_cast<std::size_t>(length), '\0');
    check_nc(ncmpi_get_att_text(ncid_, varid_, name.c_str(), value.data()), path_ + ": attribute " + name);
    return value;
  }

  // PnetCDF reads past the end of a truncated file as zeros, without a word;
  // the variable's bytes must all be in the file. Returns where the chosen
  // record's (or the fixed-size variable's) bytes begin.
  std::uint64_t refuse_truncated(const netcdf::VariableShape& variable, DType dtype, std::int64_t time) const {
    MPI_Offset begin = 0;
    check_nc(ncmpi_inq_varoffset(ncid_, varid_, &begin), path_);
    int record_dim = -1;
    check_nc(ncmpi_inq_unlimdim(ncid_, &record_dim), path_);
    std::vector<int> dim_ids(variable.dim_lengths.size());
    check_nc(ncmpi_inq_vardimid(ncid_, varid_, dim_ids.data()), path_);
    const bool record = record_dim >= 0 && !dim_ids.empty() && dim_ids[0] == record_dim;
    MPI_Offset record_size = 0;
    if (record) check_nc(ncmpi_inq_recsize(ncid_, &record_size), path_);
    // The end of the last record (or of the variable), checked: the counts
    // of a damaged header can describe more bytes than a file holds.
    MPI_Offset slab = static_cast<MPI_Offset>(dtype_size(dtype)), end = begin, earlier = 0;
    bool too_large = false;
    for (std::size_t a = record ? 1 : 0; a < variable.dim_lengths.size(); ++a)
      too_large |= __builtin_mul_overflow(slab, variable.dim_lengths[a], &slab);
    if (const std::int64_t records = record ? variable.dim_lengths[0] : 1; records > 0)
      too_large |= __builtin_mul_overflow(records - 1, record_size, &earlier) ||
                   __builtin_add_overflow(end, earlier, &end) || __builtin_add_overflow(end, slab, &end);
    if (too_large)
      throw Error(path_ + ": variable " + variable.name + " has more bytes than a file holds (a damaged header)");
    struct stat st{};
    if (::stat(path_.c_str(), &st) != 0) throw_errno("stat", path_);
    if (st.st_size < end)
      throw Error(path_ + ": file is truncated: variable " + variable.name + " ends at byte " + std::to_string(end) +
                  ", the file has " + std::to_string(st.st_size));
    return static_cast<std::uint64_t>(begin + (record ? time * record_size : 0));
  }

 public:
  std::uint64_t data_offset() const { return data_offset_; }

 private:

  Comm comm_;
  std::string path_;
  std::string kind_;  // CDF-1, CDF-2 or CDF-5
  Options options_;
  int ncid_ = -1, varid_ = -1;
  std::optional<std::int64_t> time_;
  std::uint64_t data_offset_ = 0;
  VolumeInfo info_;
  std::atomic<std::uint64_t> bytes_read_{0};
};

class PnetcdfWriter final : public VolumeWriter {
 public:
  PnetcdfWriter(const CreateRequest& request, const Comm& comm, Options options)
      : VolumeWriter({.collective = true}), comm_(comm.duplicate()), path_(request.path), info_(request.info), options_(std::move(options)) {
    namespace fs = std::filesystem;
    if (options_.format == NC_FORMAT_CDF2 && (info_.dtype == DType::u16 || info_.dtype == DType::u32 ||
                                              info_.dtype == DType::i64 || info_.dtype == DType::u64))
      throw Error(path_ + ": CDF-2 has no " + std::string(dtype_name(info_.dtype)) +
                  " type (only byte, short, int, float, double); write CDF-5 (--format cdf5)");
    // Appending to a file that exists writes in place: PnetCDF updates the
    // record count in the header only at close, so a job that dies leaves
    // the earlier records and the old count, never a half record.
    int appending = 0;
    collectively(comm_, [&] {
      if (comm_.rank() != 0) return;
      appending = options_.append && fs::exists(path_);
      if (appending) return;
      if (!options_.append) refuse_existing(path_, request.overwrite);
      if (!options_.append && fs::is_directory(path_))  // refused now, not at the commit after the job
        throw Error(path_ + " exists and is not a file: --force replaces files only");
      // A partial output stays for a rerun with --resume (its job decides).
      commit_ = request.partial != Partial::none
                    ? AtomicCommit(path_, partial_path(path_), AtomicCommit::Uncommitted::kept)
                    : AtomicCommit(path_, temporary_path(path_));
      temp_path_ = commit_.temporary();
    });
    check_mpi(MPI_Bcast(&appending, 1, MPI_INT, 0, comm_.get()), "MPI_Bcast");
    temp_path_ = comm_.broadcast(temp_path_);
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
      status = ncmpi_put_vara(ncid_, varid_, start.data(), count.data(), buffer, extent.voxels(), mpi_type(info_.dtype));
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
        check_nc(ncmpi_put_vara_double_all(ncid_, time_varid_, &start, &count, &options_.record_time),
                 "write the time of " + path_);
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
      throw Error(temp_path_ + ": its " + layout.variable + " is not this job's mask: it is not this job's partial output");
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
    }
    for (std::size_t a = 0; a < 3; ++a)
      check_nc(ncmpi_def_dim(ncid_, layout.dim_names[a].c_str(), info_.dims[a], &dims[a + static_cast<std::size_t>(first)]), path_);
    const auto type = static_cast<nc_type>(netcdf::nc_type_for(info_.dtype, options_.format == NC_FORMAT_CDF2));
    auto put_text = [&](int varid, const std::string& key, const std::string& value) {
      check_nc(ncmpi_put_att_text(ncid_, varid, key.c_str(), static_cast<MPI_Offset>(value.size()), value.c_str()),
               path_ + ": attribute " + key);
    };
    std::vector<int> coordinate_ids;
    for (const auto& c : layout.coordinates) {
      int id = -1;
      check_nc(ncmpi_def_var(ncid_, layout.dim_names[c.axis].c_str(), NC_DOUBLE, 1, &dims[c.axis + static_cast<std::size_t>(first)], &id),
               path_ + ": coordinate variable " + layout.dim_names[c.axis]);
      for (const auto& [key, value] : c.text) put_text(id, key, value);
      coordinate_ids.push_back(id);
    }
    check_nc(ncmpi_def_var(ncid_, layout.variable.c_str(), type, 3 + first, dims, &varid_), path_);
    for (const auto& [key, value] : layout.text) put_text(varid_, key, value);
    if (info_.dtype == DType::u8 && options_.format == NC_FORMAT_CDF2) put_text(varid_, "_Unsigned", "true");
    for (const auto& [key, value] : layout.global_text) put_text(NC_GLOBAL, key, value);
    for (const auto& [key, values] : layout.numbers)
      check_nc(ncmpi_put_att_double(ncid_, varid_, key.c_str(), type, static_cast<MPI_Offset>(values.size()),
                                    values.data()),
               path_ + ": attribute " + key);
    if (layout.fill) {  // 64-bit integers exactly
      int status = info_.dtype == DType::i64 ? ncmpi_put_att_longlong(ncid_, varid_, "_FillValue", type, 1,
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

static std::vector<std::string> list_variables(const std::string& path, const Comm& comm) {
  std::vector<std::string> lines;
  int ncid = -1;
  collectively(comm, [&] {
    if (comm.rank() == 0) netcdf::refuse_header_past_end(path);
  });
  collectively(comm, [&] { check_nc(ncmpi_open(comm.get(), path.c_str(), NC_NOWRITE, MPI_INFO_NULL, &ncid), path); });
  try {
    collectively(comm, [&] { lines = netcdf::listing<PnetcdfApi>(ncid, path); });
  } catch (...) {
    ncmpi_close(ncid);  // a refused file is closed too
    throw;
  }
  collectively(comm, [&] { check_nc(ncmpi_close(ncid), "close " + path); });
  return lines;
}

std::vector<KnownHint> cdf_hints() {
  return {{"var", HintFor::readers},        {"time", HintFor::readers},      {"nonblocking", HintFor::both},
          {"format", HintFor::writers},     {"append", HintFor::writers},    {"record_time", HintFor::writers},
          {"fsync", HintFor::writers}};
}

std::unique_ptr<VolumeReader> open_cdf_placed(const std::string& path, const Comm& comm, const Hints& hints,
                                              CdfPlacement& placement) {
  auto reader = std::make_unique<PnetcdfReader>(path, comm, read_options(hints));
  placement = CdfPlacement{path, reader->data_offset()};
  return reader;
}

std::unique_ptr<VolumeWriter> create_cdf_placed(const CreateRequest& request, const Comm& comm, const Hints& hints,
                                                CdfPlacement& placement) {
  auto writer = std::make_unique<PnetcdfWriter>(request, comm, read_options(hints));
  placement = CdfPlacement{writer->temp_path(), writer->data_offset()};
  return writer;
}

Backend make_pnetcdf_backend() {
  Backend backend;
  backend.name = "pnetcdf";
  backend.formats = "NetCDF CDF-1/2/5 (.nc)";
  backend.extension = ".nc";
  backend.description = "PnetCDF collective get/put_vara_all, or iget/iput + wait_all (nonblocking=1)";
  backend.list_variables = list_variables;
  backend.hints = cdf_hints();
  backend.open = [](const std::string& path, const Comm& comm, const Hints& hints) -> std::unique_ptr<VolumeReader> {
    return std::make_unique<PnetcdfReader>(path, comm, read_options(hints));
  };
  backend.create = [](const CreateRequest& request, const Comm& comm,
                      const Hints& hints) -> std::unique_ptr<VolumeWriter> {
    return std::make_unique<PnetcdfWriter>(request, comm, read_options(hints));
  };
  return backend;
}

}  // namespace volseg::io
