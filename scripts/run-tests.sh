#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The test suite.
#
#   run-tests.sh [CTEST ARGS]      everything, on a fresh machine too: installs
#                                  what is missing, builds, runs ctest (MPI
#                                  tests oversubscribed on 1-4 ranks); then the
#                                  core build (VOLSEG_WITH_PARAVIEW=OFF: no
#                                  VTK, Qt or Catalyst) in ./build-core and the
#                                  tests labelled core, with no X display.
#                                  VOLSEG_CORE=0 skips the core.
#   run-tests.sh --changed [BASE]  on an existing build: rebuilds, then runs
#                                  the tests of what differs from BASE (default
#                                  HEAD; on a clean tree the last commit), as
#                                  scripts/changed_tests.py maps paths to tests.
#
# Most tests wait (MPI start-up, Python, files) more than they compute, so
# ctest runs VOLSEG_TEST_JOBS (default 4 per core) slots at once; an MPI test
# takes a slot per rank. The core build compiles while the full build's tests
# run. VOLSEG_JOBS (default: the cores) sets the compilers at once.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${VOLSEG_BUILD_DIR:-$root/build}
cores=$(nproc)
export VOLSEG_JOBS=${VOLSEG_JOBS:-$cores}
test_jobs=${VOLSEG_TEST_JOBS:-$((4 * cores))}

if [ "${1:-}" = --changed ]; then
  base=${2:-HEAD}
  [ -d "$build" ] || { echo "run-tests.sh --changed: no build in $build; run scripts/run-tests.sh first" >&2; exit 2; }
  regex=$(/usr/bin/python3 "$root/scripts/changed_tests.py" "$base")
  if [ -z "$regex" ]; then
    echo "run-tests.sh --changed: nothing differs from $base"
    exit 0
  fi
  bash "$root/scripts/build.sh"
  cd "$build"
  echo "run-tests.sh --changed: tests matching $regex"
  exec ctest --output-on-failure -j "$test_jobs" -R "$regex"
fi

bash "$root/scripts/build.sh"
core=${VOLSEG_CORE_BUILD_DIR:-$root/build-core}
core_log=$(mktemp)
core_pid=""
if [ "${VOLSEG_CORE:-1}" != 0 ]; then
  # The core build alongside the full build's tests: ccache hands it the
  # objects of every library that does not depend on ParaView.
  (VOLSEG_BUILD_DIR=$core VOLSEG_JOBS=1 bash "$root/scripts/build.sh" -DVOLSEG_WITH_PARAVIEW=OFF > "$core_log" 2>&1) &
  core_pid=$!
fi
status=0
(cd "$build" && ctest --output-on-failure -j "$test_jobs" "$@") || status=$?
if [ -n "$core_pid" ]; then
  if ! wait "$core_pid"; then
    cat "$core_log"
    echo "run-tests.sh: the core build failed" >&2
    exit 1
  fi
  tail -n 3 "$core_log"
  # The tests whose outcome the configuration changes (the CLI, the in-situ
  # hook, the installed package) and smoke tests of each job; the libraries'
  # own suites are the same code as above.
  (cd "$core" && env -u DISPLAY ctest --output-on-failure -j "$test_jobs" -L core "$@") || status=$?
fi
rm -f "$core_log"
exit $status
