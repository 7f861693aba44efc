# SPDX-License-Identifier: MIT
# Every third-party dependency, found once, with the fixes the Debian
# packages need (each explained where it is made).

find_package(MPI REQUIRED COMPONENTS C CXX)
find_package(Threads REQUIRED)

find_package(PkgConfig REQUIRED)
pkg_check_modules(PNETCDF REQUIRED IMPORTED_TARGET pnetcdf)

# Parallel netCDF-C through our wrapper (pitfall 1). Set before ParaView,
# whose VTK looks netCDF up too.
set(netCDF_DIR "${PROJECT_SOURCE_DIR}/cmake/netcdf" CACHE PATH "netCDF config (volseg wrapper)" FORCE)
find_package(netCDF REQUIRED CONFIG)
# VTK's netcdf module (pulled in by Catalyst) asks for NetCDF::NetCDF: the
# same parallel library, never the serial one (two netCDF libraries in one
# process answer each other's calls).
if(NOT TARGET NetCDF::NetCDF)
  add_library(NetCDF::NetCDF INTERFACE IMPORTED)
  target_link_libraries(NetCDF::NetCDF INTERFACE netCDF::netcdf)
endif()

set(HDF5_PREFER_PARALLEL ON)
find_package(HDF5 REQUIRED COMPONENTS C HL)
if(NOT HDF5_IS_PARALLEL)
  message(FATAL_ERROR "volseg needs parallel HDF5 (Debian: libhdf5-mpi-dev); found a serial one")
endif()

find_package(nlohmann_json 3 REQUIRED)
find_package(CLI11 REQUIRED)

find_package(PkgConfig REQUIRED)
pkg_check_modules(LIBURING REQUIRED IMPORTED_TARGET liburing)
# Zarr's codecs (io/backends/zarr)
pkg_check_modules(BLOSC REQUIRED IMPORTED_TARGET blosc)
pkg_check_modules(ZSTD REQUIRED IMPORTED_TARGET libzstd)
pkg_check_modules(ZLIB REQUIRED IMPORTED_TARGET zlib)
pkg_check_modules(LIBTIFF REQUIRED IMPORTED_TARGET libtiff-4)
# VTK image data's LZ4 and LZMA compressors (io/backends/vti.cpp)
pkg_check_modules(LZ4 REQUIRED IMPORTED_TARGET liblz4)
pkg_check_modules(LZMA REQUIRED IMPORTED_TARGET liblzma)

if(VOLSEG_WITH_PARAVIEW)
  find_package(LibXml2 REQUIRED)
  find_package(Boost REQUIRED)
  find_package(ParaView 5.11 REQUIRED COMPONENTS Catalyst PythonCatalyst icet)
  find_package(VTK REQUIRED COMPONENTS
    CommonCore CommonDataModel IOImage ParallelMPI RenderingOpenGL2
    RenderingVolumeOpenGL2 RenderingParallel RenderingFreeType
    InteractionStyle GUISupportQt Python)
  find_package(Qt5 5.15 REQUIRED COMPONENTS Widgets OpenGL)
endif()

if(VOLSEG_BUILD_TESTS)
  find_package(GTest REQUIRED)
  include(GoogleTest)
endif()
