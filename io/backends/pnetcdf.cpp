// SPDX-License-Identifier: MIT
// Backend "pnetcdf": NetCDF classic files through PnetCDF. Reads CDF-1,
// CDF-2 ("NetCDF-64") and CDF-5; writes CDF-2 or CDF-5 (hint format=).
// A read_all is one collective call: ncmpi_iget_vara posted for every
// extent of the list and completed by one ncmpi_wait_all. Writes are
// collective ncmpi_put_vara_all by default; with hint nonblocking=1,
// ncmpi_iput_vara posted for every extent of a round and completed by one
// ncmpi_wait_all. PnetCDF and MPI-IO hints
// (nc_header_align_size, nc_var_align_size, cb_buffer_size, ...) pass
// through to the library as MPI_Info.
//
// Outputs follow io's protocol (files.hpp): the file is created under a
// hidden temporary name and renamed by rank 0 (AtomicCommit) after every
// rank's ncmpi_close succeeded; with fsync=1 the folder is synced after.
#include <fcntl.h>
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

namespace volseg::io {
namespace pnetcdf {

Options read_options(const Hints& hints, const Selection& selection) {
  Options options;
  options.selection = netcdf::read_selection(selection);
  options.nonblocking = hints.get_bool("nonblocking", false);
  std::string format = hints.get_string("format", "cdf5");
  if (format == "cdf2")
    options.format = NC_FORMAT_CDF2;
  else if (format == "cdf5")
    options.format = NC_FORMAT_CDF5;
  else
    throw Error("pnetcdf writes format=cdf2 or format=cdf5, not '" + format + "'");
  options.fsync = hints.get_bool("fsync", false);
  options.append = hints.get_bool("append", false);
  options.record_time = netcdf::read_record_time(hints, "pnetcdf");
  options.library_hints = hints.take_matching(library_hint);
  hints.reject_unused("pnetcdf");
  return options;
}

}  // namespace pnetcdf

namespace {

using pnetcdf::check_nc;
using pnetcdf::Options;
using pnetcdf::PnetcdfApi;
using pnetcdf::read_options;

class PnetcdfReader final : public VolumeReader {
 public:
  PnetcdfReader(const std::string& path, const Comm& comm, Options options)
      : VolumeReader({.collective = true, .reads_ahead = true}),
        comm_(comm.duplicate()),
        path_(path),
        options_(std::move(options)) {
    MpiInfo info(options_.library_hints);
    trace::Span span(trace::Op::open);  // the open and the header's inquiries
    collectively(comm_, [&] {
      if (comm_.rank() == 0) netcdf::refuse_header_past_end(path);
    });
    collectively(comm_, [&] {
      check_nc(ncmpi_open(comm_.get(), path.c_str(), NC_NOWRITE, info.get(), &ncid_), "open " + path);
    });
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
    return "PnetCDF " + version.substr(0, version.find(' ')) + " on " + kind_ + ", requests completed by one wait_all";
  }

  // Independent reads of a collective-mode file: every rank enters and
  // leaves independent mode together, so read() is meant for one-off use.
  void do_read(const Extent& extent, void* buffer) override {
    check_nc(ncmpi_begin_indep_data(ncid_), path_);
    auto [start, count] = corners(extent);
    int status = NC_NOERR;
    {
      trace::Span span(trace::Op::read, file_offset(extent), extent_bytes(extent));
      status =
          ncmpi_get_vara(ncid_, varid_, start.data(), count.data(), buffer, extent.voxels(), mpi_type(info_.dtype));
    }
    check_nc(ncmpi_end_indep_data(ncid_), path_);
    check_nc(status, "read " + path_);
    bytes_read_ += static_cast<std::uint64_t>(extent.voxels()) * dtype_size(info_.dtype);
  }

  // One collective call for the whole list, whatever its length (none
  // too): a request per extent (ncmpi_iget_vara into the extent's own
  // buffer), all completed by one ncmpi_wait_all, which PnetCDF makes one
  // MPI-IO collective read. Not ncmpi_get_varn_all: it fills one buffer for
  // every extent, and a caller's buffers lie apart. PnetCDF 1.12's wait_all
  // leaves requests whose file regions overlap unfilled (zeros, in the
  // conformance suite's lists), so where any rank's list has extents that
  // overlap, every rank reads as before: a collective ncmpi_get_vara_all
  // per extent, in rounds. The reduction that learns it takes the place of
  // the rounds' own (io::Rounds), which a list read in one call needs not.
  void do_read_all(std::span<const Extent> extents, std::span<void* const> buffers) override {
    const int mine = overlapping(extents) ? 1 : 0;
    int any = 0;
    check_mpi(MPI_Allreduce(&mine, &any, 1, MPI_INT, MPI_MAX, comm_.get()), "MPI_Allreduce");
    if (any != 0) return read_each(extents, buffers);
    read_as_requests(extents, buffers);
  }

  // The variable's (or this step's record's) bytes ahead, through a
  // descriptor of its own: PnetCDF's MPI-IO file has none to lend.
  void do_will_need(const Extent& extent) override {
    if (extent.empty()) return;
    if (advise_fd_ < 0) {
      advise_fd_ = ::open(path_.c_str(), O_RDONLY | O_CLOEXEC);
      if (advise_fd_ < 0) throw_errno("open", path_);
    }
    raw::advise_ranges(advise_fd_, info_.dims, extent, dtype_size(info_.dtype), data_offset_, path_);
  }

