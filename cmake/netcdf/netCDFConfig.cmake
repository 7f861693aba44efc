# SPDX-License-Identifier: MIT
# Wrapper around Debian's parallel netCDF-C config (docs/dependencies.md, "netCDF-C's
# parallel config"):
# the Debian config points the include dir at /usr/include (the serial
# headers) and names link items that are not installed (libblosc.so).
set(_volseg_netcdf_debian_dir "/usr/lib/x86_64-linux-gnu/cmake/netCDF_pnetcdf")
include("${_volseg_netcdf_debian_dir}/netCDFConfig.cmake")

set(netCDF_INCLUDE_DIR "/usr/lib/x86_64-linux-gnu/netcdf/pnetcdf/include")
if(TARGET netCDF::netcdf)
  get_target_property(_volseg_nc_links netCDF::netcdf INTERFACE_LINK_LIBRARIES)
  set(_volseg_nc_kept "")
  foreach(_item IN LISTS _volseg_nc_links)
    if(IS_ABSOLUTE "${_item}" AND NOT EXISTS "${_item}")
      continue()
    endif()
    list(APPEND _volseg_nc_kept "${_item}")
  endforeach()
  set_target_properties(netCDF::netcdf PROPERTIES
    INTERFACE_INCLUDE_DIRECTORIES "${netCDF_INCLUDE_DIR}"
    INTERFACE_LINK_LIBRARIES "${_volseg_nc_kept}")
endif()
set(netCDF_FOUND TRUE)
