#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""docs/images/operators-colin27.png: each operator of docs/operators.md
on the Colin27 MRI (Debian's mricron-data), run by volseg on 2 ranks.

    /usr/bin/python3 scripts/operators_figure.py --volseg build/app/cli/volseg

Each panel is an axial slice through the ventricles: the MRI in grey, the
mask of the plain band in blue, what the operator adds in yellow and what
it takes away in red."""
import argparse
import os
import re
import subprocess
import sys
import tempfile

import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

COLIN27 = "/usr/share/mricron/templates/ch2.nii.gz"
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "e2e"))


def run(volseg, args, ranks):
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    proc = subprocess.run(["mpirun", "--oversubscribe", "-np", str(ranks), volseg, *args], capture_output=True,
                          text=True, env=env)
    if proc.returncode != 0:
        sys.exit("volseg %s failed:\n%s%s" % (" ".join(args), proc.stdout, proc.stderr))
    return proc.stdout


def read_mask(path):
    import e2e_util
    return e2e_util.read_volume(path)[1].astype(bool)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--volseg", default=os.path.join(HERE, "..", "build", "app", "cli", "volseg"))
    parser.add_argument("--out", default=os.path.join(HERE, "..", "docs", "images", "operators-colin27.png"))
    parser.add_argument("--ranks", type=int, default=2)
    args = parser.parse_args()
    import nibabel
    mri = np.asarray(nibabel.load(COLIN27).dataobj).transpose(2, 1, 0)  # z, y, x as volseg reads it
    with tempfile.TemporaryDirectory(prefix="volseg-operators-figure-") as tmp:
        def segment(name, options):
            out = os.path.join(tmp, name + ".nhdr")
            text = run(args.volseg, ["segment", COLIN27, "--out", out, "--progress", "none", "--brick", "48,64,64",
                                     *options], args.ranks)
            return read_mask(out), text

        panels = []
        otsu, text = segment("otsu", ["--lo", "otsu", "--hi", "255"])
        chosen = float(re.search(r"--lo otsu = (\S+)", text).group(1))
        panels.append(("--lo otsu (= %g) --hi 255" % chosen, None, otsu))
        band, _ = segment("band", ["--lo", "105", "--hi", "125"])
        seeded, _ = segment("seeded", ["--lo", "105", "--hi", "125", "--seed-lo", "118", "--seed-hi", "125",
                                       "--connectivity", "6"])
        panels.append(("[105, 125] --seed-lo 118 --seed-hi 125", band, seeded))
        white, _ = segment("white", ["--lo", "110", "--hi", "255"])
        opened, _ = segment("opened", ["--lo", "110", "--hi", "255", "--open", "2"])
        panels.append(("[110, 255] --open 2", white, opened))
        tissue, _ = segment("tissue", ["--lo", "multiotsu:3:1", "--hi", "255"])
        filled, _ = segment("filled", ["--lo", "multiotsu:3:1", "--hi", "255", "--close", "1", "--fill-holes"])
        panels.append(("multiotsu:3:1, --close 1 --fill-holes", tissue, filled))

    z = 100  # an axial slice through the lateral ventricles
    fig, axes = plt.subplots(1, len(panels), figsize=(4.2 * len(panels), 5.2))
    for ax, (title, before, after) in zip(axes, panels):
        image = np.repeat(mri[z][..., None] / 255.0, 3, axis=2) * 0.8
        blend = lambda rgb, where, alpha=0.55: np.where(where[..., None], (1 - alpha) * image + alpha * np.array(rgb),
                                                         image)
        if before is None:
            image = blend((0.2, 0.5, 1.0), after[z])
        else:
            image = blend((0.2, 0.5, 1.0), before[z] & after[z])
            image = blend((1.0, 0.85, 0.1), after[z] & ~before[z], 0.85)
            image = blend((1.0, 0.15, 0.1), before[z] & ~after[z], 0.85)
        ax.imshow(image, origin="lower")
        ax.set_title(title, fontsize=10)
        ax.axis("off")
    fig.suptitle("volseg's operators on the Colin27 MRI, slice z = %d: kept in blue, added in yellow, removed in red"
                 % z, fontsize=11)
    fig.tight_layout()
    fig.savefig(args.out, dpi=90)
    print("wrote", args.out)


if __name__ == "__main__":
    main()
