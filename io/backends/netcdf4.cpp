// SPDX-License-Identifier: MIT
// Backend "netcdf4": NetCDF-4 (HDF5) files through parallel netCDF-C
// (nc_open_par/nc_create_par). Access is collective by default
// (hint access=independent). Outputs are contiguous by default; hint
// chunks=contiguous|Z,Y,X chooses (the engine turns chunks=brick into its
// brick shape). Chunked and deflated variables written by other tools are
// read in parallel; a variable that needs a filter this library lacks is
// refused when opened. deflate=N (with HDF5's byte shuffle unless shuffle=0)
// asks for compressed output and is refused
// with the library's reason where parallel compressed writes are not
// possible.
//
// Outputs follow io's protocol (files.hpp): the file is created under a
// hidden temporary name and renamed by rank 0 (AtomicCommit) after every
// rank's nc_close succeeded; with fsync=1 the folder is synced after.
#include <dlfcn.h>
#include <fcntl.h>
#include <mpi.h>
#include <netcdf.h>
#include <netcdf_filter.h>
#include <netcdf_par.h>
#include <unistd.h>

#include <atomic>
#include <charconv>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <sstream>
#include <vector>

#include "mpi_support.hpp"
#include "netcdf/catalog.hpp"
#include "netcdf/conventions.hpp"
#include "netcdf/hdf5_catalog.hpp"
#include "netcdf4_support.hpp"
#include "raw/raw_volume.hpp"
#include "volseg/io/error.hpp"
#include "volseg/io/files.hpp"
#include "volseg/io/memory.hpp"
#include "volseg/io/registry.hpp"
#include "volseg/io/trace.hpp"

