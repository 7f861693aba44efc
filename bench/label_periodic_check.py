#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""'volseg label --periodic zyx' against cc3d's periodic_boundary=True.

cc3d (connected-components-3d from PyPI, in the virtual environment
bench/label_bench.py makes) wraps all three axes and takes 6-connectivity
with periodic_boundary (its 18 and 26 are checked against a torus reference
in tests/e2e/test_label_passes.py instead). For random masks of several
densities and shapes, on 1 and 3 ranks with small bricks, the labels must be
the same voxel for voxel once cc3d's are numbered by first voxel in file
order, as volseg numbers them.

  /usr/bin/python3 bench/label_periodic_check.py [--volseg build/app/cli/volseg]
Prints one line per case and exits non-zero on any difference."""
import argparse
import os
import subprocess
import sys
import tempfile

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "bench"))
import label_bench  # noqa: E402

CC3D = r'''
import sys, numpy as np, cc3d
mask = np.load(sys.argv[1])
labels = cc3d.connected_components(mask, connectivity=6, periodic_boundary=True, out_dtype=np.uint32)
np.save(sys.argv[2], labels)
'''


def in_file_order(labels):
    flat = labels.ravel()
    present, first = np.unique(flat, return_index=True)
    order = [p for _, p in sorted(zip(first, present)) if p != 0]
    new_id = np.zeros(int(labels.max()) + 1, np.int64)
    new_id[order] = np.arange(1, len(order) + 1)
    return new_id[labels]


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--volseg", default=os.path.join(ROOT, "build", "app", "cli", "volseg"))
    parser.add_argument("--venv", default=os.path.join(tempfile.gettempdir(), "volseg-cc3d-venv"))
    args = parser.parse_args()
    python = label_bench.cc3d_python(args.venv)
    rng = np.random.default_rng(117)
    failures = 0
    with tempfile.TemporaryDirectory(prefix="volseg-periodic-") as work:
        for shape in ((16, 20, 24), (33, 9, 70)):
            for density in (0.1, 0.3, 0.5):
                mask = (rng.random(shape) < density).astype(np.uint8)
                np.save(os.path.join(work, "m.npy"), mask)
                subprocess.run([python, "-c", CC3D, os.path.join(work, "m.npy"), os.path.join(work, "c.npy")],
                               check=True)
                want = in_file_order(np.load(os.path.join(work, "c.npy")))
                mask.tofile(os.path.join(work, "m.raw"))
                with open(os.path.join(work, "m.nhdr"), "w") as f:
                    f.write("NRRD0004\ntype: uint8\ndimension: 3\nsizes: %d %d %d\nendian: little\nencoding: raw\n"
                            "data file: m.raw\n\n" % shape[::-1])
                for ranks, brick in ((1, "%d,%d,%d" % shape), (3, "5,6,7")):
                    argv = [args.volseg, "label", os.path.join(work, "m.nhdr"), "--mask-input", "--out",
                            os.path.join(work, "l.nhdr"), "--connectivity", "6", "--periodic", "zyx", "--brick",
                            brick, "--force", "--quiet"]
                    if ranks > 1:
                        argv = ["mpirun", "-np", str(ranks), "--oversubscribe", "--bind-to", "none"] + argv
                    subprocess.run(argv, check=True)
                    got = np.fromfile(os.path.join(work, "l.raw"), np.uint32).reshape(shape)
                    same = np.array_equal(got, want)
                    failures += not same
                    print("%s density %.1f, %d rank(s), bricks %s: %d objects, %s" % (
                        "x".join(map(str, shape[::-1])), density, ranks, brick, int(want.max()),
                        "the same labels as cc3d" if same else "DIFFERENT from cc3d"), flush=True)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
