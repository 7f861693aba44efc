// SPDX-License-Identifier: MIT
// Backend "hdf5": writes a volume as one dataset of a new plain HDF5 file
// (`--format hdf5`, or NAME.hdf5), through parallel HDF5 itself rather than
// netCDF: no dimension scales, no _NCProperties, the dataset at the path
// asked (hint dataset=/group/name; default the volume's variable name,
// "mask" for a mask), groups created on the way. What h5py users expect:
//   f = h5py.File("mask.hdf5"); f["mask"][...]; f["mask"].attrs["threshold_lo"]
// The volume's attributes (thresholds, source, history, ...) are string
// attributes of the dataset; spacing and origin are float64 attributes
// `spacing` and `origin` in the dataset's (z, y, x) order, which volseg,
// and readers that know that convention, read back (a spacing in
// micrometres is also `element_size_um`, as Fiji and ilastik write it).
// The file opens with H5Pset_fapl_mpio on every rank; bricks are written
// as hyperslabs, collectively by default (access=independent: each rank on
// its own). Layout contiguous, or chunks=Z,Y,X|brick with deflate=N (HDF5
// 1.10.2+ writes compressed chunks collectively). Reading HDF5 is the
// netcdf4 backend's (parallel netCDF-C reads any HDF5 file).
#include <hdf5.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cstdio>
#include <string>
#include <vector>

#include "mpi_support.hpp"
#include "volseg/io/error.hpp"
#include "volseg/io/files.hpp"
#include "volseg/io/registry.hpp"
#include "volseg/io/trace.hpp"

namespace volseg::io {
namespace {

// An HDF5 handle closed once, by its own close function.
class Handle {
 public:
  Handle() = default;
  Handle(hid_t id, herr_t (*closer)(hid_t), const std::string& what) : id_(id), close_(closer) {
    if (id_ < 0) throw Error(what + " (HDF5 said no)");
  }
  Handle(Handle&& other) noexcept : id_(std::exchange(other.id_, -1)), close_(other.close_) {}
  Handle& operator=(Handle&& other) noexcept {
    if (this != &other) {
      reset();
      id_ = std::exchange(other.id_, -1);
      close_ = other.close_;
    }
    return *this;
  }
  Handle(const Handle&) = delete;
  Handle& operator=(const Handle&) = delete;
  ~Handle() { reset(); }
  hid_t get() const { return id_; }
  // Closes now, checked.
  void close(const std::string& what) {
    const hid_t id = std::exchange(id_, -1);
    if (id >= 0 && close_(id) < 0) throw Error(what);
  }

