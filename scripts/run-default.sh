#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The main job on the built-in default dataset: installs what is missing,
# builds, generates a 512^3 float32 field of nested spherical shells (512 MiB)
# and segments it on 2 MPI ranks.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${VOLSEG_BUILD_DIR:-$root/build}
data=${VOLSEG_DATA:-$root/volseg-data}
bash "$root/scripts/build.sh"
source "$root/scripts/mpi-env.sh"
volseg="$build/app/cli/volseg"
mkdir -p "$data"
if [ ! -f "$data/shells-512.nhdr" ]; then
  mpirun -np 2 "$volseg" generate "$data/shells-512.nhdr" --field shells --dims 512 --dtype f32 --shell-width 16
fi
mpirun -np 2 "$volseg" segment "$data/shells-512.nhdr" --lo 4 --hi 7 \
  --out "$data/shells-512-mask.nhdr" --report "$data/shells-512-report.json" --force
echo
echo "mask:   $data/shells-512-mask.nhdr (+ .raw; open the .nhdr in ParaView)"
echo "report: $data/shells-512-report.json"
