#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The whole test suite on a fresh machine: installs what is missing, builds,
# runs ctest (MPI tests oversubscribed on 1-4 ranks). Then the core build
# (VOLSEG_WITH_PARAVIEW=OFF: no VTK, Qt or Catalyst) in ./build-core, and the
# tests that build has, with no X display. VOLSEG_CORE=0 skips the second.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${VOLSEG_BUILD_DIR:-$root/build}
bash "$root/scripts/build.sh"
(cd "$build" && ctest --output-on-failure -j "${VOLSEG_JOBS:-2}" "$@")
if [ "${VOLSEG_CORE:-1}" != 0 ]; then
  core=${VOLSEG_CORE_BUILD_DIR:-$root/build-core}
  VOLSEG_BUILD_DIR=$core bash "$root/scripts/build.sh" -DVOLSEG_WITH_PARAVIEW=OFF
  # The tests whose outcome the configuration changes (the CLI, the in-situ
  # hook, the installed package) and smoke tests of each job; the libraries'
  # own suites are the same code as above.
  (cd "$core" && env -u DISPLAY ctest --output-on-failure -j "${VOLSEG_JOBS:-2}" -L core "$@")
fi
