// SPDX-License-Identifier: MIT
// volseg._volseg: the Python API's extension (docs/python.md). Every call
// goes to the libraries the CLI uses (io, segment); nothing is implemented
// twice. The communicator comes in through mpi4py's C API, arrays through
// the buffer protocol (C-contiguous, no copy), and the GIL is released while
// volseg works. volseg::Error becomes volseg.Error with the CLI's message;
// collective calls raise it on every rank.
#include <mpi4py/mpi4py.h>
#include <pybind11/functional.h>
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <algorithm>
#include <cstring>
#include <exception>
#include <memory>
#include <thread>
#include <optional>
#include <string>
#include <vector>

#include "volseg/io/auto_backend.hpp"
#include "volseg/io/comm.hpp"
#include "volseg/io/error.hpp"
#include "volseg/io/format.hpp"
#include "volseg/io/registry.hpp"
#include "volseg/segment/brick_layout.hpp"
#include "volseg/segment/convert.hpp"
#include "volseg/segment/label.hpp"
#include "volseg/segment/segment.hpp"
#include "volseg/segment/threshold.hpp"

namespace py = pybind11;

namespace volseg::python {
namespace {

MPI_Comm mpi_comm(const py::object& comm) {
  if (!PyObject_TypeCheck(comm.ptr(), &PyMPIComm_Type))
    throw py::type_error("comm must be an mpi4py communicator (from mpi4py import MPI; MPI.COMM_WORLD)");
  MPI_Comm* handle = PyMPIComm_Get(comm.ptr());
  if (!handle || *handle == MPI_COMM_NULL) throw py::value_error("comm is MPI.COMM_NULL");
  return *handle;
}

// numpy's name of a volseg type, in native byte order (reads hand back native values).
const char* numpy_name(io::DType type) {
  switch (type) {
    case io::DType::i8: return "int8";
    case io::DType::u8: return "uint8";
    case io::DType::i16: return "int16";
    case io::DType::u16: return "uint16";
    case io::DType::i32: return "int32";
    case io::DType::u32: return "uint32";
    case io::DType::i64: return "int64";
    case io::DType::u64: return "uint64";
    case io::DType::f32: return "float32";
    case io::DType::f64: return "float64";
  }
  return "uint8";
}

// The volseg type of a numpy array, or volseg.Error naming what it is.
io::DType dtype_of(const py::array& array) {
  const py::dtype type = array.dtype();
  const char kind = type.kind();
  const auto size = static_cast<std::size_t>(type.itemsize());
  if (type.byteorder() == '>' || (type.byteorder() == '<' && io::native_byte_order() != io::ByteOrder::little))
    throw Error("a " + py::str(static_cast<py::handle>(type)).cast<std::string>() + " array is not in this machine's byte order: use "
                "array.astype(array.dtype.newbyteorder('='))");
  if (kind == 'f' && size == 4) return io::DType::f32;
  if (kind == 'f' && size == 8) return io::DType::f64;
  if (kind == 'i' || kind == 'u') {
    const bool sign = kind == 'i';
    switch (size) {
      case 1: return sign ? io::DType::i8 : io::DType::u8;
      case 2: return sign ? io::DType::i16 : io::DType::u16;
      case 4: return sign ? io::DType::i32 : io::DType::u32;
      case 8: return sign ? io::DType::i64 : io::DType::u64;
      default: break;
    }
  }
  if (kind == 'b') return io::DType::u8;
  throw Error("arrays of " + py::str(static_cast<py::handle>(type)).cast<std::string>() +
              " are not a volseg type (int8 ... uint64, float32, float64)");
}

void require_contiguous(const py::array& array, const char* what) {
  if (!(array.flags() & py::array::c_style))
    throw Error(std::string(what) + " is not C-contiguous; volseg does not copy it behind your back (a copy would "
                "double its memory): pass numpy.ascontiguousarray(...)");
}

std::vector<std::string> hint_list(const std::optional<std::string>& var, const std::optional<std::int64_t>& time,
                                   const std::string& glob) {
  std::vector<std::string> hints;
  if (var && !var->empty()) hints.push_back("var=" + *var);
  if (time) hints.push_back("time=" + std::to_string(*time));
  if (!glob.empty()) hints.push_back("glob=" + glob);
  return hints;
}

py::object json_loads(const std::string& text) { return py::module_::import("json").attr("loads")(text); }

// A volume open for reading: `volseg.open(...)`.
class Volume {
 public:
  Volume(const std::string& path, const std::optional<std::string>& var, const std::optional<std::int64_t>& time,
         const std::string& backend, const std::string& glob, const py::object& comm)
      : path_(path) {
    const MPI_Comm handle = mpi_comm(comm);
    py::gil_scoped_release release;
    comm_ = std::make_unique<Comm>(handle);
    format_ = io::detect_format(*comm_, path);
    backend_ = backend == "auto" ? io::choose_backend(*comm_, format_, path, io::Access::stream).backend : backend;
    reader_ = io::open_reader(backend_, path, *comm_, io::Hints::parse(hint_list(var, time, glob)));
  }

