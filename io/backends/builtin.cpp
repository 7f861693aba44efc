// SPDX-License-Identifier: MIT
// The one place that lists every backend. A new backend is a new file in
// this folder and one line here.
#include "volseg/io/registry.hpp"

namespace volseg::io {

Backend make_posix_backend();
Backend make_mmap_backend();
Backend make_mmap_advise_backend();
Backend make_mpiio_backend();
Backend make_pnetcdf_backend();
Backend make_netcdf4_backend();

namespace {
Backend planned(std::string name, std::string formats, std::string description) {
  Backend backend;
  backend.name = std::move(name);
  backend.formats = std::move(formats);
  backend.description = std::move(description);
  backend.unavailable = "not in this version of volseg yet";
  return backend;
}
}  // namespace

void register_builtin(Registry& registry) {
  registry.add(make_posix_backend());
  registry.add(make_mmap_backend());
  registry.add(make_mmap_advise_backend());
  registry.add(make_mpiio_backend());
  registry.add(make_pnetcdf_backend());
  registry.add(make_netcdf4_backend());
  registry.add(planned("twophase", "raw, fixed-size CDF variables", "volseg's own two-phase collective I/O"));
}

}  // namespace volseg::io