 private:
  void reset() {
    if (id_ >= 0) close_(id_);
    id_ = -1;
  }
  hid_t id_ = -1;
  herr_t (*close_)(hid_t) = nullptr;
};

void check(herr_t status, const std::string& what) {
  if (status < 0) throw Error(what + " (HDF5 said no)");
}

hid_t memory_type(DType type) {
  switch (type) {
    case DType::i8:
      return H5T_NATIVE_INT8;
    case DType::u8:
      return H5T_NATIVE_UINT8;
    case DType::i16:
      return H5T_NATIVE_INT16;
    case DType::u16:
      return H5T_NATIVE_UINT16;
    case DType::i32:
      return H5T_NATIVE_INT32;
    case DType::u32:
      return H5T_NATIVE_UINT32;
    case DType::i64:
      return H5T_NATIVE_INT64;
    case DType::u64:
      return H5T_NATIVE_UINT64;
    case DType::f32:
      return H5T_NATIVE_FLOAT;
    case DType::f64:
      return H5T_NATIVE_DOUBLE;
  }
  return H5T_NATIVE_UINT8;
}

// The file's type: the volume's, in its byte order.
hid_t file_type(DType type, ByteOrder order) {
  const bool le = order == ByteOrder::little;
  switch (type) {
    case DType::i8:
      return le ? H5T_STD_I8LE : H5T_STD_I8BE;
    case DType::u8:
      return le ? H5T_STD_U8LE : H5T_STD_U8BE;
    case DType::i16:
      return le ? H5T_STD_I16LE : H5T_STD_I16BE;
    case DType::u16:
      return le ? H5T_STD_U16LE : H5T_STD_U16BE;
    case DType::i32:
      return le ? H5T_STD_I32LE : H5T_STD_I32BE;
    case DType::u32:
      return le ? H5T_STD_U32LE : H5T_STD_U32BE;
    case DType::i64:
      return le ? H5T_STD_I64LE : H5T_STD_I64BE;
    case DType::u64:
      return le ? H5T_STD_U64LE : H5T_STD_U64BE;
    case DType::f32:
      return le ? H5T_IEEE_F32LE : H5T_IEEE_F32BE;
    case DType::f64:
      return le ? H5T_IEEE_F64LE : H5T_IEEE_F64BE;
  }
  return H5T_STD_U8LE;
}

// A fill value exactly, 64-bit integers included (a double would round
// netCDF's default fills of int64 and uint64), in a type HDF5 converts from.
struct Fill {
  explicit Fill(const VolumeInfo& info) {
    const long double v = *info.fill_value;
    if (info.dtype == DType::i64)
      type = H5T_NATIVE_LLONG, as_signed = static_cast<long long>(v);
    else if (info.dtype == DType::u64)
      type = H5T_NATIVE_ULLONG, as_unsigned = static_cast<unsigned long long>(v);
    else
      type = H5T_NATIVE_DOUBLE, as_double = static_cast<double>(v);
  }
  const void* data() const {
    return type == H5T_NATIVE_LLONG    ? static_cast<const void*>(&as_signed)
           : type == H5T_NATIVE_ULLONG ? static_cast<const void*>(&as_unsigned)
                                       : static_cast<const void*>(&as_double);
  }
  hid_t type = H5T_NATIVE_DOUBLE;
  long long as_signed = 0;
  unsigned long long as_unsigned = 0;
  double as_double = 0;
};

struct Options {
  std::string dataset;
  bool independent = false;
  std::string chunks = "contiguous";
  int deflate = 0;
  bool fsync = false;
};

class Hdf5Writer final : public VolumeWriter {
 public:
  Hdf5Writer(const CreateRequest& request, const Comm& comm, Options options)
      : VolumeWriter({.collective = !options.independent}),
        comm_(comm.duplicate()),
        path_(request.path),
        info_(request.info),
        options_(std::move(options)) {
    if (request.partial != Partial::none)
      throw Error(path_ + ": an HDF5 output cannot be resumed (a killed writer's file is not kept)");
    if (options_.dataset.empty()) options_.dataset = info_.variable.empty() ? "data" : info_.variable;
    if (options_.deflate > 0 && options_.chunks == "contiguous")
      throw Error("hdf5: deflate needs chunked storage (add chunks=Z,Y,X or chunks=brick)");
    if (options_.deflate > 0 && options_.independent)
      throw Error("hdf5: parallel HDF5 writes compressed datasets collectively only (drop access=independent)");
    if (options_.chunks == "brick" && request.bricks) {
      const auto& b = *request.bricks;
      options_.chunks = std::to_string(b[0]) + "," + std::to_string(b[1]) + "," + std::to_string(b[2]);
    }
    H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);  // volseg says what failed, once, in its own line
    collectively(comm_, [&] {
      if (comm_.rank() != 0) return;
      refuse_existing(path_, request.overwrite);
      commit_ = AtomicCommit(path_, temporary_path(path_));
      temp_path_ = commit_.temporary();
    });
    temp_path_ = comm_.broadcast(temp_path_);
    collectively(comm_, [&] {
      trace::Span span(trace::Op::open);
      Handle access(H5Pcreate(H5P_FILE_ACCESS), H5Pclose, "hdf5: file access list");
      check(H5Pset_fapl_mpio(access.get(), comm_.get(), MPI_INFO_NULL), "hdf5: MPI-IO file access");
      file_ =
          Handle(H5Fcreate(temp_path_.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, access.get()), H5Fclose, "create " + path_);
      define();
      transfer_ = Handle(H5Pcreate(H5P_DATASET_XFER), H5Pclose, "hdf5: transfer list");
      check(H5Pset_dxpl_mpio(transfer_.get(), options_.independent ? H5FD_MPIO_INDEPENDENT : H5FD_MPIO_COLLECTIVE),
            "hdf5: transfer mode");
    });
  }

  const VolumeInfo& info() const override { return info_; }
  std::string backend_name() const override { return "hdf5"; }
  std::uint64_t bytes_written() const override { return bytes_written_; }

 protected:
  void do_write(const Extent& extent, const void* buffer) override {
    if (options_.deflate > 0 && comm_.size() > 1)
      throw Error(path_ + ": a compressed HDF5 dataset is written collectively (write_all), not brick by brick");
    trace::Span span(trace::Op::write, -1, static_cast<std::uint64_t>(extent.voxels()) * dtype_size(info_.dtype));
    write_hyperslab(&extent, buffer, independent_.get() >= 0 ? independent_.get() : independent_transfer());
  }

  void do_write_all(std::span<const Extent> extents, std::span<const void* const> buffers) override {
    if (options_.independent) return VolumeWriter::do_write_all(extents, buffers);
    in_rounds(comm_, extents, buffers, [&](const Extent* extent, const void* buffer) {
      trace::Span span(trace::Op::write);
      write_hyperslab(extent && !extent->empty() ? extent : nullptr, buffer, transfer_.get());
    });
  }

