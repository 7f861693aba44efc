// SPDX-License-Identifier: MIT
// Backend "pnetcdf": NetCDF classic files through PnetCDF. Reads CDF-1,
// CDF-2 ("NetCDF-64") and CDF-5; writes CDF-2 or CDF-5 (hint format=).
// Collective ncmpi_get_vara_all/put_vara_all by default; with hint
// nonblocking=1, ncmpi_iget_vara/iput_vara posted for every extent of a
// round and completed by one ncmpi_wait_all. PnetCDF and MPI-IO hints
// (nc_header_align_size, nc_var_align_size, cb_buffer_size, ...) pass
// through to the library as MPI_Info.
//
// Outputs follow the raw backends' protocol: the file is created under a
// hidden temporary name and renamed by rank 0 after every rank's ncmpi_close
// succeeded.
#include <mpi.h>
#include <pnetcdf.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <memory>
#include <vector>

#include "netcdf/conventions.hpp"
#include "volseg/io/error.hpp"
#include "volseg/io/registry.hpp"

namespace volseg::io {
namespace {

void check_nc(int status, const std::string& what) {
  if (status != NC_NOERR) throw Error(what + ": " + ncmpi_strerror(status));
}

std::optional<DType> dtype_of(nc_type type) {
  switch (type) {
    case NC_UBYTE: return DType::u8;
    case NC_SHORT: return DType::i16;
    case NC_USHORT: return DType::u16;
    case NC_INT: return DType::i32;
    case NC_FLOAT: return DType::f32;
    case NC_DOUBLE: return DType::f64;
    default: return std::nullopt;
  }
}

const char* nc_type_name(nc_type type) {
  switch (type) {
    case NC_BYTE: return "byte";
    case NC_CHAR: return "char";
    case NC_SHORT: return "short";
    case NC_INT: return "int";
    case NC_FLOAT: return "float";
    case NC_DOUBLE: return "double";
    case NC_UBYTE: return "ubyte";
    case NC_USHORT: return "ushort";
    case NC_UINT: return "uint";
    case NC_INT64: return "int64";
    case NC_UINT64: return "uint64";
    default: return "unknown";
  }
}

MPI_Datatype mpi_type(DType dtype) {
  switch (dtype) {
    case DType::u8: return MPI_UNSIGNED_CHAR;
    case DType::i16: return MPI_SHORT;
    case DType::u16: return MPI_UNSIGNED_SHORT;
    case DType::i32: return MPI_INT;
    case DType::f32: return MPI_FLOAT;
    case DType::f64: return MPI_DOUBLE;
  }
  return MPI_BYTE;
}

// PnetCDF's own hints and MPI-IO's, passed through as MPI_Info.
bool library_hint(const std::string& key) {
  return key.rfind("nc_", 0) == 0 || key.rfind("romio_", 0) == 0 || key.rfind("cb_", 0) == 0 ||
         key.rfind("striping_", 0) == 0 || key == "pnetcdf_subfiling";
}

class Info {
 public:
  explicit Info(const std::vector<std::pair<std::string, std::string>>& pairs) {
    if (pairs.empty()) return;
    check_mpi(MPI_Info_create(&info_), "MPI_Info_create");
    for (const auto& [key, value] : pairs) MPI_Info_set(info_, key.c_str(), value.c_str());
  }
  Info(const Info&) = delete;
  Info& operator=(const Info&) = delete;
  ~Info() {
    if (info_ != MPI_INFO_NULL) MPI_Info_free(&info_);
  }
  MPI_Info get() const { return info_; }

