# SPDX-License-Identifier: MIT
# volseg_add_mpi_test(NAME target RANKS 1 2 3 4 [ARGS ...] [ENV VAR=value ...])
# Registers one ctest per rank count, oversubscribed and allowed to run as
# root (DEPENDENCIES.md pitfalls 4 and 6).
set(VOLSEG_MPI_TEST_ENV
  OMPI_ALLOW_RUN_AS_ROOT=1
  OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
  OMPI_MCA_rmaps_base_oversubscribe=1
  # Shared-memory single-copy (CMA/XPMEM) is often denied in containers.
  OMPI_MCA_btl_vader_single_copy_mechanism=none)

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
