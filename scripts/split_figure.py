#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""docs/images/split.png: a plane of the spheres generator's touching balls,
its distance (volseg distance), its connected components (volseg label) and
the split (volseg label --split), each made by the volseg command line.

  /usr/bin/python3 scripts/split_figure.py [--volseg build/app/cli/volseg]"""
import argparse
import os
import subprocess
import tempfile

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def read(path, dtype, shape):
    return np.fromfile(os.path.splitext(path)[0] + ".raw", dtype=dtype).reshape(shape)


def colours(labels):
    """A random colour per id (0 black), the same for every panel's ids."""
    rng = np.random.default_rng(4)
    table = rng.uniform(0.25, 1.0, size=(int(labels.max()) + 1, 3))
    table[0] = 0
    return table[labels]


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--volseg", default=os.path.join(ROOT, "build", "app", "cli", "volseg"))
    parser.add_argument("--out", default=os.path.join(ROOT, "docs", "images", "split.png"))
    args = parser.parse_args()
    n, count = 128, 240
    with tempfile.TemporaryDirectory() as work:
        mask_path = os.path.join(work, "s.nhdr")
        run = lambda *a: subprocess.run([args.volseg, *a, "--quiet"], check=True)  # noqa: E731
        run("generate", mask_path, "--field", "spheres", "--count", str(count), "--seed", "11", "--dims", str(n),
            "--dtype", "u8")
        run("distance", mask_path, "--mask-input", "--out", os.path.join(work, "d.nhdr"))
        run("label", mask_path, "--mask-input", "--out", os.path.join(work, "c.nhdr"), "--label-type", "u32")
        run("label", mask_path, "--mask-input", "--split", "--h", "0.5", "--out", os.path.join(work, "s_l.nhdr"),
            "--label-type", "u32")
        shape = (n, n, n)
        mask = read(mask_path, np.uint8, shape)
        distance = read(os.path.join(work, "d.nhdr"), np.float32, shape)
        components = read(os.path.join(work, "c.nhdr"), np.uint32, shape)
        split = read(os.path.join(work, "s_l.nhdr"), np.uint32, shape)
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    z = int(np.argmax((mask != 0).sum(axis=(1, 2))))  # the fullest plane
    fig, axes = plt.subplots(1, 4, figsize=(16, 4.4))
    panels = [("mask (plane z = %d)" % z, mask[z], "gray"),
              ("distance to the background (voxels)", distance[z], "magma"),
              ("connected components: %d objects" % components.max(), colours(components[z]), None),
              ("--split --h 0.5: %d objects (%d balls)" % (split.max(), count), colours(split[z]), None)]
    for ax, (title, image, cmap) in zip(axes, panels):
        shown = ax.imshow(image, cmap=cmap, interpolation="nearest")
        if cmap == "magma":
            fig.colorbar(shown, ax=ax, fraction=0.046)
        ax.set_title(title, fontsize=10)
        ax.set_axis_off()
    fig.suptitle("volseg generate --field spheres --count %d --dims %d, then volseg distance, label, label --split"
                 % (count, n), fontsize=11)
    fig.tight_layout()
    fig.savefig(args.out, dpi=90)
    print("wrote", args.out)


if __name__ == "__main__":
    main()
