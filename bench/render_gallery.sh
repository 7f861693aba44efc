#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The gallery of docs/render.md: every mode of volseg render on 3 ranks of a
# 64^3 shells volume, side by side in docs/results/render_gallery.png.
# Needs an X display (runs itself under xvfb-run when there is none).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
if [ -z "${DISPLAY:-}" ]; then exec xvfb-run -a -s "-screen 0 1280x1024x24" bash "$0" "$@"; fi
source "$root/scripts/mpi-env.sh"
volseg=${VOLSEG:-$root/build/app/cli/volseg}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
run() { mpirun -np 3 "$volseg" "$@"; }
run generate "$work/shells.nhdr" --field shells --dims 64 --quiet
run segment "$work/shells.nhdr" --lo 2 --hi 3 --out "$work/mask.nhdr" --pyramid --quiet
run pyramid "$work/shells.nhdr" --brick 16 --quiet
common=(--size 480x480 --camera 40,25 --quiet --level 0)
run render "$work/shells.nhdr" --mask "$work/mask.nhdr" --mode volume,mask --tf 0:0,1.5:0,2:0.02,6:0.1 \
  --out "$work/a.png" "${common[@]}"
run render "$work/shells.nhdr" --mode iso --iso 2.5 4.5 --out "$work/b.png" "${common[@]}"
run render "$work/shells.nhdr" --mask "$work/mask.nhdr" --mode slices --slice-at 0.5,0.5,0.3 \
  --out "$work/c.png" "${common[@]}"
run render "$work/shells.nhdr" --mode mask --lo 1.5 --hi 2.5 --mask-color 0.3,0.7,0.95 \
  --out "$work/d.png" "${common[@]}"
/usr/bin/python3 - "$work" "$root/docs/results/render_gallery.png" <<'PY'
import sys
import matplotlib.image as mpimg
import numpy as np
work, out = sys.argv[1], sys.argv[2]
images = [mpimg.imread(f"{work}/{name}.png")[..., :3] for name in "abcd"]
mpimg.imsave(out, np.concatenate(images, axis=1))
print("wrote", out)
PY
