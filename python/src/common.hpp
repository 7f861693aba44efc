// SPDX-License-Identifier: MIT
// What the Python API's files share: the communicator from mpi4py, numpy's
// names of volseg's types, the checks every array gets, and the progress
// callable. Each file binds its part into the module (bind_*).
#pragma once

#include <mpi.h>
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "mpi_comm.hpp"
#include "volseg/io/selection.hpp"
#include "volseg/io/types.hpp"
#include "volseg/segment/progress.hpp"

namespace volseg::python {

namespace py = pybind11;

// numpy's name of a volseg type, in native byte order (reads hand back native values).
const char* numpy_name(io::DType type);
// The volseg type of a numpy array (bool as u8), or volseg.Error naming what it is.
io::DType dtype_of(const py::array& array);
// volseg.Error unless the array is C-contiguous: volseg never copies behind a user's back.
void require_contiguous(const py::array& array, const char* what);
// volseg._Selection: io::Selection as volseg's Python wrappers build it
// from var=, time=, glob=, expr=, where= and operands= (volseg/__init__.py).
void bind_selection(py::module_& m);
py::object json_loads(const std::string& text);

// progress=: None or a callable (the job shows nothing itself), or the
// command line's "bar", "lines", "none", "auto".
segment::ProgressMode progress_mode(const py::object& progress);

// A Python callable told (bricks done, total) from rank 0's job thread,
// holding the GIL for the call; an exception it raises is raised after the job.
// The callable is held through a shared_ptr: the job copies the observer
// with the GIL released, which must not touch Python's reference counts.
struct ProgressCallback {
  std::shared_ptr<py::object> callable;
  std::shared_ptr<std::string> error = std::make_shared<std::string>();
  void operator()(const std::vector<std::int64_t>& units, std::int64_t total, bool) const;
  // The callback when progress is a callable; nullopt otherwise (the same on every rank).
  static std::optional<ProgressCallback> of(const py::object& progress);
  // Collective over comm: volseg.Error on every rank when the callable
  // raised (it runs on rank 0 alone).
  void check(MPI_Comm comm) const;
};

void bind_volume(py::module_& m);
void bind_arrays(py::module_& m);
void bind_jobs(py::module_& m);

}  // namespace volseg::python
