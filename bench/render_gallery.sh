#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The images of the docs, renewed by the current code: the gallery of
# docs/render.md (every mode of volseg render on 3 ranks of a
# 64^3 shells volume, side by side in docs/results/render_gallery.png) and the
# README's picture (docs/images/default-job.png).
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

# The README's picture: the default job's own image (scripts/run-default.sh,
# 512^3 shells on 2 ranks), scaled to at most 800 pixels wide. VOLSEG_GALLERY_DEFAULT=0 skips it.
if [ "${VOLSEG_GALLERY_DEFAULT:-1}" != 0 ]; then
  bash "$root/scripts/run-default.sh"
  /usr/bin/python3 - "${VOLSEG_DATA:-$root/volseg-data}/shells-512.png" "$root/docs/images/default-job.png" <<'PY'
import sys
import matplotlib.image as mpimg
import numpy as np
image = mpimg.imread(sys.argv[1])[..., :3]
step = -(-image.shape[1] // 800)  # at most 800 pixels wide
h, w = (image.shape[0] // step) * step, (image.shape[1] // step) * step
small = image[:h, :w].reshape(h // step, step, w // step, step, 3).mean(axis=(1, 3))  # box filter, no aliasing
mpimg.imsave(sys.argv[2], np.clip(small, 0, 1))
print("wrote", sys.argv[2])
PY
fi