 private:
  MPI_Info info_ = MPI_INFO_NULL;
};

struct Options {
  netcdf::Selection selection;
  bool nonblocking = false;
  int format = NC_FORMAT_CDF5;
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
  hints.get_bool("fsync", false);
  options.library_hints = hints.take_matching(library_hint);
  hints.reject_unused("pnetcdf");
  return options;
}

// Runs fn for every extent of this rank in rounds that every rank joins.
template <class Buffer, class Fn>
void in_rounds(const Comm& comm, std::span<const Extent> extents, std::span<Buffer const> buffers, Fn&& fn) {
  if (extents.size() != buffers.size()) throw Error("pnetcdf: extents and buffers differ in number");
  long long mine = static_cast<long long>(extents.size()), rounds = 0;
  check_mpi(MPI_Allreduce(&mine, &rounds, 1, MPI_LONG_LONG, MPI_MAX, comm.get()), "MPI_Allreduce");
  for (long long r = 0; r < rounds; ++r) {
    if (r < mine) fn(&extents[static_cast<std::size_t>(r)], buffers[static_cast<std::size_t>(r)]);
    else fn(nullptr, Buffer{});
  }
}

class PnetcdfReader final : public VolumeReader {
 public:
  PnetcdfReader(const std::string& path, const Comm& comm, Options options)
      : comm_(comm.duplicate()), path_(path), options_(std::move(options)) {
    Info info(options_.library_hints);
    collectively(comm_, [&] {
      check_nc(ncmpi_open(comm_.get(), path.c_str(), NC_NOWRITE, info.get(), &ncid_), path);
      describe();
    });
  }
  ~PnetcdfReader() override {
    if (ncid_ >= 0) ncmpi_close(ncid_);
  }

  const VolumeInfo& info() const override { return info_; }
  std::string backend_name() const override { return "pnetcdf"; }
  bool collective() const override { return true; }
  std::string implementation() const override {
    int format = 0;
    ncmpi_inq_format(ncid_, &format);
    std::string kind = format == NC_FORMAT_CLASSIC ? "CDF-1" : format == NC_FORMAT_CDF2 ? "CDF-2" : "CDF-5";
    return "PnetCDF " + std::string(ncmpi_inq_libvers()).substr(0, std::string(ncmpi_inq_libvers()).find(' ')) +
           " on " + kind + (options_.nonblocking ? ", non-blocking" : "");
  }

  // Independent reads of a collective-mode file: every rank enters and
  // leaves independent mode together, so read() is meant for one-off use.
  void read(const Extent& extent, void* buffer) override {
    check_inside(extent, info_.dims);
    check_nc(ncmpi_begin_indep_data(ncid_), path_);
    auto [start, count] = corners(extent);
    int status = ncmpi_get_vara(ncid_, varid_, start.data(), count.data(), buffer, extent.voxels(), mpi_type(info_.dtype));
    check_nc(ncmpi_end_indep_data(ncid_), path_);
    check_nc(status, "read " + path_);
    bytes_read_ += static_cast<std::uint64_t>(extent.voxels()) * dtype_size(info_.dtype);
  }

  void read_all(std::span<const Extent> extents, std::span<void* const> buffers) override {
    for (const auto& extent : extents) check_inside(extent, info_.dims);
    if (options_.nonblocking) return read_all_nonblocking(extents, buffers);
    in_rounds(comm_, extents, buffers, [&](const Extent* extent, void* buffer) {
      if (!extent || extent->empty()) {  // join the round with nothing to read
        auto [start, count] = corners(Extent{});
        check_nc(ncmpi_get_vara_all(ncid_, varid_, start.data(), count.data(), nullptr, 0, mpi_type(info_.dtype)),
                 "read " + path_);
        return;
      }
      auto [start, count] = corners(*extent);
      check_nc(ncmpi_get_vara_all(ncid_, varid_, start.data(), count.data(), buffer, extent->voxels(),
                                  mpi_type(info_.dtype)),
               "read " + path_);
      bytes_read_ += static_cast<std::uint64_t>(extent->voxels()) * dtype_size(info_.dtype);
    });
  }