  void do_close() override {
    collectively(comm_, [&] {
      trace::Span span(trace::Op::close);
      if (options_.fsync) check(H5Fflush(file_.get(), H5F_SCOPE_GLOBAL), "fsync " + path_);
      independent_.close("close " + path_);
      transfer_.close("close " + path_);
      dataset_.close("close the dataset of " + path_);
      file_.close("close " + path_);
    });
    collectively(comm_, [&] { commit_.commit(options_.fsync); });  // rank 0's
  }

 private:
  hid_t independent_transfer() {
    independent_ = Handle(H5Pcreate(H5P_DATASET_XFER), H5Pclose, "hdf5: transfer list");
    check(H5Pset_dxpl_mpio(independent_.get(), H5FD_MPIO_INDEPENDENT), "hdf5: transfer mode");
    return independent_.get();
  }

  // A collective call writes nothing where extent is null (this rank's
  // part of a round it has no brick in).
  void write_hyperslab(const Extent* extent, const void* buffer, hid_t transfer) {
    Handle space(H5Dget_space(dataset_.get()), H5Sclose, "hdf5: file space");
    hsize_t count[3] = {0, 0, 0};
    if (extent) {
      hsize_t start[3];
      for (int a = 0; a < 3; ++a) {
        start[a] = static_cast<hsize_t>(extent->offset[a]);
        count[a] = static_cast<hsize_t>(extent->count[a]);
      }
      check(H5Sselect_hyperslab(space.get(), H5S_SELECT_SET, start, nullptr, count, nullptr), "hdf5: hyperslab");
    } else {
      check(H5Sselect_none(space.get()), "hdf5: empty selection");
    }
    Handle memory(H5Screate_simple(3, extent ? count : std::array<hsize_t, 3>{1, 1, 1}.data(), nullptr), H5Sclose,
                  "hdf5: memory space");
    if (!extent) check(H5Sselect_none(memory.get()), "hdf5: empty selection");
    std::byte none{};
    check(H5Dwrite(dataset_.get(), memory_type(info_.dtype), memory.get(), space.get(), transfer,
                   extent ? buffer : &none),
          "write " + path_);
    if (extent) bytes_written_ += static_cast<std::uint64_t>(extent->voxels()) * dtype_size(info_.dtype);
  }

  void define() {
    hsize_t dims[3];
    for (int a = 0; a < 3; ++a) dims[a] = static_cast<hsize_t>(info_.dims[a]);
    Handle space(H5Screate_simple(3, dims, nullptr), H5Sclose, "hdf5: dataspace");
    Handle create(H5Pcreate(H5P_DATASET_CREATE), H5Pclose, "hdf5: dataset creation list");
    check(H5Pset_fill_time(create.get(), H5D_FILL_TIME_NEVER), "hdf5: fill time");
    if (options_.chunks != "contiguous") {
      long z = 0, y = 0, x = 0;
      if (std::sscanf(options_.chunks.c_str(), "%ld,%ld,%ld", &z, &y, &x) != 3 || z <= 0 || y <= 0 || x <= 0)
        throw Error("hint chunks=" + options_.chunks + " is not contiguous, brick or Z,Y,X of positive integers");
      hsize_t chunks[3] = {static_cast<hsize_t>(std::min<long>(z, info_.dims[0])),
                           static_cast<hsize_t>(std::min<long>(y, info_.dims[1])),
                           static_cast<hsize_t>(std::min<long>(x, info_.dims[2]))};
      check(H5Pset_chunk(create.get(), 3, chunks), "hdf5: chunks=" + options_.chunks);
      if (options_.deflate > 0) {
        check(H5Pset_shuffle(create.get()), "hdf5: shuffle");
        check(H5Pset_deflate(create.get(), static_cast<unsigned>(options_.deflate)), "hdf5: deflate");
      }
    }
    if (info_.fill_value) {
      const Fill fill(info_);
      check(H5Pset_fill_value(create.get(), fill.type, fill.data()), "hdf5: fill value");
    }
    Handle links(H5Pcreate(H5P_LINK_CREATE), H5Pclose, "hdf5: link creation list");
    check(H5Pset_create_intermediate_group(links.get(), 1), "hdf5: groups");
    const std::string name = options_.dataset;
    dataset_ = Handle(H5Dcreate2(file_.get(), name.c_str(), file_type(info_.dtype, info_.byte_order), space.get(),
                                 links.get(), create.get(), H5P_DEFAULT),
                      H5Dclose, path_ + ": cannot create the dataset " + name);
    for (const auto& [key, value] : info_.attributes) text_attribute(key, value);
    std::array<double, 3> spacing{info_.spacing[2], info_.spacing[1], info_.spacing[0]};
    std::array<double, 3> origin{info_.origin[2], info_.origin[1], info_.origin[0]};
    double_attribute("spacing", spacing);
    double_attribute("origin", origin);
    if (auto it = info_.attributes.find("units_xyz"); it != info_.attributes.end() && it->second == "um")
      double_attribute("element_size_um", spacing);
    if (info_.fill_value) {  // in the dataset's own type, as netCDF and xarray expect
      const Fill fill(info_);
      const hsize_t one = 1;
      Handle scalar(H5Screate_simple(1, &one, nullptr), H5Sclose, "hdf5: attribute space");
      Handle attribute(H5Acreate2(dataset_.get(), "_FillValue", file_type(info_.dtype, info_.byte_order), scalar.get(),
                                  H5P_DEFAULT, H5P_DEFAULT),
                       H5Aclose, path_ + ": attribute _FillValue");
      check(H5Awrite(attribute.get(), fill.type, fill.data()), path_ + ": attribute _FillValue");
    }
  }

