// SPDX-License-Identifier: MIT
#include "mpi_comm.hpp"

#include <mpi4py/mpi4py.h>

namespace volseg::python {

namespace py = pybind11;

void init_mpi4py() {
  if (import_mpi4py() < 0) throw py::error_already_set();
}

MPI_Comm mpi_comm(const py::object& comm) {
  if (!PyObject_TypeCheck(comm.ptr(), &PyMPIComm_Type))
    throw py::type_error("comm must be an mpi4py communicator (from mpi4py import MPI; MPI.COMM_WORLD)");
  MPI_Comm* handle = PyMPIComm_Get(comm.ptr());
  if (!handle || *handle == MPI_COMM_NULL) throw py::value_error("comm is MPI.COMM_NULL");
  return *handle;
}

py::object mpi4py_duplicate(MPI_Comm comm) {
  auto wrapped = py::reinterpret_steal<py::object>(PyMPIComm_New(comm));  // borrows the handle
  if (!wrapped) throw py::error_already_set();
  return wrapped.attr("Dup")();
}

}  // namespace volseg::python