  void do_close() override {
    if (const int fd = std::exchange(advise_fd_, -1); fd >= 0 && ::close(fd) != 0) throw_errno("close", path_);
    collectively(comm_, [&] {
      int ncid = std::exchange(ncid_, -1);
      trace::Span span(trace::Op::close);
      check_nc(ncmpi_close(ncid), "close " + path_);
    });
  }
  std::uint64_t bytes_read() const override { return bytes_read_; }
  std::vector<std::string> files() const override { return {path_}; }

 private:
  // The outcome is agreed, so a failure on one rank (a request refused, a
  // read that failed) is thrown on every rank.
  void read_as_requests(std::span<const Extent> extents, std::span<void* const> buffers) {
    std::exception_ptr failure;
    std::vector<int> requests;
    std::uint64_t bytes = 0;
    try {
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
        bytes += extent_bytes(extents[i]);
      }
    } catch (...) {
      failure = std::current_exception();  // still joins the wait, with the requests posted
    }
    std::vector<int> statuses(requests.size());
    int status = NC_NOERR;
    {
      trace::Span span(trace::Op::wait);
      status = ncmpi_wait_all(ncid_, static_cast<int>(requests.size()), requests.data(), statuses.data());
    }
    try {
      check_nc(status, "read " + path_);
      for (const int each : statuses) check_nc(each, "read " + path_);
    } catch (...) {
      if (!failure) failure = std::current_exception();
    }
    if (!failure) bytes_read_ += bytes;
    agree(comm_, failure);
  }

  void read_each(std::span<const Extent> extents, std::span<void* const> buffers) {
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
      bytes_read_ += extent_bytes(*extent);
    });
  }

  static bool overlapping(std::span<const Extent> extents) {
    auto meet = [](const Extent& a, const Extent& b) {
      for (int i = 0; i < 3; ++i)
        if (a.offset[i] >= b.offset[i] + b.count[i] || b.offset[i] >= a.offset[i] + a.count[i]) return false;
      return true;
    };
    for (std::size_t i = 0; i < extents.size(); ++i)
      for (std::size_t j = i + 1; j < extents.size(); ++j)
        if (!extents[i].empty() && !extents[j].empty() && meet(extents[i], extents[j])) return true;
    return false;
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
    info_.steps = shape.steps;
    info_.step = shape.time;
    info_.dtype = *dtype;
    info_.byte_order = ByteOrder::big;  // CDF files are big-endian; PnetCDF converts
    info_.variable = chosen.name;
    time_ = shape.time;
    netcdf::apply_attributes(
        info_,
        [&](const std::string& name) { return netcdf::number_attribute<PnetcdfApi>(ncid_, varid_, name, path_); },
        type == NC_BYTE);
    netcdf::read_coordinates<PnetcdfApi>(ncid_, chosen, info_, path_);
    if (auto units = netcdf::trimmed(PnetcdfApi::text_attribute(ncid_, varid_, "units")); !units.empty())
      info_.attributes["units"] = units;
    for (int a = 0; a < 3; ++a)
      info_.attributes["dim" + std::to_string(a)] =
          chosen.dim_names[chosen.dim_names.size() - 3 + static_cast<std::size_t>(a)];
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
    struct stat st {};
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
  int advise_fd_ = -1;  // will_need's descriptor, opened at its first call
  VolumeInfo info_;
  std::atomic<std::uint64_t> bytes_read_{0};
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
  return {{"nonblocking", HintFor::both},
          {"format", HintFor::writers},
          {"append", HintFor::writers},
          {"record_time", HintFor::writers},
          {"fsync", HintFor::writers}};
}

std::unique_ptr<VolumeReader> open_cdf_placed(const OpenRequest& request, const Comm& comm, const Hints& hints,
                                              CdfPlacement& placement) {
  const std::string& path = request.path;
  auto reader = std::make_unique<PnetcdfReader>(path, comm, read_options(hints, request.selection));
  placement = CdfPlacement{path, reader->data_offset()};
  return reader;
}

std::unique_ptr<VolumeWriter> create_cdf_placed(const CreateRequest& request, const Comm& comm, const Hints& hints,
                                                CdfPlacement& placement) {
  auto placed = pnetcdf::create_writer(request, comm, read_options(hints));
  placement = CdfPlacement{placed.temp_path, placed.data_offset};
  return std::move(placed.writer);
}

Backend make_pnetcdf_backend() {
  Backend backend;
  backend.name = "pnetcdf";
  backend.formats = "NetCDF CDF-1/2/5 (.nc)";
  backend.extension = ".nc";
  backend.description = "PnetCDF iget + one wait_all per read_all; put_vara_all, or iput + wait_all (nonblocking=1)";
  backend.list_variables = list_variables;
  backend.hints = cdf_hints();
  backend.open = [](const OpenRequest& request, const Comm& comm, const Hints& hints) -> std::unique_ptr<VolumeReader> {
    request.selection.refuse_glob("pnetcdf");
    return std::make_unique<PnetcdfReader>(request.path, comm, read_options(hints, request.selection));
  };
  backend.create = [](const CreateRequest& request, const Comm& comm,
                      const Hints& hints) -> std::unique_ptr<VolumeWriter> {
    return pnetcdf::create_writer(request, comm, read_options(hints)).writer;
  };
  return backend;
}

}  // namespace volseg::io
