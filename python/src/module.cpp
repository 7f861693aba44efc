// SPDX-License-Identifier: MIT
// volseg._volseg: the Python API's extension (docs/python.md). Every call
// goes to the libraries the CLI uses (io, segment, pyramid); nothing is
// implemented twice. The communicator comes in through mpi4py's C API,
// arrays through the buffer protocol (C-contiguous, no copy), and the GIL is
// released while volseg works. volseg::Error becomes volseg.Error with the
// CLI's message; collective calls raise it on every rank. Rendering is its
// own extension (_render), so `import volseg` does not load VTK.
#include "common.hpp"
#include "volseg/io/error.hpp"
#include "volseg/version.hpp"

PYBIND11_MODULE(_volseg, m) {
  using namespace volseg::python;
  init_mpi4py();
  m.doc() = "volseg's libraries for Python: parallel, out-of-core threshold segmentation (docs/python.md)";
  m.attr("__version__") = volseg::version();
  static py::exception<volseg::Error> error(m, "Error");
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const volseg::Error& e) {
      error(e.what());
    }
  });
  bind_selection(m);
  bind_volume(m);
  bind_arrays(m);
  bind_jobs(m);
}