  const io::VolumeInfo& info() const { return reader().info(); }
  py::tuple shape() const { return py::make_tuple(info().dims[0], info().dims[1], info().dims[2]); }
  py::dtype dtype() const { return py::dtype(numpy_name(info().dtype)); }
  py::tuple spacing() const { return py::make_tuple(info().spacing[0], info().spacing[1], info().spacing[2]); }
  py::tuple origin() const { return py::make_tuple(info().origin[0], info().origin[1], info().origin[2]); }
  py::dict attrs() const {
    py::dict out;
    const auto& i = info();
    for (const auto& [key, value] : i.attributes) out[py::str(key)] = value;
    if (!i.variable.empty()) out["variable"] = i.variable;
    if (i.fill_value) out["_FillValue"] = static_cast<double>(*i.fill_value);
    if (i.missing_value) out["missing_value"] = static_cast<double>(*i.missing_value);
    if (i.valid_range) out["valid_range"] = py::make_tuple((*i.valid_range)[0], (*i.valid_range)[1]);
    if (i.scale_factor) out["scale_factor"] = *i.scale_factor;
    if (i.add_offset) out["add_offset"] = *i.add_offset;
    return out;
  }
  std::string describe() const { return io::describe(path_, format_, backend_, info()); }
  std::string backend() const { return backend_; }
  bool collective() const { return reader().collective(); }
  std::string path() const { return path_; }

  // This rank's block [offset, offset + count), as stored (native byte order).
  py::array read(const std::vector<std::int64_t>& offset, const std::vector<std::int64_t>& count) {
    if (offset.size() != 3 || count.size() != 3)
      throw Error("read((z0, y0, x0), (nz, ny, nx)): three numbers each, not " + std::to_string(offset.size()) +
                  " and " + std::to_string(count.size()));
    const io::Extent extent{{offset[0], offset[1], offset[2]}, {count[0], count[1], count[2]}};
    for (int a = 0; a < 3; ++a)
      if (extent.offset[a] < 0 || extent.count[a] < 0 || extent.offset[a] + extent.count[a] > info().dims[a])
        throw Error(path_ + ": read outside the volume: offset (" + std::to_string(offset[0]) + ", " +
                    std::to_string(offset[1]) + ", " + std::to_string(offset[2]) + ") count (" +
                    std::to_string(count[0]) + ", " + std::to_string(count[1]) + ", " + std::to_string(count[2]) +
                    ") of dims (" + std::to_string(info().dims[0]) + ", " + std::to_string(info().dims[1]) + ", " +
                    std::to_string(info().dims[2]) + ")");
    py::array out(dtype(), std::vector<py::ssize_t>{count[0], count[1], count[2]});
    void* buffer = out.mutable_data();
    {
      py::gil_scoped_release release;
      if (reader().collective()) {
        // NetCDF and HDF5 readers read collectively: every rank calls read()
        // as often as the others (a rank with nothing asks for a count of 0).
        std::vector<io::Extent> extents;
        if (extent.voxels() > 0) extents.push_back(extent);
        void* buffers[] = {buffer};
        reader().read_all(extents, {buffers, extents.size()});
      } else if (extent.voxels() > 0) {
        reader().read(extent, buffer);
      }
    }
    return out;
  }

