#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Installs what is missing, then configures and builds volseg in ./build
# (or $VOLSEG_BUILD_DIR). Used by run-default.sh and run-tests.sh; extra
# arguments go to cmake's configure (-DVOLSEG_WITH_PARAVIEW=OFF: the core).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${VOLSEG_BUILD_DIR:-$root/build}
bash "$root/scripts/install-deps.sh"
cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release "$@"
cmake --build "$build" -j "${VOLSEG_JOBS:-2}"