namespace volseg::io {

// The serial libnetcdf (which VTK links) has no
// symbol versions; if the loader reached it first it answers every nc_*
// call, and nc_create_par fails with NC_ENOPAR. Say so instead.
void check_parallel_netcdf() {
  Dl_info where{};
  if (::dladdr(reinterpret_cast<void*>(&nc_create_par), &where) == 0 || where.dli_fname == nullptr)
    throw Error("cannot tell which netCDF library answers nc_create_par");
  std::string library = where.dli_fname;
  if (library.find("netcdf_pnetcdf") == std::string::npos && library.find("netcdf_mpi") == std::string::npos)
    throw Error("the serial netCDF library (" + library +
                ") answers netCDF calls; volseg needs the parallel one (link netCDF::netcdf into the executable "
                "before VTK)");
}

namespace {

using netcdf4::check_nc;
using netcdf4::Options;

// netCDF-C's side of netcdf/catalog.hpp.
struct NetcdfApi {
  static constexpr int max_name = NC_MAX_NAME;
  static void check(int status, const std::string& what) { check_nc(status, what); }
  static int inq_nvars(int ncid, int* count) { return nc_inq_nvars(ncid, count); }
  static int inq_var(int ncid, int varid, char* name, int* type, int* dims) {
    nc_type t = 0;
    int status = nc_inq_var(ncid, varid, name, &t, dims, nullptr, nullptr);
    *type = t;
    return status;
  }
  static int inq_vardimid(int ncid, int varid, int* ids) { return nc_inq_vardimid(ncid, varid, ids); }
  static int inq_dim(int ncid, int id, char* name, std::int64_t* length) {
    std::size_t n = 0;
    int status = nc_inq_dim(ncid, id, name, &n);
    *length = static_cast<std::int64_t>(n);
    return status;
  }
  static bool inq_att(int ncid, int varid, const char* name, int* type, std::int64_t* length) {
    nc_type t = 0;
    std::size_t n = 0;
    if (nc_inq_att(ncid, varid, name, &t, &n) != NC_NOERR) return false;
    *type = t;
    *length = static_cast<std::int64_t>(n);
    return true;
  }
  static bool is_text(int type) { return type == NC_CHAR || type == NC_STRING; }
  static int get_att_double(int ncid, int varid, const char* name, double* values) {
    return nc_get_att_double(ncid, varid, name, values);
  }
  static int get_att_longlong(int ncid, int varid, const char* name, long long* values) {
    return nc_get_att_longlong(ncid, varid, name, values);
  }
  static int get_att_ulonglong(int ncid, int varid, const char* name, unsigned long long* values) {
    return nc_get_att_ulonglong(ncid, varid, name, values);
  }
  static int inq_varid(int ncid, const char* name, int* varid) { return nc_inq_varid(ncid, name, varid); }
  static int get_var_double(int ncid, int varid, double* values) { return nc_get_var_double(ncid, varid, values); }
  // A text attribute (char or a single string), empty when absent or not text.
  static std::string text_attribute(int ncid, int varid, const char* name) {
    nc_type type = 0;
    std::size_t length = 0;
    if (nc_inq_att(ncid, varid, name, &type, &length) != NC_NOERR) return {};
    if (type == NC_CHAR) {
      std::string value(length, '\0');
      if (nc_get_att_text(ncid, varid, name, value.data()) != NC_NOERR) return {};
      return value;
    }
    if (type == NC_STRING && length == 1) {
      char* value = nullptr;
      if (nc_get_att_string(ncid, varid, name, &value) != NC_NOERR) return {};
      std::string result = value ? value : "";
      nc_free_string(1, &value);
      return result;
    }
    return {};
  }
};

}  // namespace

namespace netcdf4 {

Options read_options(const Hints& hints, const Selection& selection) {
  Options options;
  options.selection = netcdf::read_selection(selection);
  std::string access = hints.get_string("access", "collective");
  if (access != "collective" && access != "independent")
    throw Error("netcdf4: access=collective or access=independent, not '" + access + "'");
  options.independent = access == "independent";
  options.chunks = hints.get_string("chunks", "contiguous");
  options.deflate = static_cast<int>(hints.get_int("deflate", 0));
  if (options.deflate < 0 || options.deflate > 9) throw Error("netcdf4: deflate must be 0 to 9");
  options.shuffle = hints.get_bool("shuffle", true);
  options.fsync = hints.get_bool("fsync", false);
  options.pread = hints.get_bool("pread", true);
  options.append = hints.get_bool("append", false);
  options.record_time = netcdf::read_record_time(hints, "netcdf4");
  options.library_hints = hints.take_matching(library_hint);
  hints.reject_unused("netcdf4");
  return options;
}

}  // namespace netcdf4

namespace {

using netcdf4::read_options;

// Every variable of a file, in the root group and below, named by its path
// from the root ("sim/density"), with its group and id.
struct Catalog {
  std::vector<netcdf::VariableShape> shapes;
  std::vector<std::pair<int, int>> places;  // group id, variable id
};

void add_group(int gid, const std::string& prefix, const std::string& path, Catalog& catalog, int depth) {
  if (depth > 32) throw Error(path + ": groups nested deeper than 32");
  int count = 0;
  check_nc(nc_inq_nvars(gid, &count), path);
  for (int v = 0; v < count; ++v) {
    netcdf::VariableShape shape = netcdf::shape_of<NetcdfApi>(gid, v, path);
    shape.name = prefix + shape.name;
    catalog.shapes.push_back(std::move(shape));
    catalog.places.emplace_back(gid, v);
  }
  int groups = 0;
  check_nc(nc_inq_grps(gid, &groups, nullptr), path);
  std::vector<int> ids(static_cast<std::size_t>(groups));
  if (groups > 0) check_nc(nc_inq_grps(gid, &groups, ids.data()), path);
  for (int id : ids) {
    char name[NC_MAX_NAME + 1];
    check_nc(nc_inq_grpname(id, name), path);
    add_group(id, prefix + name + "/", path, catalog, depth + 1);
  }
}

Catalog catalog_of(int ncid, const std::string& path) {
  Catalog catalog;
  add_group(ncid, "", path, catalog, 0);
  return catalog;
}

class Netcdf4Reader final : public VolumeReader {
 public:
  Netcdf4Reader(const std::string& path, const Comm& comm, Options options)
      : VolumeReader({.collective = !options.independent}),
        comm_(comm.duplicate()),
        path_(path),
        options_(std::move(options)) {
    check_parallel_netcdf();
    MpiInfo info(options_.library_hints);
    trace::Span span(trace::Op::open);  // the open and the metadata's inquiries
    // What HDF5 says of the datasets, in one walk on rank 0: chunks no
    // dataset can have (refused when the variable is chosen) and, for the
    // pread path, where contiguous ones lie.
    std::string catalog;
    collectively(comm_, [&] {
      if (comm_.rank() == 0) catalog = netcdf::serialize(netcdf::hdf5_catalog(path));
    });
    netcdf::Hdf5Catalog found = netcdf::deserialize(comm_.broadcast(catalog));
    if (options_.pread) contiguous_ = std::move(found.contiguous);
    impossible_chunks_ = std::move(found.impossible_chunks);
    collectively(comm_, [&] {
      check_nc(nc_open_par(path.c_str(), NC_NOWRITE, comm_.get(), info.get(), &ncid_), "open " + path);
    });
    try {
      collectively(comm_, [&] {
        describe();
        int status = nc_var_par_access(gid_, varid_, options_.independent ? NC_INDEPENDENT : NC_COLLECTIVE);
        if (status != NC_NOERR && options_.independent && has_filters())
          throw Error(path + ": variable " + info_.variable +
                      " is compressed, and HDF5 reads compressed data only collectively (drop access=independent)");
        check_nc(status, path);
        open_contiguous();
      });
    } catch (...) {
      // A refused file is closed too (by every rank: all opened it), or a
      // long-lived process (the GUI) runs out of descriptors.
      nc_close(std::exchange(ncid_, -1));
      if (fd_ >= 0) ::close(std::exchange(fd_, -1));
      throw;
    }
    // A contiguous dataset read by pread: its bytes ahead reach the kernel
    // (a chunked one's are HDF5's to find), and read() is local.
    set_capabilities({.collective = !options_.independent,
                      .reads_locally = fd_ >= 0 || options_.independent,
                      .reads_ahead = fd_ >= 0});
  }
  ~Netcdf4Reader() override {
    if (ncid_ >= 0) nc_close(ncid_);
    if (fd_ >= 0) ::close(fd_);
  }