  void close() override {
    collectively(comm_, [&] {
      int ncid = std::exchange(ncid_, -1);
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
      check_nc(ncmpi_iget_vara(ncid_, varid_, start.data(), count.data(), buffers[i], extents[i].voxels(),
                               mpi_type(info_.dtype), &request),
               "read " + path_);
      requests.push_back(request);
      bytes_read_ += static_cast<std::uint64_t>(extents[i].voxels()) * dtype_size(info_.dtype);
    }
    std::vector<int> statuses(requests.size());
    check_nc(ncmpi_wait_all(ncid_, static_cast<int>(requests.size()), requests.data(), statuses.data()),
             "read " + path_);
    for (int status : statuses) check_nc(status, "read " + path_);
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
    int variables = 0;
    check_nc(ncmpi_inq_nvars(ncid_, &variables), path_);
    std::vector<netcdf::VariableShape> shapes;
    for (int v = 0; v < variables; ++v) {
      char name[NC_MAX_NAME + 1];
      int dims = 0;
      check_nc(ncmpi_inq_varname(ncid_, v, name), path_);
      check_nc(ncmpi_inq_varndims(ncid_, v, &dims), path_);
      std::vector<int> ids(static_cast<std::size_t>(dims));
      check_nc(ncmpi_inq_vardimid(ncid_, v, ids.data()), path_);
      netcdf::VariableShape shape{name, {}, {}};
      for (int id : ids) {
        char dim_name[NC_MAX_NAME + 1];
        MPI_Offset length = 0;
        check_nc(ncmpi_inq_dim(ncid_, id, dim_name, &length), path_);
        shape.dim_names.emplace_back(dim_name);
        shape.dim_lengths.push_back(length);
      }
      shapes.push_back(shape);
    }
    const auto& chosen = netcdf::choose_variable(shapes, options_.selection, path_);
    check_nc(ncmpi_inq_varid(ncid_, chosen.name.c_str(), &varid_), path_);
    const auto shape = netcdf::volume_shape(chosen, options_.selection, path_);
    nc_type type;
    check_nc(ncmpi_inq_vartype(ncid_, varid_, &type), path_);
    auto dtype = dtype_of(type);
    if (!dtype)
      throw Error(path_ + ": variable " + chosen.name + " has type " + nc_type_name(type) +
                  ", which volseg does not segment yet (ubyte, short, ushort, int, float, double)");
    info_.dims = shape.dims;
    info_.dtype = *dtype;
    info_.byte_order = ByteOrder::big;  // CDF files are big-endian; PnetCDF converts
    info_.variable = chosen.name;
    time_ = shape.time;
    netcdf::apply_attributes(
        info_,
        [&](const std::string& name) -> std::optional<std::vector<double>> {
          nc_type attribute_type;
          MPI_Offset length = 0;
          if (ncmpi_inq_att(ncid_, varid_, name.c_str(), &attribute_type, &length) != NC_NOERR) return std::nullopt;
          if (attribute_type == NC_CHAR || length <= 0) return std::nullopt;
          std::vector<double> values(static_cast<std::size_t>(length));
          check_nc(ncmpi_get_att_double(ncid_, varid_, name.c_str(), values.data()), path_ + ": attribute " + name);
          return values;
        },
        type == NC_BYTE);
    for (int a = 0; a < 3; ++a) info_.attributes["dim" + std::to_string(a)] = chosen.dim_names[chosen.dim_names.size() - 3 + static_cast<std::size_t>(a)];
  }

  Comm comm_;
  std::string path_;
  Options options_;
  int ncid_ = -1, varid_ = -1;
  std::optional<std::int64_t> time_;
  VolumeInfo info_;
  std::atomic<std::uint64_t> bytes_read_{0};
};

nc_type nc_type_for(DType dtype, int format) {
  switch (dtype) {
    case DType::u8: return format == NC_FORMAT_CDF2 ? NC_BYTE : NC_UBYTE;
    case DType::i16: return NC_SHORT;
    case DType::u16: return NC_USHORT;
    case DType::i32: return NC_INT;
    case DType::f32: return NC_FLOAT;
    case DType::f64: return NC_DOUBLE;
  }
  return NC_BYTE;
}

class PnetcdfWriter final : public VolumeWriter {
 public:
  PnetcdfWriter(const CreateRequest& request, const Comm& comm, Options options)
      : comm_(comm.duplicate()), path_(request.path), info_(request.info), options_(std::move(options)) {
    namespace fs = std::filesystem;
    if (options_.format == NC_FORMAT_CDF2 && (info_.dtype == DType::u16))
      throw Error(path_ + ": CDF-2 has no unsigned 16-bit type; write CDF-5 (--format cdf5)");
    collectively(comm_, [&] {
      if (comm_.rank() != 0) return;
      if (!request.overwrite && fs::exists(path_)) throw Error(path_ + " exists (use --force to replace it)");
      fs::path target(path_);
      temp_path_ = (target.parent_path() / ("." + target.filename().string() + ".volseg-tmp-" +
                                            std::to_string(::getpid())))
                       .string();
    });
    temp_path_ = comm_.broadcast(temp_path_);
    Info info(options_.library_hints);
    const int mode = NC_CLOBBER | (options_.format == NC_FORMAT_CDF2 ? NC_64BIT_OFFSET : NC_64BIT_DATA);
    collectively(comm_, [&] {
      check_nc(ncmpi_create(comm_.get(), temp_path_.c_str(), mode, info.get(), &ncid_), "create " + path_);
      define();
    });
  }

