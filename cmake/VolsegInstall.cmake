# SPDX-License-Identifier: MIT
# What `cmake --install` puts under the prefix for a simulation's build:
# headers, the exported library targets (volseg::insitu), volsegConfig.cmake
# with the netCDF wrapper beside it, and volseg-insitu.pc for Makefiles.
#
#   volseg_install_headers()          this folder's include/ -> <prefix>/include
#   volseg_install_library(target)    a library users link: exported as volseg::<name>
#   volseg_install_package()          the config, version and pkg-config files
#                                     (once, at the end of the top-level CMakeLists.txt)
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

set(VOLSEG_INSTALL_CMAKEDIR "${CMAKE_INSTALL_LIBDIR}/cmake/volseg")

function(volseg_install_headers)
  install(DIRECTORY "${CMAKE_CURRENT_SOURCE_DIR}/include/" TYPE INCLUDE)
endfunction()

# Marks `target` (volseg_<name>, a shared library) for export as
# volseg::<name> and installs its headers. volseg_install_package() does the
# rest at the end of the configure, after every target_link_libraries.
function(volseg_install_library target)
  volseg_install_headers()
  set_property(GLOBAL APPEND PROPERTY VOLSEG_EXPORTED_TARGETS ${target})
endfunction()

# The installed interface of one exported library. The static volseg
# libraries it links privately are inside it and stay out of the export; in
# the build tree io's include dir is kept, since the public headers include
# volseg/io/... (installed beside the target's own).
function(_volseg_export_library target)
  get_target_property(type ${target} TYPE)
  if(NOT type STREQUAL "SHARED_LIBRARY")
    message(FATAL_ERROR "volseg_install_library(${target}): a ${type}; only a shared library is exported "
                        "(the static volseg libraries are linked into it)")
  endif()
  string(REGEX REPLACE "^volseg_" "" export_name "${target}")

  # Include dirs: source paths hold only in the build tree.
  get_target_property(dirs ${target} INTERFACE_INCLUDE_DIRECTORIES)
  set(wrapped "")
  foreach(dir IN LISTS dirs)
    if(dir AND NOT dir MATCHES "^\\$<")
      list(APPEND wrapped "$<BUILD_INTERFACE:${dir}>")
    elseif(dir)
      list(APPEND wrapped "${dir}")
    endif()
  endforeach()
  list(APPEND wrapped "$<BUILD_INTERFACE:${PROJECT_SOURCE_DIR}/io/include>"
                      "$<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}>")
  list(REMOVE_DUPLICATES wrapped)

  # The C API is for C and Fortran codes too: the installed interface names
  # MPI::MPI_C only (the headers use MPI's C API), so a project with C alone
  # can use it; libmpi_cxx stays a dependency of the library itself.
  get_target_property(links ${target} INTERFACE_LINK_LIBRARIES)
  set(kept "")
  foreach(item IN LISTS links)
    if(item STREQUAL "MPI::MPI_CXX")
      list(APPEND kept "$<BUILD_INTERFACE:MPI::MPI_CXX>")
    elseif(item MATCHES "^(volseg::|volseg_)")
      message(FATAL_ERROR "${target} links ${item} publicly; link the static volseg libraries PRIVATE "
                          "(they are inside ${target}), or users link them twice")
    elseif(item)
      list(APPEND kept "${item}")
    endif()
  endforeach()
  if(NOT "MPI::MPI_C" IN_LIST kept)
    list(APPEND kept MPI::MPI_C)
  endif()
  # ParaView's VTK brings in the serial netCDF: every user executable must name the parallel
  # netCDF in its own NEEDED entries, ahead of the serial one VTK brings in,
  # even when it calls no nc_* function itself: Debian's linker drops such a
  # library (--as-needed by default) unless told otherwise. One flag item,
  # because CMake moves a library that other items also link (VTK's netCDF
  # module does) out of a --no-as-needed ... --pop-state pair.
  if(NOT "netCDF::netcdf" IN_LIST kept)
    list(APPEND kept netCDF::netcdf)
  endif()
  list(APPEND kept "-Wl,--push-state,--no-as-needed,$<TARGET_FILE:netCDF::netcdf>,--pop-state")

  set_target_properties(${target} PROPERTIES
    EXPORT_NAME ${export_name}
    INTERFACE_INCLUDE_DIRECTORIES "${wrapped}"
    INTERFACE_LINK_LIBRARIES "${kept}"
    # Its own folder first, then the folders of what it links outside the
    # system's (Open MPI's, HDF5's and ParaView's subfolders).
    INSTALL_RPATH "$ORIGIN"
    INSTALL_RPATH_USE_LINK_PATH ON)
  get_target_property(soversion ${target} SOVERSION)
  if(NOT soversion)
    set_target_properties(${target} PROPERTIES VERSION ${PROJECT_VERSION} SOVERSION ${PROJECT_VERSION_MAJOR})
  endif()
  install(TARGETS ${target} EXPORT volsegTargets
    LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
    ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
    RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
endfunction()

# After every volseg_install_library: the export, volsegConfig.cmake and its
# version, the netCDF wrapper (cmake/netcdf: netCDF-C's parallel CMake
# config points at the serial headers) and the .pc file.
function(volseg_install_package)
  get_property(exported GLOBAL PROPERTY VOLSEG_EXPORTED_TARGETS)
  if(NOT exported)
    return()
  endif()
  foreach(target IN LISTS exported)
    _volseg_export_library(${target})
  endforeach()
  install(EXPORT volsegTargets NAMESPACE volseg:: DESTINATION ${VOLSEG_INSTALL_CMAKEDIR})
  configure_package_config_file("${PROJECT_SOURCE_DIR}/cmake/volsegConfig.cmake.in"
    "${PROJECT_BINARY_DIR}/volsegConfig.cmake"
    INSTALL_DESTINATION ${VOLSEG_INSTALL_CMAKEDIR})
  # 0.x: a minor version may break the interface.
  write_basic_package_version_file("${PROJECT_BINARY_DIR}/volsegConfigVersion.cmake"
    VERSION ${PROJECT_VERSION} COMPATIBILITY SameMinorVersion)
  install(FILES "${PROJECT_BINARY_DIR}/volsegConfig.cmake" "${PROJECT_BINARY_DIR}/volsegConfigVersion.cmake"
          DESTINATION ${VOLSEG_INSTALL_CMAKEDIR})
  # The wrapper names only absolute system paths, so the copy works from any prefix.
  install(FILES "${PROJECT_SOURCE_DIR}/cmake/netcdf/netCDFConfig.cmake"
                "${PROJECT_SOURCE_DIR}/cmake/netcdf/netCDFConfigVersion.cmake"
          DESTINATION ${VOLSEG_INSTALL_CMAKEDIR}/netcdf)

  # pkg-config: the parallel netCDF's real include dir (pitfall 1; Debian's
  # netcdf-pnetcdf.pc names /usr/include, the serial headers) and its library
  # kept in the user's executable as above (pitfall 2). MPI through Open
  # MPI's own module, the MPI volseg is built against. The prefix is found
  # from the file's own place, so `cmake --install --prefix` anywhere works.
  if(TARGET volseg_insitu)
    set(up "..")
    string(REPLACE "/" ";" libdir_parts "${CMAKE_INSTALL_LIBDIR}")
    foreach(part IN LISTS libdir_parts)
      string(APPEND up "/..")
    endforeach()
    set(VOLSEG_PC_PREFIX "\${pcfiledir}/${up}")
    configure_file("${PROJECT_SOURCE_DIR}/cmake/volseg-insitu.pc.in"
                   "${PROJECT_BINARY_DIR}/volseg-insitu.pc.configured" @ONLY)
    file(GENERATE OUTPUT "${PROJECT_BINARY_DIR}/volseg-insitu.pc"
         INPUT "${PROJECT_BINARY_DIR}/volseg-insitu.pc.configured")
    install(FILES "${PROJECT_BINARY_DIR}/volseg-insitu.pc" DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
  endif()
endfunction()
