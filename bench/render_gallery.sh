#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The images of the docs, renewed by the current code: the gallery of
# docs/render.md (every mode of volseg render on 3 ranks of a
# 64^3 shells volume, side by side in docs/results/render_gallery.png), the
# real-data gallery of docs/gallery.md (docs/images/gallery-*.png: Levitus
# temperature, the Colin27 MRI, an in-situ Gray-Scott frame), and the
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

# docs/gallery.md: real data, each image with the command that made it (the
# page shows the same commands). Levitus needs ferret-datasets, Colin27
# mricron-data (both installed by scripts/install-deps.sh).
images=$root/docs/images
levitus=/usr/share/ferret-vis/data/levitus_climatology.cdf
if [ -f "$levitus" ]; then
  run segment "$levitus" --var TEMP --lo 20 --hi 40 --out "$work/warm.nc" --quiet
  run render "$levitus" --var TEMP --mask "$work/warm.nc" --mode slices,mask --slice-at 0.5,0.5,0.02 \
    --scale 0.04,1,1 --camera 10,-62,1.5 --mask-opacity 0.85 --colormap inferno \
    --title "Levitus climatology: temperature, and the water above 20 C (depth x 0.04, drawn down)" \
    --size 1000x620 --out "$images/gallery-levitus.png" --force --quiet
fi
colin=/usr/share/mricron/templates/ch2.nii.gz
if [ -f "$colin" ]; then
  gunzip -c "$colin" > "$work/colin27.nii"
  run label "$work/colin27.nii" --lo 110 --hi 255 --min-voxels 2000 --out "$work/objects.nhdr" \
    --stats "$work/objects.csv" --quiet
  # object 2 (the white matter; object 1 is the scalp) as a mask: a threshold of the labels
  run segment "$work/objects.nhdr" --lo 2 --hi 2 --out "$work/white.nhdr" --quiet
  run render "$work/colin27.nii" --mask "$work/white.nhdr" --mode slices,mask --slice-at 0.5,0.5,0.45 \
    --colormap gray --view +x --title "Colin27 MRI: object 2 of volseg label 110..255 (the white matter)" \
    --size 900x560 --out "$images/gallery-colin27.png" --force --quiet
  # the object table docs/gallery.md shows
  /usr/bin/python3 - "$work/objects.csv" <<'PY'
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
print("| id | voxels | bounding box z, y, x | centroid (mm) | touches the boundary |")
print("|---|---|---|---|---|")
for r in rows:
    print("| %s | %s | %s..%s, %s..%s, %s..%s | %.1f, %.1f, %.1f | %s |" % (
        r["id"], r["voxels"], r["z_min"], r["z_max"], r["y_min"], r["y_max"], r["x_min"], r["x_max"],
        float(r["position_z"]), float(r["position_y"]), float(r["position_x"]), "yes" if r["touches_boundary"] == "1" else "no"))
PY
fi
sim=${VOLSEG_SIM:-$root/build/app/insitu/volseg-sim}
( cd "$work" && mpirun -np 2 "$sim" --dims 128,128,128 --steps 1200 --ghost 4 --insitu --lo 0.2 --hi 1 --every 1200 \
    --image "$work/gs_%04d.png" --camera 30,20,2.2 --size 800x700 )
cp "$work/gs_1200.png" "$images/gallery-grayscott.png"

# docs/gui.md's window: volseg-gui unattended on a shells volume
gui=${VOLSEG_GUI:-$root/build/gui/volseg-gui}
run generate "$work/gui.nhdr" --field shells --dims 96 --quiet
mpirun -np 2 "$gui" "$work/gui.nhdr" --lo 4 --hi 7 --segment --out "$work/gui-mask.nhdr" \
  --window-shot "$root/docs/results/gui_window.png" --camera 30,20 --quit

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