  ~PnetcdfWriter() override {
    if (ncid_ >= 0) ncmpi_close(ncid_);
    if (!committed_ && comm_.rank() == 0 && !temp_path_.empty()) ::unlink(temp_path_.c_str());
  }

  const VolumeInfo& info() const override { return info_; }
  std::string backend_name() const override { return "pnetcdf"; }
  bool collective() const override { return true; }

  void write(const Extent& extent, const void* buffer) override {
    check_inside(extent, info_.dims);
    check_nc(ncmpi_begin_indep_data(ncid_), path_);
    auto [start, count] = corners(extent);
    int status = ncmpi_put_vara(ncid_, varid_, start.data(), count.data(), buffer, extent.voxels(), mpi_type(info_.dtype));
    check_nc(ncmpi_end_indep_data(ncid_), path_);
    check_nc(status, "write " + path_);
    bytes_written_ += static_cast<std::uint64_t>(extent.voxels()) * dtype_size(info_.dtype);
  }

  void write_all(std::span<const Extent> extents, std::span<const void* const> buffers) override {
    for (const auto& extent : extents) check_inside(extent, info_.dims);
    if (options_.nonblocking) return write_all_nonblocking(extents, buffers);
    in_rounds(comm_, extents, buffers, [&](const Extent* extent, const void* buffer) {
      if (!extent || extent->empty()) {  // join the round with nothing to write
        auto [start, count] = corners(Extent{});
        check_nc(ncmpi_put_vara_all(ncid_, varid_, start.data(), count.data(), nullptr, 0, mpi_type(info_.dtype)),
                 "write " + path_);
        return;
      }
      auto [start, count] = corners(*extent);
      check_nc(ncmpi_put_vara_all(ncid_, varid_, start.data(), count.data(), buffer, extent->voxels(),
                                  mpi_type(info_.dtype)),
               "write " + path_);
      bytes_written_ += static_cast<std::uint64_t>(extent->voxels()) * dtype_size(info_.dtype);
    });
  }

  void close() override {
    collectively(comm_, [&] {
      int ncid = std::exchange(ncid_, -1);
      check_nc(ncmpi_close(ncid), "close " + path_);
    });
    collectively(comm_, [&] {
      if (comm_.rank() != 0) return;
      if (::rename(temp_path_.c_str(), path_.c_str()) != 0) throw_errno("rename to", path_);
      committed_ = true;
    });
    committed_ = true;
  }
  std::uint64_t bytes_written() const override { return bytes_written_; }

