#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Installs what is missing, then configures and builds volseg in ./build
# (or $VOLSEG_BUILD_DIR). Used by run-default.sh and run-tests.sh; extra
# arguments go to cmake's configure (-DVOLSEG_WITH_PARAVIEW=OFF: the core).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${VOLSEG_BUILD_DIR:-$root/build}
bash "$root/scripts/install-deps.sh"
# ccache (VOLSEG_CCACHE=0: none), with paths under the source folder hashed
# relative to it: the core build (build-core) then reuses the full build's
# objects of every library that does not depend on ParaView, which is most
# of them (run-tests.sh builds both).
launcher=()
if [ "${VOLSEG_CCACHE:-1}" != 0 ] && command -v ccache > /dev/null; then
  export CCACHE_BASEDIR=${CCACHE_BASEDIR:-$root}
  launcher=(-DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
fi
cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release "${launcher[@]}" "$@"
cmake --build "$build" -j "${VOLSEG_JOBS:-2}"