  const VolumeInfo& info() const override { return info_; }
  std::string backend_name() const override { return "netcdf4"; }
  std::string implementation() const override {
    std::string version = nc_inq_libvers();
    return "netCDF-C " + version.substr(0, version.find(' ')) +
           (by_pread_              ? ", contiguous dataset by pread"
            : options_.independent ? ", independent"
                                   : ", collective");
  }

  void do_read(const Extent& extent, void* buffer) override {
    if (fd_ >= 0) return read_contiguous(extent, buffer);
    auto [start, count] = corners(extent);
    // HDF5 places the data (chunks): no single file offset to give.
    trace::Span span(trace::Op::read, -1, static_cast<std::uint64_t>(extent.voxels()) * dtype_size(info_.dtype));
    check_nc(nc_get_vara(gid_, varid_, start.data(), count.data(), buffer), "read " + path_);
    bytes_read_ += static_cast<std::uint64_t>(extent.voxels()) * dtype_size(info_.dtype);
  }

  void do_read_all(std::span<const Extent> extents, std::span<void* const> buffers) override {
    if (options_.independent) return VolumeReader::do_read_all(extents, buffers);
    // By pread, still collective to the caller: one rank's failure reaches every rank.
    if (fd_ >= 0) return collectively(comm_, [&] { VolumeReader::do_read_all(extents, buffers); });
    in_rounds(comm_, extents, buffers, [&](const Extent* extent, void* buffer) {
      if (extent && !extent->empty()) return do_read(*extent, buffer);
      auto [start, count] = corners(Extent{});  // join the round with nothing
      std::byte none{};
      trace::Span span(trace::Op::read);
      check_nc(nc_get_vara(gid_, varid_, start.data(), count.data(), &none), "read " + path_);
    });
  }

