// SPDX-License-Identifier: MIT
// The communicator of an mpi4py object, for every extension of the package.
// mpi4py's C API is a table of pointers filled per translation unit, so it
// is included here alone and init_mpi4py() fills it once per extension.
#pragma once

#include <mpi.h>
#include <pybind11/pybind11.h>

namespace volseg::python {

// Call from PYBIND11_MODULE before any mpi_comm(); throws when mpi4py cannot be imported.
void init_mpi4py();
// The MPI_Comm of an mpi4py communicator; TypeError for anything else.
MPI_Comm mpi_comm(const pybind11::object& comm);
// A new mpi4py communicator, a duplicate of comm (the caller's to free).
pybind11::object mpi4py_duplicate(MPI_Comm comm);

}  // namespace volseg::python
