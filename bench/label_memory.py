#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Peak memory per rank of `volseg label` as the number of objects grows
(the bar: no rank's memory grows with the job's objects). The masks are
checkerboards (every other voxel): at 6-connectivity every foreground voxel
is an object, the most objects a mask of that size can have. Edges 126, 272
and 585 give 1.0, 10.1 and 100.1 million objects. Each run's peak resident
memory per rank comes from the job's --report (max_rss_bytes).

  /usr/bin/python3 bench/label_memory.py                         # 10^6, 10^7, 10^8 objects on 1, 2, 4 ranks
  /usr/bin/python3 bench/label_memory.py --sizes 126 --ranks 1,2  # a smoke run

Bricks: at least 8 along z (--brick Z,N,N), so that every rank has some.
"""
import argparse
import json
import os
import subprocess
import sys

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MPI_ENV = {"OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1",
           "OMPI_MCA_rmaps_base_oversubscribe": "1", "OMPI_MCA_btl_vader_single_copy_mechanism": "none"}


def write_checkerboard(path, n):
    raw = os.path.splitext(path)[0] + ".raw"
    plane = (np.add.outer(np.arange(n), np.arange(n)) % 2).astype(np.uint8)
    with open(raw, "wb") as f:
        for z in range(n):
            f.write((plane ^ (z % 2) ^ 1).tobytes())
    with open(path, "w") as f:
        f.write("NRRD0004\ntype: uint8\ndimension: 3\nsizes: %d %d %d\nendian: little\nencoding: raw\n"
                "data file: %s\n\n" % (n, n, n, os.path.basename(raw)))


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="126,272,585")
    parser.add_argument("--ranks", default="1,2,4")
    parser.add_argument("--launcher", default="mpirun --oversubscribe --bind-to none -np {n}")
    parser.add_argument("--dir", default="/tmp/volseg-label-memory")
    parser.add_argument("--volseg", default=os.path.join(ROOT, "build", "app", "cli", "volseg"))
    args = parser.parse_args()
    os.makedirs(args.dir, exist_ok=True)
    env = dict(os.environ, **MPI_ENV)
    ranks = [int(n) for n in args.ranks.split(",")]
    lines = ["| objects | edge | " + " | ".join("%d rank(s): rank 0 / largest (MiB)" % n for n in ranks) + " |",
             "|---|---|" + "---|" * len(ranks)]
    for n in (int(s) for s in args.sizes.split(",")):
        mask = os.path.join(args.dir, "checker%d.nhdr" % n)
        if not os.path.exists(mask):
            write_checkerboard(mask, n)
        cells, objects = [], None
        for r in ranks:
            report = os.path.join(args.dir, "report.json")
            command = args.launcher.replace("{n}", str(r)).split() + [
                args.volseg, "label", mask, "--mask-input", "--connectivity", "6", "--out",
                os.path.join(args.dir, "labels.nhdr"), "--brick", "%d,%d,%d" % (-(-n // 8), n, n), "--report", report,
                "--force", "--quiet"]
            proc = subprocess.run(command, env=env, capture_output=True, text=True)
            if proc.returncode != 0:
                sys.exit("label_memory: %s failed:\n%s" % (" ".join(command), proc.stderr))
            with open(report) as f:
                result = json.load(f)
            objects = result["objects"]
            peaks = [x["max_rss_bytes"] >> 20 for x in result["ranks"]]
            cells.append("%d / %d" % (peaks[0], max(peaks)))
            print("  %d objects, %d rank(s): %.1f s, peak MiB per rank %s" % (objects, r, result["seconds"], peaks),
                  flush=True)
        lines.append("| %.1f million | %d | %s |" % (objects / 1e6, n, " | ".join(cells)))
    print("\n".join(lines))


if __name__ == "__main__":
    main()