  void do_close() override {
    collectively(comm_, [&] {
      int ncid = std::exchange(ncid_, -1);
      trace::Span span(trace::Op::close);
      check_nc(nc_close(ncid), "close " + path_);
      if (const int fd = std::exchange(fd_, -1); fd >= 0 && ::close(fd) != 0) throw_errno("close", path_);
    });
  }
  std::uint64_t bytes_read() const override { return bytes_read_; }
  std::vector<std::string> files() const override { return {path_}; }

 private:
  std::pair<std::vector<std::size_t>, std::vector<std::size_t>> corners(const Extent& extent) const {
    std::vector<std::size_t> start, count;
    if (time_) {
      start.push_back(static_cast<std::size_t>(*time_));
      count.push_back(1);
    }
    for (int a = 0; a < 3; ++a) {
      start.push_back(static_cast<std::size_t>(extent.offset[a]));
      count.push_back(static_cast<std::size_t>(extent.count[a]));
    }
    return {start, count};
  }

  void describe() {
    // Variables in groups are named by their path ("sim/density"); a
    // leading "/" in --var is the root's, as h5py and h5dump write paths.
    Catalog catalog = catalog_of(ncid_, path_);
    netcdf::Selection selection = options_.selection;
    if (!selection.variable.empty() && selection.variable[0] == '/') selection.variable.erase(0, 1);
    const auto& chosen = netcdf::choose_variable(catalog.shapes, selection, path_);
    const auto at = static_cast<std::size_t>(&chosen - catalog.shapes.data());
    gid_ = catalog.places[at].first;
    varid_ = catalog.places[at].second;
    const auto shape = netcdf::volume_shape(chosen, selection, path_);
    nc_type type;
    check_nc(nc_inq_vartype(gid_, varid_, &type), path_);
    auto dtype = netcdf::dtype_of(type);
    if (!dtype) netcdf::refuse_type(path_, chosen.name, type);
    refuse_missing_filters(chosen.name);
    check_chunking(chosen, *dtype);
    info_.dims = shape.dims;
    info_.steps = shape.steps;
    info_.step = shape.time;
    info_.dtype = *dtype;
    info_.byte_order = native_byte_order();  // netCDF-C converts to native
    info_.variable = chosen.name;
    time_ = shape.time;
    const auto number = [&](const std::string& name) {
      return netcdf::number_attribute<NetcdfApi>(gid_, varid_, name, path_);
    };
    netcdf::apply_attributes(info_, number, type == NC_BYTE);
    netcdf::read_coordinates<NetcdfApi>(gid_, chosen, info_, path_);
    if (auto units = netcdf::trimmed(NetcdfApi::text_attribute(gid_, varid_, "units")); !units.empty())
      info_.attributes["units"] = units;
    // An HDF5 file netCDF did not write (no _NCProperties): its datasets
    // have HDF5's fill, not netCDF's, and a value equal to netCDF's default
    // fill is data. Spacing from the attributes HDF5 tools write, in the
    // dataset's (z, y, x) order: element_size_um (Fiji, ilastik) or spacing.
    if (nc_inq_att(ncid_, NC_GLOBAL, "_NCProperties", nullptr, nullptr) != NC_NOERR) {
      info_.attributes["hdf5"] = "not written by netCDF";
      if (!number("_FillValue")) info_.fill_value.reset();
      for (const char* key : {"element_size_um", "spacing"})
        if (const auto values = number(key); values && values->size() == 3) {
          for (std::size_t a = 0; a < 3; ++a)
            if ((*values)[a] > 0) info_.spacing[a] = static_cast<double>((*values)[2 - a]);
          break;
        }
    }
    for (std::size_t a = 0; a < 3; ++a)
      info_.attributes["dim" + std::to_string(a)] = chosen.dim_names[chosen.dim_names.size() - 3 + a];
  }