  void text_attribute(const std::string& key, const std::string& value) {
    // Variable-length UTF-8: h5py reads it as str, h5dump as a string.
    Handle type(H5Tcopy(H5T_C_S1), H5Tclose, "hdf5: string type");
    check(H5Tset_size(type.get(), H5T_VARIABLE), "hdf5: string size");
    check(H5Tset_cset(type.get(), H5T_CSET_UTF8), "hdf5: string character set");
    Handle scalar(H5Screate(H5S_SCALAR), H5Sclose, "hdf5: scalar space");
    Handle attribute(H5Acreate2(dataset_.get(), key.c_str(), type.get(), scalar.get(), H5P_DEFAULT, H5P_DEFAULT),
                     H5Aclose, path_ + ": attribute " + key);
    const char* text = value.c_str();
    check(H5Awrite(attribute.get(), type.get(), &text), path_ + ": attribute " + key);
  }

  template <std::size_t N>
  void double_attribute(const std::string& key, const std::array<double, N>& values) {
    const hsize_t n = N;
    Handle space(H5Screate_simple(1, &n, nullptr), H5Sclose, "hdf5: attribute space");
    Handle attribute(H5Acreate2(dataset_.get(), key.c_str(), H5T_IEEE_F64LE, space.get(), H5P_DEFAULT, H5P_DEFAULT),
                     H5Aclose, path_ + ": attribute " + key);
    check(H5Awrite(attribute.get(), H5T_NATIVE_DOUBLE, values.data()), path_ + ": attribute " + key);
  }

  Comm comm_;
  std::string path_, temp_path_;
  VolumeInfo info_;
  Options options_;
  AtomicCommit commit_;
  Handle file_, dataset_, transfer_, independent_;
  std::atomic<std::uint64_t> bytes_written_{0};
};

}  // namespace

Backend make_hdf5_backend() {
  Backend backend;
  backend.name = "hdf5";
  backend.formats = "plain HDF5 (--format hdf5, NAME.hdf5): writes only; HDF5 files are read by netcdf4";
  backend.extension = ".hdf5";
  backend.description =
      "one dataset of a new file through parallel HDF5, hyperslabs written collectively (hints dataset=/group/name, "
      "access=independent, chunks=contiguous|brick|Z,Y,X, deflate=N, fsync=1)";
  backend.hints = {{"dataset", HintFor::writers},
                   {"access", HintFor::writers},
                   {"chunks", HintFor::writers},
                   {"deflate", HintFor::writers},
                   {"fsync", HintFor::writers}};
  backend.open = [](const OpenRequest& request, const Comm&, const Hints&) -> std::unique_ptr<VolumeReader> {
    throw Error(request.path +
                ": the hdf5 backend writes only; HDF5 files are read by the netcdf4 backend (--backend auto "
                "picks it)");
  };
  backend.create = [](const CreateRequest& request, const Comm& comm,
                      const Hints& hints) -> std::unique_ptr<VolumeWriter> {
    Options options;
    options.dataset = hints.get_string("dataset", "");
    const std::string access = hints.get_string("access", "collective");
    if (access != "collective" && access != "independent")
      throw Error("hint access=" + access + " is neither collective nor independent");
    options.independent = access == "independent";
    options.chunks = hints.get_string("chunks", "contiguous");
    options.deflate = static_cast<int>(hints.get_int("deflate", 0));
    if (options.deflate < 0 || options.deflate > 9)
      throw Error("hint deflate=" + std::to_string(options.deflate) + " is not 0 to 9");
    options.fsync = hints.get_bool("fsync", false);
    hints.reject_unused("hdf5");
    return std::make_unique<Hdf5Writer>(request, comm, std::move(options));
  };
  return backend;
}

}  // namespace volseg::io
