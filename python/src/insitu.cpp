// SPDX-License-Identifier: MIT
// volseg._insitu: volseg.insitu.Hook, the in-situ hook a C, C++ or Fortran
// simulation links (libvolseg_insitu, its C API), for a simulation in
// Python. Its own extension over the shared library, as a simulation links
// it: the hook's options, thresholds, outputs and Catalyst are the
// library's, not a second implementation. The GIL stays held through every
// call: with ParaView, Catalyst initialises and runs its Python in this
// interpreter (a simulation in Python is one thread stepping anyway).
#include <pybind11/numpy.h>
#include <pybind11/stl.h>

#include <array>
#include <optional>
#include <string>
#include <vector>

#include "mpi_comm.hpp"
#include "volseg/insitu/volseg_insitu.h"

namespace volseg::python {
namespace {

namespace py = pybind11;

py::handle error_type() {
  static py::handle error = py::object(py::module_::import("volseg._volseg").attr("Error")).release();
  return error;
}

[[noreturn]] void raise(const std::string& message) {
  PyErr_SetString(error_type().ptr(), message.c_str());
  throw py::error_already_set();
}

std::array<std::int64_t, 3> three(const std::vector<std::int64_t>& v, const char* what) {
  if (v.size() != 3) raise(std::string(what) + ": three numbers (z, y, x), not " + std::to_string(v.size()));
  return {v[0], v[1], v[2]};
}

// The hook's dtype name of a numpy array, or volseg.Error.
const char* hook_dtype(const py::array& a) {
  const py::dtype t = a.dtype();
  const char k = t.kind();
  const auto n = t.itemsize();
  if (t.byteorder() == '>') raise("publish: values are big-endian; pass values.astype(values.dtype.newbyteorder('='))");
  if (k == 'u' && n == 1) return "u8";
  if (k == 'i' && n == 2) return "i16";
  if (k == 'u' && n == 2) return "u16";
  if (k == 'i' && n == 4) return "i32";
  if (k == 'f' && n == 4) return "f32";
  if (k == 'f' && n == 8) return "f64";
  raise("publish: values of " + py::str(static_cast<py::handle>(t)).cast<std::string>() +
        " are not a type the hook takes (uint8, int16, uint16, int32, float32, float64)");
}

class Hook {
 public:
  Hook(const py::object& comm, const std::string& options) {
    const MPI_Comm handle = mpi_comm(comm);
    const int rc = volseg_insitu_create(handle, options.c_str(), &hook_);
    if (rc != VOLSEG_INSITU_OK) {
      const std::string message = volseg_insitu_last_error(hook_);
      volseg_insitu_finalize(hook_);
      hook_ = nullptr;
      raise(message);
    }
  }
  ~Hook() {
    int finalized = 1;
    MPI_Finalized(&finalized);
    if (hook_ && !finalized) {
      volseg_insitu_finalize(hook_);  // collective: a script that forgets finalize() ends on every rank alike
    }
  }
  Hook(const Hook&) = delete;
  Hook& operator=(const Hook&) = delete;

  void publish(std::int64_t step, double time, const std::vector<std::int64_t>& global_dims,
               const std::vector<std::vector<std::int64_t>>& box, const py::array& values, int ghost) {
    if (!hook_) raise("publish: the hook is finalized");
    const auto dims = three(global_dims, "global_dims");
    if (box.size() != 2) raise("box=((z0, y0, x0), (nz, ny, nx)): this rank's offset and count");
    const auto offset = three(box[0], "box's offset"), count = three(box[1], "box's count");
    if (ghost < 0) raise("ghost " + std::to_string(ghost) + " is negative");
    if (!(values.flags() & py::array::c_style))
      raise("publish: values are not C-contiguous; the hook reads them in place: pass numpy.ascontiguousarray(...)");
    const char* dtype = hook_dtype(values);
    // count plus ghost layers on every side that is not the grid's face.
    if (values.ndim() != 3) raise("publish: values must have 3 dimensions (z, y, x), not " + std::to_string(values.ndim()));
    for (int a = 0; a < 3; ++a) {
      if (offset[a] < 0 || count[a] < 1 || offset[a] + count[a] > dims[a])
        raise("publish: box axis " + std::to_string(a) + " [" + std::to_string(offset[a]) + ", " +
              std::to_string(offset[a] + count[a]) + ") is not inside the grid's " + std::to_string(dims[a]) + " points");
      const std::int64_t expected = count[a] + (offset[a] > 0 ? ghost : 0) + (offset[a] + count[a] < dims[a] ? ghost : 0);
      if (values.shape(a) != expected)
        raise("publish: values' axis " + std::to_string(a) + " has " + std::to_string(values.shape(a)) + " points; box " +
              std::to_string(count[a]) + " with ghost " + std::to_string(ghost) + " inside the grid needs " +
              std::to_string(expected));
    }
    const int rc = volseg_insitu_publish(hook_, step, time, dims.data(), offset.data(), count.data(), ghost, dtype,
                                         values.data());
    if (rc != VOLSEG_INSITU_OK) raise(volseg_insitu_last_error(hook_));
  }

  void finalize() {
    if (!hook_) return;
    const int rc = volseg_insitu_finalize(hook_);
    hook_ = nullptr;
    if (rc != VOLSEG_INSITU_OK) raise("finalize: the hook failed (its outputs may be incomplete)");
  }

 private:
  volseg_insitu* hook_ = nullptr;
};

}  // namespace
}  // namespace volseg::python

PYBIND11_MODULE(_insitu, m) {
  using namespace volseg::python;
  init_mpi4py();
  py::class_<Hook>(m, "Hook",
                   "The in-situ hook (libvolseg_insitu) for a simulation in Python: Hook(comm, \"--lo 0.2 --hi 1 "
                   "--every 10 --out masks_%d.nc\"); the options are `volseg-sim --insitu-help`'s")
      .def(py::init<const py::object&, const std::string&>(), py::arg("comm"), py::arg("options"))
      .def("publish", &Hook::publish, py::arg("step"), py::arg("time"), py::arg("global_dims"), py::arg("box"),
           py::arg("values"), py::arg("ghost") = 0,
           "Collective: one step of the field. box=((z0, y0, x0), (nz, ny, nx)) this rank's points; values holds "
           "them plus `ghost` layers on every side that is not a face of the grid (read in place, not copied)")
      .def("finalize", &Hook::finalize, "Collective: finish the outputs (series index, time series) and free the hook")
      .def("__enter__", [](Hook& h) -> Hook& { return h; })
      .def("__exit__", [](Hook& h, py::args) { h.finalize(); });
}