  // The chosen variable, when it is a contiguous dataset of the type netCDF
  // reports: its file offset (a 4D variable's step from there), and the file open.
  void open_contiguous() {
    const auto it = contiguous_.find(info_.variable[0] == '/' ? info_.variable.substr(1) : info_.variable);
    if (it == contiguous_.end() || has_filters()) return;
    const netcdf::Contiguous& p = it->second;
    if (p.size != dtype_size(info_.dtype) || p.is_float != dtype_is_float(info_.dtype)) return;
    // The dataset holds exactly this variable: its volume, or its steps of it.
    const auto volume = static_cast<std::uint64_t>(info_.voxels());
    if (volume == 0 || p.values % volume != 0 ||
        (time_ ? static_cast<std::uint64_t>(*time_) >= p.values / volume : p.values != volume))
      return;
    const bool is_signed = p.is_float || info_.dtype == DType::i8 || info_.dtype == DType::i16 ||
                           info_.dtype == DType::i32 || info_.dtype == DType::i64;
    if (p.is_signed != is_signed) return;
    contiguous_offset_ = p.offset + (time_ ? static_cast<std::uint64_t>(*time_) * info_.bytes() : 0);
    contiguous_swap_ = p.big_endian != (native_byte_order() == ByteOrder::big);
    fd_ = ::open(path_.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd_ < 0) throw_errno("open", path_);
    by_pread_ = true;
  }

  void do_will_need(const Extent& extent) override {
    if (fd_ < 0 || extent.empty()) return;
    raw::advise_ranges(fd_, info_.dims, extent, dtype_size(info_.dtype), contiguous_offset_, path_);
  }

  void read_contiguous(const Extent& extent, void* buffer) {
    const std::size_t size = dtype_size(info_.dtype);
    auto* out = static_cast<std::byte*>(buffer);
    raw::for_each_run(info_.dims, extent, size, contiguous_offset_,
                      [&](std::uint64_t offset, std::int64_t count, std::int64_t index) {
                        std::byte* target = out + index * static_cast<std::int64_t>(size);
                        raw::read_fully(fd_, target, static_cast<std::size_t>(count) * size, offset, path_);
                        if (contiguous_swap_) raw::swap_bytes(target, count, size);
                      });
    bytes_read_ += static_cast<std::uint64_t>(extent.voxels()) * size;
  }

  bool has_filters() const {
    std::size_t count = 0;
    return nc_inq_var_filter_ids(gid_, varid_, &count, nullptr) == NC_NOERR && count > 0;
  }

  // HDF5 reads a chunked variable chunk by chunk, and holds (and inflates)
  // a chunk whole; the chunk that the file declares is checked before the
  // first read: against the dataset's maximum along a dimension that cannot
  // grow (HDF5 itself refuses to create such a chunk), and against the
  // memory budget. A variable larger than the file is not refused:
  // unwritten chunks read as the fill value.
  void check_chunking(const netcdf::VariableShape& chosen, DType dtype) {
    const std::size_t rank = chosen.dim_lengths.size();
    int storage = NC_CONTIGUOUS;
    std::vector<std::size_t> sizes(rank);
    check_nc(nc_inq_var_chunking(gid_, varid_, &storage, sizes.data()), path_ + ": variable " + chosen.name);
    if (storage != NC_CHUNKED) return;
    std::string text;
    std::uint64_t bytes = dtype_size(dtype);
    for (std::size_t a = 0; a < rank; ++a) {
      text += (a ? " x " : "") + std::to_string(sizes[a]);
      bytes = saturating_product({bytes, sizes[a]});
    }
    // netCDF shows a dimension that HDF5 lets grow to a finite maximum as
    // fixed at its length: HDF5's own maxima decide (netcdf::hdf5_catalog).
    const std::string name = chosen.name[0] == '/' ? chosen.name.substr(1) : chosen.name;
    if (const auto it = impossible_chunks_.find(name); it != impossible_chunks_.end())
      throw Error(path_ + ": variable " + chosen.name + ": " + it->second);
    check_piece(path_ + ": variable " + chosen.name + ": chunk " + text + " of " + std::string(dtype_name(dtype)),
                bytes);
  }

