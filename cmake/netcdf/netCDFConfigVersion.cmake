# SPDX-License-Identifier: MIT
include("/usr/lib/x86_64-linux-gnu/cmake/netCDF_pnetcdf/netCDFConfigVersion.cmake")