  void close() {
    if (!reader_) return;
    py::gil_scoped_release release;
    auto reader = std::move(reader_);
    reader->close();
  }

 private:
  io::VolumeReader& reader() const {
    if (!reader_) throw Error(path_ + ": the volume is closed");
    return *reader_;
  }

  std::string path_, backend_;
  io::FileFormat format_ = io::FileFormat::raw;
  std::unique_ptr<Comm> comm_;
  std::unique_ptr<io::VolumeReader> reader_;
};

// `volseg.threshold(array, lo, hi)`: segment's kernel on an array in memory.
py::array threshold(const py::array& values, double lo, double hi, std::optional<double> fill,
                    std::optional<std::pair<double, double>> valid_range) {
  require_contiguous(values, "the array");
  if (!(lo <= hi)) throw Error("lo " + std::to_string(lo) + " is above hi " + std::to_string(hi) + " (or NaN)");
  const io::DType type = dtype_of(values);
  segment::Threshold threshold{lo, hi, std::nullopt, std::nullopt, std::nullopt};
  if (fill) threshold.fill_value = *fill;
  if (valid_range) threshold.valid_range = std::array<double, 2>{valid_range->first, valid_range->second};
  const segment::ThresholdKernel kernel(type, threshold, /*histogram=*/false);
  std::vector<py::ssize_t> shape(values.shape(), values.shape() + values.ndim());
  py::array_t<std::uint8_t> mask(shape);
  const auto* input = static_cast<const std::byte*>(values.data());
  std::uint8_t* output = mask.mutable_data();
  const auto count = static_cast<std::int64_t>(values.size());
  {
    // The GIL is released, so the kernel runs on every core for a large
    // array (numpy's comparison runs on one): pieces of whole 64 KiB of mask.
    py::gil_scoped_release release;
    const std::size_t size = io::dtype_size(type);
    const std::int64_t piece = std::int64_t{1} << 16;
    const auto cores = static_cast<std::int64_t>(std::max(1u, std::thread::hardware_concurrency()));
    const std::int64_t threads = std::clamp<std::int64_t>(count / (std::int64_t{16} << 20), 1, cores);
    // Every thread but the last a whole number of pieces; the last to the end.
    const std::int64_t share = ((count + threads - 1) / threads + piece - 1) / piece * piece;
    std::vector<std::thread> workers;
    std::vector<std::exception_ptr> errors(static_cast<std::size_t>(threads));
    for (std::int64_t t = 0; t < threads; ++t) {
      const std::int64_t begin = std::min(count, t * share);
      const std::int64_t end = t + 1 == threads ? count : std::min(count, begin + share);
      auto work = [&, t, begin, end] {
        try {
          segment::Stats stats;
          kernel.run(input + begin * static_cast<std::int64_t>(size), end - begin, /*swapped=*/false,
                     output + begin, stats);
        } catch (...) {
          errors[static_cast<std::size_t>(t)] = std::current_exception();
        }
      };
      if (t + 1 == threads) {
        work();
      } else {
        try {
          workers.emplace_back(work);
        } catch (...) {  // no thread: this one does the piece
          work();
        }
      }
    }
    for (auto& w : workers) w.join();
    for (auto& e : errors)
      if (e) std::rethrow_exception(e);
  }
  return mask;
}

segment::ProgressMode progress_mode(const py::object& progress) {
  if (progress.is_none() || PyCallable_Check(progress.ptr())) return segment::ProgressMode::none;
  return segment::parse_progress_mode(progress.cast<std::string>());
}

// A Python callable told (bricks done, total) from rank 0's job thread,
// holding the GIL for the call; an exception it raises is raised after the job.
// The callable is held through a shared_ptr: the job copies the observer
// with the GIL released, which must not touch Python's reference counts.
struct ProgressCallback {
  std::shared_ptr<py::object> callable;
  std::shared_ptr<std::string> error = std::make_shared<std::string>();
  void operator()(const std::vector<std::int64_t>& units, std::int64_t total, bool) const {
    py::gil_scoped_acquire acquire;
    if (!error->empty()) return;
    std::int64_t done = 0;
    for (auto u : units) done += u;
    try {
      (*callable)(done, total);
    } catch (py::error_already_set& e) {
      *error = e.what();
    }
  }
};

py::object segment_file(const std::string& input, double lo, double hi, const std::string& out, const py::object& comm,
                        bool force, const std::string& backend, const std::optional<std::vector<std::int64_t>>& brick,
                        const py::object& progress, const std::optional<std::string>& var,
                        const std::optional<std::int64_t>& time, const std::string& format,
                        const std::vector<std::string>& hints, bool resume, bool histogram) {
  const MPI_Comm handle = mpi_comm(comm);
  segment::SegmentOptions o;
  o.input = input;
  o.output = out;
  o.lo = lo;
  o.hi = hi;
  o.force = force;
  o.resume = resume;
  o.backend = backend;
  o.format = format;
  o.hints = hints;
  o.histogram = histogram;
  o.input_hints = hint_list(var, time, "");
  if (brick) {
    if (brick->size() != 3) throw Error("brick=(z, y, x): three numbers");
    o.brick_shape = io::Index3{(*brick)[0], (*brick)[1], (*brick)[2]};
  }
  o.progress = progress_mode(progress);
  std::optional<ProgressCallback> callback;
  if (!progress.is_none() && PyCallable_Check(progress.ptr())) {
    callback = ProgressCallback{std::make_shared<py::object>(progress)};
    o.on_progress = *callback;
  }
  o.command_line = "volseg.segment(" + input + ", lo=" + std::to_string(lo) + ", hi=" + std::to_string(hi) +
                   ", out=" + out + ") from Python";
  std::string report;
  {
    py::gil_scoped_release release;
    const Comm c(handle);
    const auto result = segment::run_segment(c, o);
    report = segment::report_json(o, result);
  }
  if (callback && !callback->error->empty()) throw Error("the progress callback raised: " + *callback->error);
  return json_loads(report);
}

py::dict label_file(const std::string& input, const std::string& out, const py::object& comm, int connectivity,
                    bool mask_input, std::optional<double> lo, std::optional<double> hi, const std::string& stats,
                    std::uint64_t min_voxels, bool force, const std::string& backend,
                    const std::optional<std::string>& var, const std::optional<std::int64_t>& time) {
  const MPI_Comm handle = mpi_comm(comm);
  segment::LabelOptions o;
  o.input = input;
  o.output = out;
  o.connectivity = connectivity;
  o.mask_input = mask_input;
  if (!mask_input) {
    if (!lo || !hi) throw Error("label_file: give lo= and hi=, or mask_input=True for a 0/1 mask");
    o.lo = *lo;
    o.hi = *hi;
  }
  o.stats = stats;
  o.min_voxels = min_voxels;
  o.force = force;
  o.backend = backend;
  o.input_hints = hint_list(var, time, "");
  o.progress = segment::ProgressMode::none;
  o.command_line = "volseg.label_file(" + input + ", out=" + out + ") from Python";
  segment::LabelResult result;
  {
    py::gil_scoped_release release;
    const Comm c(handle);
    segment::check_connectivity(connectivity);
    result = segment::run_label(c, o);
  }
  py::dict d;
  d["objects"] = result.summary.objects;
  d["dropped"] = result.summary.dropped;
  d["foreground_voxels"] = result.summary.foreground;
  d["largest"] = result.summary.largest;
  d["label_type"] = result.label_type;
  d["output_format"] = result.output_format;
  d["backend"] = result.backend;
  return d;
}

py::dict convert_file(const std::string& input, const std::string& out, const py::object& comm, bool force,
                      const std::string& format, const std::optional<std::string>& var,
                      const std::optional<std::int64_t>& time, const std::string& glob,
                      const std::vector<std::string>& out_hints) {
  const MPI_Comm handle = mpi_comm(comm);
  segment::ConvertOptions o;
  o.input = input;
  o.output = out;
  o.force = force;
  o.format = format;
  o.input_hints = hint_list(var, time, glob);
  o.output_hints = out_hints;
  o.progress = segment::ProgressMode::none;
  o.command_line = "volseg.convert(" + input + ", " + out + ") from Python";
  segment::ConvertResult result;
  {
    py::gil_scoped_release release;
    const Comm c(handle);
    result = segment::run_convert(c, o);
  }
  py::dict d;
  d["output_format"] = result.output_format;
  d["backend"] = result.backend;
  d["output_backend"] = result.output_backend;
  d["bricks"] = result.bricks;
  d["seconds"] = result.seconds;
  d["dropped"] = result.dropped;
  return d;
}

}  // namespace
}  // namespace volseg::python