  // A variable compressed with a filter this library cannot decode (a
  // plugin that is not installed) would fail at the first read, on every
  // rank; refuse it at open with its filter id.
  void refuse_missing_filters(const std::string& variable) {
    std::size_t count = 0;
    if (nc_inq_var_filter_ids(gid_, varid_, &count, nullptr) != NC_NOERR || count == 0) return;
    std::vector<unsigned int> ids(count);
    check_nc(nc_inq_var_filter_ids(gid_, varid_, &count, ids.data()), path_);
    for (unsigned int id : ids)
      if (nc_inq_filter_avail(gid_, id) != NC_NOERR)
        throw Error(path_ + ": variable " + variable + " is compressed with HDF5 filter " + std::to_string(id) +
                    ", which this netCDF library cannot decode (plugin not installed)");
  }

  Comm comm_;
  std::string path_;
  Options options_;
  int ncid_ = -1, varid_ = -1;
  int gid_ = -1;  // the group that holds the variable (ncid_ for the root's)
  std::optional<std::int64_t> time_;
  VolumeInfo info_;
  std::map<std::string, netcdf::Contiguous> contiguous_;  // the file's contiguous datasets
  std::map<std::string, std::string> impossible_chunks_;  // netcdf::Hdf5Catalog::impossible_chunks
  int fd_ = -1;                                           // the chosen one's file, when it is one of them
  std::uint64_t contiguous_offset_ = 0;
  bool contiguous_swap_ = false, by_pread_ = false;
  std::atomic<std::uint64_t> bytes_read_{0};
};

}  // namespace

static std::vector<std::string> list_variables(const std::string& path, const Comm& comm) {
  check_parallel_netcdf();
  std::vector<std::string> lines;
  int ncid = -1;
  collectively(comm, [&] { check_nc(nc_open_par(path.c_str(), NC_NOWRITE, comm.get(), MPI_INFO_NULL, &ncid), path); });
  try {
    collectively(comm, [&] {
      const Catalog catalog = catalog_of(ncid, path);
      for (const auto& shape : catalog.shapes)
        if (shape.dim_names.size() >= 3) lines.push_back(netcdf::listing_line(shape));
    });
  } catch (...) {
    nc_close(ncid);  // a refused file is closed too
    throw;
  }
  collectively(comm, [&] { check_nc(nc_close(ncid), "close " + path); });
  return lines;
}

Backend make_netcdf4_backend() {
  Backend backend;
  backend.name = "netcdf4";
  backend.formats = "NetCDF-4 / HDF5 (.nc)";
  backend.extension = ".nc";
  backend.description =
      "parallel netCDF-C (nc_open_par/nc_create_par), collective access; a contiguous dataset is read by pread at its "
      "file offset (hint pread=0: through the library)";
  backend.list_variables = list_variables;
  backend.hints = {{"access", HintFor::both},    {"chunks", HintFor::writers},     {"deflate", HintFor::writers},
                   {"fsync", HintFor::writers},  {"shuffle", HintFor::writers},    {"pread", HintFor::readers},
                   {"append", HintFor::writers}, {"record_time", HintFor::writers}};
  backend.open = [](const OpenRequest& request, const Comm& comm, const Hints& hints) -> std::unique_ptr<VolumeReader> {
    request.selection.refuse_glob("netcdf4");
    return std::make_unique<Netcdf4Reader>(request.path, comm, read_options(hints, request.selection));
  };
  backend.create = [](const CreateRequest& request, const Comm& comm,
                      const Hints& hints) -> std::unique_ptr<VolumeWriter> {
    return netcdf4::make_writer(request, comm, read_options(hints));
  };
  return backend;
}

}  // namespace volseg::io
