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

#include <algorithm>
#include <map>
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

// The hook's dtype name of a numpy array, or what is wrong with it.
std::string hook_dtype(const py::array& a, const char** name, const std::string& what) {
  const py::dtype t = a.dtype();
  const char k = t.kind();
  const auto n = t.itemsize();
  if (t.byteorder() == '>')
    return "publish: " + what + " are big-endian; pass " + what + ".astype(" + what + ".dtype.newbyteorder('='))";
  if (k == 'u' && n == 1)
    *name = "u8";
  else if (k == 'i' && n == 2)
    *name = "i16";
  else if (k == 'u' && n == 2)
    *name = "u16";
  else if (k == 'i' && n == 4)
    *name = "i32";
  else if (k == 'f' && n == 4)
    *name = "f32";
  else if (k == 'f' && n == 8)
    *name = "f64";
  else
    return "publish: " + what + " of " + py::str(static_cast<py::handle>(t)).cast<std::string>() +
           " are not a type the hook takes (uint8, int16, uint16, int32, float32, float64)";
  return {};
}

// Collective over comm: the message of the lowest rank that has one, on
// every rank ("" when none), so that an argument wrong on one rank raises on
// all of them rather than leaving the others in the hook's collective call.
std::string agree(MPI_Comm comm, const std::string& mine) {
  int rank = 0, size = 1;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  const int candidate = mine.empty() ? size : rank;
  int root = size;
  MPI_Allreduce(&candidate, &root, 1, MPI_INT, MPI_MIN, comm);
  if (root == size) return {};
  std::string message = mine;
  int length = static_cast<int>(message.size());
  MPI_Bcast(&length, 1, MPI_INT, root, comm);
  message.resize(static_cast<std::size_t>(length));
  MPI_Bcast(message.data(), length, MPI_CHAR, root, comm);
  return root == rank ? message : "rank " + std::to_string(root) + ": " + message;
}

// What is wrong with one rank's publish arguments, or ""; what names the
// array in messages (values, or one of arrays).
std::string check_publish(const std::vector<std::int64_t>& global_dims,
                          const std::vector<std::vector<std::int64_t>>& box, const py::array& values, int ghost,
                          const char** dtype, const std::string& what = "values") {
  if (global_dims.size() != 3) return "publish: global_dims: three numbers (z, y, x)";
  if (box.size() != 2 || box[0].size() != 3 || box[1].size() != 3)
    return "publish: box=((z0, y0, x0), (nz, ny, nx)): this rank's offset and count";
  if (ghost < 0) return "publish: ghost " + std::to_string(ghost) + " is negative";
  if (!(values.flags() & py::array::c_style))
    return "publish: " + what +
           " are not C-contiguous; the hook reads them in place: pass numpy.ascontiguousarray(...)";
  if (auto wrong = hook_dtype(values, dtype, what); !wrong.empty()) return wrong;
  bool empty = false;
  for (int a = 0; a < 3; ++a) {
    const std::int64_t offset = box[0][a], count = box[1][a], dims = global_dims[a];
    if (dims < 1 || offset < 0 || count < 0 || offset + count > dims)
      return "publish: box axis " + std::to_string(a) + " [" + std::to_string(offset) + ", " +
             std::to_string(offset + count) + ") is not inside the grid's " + std::to_string(dims) + " points";
    empty = empty || count == 0;
  }
  if (empty) return {};  // a rank that owns no points publishes nothing
  if (values.ndim() != 3)
    return "publish: " + what + " must have 3 dimensions (z, y, x), not " + std::to_string(values.ndim());
  for (int a = 0; a < 3; ++a) {
    // count plus the ghost layers the grid has room for on each side (io::with_ghost).
    const std::int64_t offset = box[0][a], count = box[1][a], dims = global_dims[a];
    const std::int64_t expected =
        count + std::min<std::int64_t>(ghost, offset) + std::min<std::int64_t>(ghost, dims - offset - count);
    if (values.shape(a) != expected)
      return "publish: " + (what == "values" ? what + "'" : what + "'s") + " axis " + std::to_string(a) + " has " +
             std::to_string(values.shape(a)) + " points; box " + std::to_string(count) + " with ghost " +
             std::to_string(ghost) + " inside the grid needs " + std::to_string(expected);
  }
  return {};
}