PYBIND11_MODULE(_volseg, m) {
  using namespace volseg::python;
  namespace py = pybind11;
  if (import_mpi4py() < 0) throw py::error_already_set();
  m.doc() = "volseg's libraries for Python: parallel, out-of-core threshold segmentation (docs/python.md)";
  static py::exception<volseg::Error> error(m, "Error");
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const volseg::Error& e) {
      error(e.what());
    }
  });

  py::class_<Volume>(m, "Volume", "A volume open for reading on every rank of comm (volseg.open)")
      .def_property_readonly("shape", &Volume::shape, "(nz, ny, nx)")
      .def_property_readonly("dtype", &Volume::dtype, "numpy dtype of read()'s arrays (native byte order)")
      .def_property_readonly("spacing", &Volume::spacing, "(x, y, z), as NRRD and `volseg info` give it")
      .def_property_readonly("origin", &Volume::origin, "(x, y, z) of voxel (0, 0, 0)")
      .def_property_readonly("attrs", &Volume::attrs, "the volume's attributes (NetCDF's, fill, packing, ...)")
      .def_property_readonly("backend", &Volume::backend)
      .def_property_readonly("collective", &Volume::collective,
                             "True when read() is collective (NetCDF, HDF5): every rank calls it as often")
      .def_property_readonly("path", &Volume::path)
      .def("info", &Volume::describe, "What `volseg info` prints")
      .def("read", &Volume::read, py::arg("offset"), py::arg("count"),
           "This rank's block [offset, offset + count) as a numpy array (z, y, x); independent, or collective "
           "where vol.collective (every rank calls it as often, a count of 0 for nothing)")
      .def("close", &Volume::close, "Collective: close on every rank (errors of any rank are raised)")
      .def("__enter__", [](Volume& v) -> Volume& { return v; })
      .def("__exit__", [](Volume& v, py::args) { v.close(); });

  m.def(
      "_open",
      [](const std::string& path, const std::optional<std::string>& var, const std::optional<std::int64_t>& time,
         const std::string& backend, const std::string& glob, const py::object& comm) {
        return std::make_unique<Volume>(path, var, time, backend, glob, comm);
      },
      py::arg("path"), py::arg("var"), py::arg("time"), py::arg("backend"), py::arg("glob"), py::arg("comm"));
  m.def("threshold", &threshold, py::arg("array"), py::arg("lo"), py::arg("hi"), py::arg("fill") = py::none(),
        py::arg("valid_range") = py::none(),
        "uint8 mask of lo <= v <= hi (NaN, fill and values outside valid_range are 0), segment's kernel");
  m.def("_segment", &segment_file, py::arg("input"), py::arg("lo"), py::arg("hi"), py::arg("out"), py::arg("comm"),
        py::arg("force"), py::arg("backend"), py::arg("brick"), py::arg("progress"), py::arg("var"), py::arg("time"),
        py::arg("format"), py::arg("hints"), py::arg("resume"), py::arg("histogram"));
  m.def("_label_file", &label_file, py::arg("input"), py::arg("out"), py::arg("comm"), py::arg("connectivity"),
        py::arg("mask_input"), py::arg("lo"), py::arg("hi"), py::arg("stats"), py::arg("min_voxels"), py::arg("force"),
        py::arg("backend"), py::arg("var"), py::arg("time"));
  m.def("_convert", &convert_file, py::arg("input"), py::arg("out"), py::arg("comm"), py::arg("force"),
        py::arg("format"), py::arg("var"), py::arg("time"), py::arg("glob"), py::arg("out_hints"));
}
