# SPDX-License-Identifier: MIT
# volseg_add_mpi_test(NAME target RANKS 1 2 3 4 [ARGS ...] [ENV VAR=value ...])
# Registers one ctest per rank count, oversubscribed and allowed to run as
# root, as OpenMPI requires on a small machine (docs/dependencies.md, "MPI
# as root").
set(VOLSEG_MPI_TEST_ENV
  OMPI_ALLOW_RUN_AS_ROOT=1
  OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
  OMPI_MCA_rmaps_base_oversubscribe=1
  # Shared-memory single-copy (CMA/XPMEM) is often denied in containers.
  OMPI_MCA_btl_vader_single_copy_mechanism=none
  # Messages that grow with the data move in pieces of at most this many
  # bytes (io/include/volseg/io/messages.hpp; 256 MiB by default): a few KiB
  # here, so every test run takes the pieced path.
  VOLSEG_MPI_MESSAGE_BYTES=4096)
if(VOLSEG_SANITIZE)
  # ASan's memory errors and UBSan stop a test. Leak checking is off: Open
  # MPI unloads its components (dlclose) before LeakSanitizer runs, so their
  # allocations kept for the process's life show as "<unknown module>" that
  # no suppression can name. tests/sanitizer/lsan.supp covers the libraries
  # that stay loaded, for ASAN_OPTIONS=detect_leaks=1 runs by hand.
  list(APPEND VOLSEG_MPI_TEST_ENV
    "LSAN_OPTIONS=suppressions=${PROJECT_SOURCE_DIR}/tests/sanitizer/lsan.supp:print_suppressions=0"
    "ASAN_OPTIONS=detect_leaks=0:abort_on_error=1"
    "UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1")
endif()

function(volseg_add_mpi_test name target)
  cmake_parse_arguments(ARG "" "" "RANKS;ARGS;LABELS;ENV" ${ARGN})
  if(NOT ARG_RANKS)
    set(ARG_RANKS 1 2 3 4)
  endif()
  foreach(n IN LISTS ARG_RANKS)
    add_test(NAME ${name}_np${n}
      COMMAND ${MPIEXEC_EXECUTABLE} ${MPIEXEC_NUMPROC_FLAG} ${n} ${MPIEXEC_PREFLAGS}
              $<TARGET_FILE:${target}> ${MPIEXEC_POSTFLAGS} ${ARG_ARGS})
    set_tests_properties(${name}_np${n} PROPERTIES
      PROCESSORS ${n}
      ENVIRONMENT "${VOLSEG_MPI_TEST_ENV};${ARG_ENV}"
      LABELS "mpi;${ARG_LABELS}")
  endforeach()
endfunction()

# volseg_xvfb_run(OUT): the command prefix `xvfb-run -a -n N -s "-screen 0
# 1280x1024x24"` with a server number N of the calling test's own (from
# 1000 up, ten apart): tests that run at once never race for the same
# display (xvfb-run -a alone starts every one at 99), and none meets the
# private servers volseg starts (100-999; render/src/private_x_server.cpp).
set_property(GLOBAL PROPERTY VOLSEG_XVFB_NEXT 1000)
function(volseg_xvfb_run out)
  get_property(number GLOBAL PROPERTY VOLSEG_XVFB_NEXT)
  math(EXPR next "${number} + 10")
  set_property(GLOBAL PROPERTY VOLSEG_XVFB_NEXT ${next})
  set(${out} xvfb-run -a -n ${number} -s "-screen 0 1280x1024x24" PARENT_SCOPE)
endfunction()
