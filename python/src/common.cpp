// SPDX-License-Identifier: MIT
#include "common.hpp"

#include "volseg/io/comm.hpp"
#include "volseg/io/error.hpp"

namespace volseg::python {

const char* numpy_name(io::DType type) {
  switch (type) {
    case io::DType::i8:
      return "int8";
    case io::DType::u8:
      return "uint8";
    case io::DType::i16:
      return "int16";
    case io::DType::u16:
      return "uint16";
    case io::DType::i32:
      return "int32";
    case io::DType::u32:
      return "uint32";
    case io::DType::i64:
      return "int64";
    case io::DType::u64:
      return "uint64";
    case io::DType::f32:
      return "float32";
    case io::DType::f64:
      return "float64";
  }
  return "uint8";
}

io::DType dtype_of(const py::array& array) {
  const py::dtype type = array.dtype();
  const char kind = type.kind();
  const auto size = static_cast<std::size_t>(type.itemsize());
  if (type.byteorder() == '>' || (type.byteorder() == '<' && io::native_byte_order() != io::ByteOrder::little))
    throw Error("a " + py::str(static_cast<py::handle>(type)).cast<std::string>() +
                " array is not in this machine's byte order: use "
                "array.astype(array.dtype.newbyteorder('='))");
  if (kind == 'f' && size == 4) return io::DType::f32;
  if (kind == 'f' && size == 8) return io::DType::f64;
  if (kind == 'i' || kind == 'u') {
    const bool sign = kind == 'i';
    switch (size) {
      case 1:
        return sign ? io::DType::i8 : io::DType::u8;
      case 2:
        return sign ? io::DType::i16 : io::DType::u16;
      case 4:
        return sign ? io::DType::i32 : io::DType::u32;
      case 8:
        return sign ? io::DType::i64 : io::DType::u64;
      default:
        break;
    }
  }
  if (kind == 'b') return io::DType::u8;
  throw Error("arrays of " + py::str(static_cast<py::handle>(type)).cast<std::string>() +
              " are not a volseg type (int8 ... uint64, float32, float64)");
}

void require_contiguous(const py::array& array, const char* what) {
  if (!(array.flags() & py::array::c_style))
    throw Error(std::string(what) +
                " is not C-contiguous; volseg does not copy it behind your back (a copy would "
                "double its memory): pass numpy.ascontiguousarray(...)");
}

void bind_selection(py::module_& m) {
  py::class_<io::Selection>(m, "_Selection")
      .def(py::init<>())
      .def_readwrite("variable", &io::Selection::variable)
      .def_readwrite("step", &io::Selection::step)
      .def_readwrite("glob", &io::Selection::glob)
      .def_readwrite("expression", &io::Selection::expression)
      .def_readwrite("condition", &io::Selection::condition)
      .def_readwrite("operands", &io::Selection::operands);
}

py::object json_loads(const std::string& text) { return py::module_::import("json").attr("loads")(text); }

segment::ProgressMode progress_mode(const py::object& progress) {
  if (progress.is_none() || PyCallable_Check(progress.ptr())) return segment::ProgressMode::none;
  return segment::parse_progress_mode(progress.cast<std::string>());
}

void ProgressCallback::operator()(const std::vector<std::int64_t>& units, std::int64_t total, bool) const {
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

std::optional<ProgressCallback> ProgressCallback::of(const py::object& progress) {
  if (progress.is_none() || !PyCallable_Check(progress.ptr())) return std::nullopt;
  return ProgressCallback{std::make_shared<py::object>(progress)};
}

void ProgressCallback::check(MPI_Comm comm) const {
  // Rank 0's message to every rank (with the GIL released: a collective).
  std::string message = *error;
  {
    py::gil_scoped_release release;
    const Comm c(comm);
    message = c.broadcast(message, 0);
  }
  if (!message.empty()) throw Error("the progress callback raised: " + message);
}

}  // namespace volseg::python
