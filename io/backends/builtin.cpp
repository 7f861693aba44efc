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
Backend make_twophase_backend();
Backend make_ranged_mmap_backend();
Backend make_ranged_uring_backend();
Backend make_null_backend();
Backend make_zarr_backend();
Backend make_precomputed_backend();
Backend make_gzip_backend();
Backend make_vti_backend();
Backend make_tiff_backend();
Backend make_hdf5_backend();

void register_builtin(Registry& registry) {
  registry.add(make_posix_backend());
  registry.add(make_mmap_backend());
  registry.add(make_mmap_advise_backend());
  registry.add(make_mpiio_backend());
  registry.add(make_pnetcdf_backend());
  registry.add(make_netcdf4_backend());
  registry.add(make_twophase_backend());
  registry.add(make_ranged_mmap_backend());
  registry.add(make_ranged_uring_backend());
  registry.add(make_null_backend());
  registry.add(make_zarr_backend());
  registry.add(make_precomputed_backend());
  registry.add(make_gzip_backend());
  registry.add(make_vti_backend());
  registry.add(make_tiff_backend());
  registry.add(make_hdf5_backend());
}

}  // namespace volseg::io