 private:
  void write_all_nonblocking(std::span<const Extent> extents, std::span<const void* const> buffers) {
    std::vector<int> requests;
    for (std::size_t i = 0; i < extents.size(); ++i) {
      if (extents[i].empty()) continue;
      auto [start, count] = corners(extents[i]);
      int request = 0;
      check_nc(ncmpi_iput_vara(ncid_, varid_, start.data(), count.data(), buffers[i], extents[i].voxels(),
                               mpi_type(info_.dtype), &request),
               "write " + path_);
      requests.push_back(request);
      bytes_written_ += static_cast<std::uint64_t>(extents[i].voxels()) * dtype_size(info_.dtype);
    }
    std::vector<int> statuses(requests.size());
    check_nc(ncmpi_wait_all(ncid_, static_cast<int>(requests.size()), requests.data(), statuses.data()),
             "write " + path_);
    for (int status : statuses) check_nc(status, "write " + path_);
  }

  std::pair<std::vector<MPI_Offset>, std::vector<MPI_Offset>> corners(const Extent& extent) const {
    std::vector<MPI_Offset> start(extent.offset.begin(), extent.offset.end());
    std::vector<MPI_Offset> count(extent.count.begin(), extent.count.end());
    return {start, count};
  }

  void define() {
    check_nc(ncmpi_set_fill(ncid_, NC_NOFILL, nullptr), path_);
    const char* names[3] = {"z", "y", "x"};
    int dims[3];
    for (int a = 0; a < 3; ++a) {
      auto it = info_.attributes.find("dim" + std::to_string(a));
      std::string name = it != info_.attributes.end() ? it->second : names[a];
      check_nc(ncmpi_def_dim(ncid_, name.c_str(), info_.dims[static_cast<std::size_t>(a)], &dims[a]), path_);
    }
    const std::string variable = info_.variable.empty() ? "data" : info_.variable;
    const nc_type type = nc_type_for(info_.dtype, options_.format);
    check_nc(ncmpi_def_var(ncid_, variable.c_str(), type, 3, dims, &varid_), path_);
    for (const auto& [key, value] : info_.attributes) {
      if (key.rfind("dim", 0) == 0 && key.size() == 4) continue;  // dimension names, not attributes
      const bool global = key == "history" || key == "source";
      check_nc(ncmpi_put_att_text(ncid_, global ? NC_GLOBAL : varid_, key.c_str(), static_cast<MPI_Offset>(value.size()),
                                  value.c_str()),
               path_ + ": attribute " + key);
    }
    auto put_number = [&](const char* name, const std::vector<double>& values) {
      check_nc(ncmpi_put_att_double(ncid_, varid_, name, type, static_cast<MPI_Offset>(values.size()), values.data()),
               path_ + ": attribute " + name);
    };
    if (info_.fill_value) put_number("_FillValue", {*info_.fill_value});
    if (info_.valid_range) put_number("valid_range", {(*info_.valid_range)[0], (*info_.valid_range)[1]});
    if (info_.variable == "mask") {
      put_number("flag_values", {0, 1});
      put_number("valid_range", {0, 1});
    }
    check_nc(ncmpi_enddef(ncid_), path_);
  }

  Comm comm_;
  std::string path_, temp_path_;
  VolumeInfo info_;
  Options options_;
  int ncid_ = -1, varid_ = -1;
  bool committed_ = false;
  std::atomic<std::uint64_t> bytes_written_{0};
};

}  // namespace

Backend make_pnetcdf_backend() {
  Backend backend;
  backend.name = "pnetcdf";
  backend.formats = "NetCDF CDF-1/2/5 (.nc)";
  backend.extension = ".nc";
  backend.description = "PnetCDF collective get/put_vara_all, or iget/iput + wait_all (nonblocking=1)";
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
