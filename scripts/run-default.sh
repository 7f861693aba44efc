#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The main job on the built-in default dataset: installs what is missing,
# builds, generates a 512^3 float32 field of nested spherical shells (512 MiB)
# segments it on 2 MPI ranks with the mask's pyramid, and renders the volume
# with the mask's surface (on a private Xvfb that volseg starts when there is
# no X display).
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
  --out "$data/shells-512-mask.nhdr" --report "$data/shells-512-report.json" --pyramid --force
mpirun -np 2 "$volseg" pyramid "$data/shells-512.nhdr" --force --quiet
mpirun -np 2 "$volseg" render "$data/shells-512.nhdr" --mask "$data/shells-512-mask.nhdr" \
  --mode volume,mask --lo 4 --hi 7 --tf 8:0,9:0.002,27:0.006 --size 1024x1024 --level auto --progressive \
  --out "$data/shells-512.png" --report "$data/shells-512-render.json" --force
echo
echo "mask:   $data/shells-512-mask.nhdr (+ .raw; open the .nhdr in ParaView)"
echo "report: $data/shells-512-report.json"
echo "image:  $data/shells-512.png (coarser levels first: shells-512-levelK.png)"
