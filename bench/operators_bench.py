#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The segmentation operators (docs/operators.md) against references
measured in the same run, on an N^3 f32 field (default 512^3, `volseg
generate --field smooth`), file to file, warm page cache, best of --repeat:
  1. hysteresis: `volseg label --lo A --hi B --seed-lo C --seed-hi D`
     against the plain `volseg label --lo A --hi B` of the low mask
     (bar: at most 1.3x);
  2. `volseg segment --open 2` on 1 rank against
     scipy.ndimage.binary_opening with scikit-image's ball(2) on the mask in
     memory (bar: at least 2x scipy's speed);
  3. `volseg segment --fill-holes` against `volseg label` of the mask's
     background (bar: at most 1.3x);
  4. the peak memory per rank of each job.
Writes docs/results/operators_bench.json and .md. Example:
  /usr/bin/python3 bench/operators_bench.py --volseg build/app/cli/volseg
"""
import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time

import numpy as np
from scipy import ndimage
from skimage import morphology

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import bench_util  # noqa: E402

p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
p.add_argument("--volseg", default="build/app/cli/volseg")
p.add_argument("--size", type=int, default=512)
p.add_argument("--repeat", type=int, default=3)
p.add_argument("--work", default="", help="folder for the volumes (default: a temporary one)")
p.add_argument("--out", default=os.path.join(HERE, "..", "docs", "results", "operators_bench"))
args = p.parse_args()
VOLSEG = os.path.abspath(args.volseg)
ENV = dict(os.environ, **bench_util.MPI_ENV)
LO, HI, SEED = 0.55, 2.0, (0.75, 2.0)


def volseg(argv, ranks=1):
    """Best wall time of --repeat runs, and the last run's stdout."""
    best, text = None, ""
    for _ in range(args.repeat):
        start = time.perf_counter()
        proc = subprocess.run(["mpirun", "--oversubscribe", "-np", str(ranks), VOLSEG, *argv, "--progress", "none",
                               "--force"], capture_output=True, text=True, env=ENV)
        seconds = time.perf_counter() - start
        if proc.returncode != 0:
            sys.exit("volseg %s failed:\n%s%s" % (" ".join(argv), proc.stdout, proc.stderr))
        best = seconds if best is None else min(best, seconds)
        text = proc.stdout
    return best, text


def peak_mib(text):
    found = re.search(r"peak memory per rank ([0-9.]+) MiB", text)
    return float(found.group(1)) if found else None


def main():
    work = args.work or tempfile.mkdtemp(prefix="volseg-operators-bench-")
    n = args.size
    field = os.path.join(work, "field%d.nhdr" % n)
    if not os.path.exists(field):
        subprocess.run(["mpirun", "--oversubscribe", "-np", "2", VOLSEG, "generate", field, "--field", "smooth",
                        "--dims", str(n), "--quiet"], check=True, env=ENV)
    bench_util.warm(field)
    out = lambda name: os.path.join(work, name)
    rows = {}

    # 1. Hysteresis against the plain label of the low mask.
    plain, plain_text = volseg(["label", field, "--lo", str(LO), "--hi", str(HI), "--out", out("plain.nhdr")])
    hyst, hyst_text = volseg(["label", field, "--lo", str(LO), "--hi", str(HI), "--seed-lo", str(SEED[0]),
                              "--seed-hi", str(SEED[1]), "--out", out("hyst.nhdr")])
    rows["hysteresis"] = {"label_s": plain, "hysteresis_s": hyst, "ratio": hyst / plain, "bar": "<= 1.3",
                          "peak_mib": [peak_mib(plain_text), peak_mib(hyst_text)]}

    # 2. Opening: volseg file to file against scipy in memory.
    opened, _ = volseg(["segment", field, "--lo", str(LO), "--hi", str(HI), "--open", "2", "--out",
                        out("open.nhdr")])
    values = np.fromfile(field[:-5] + ".raw", dtype="<f4").reshape(n, n, n)
    mask = (values >= LO) & (values <= HI)
    del values
    ball = morphology.ball(2).astype(bool)
    best = None
    for _ in range(args.repeat):
        start = time.perf_counter()
        reference = ndimage.binary_opening(mask, structure=ball)
        seconds = time.perf_counter() - start
        best = seconds if best is None else min(best, seconds)
    scipy_s = best
    got = np.fromfile(out("open.raw"), dtype=np.uint8).reshape(n, n, n)
    # scipy's default border (background outside for the erosion) differs
    # from scikit-image's only at the volume's faces: compare the inside.
    inside = (slice(4, -4),) * 3
    same = bool(np.array_equal(got[inside] != 0, reference[inside]))
    rows["open"] = {"volseg_s": opened, "scipy_s": scipy_s, "speedup": scipy_s / opened, "bar": ">= 2",
                    "equal_inside": same}
    del reference, got

    # 3. Filled holes against a label of the background.
    filled, fill_text = volseg(["segment", field, "--lo", str(LO), "--hi", str(HI), "--fill-holes", "--out",
                                out("filled.nhdr")])
    # The background of [LO, HI] is v < LO or v > HI; the field's range
    # stays below HI, so it is [min, LO) (the next float below LO).
    below = float(np.nextafter(np.float32(LO), np.float32(-1)))
    background, back_text = volseg(["label", field, "--lo", "-1e30", "--hi", repr(below), "--connectivity", "6",
                                    "--out", out("background.nhdr")])
    rows["fill_holes"] = {"volseg_s": filled, "label_background_s": background, "ratio": filled / background,
                          "bar": "<= 1.3"}

    result = {"size": n, "repeat": args.repeat, "band": [LO, HI], "seed": list(SEED),
              "cpus": os.cpu_count(), "rows": rows}
    os.makedirs(os.path.dirname(args.out), exist_ok=True)
    with open(args.out + ".json", "w") as f:
        json.dump(result, f, indent=1)
    h, o, fh = rows["hysteresis"], rows["open"], rows["fill_holes"]
    lines = [
        "# Segmentation operators: bench/operators_bench.py",
        "",
        "%d^3 f32 smooth field, band [%g, %g], 1 rank, file to file, warm cache, best of %d, on a %d-core machine."
        % (n, LO, HI, args.repeat, os.cpu_count()),
        "",
        "| operator | volseg | reference | ratio | bar |",
        "|---|---|---|---|---|",
        "| hysteresis: `label --seed-lo %g --seed-hi %g` | %.2f s | `label` of the low mask %.2f s | %.2fx | <= 1.3x |"
        % (SEED[0], SEED[1], h["hysteresis_s"], h["label_s"], h["ratio"]),
        "| `segment --open 2` | %.2f s | scipy binary_opening, ball(2), in memory %.2f s | %.2fx faster | >= 2x |"
        % (o["volseg_s"], o["scipy_s"], o["speedup"]),
        "| `segment --fill-holes` | %.2f s | `label` of the background %.2f s | %.2fx | <= 1.3x |"
        % (fh["volseg_s"], fh["label_background_s"], fh["ratio"]),
        "",
        "The opening equals scipy's inside the volume (scipy's default border differs at the faces): %s."
        % o["equal_inside"],
        "Peak memory per rank, label and hysteresis: %s MiB." % h["peak_mib"],
        "",
    ]
    with open(args.out + ".md", "w") as f:
        f.write("\n".join(lines))
    print("\n".join(lines))
    if not args.work:
        import shutil
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