class Hook {
 public:
  Hook(const py::object& comm, const std::string& options) {
    const MPI_Comm handle = mpi_comm(comm);
    // comm_: the simulation's ranks (all of comm, or its first N-K with
    // --analysis-ranks K); MPI_COMM_NULL on an analysis rank, which has
    // served the steps by the time this returns.
    const int rc = volseg_insitu_create_split(handle, options.c_str(), &hook_, &comm_);
    if (rc != VOLSEG_INSITU_OK) {
      const std::string message = volseg_insitu_last_error(hook_);
      volseg_insitu_finalize(hook_);
      hook_ = nullptr;
      if (comm_ != MPI_COMM_NULL) MPI_Comm_free(&comm_);
      raise(message);
    }
    if (comm_ == MPI_COMM_NULL) {
      analysis_rank_ = true;
      volseg_insitu_finalize(hook_);
      hook_ = nullptr;
    }
  }
  ~Hook() {
    int finalized = 1;
    MPI_Finalized(&finalized);
    if (hook_ && !finalized)
      volseg_insitu_finalize(hook_);  // collective: a script that forgets finalize() ends on every rank alike
    if (comm_ != MPI_COMM_NULL && !finalized) MPI_Comm_free(&comm_);
  }
  Hook(const Hook&) = delete;
  Hook& operator=(const Hook&) = delete;

  void publish(std::int64_t step, double time, const std::vector<std::int64_t>& global_dims,
               const std::vector<std::vector<std::int64_t>>& box, const py::array& values, int ghost,
               const std::map<std::string, py::array>& arrays) {
    if (analysis_rank_) raise("publish on an analysis rank (skip the simulation where hook.analysis_rank is True)");
    if (!hook_) raise("publish: the hook is finalized");  // on every rank: finalize is collective
    const char* dtype = "f32";
    std::string problem = check_publish(global_dims, box, values, ghost, &dtype);
    // More arrays (for --expr and --where): each as the field is.
    std::vector<const char*> names, dtypes;
    std::vector<const void*> data;
    for (const auto& [name, array] : arrays) {
      const char* type = "f32";
      if (problem.empty()) {
        const std::string what = "arrays['" + name + "']";
        problem = check_publish(global_dims, box, array, ghost, &type, what);
        if (problem.empty() && (array.ndim() != values.ndim() ||
                                !std::equal(values.shape(), values.shape() + values.ndim(), array.shape())))
          problem = "publish: " + what + " is not shaped as values";
      }
      names.push_back(name.c_str());
      dtypes.push_back(type);
      data.push_back(array.data());
    }
    problem = agree(comm_, problem);
    if (!problem.empty()) raise(problem);
    const std::int64_t dims[3] = {global_dims[0], global_dims[1], global_dims[2]};
    const std::int64_t offset[3] = {box[0][0], box[0][1], box[0][2]}, count[3] = {box[1][0], box[1][1], box[1][2]};
    const int rc =
        volseg_insitu_publish_arrays(hook_, step, time, dims, offset, count, ghost, dtype, values.data(),
                                     static_cast<int>(names.size()), names.data(), dtypes.data(), data.data());
    if (rc != VOLSEG_INSITU_OK) raise(volseg_insitu_last_error(hook_));
  }

  bool analysis_rank() const { return analysis_rank_; }
  // The simulation's communicator as an mpi4py Comm (None on an analysis rank).
  py::object simulation_comm() const {
    if (comm_ == MPI_COMM_NULL) return py::none();
    return mpi4py_duplicate(comm_);
  }

  void finalize() {
    if (!hook_) return;
    const int rc = volseg_insitu_finalize(hook_);
    hook_ = nullptr;
    MPI_Comm_free(&comm_);
    if (rc != VOLSEG_INSITU_OK) raise("finalize: the hook failed (its outputs may be incomplete)");
  }

 private:
  volseg_insitu* hook_ = nullptr;
  MPI_Comm comm_ = MPI_COMM_NULL;  // the simulation's ranks, to agree on arguments before the hook's collective calls
  bool analysis_rank_ = false;
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
           py::arg("values"), py::arg("ghost") = 0, py::arg("arrays") = std::map<std::string, py::array>{},
           "Collective: one step of the field. box=((z0, y0, x0), (nz, ny, nx)) this rank's points; values holds "
           "them plus `ghost` layers on every side that is not a face of the grid (read in place, not copied); "
           "arrays={'u': u_block, ...}: more arrays laid out as values, which --expr and --where may name")
      .def_property_readonly("analysis_rank", &Hook::analysis_rank,
                             "True on the last K ranks under --analysis-ranks K: they have served the simulation's "
                             "steps when Hook() returns; skip the simulation there")
      .def_property_readonly("simulation_comm", &Hook::simulation_comm,
                             "The communicator to run the simulation on (a new mpi4py Comm): comm's ranks, or its "
                             "first N-K under --analysis-ranks K; None on an analysis rank")
      .def("finalize", &Hook::finalize, "Collective: finish the outputs (series index, time series) and free the hook")
      .def("__enter__", [](Hook& h) -> Hook& { return h; })
      .def("__exit__", [](Hook& h, py::args) { h.finalize(); });
}
