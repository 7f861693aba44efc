#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""volseg mesh and multiscale outputs against references measured in the
same run:
  1. meshing every object of a labelled N^3 volume (default 512^3: the
     `smooth` field's band 0.6..2, labelled by volseg label) on 1 rank
     against zmesh (seung-lab's marching cubes, PyPI) on the same labels in
     memory; volseg reads the labels file and writes every fragment and
     manifest (bar: 1.0x zmesh's voxels per second); 2 ranks against 1
     (bar: 1.7x, on a machine with 2 free cores);
  2. the label job writing multiscale .ome.zarr labels against the same job
     writing one level (bar: the levels add at most 30%);
  3. with --big: every level and mesh of a 1024^3 volume, the peak memory
     of each rank (bar: 512 MiB).
zmesh runs in the viewers' venv (tests/e2e/viewers_venv.py), made here when
missing. Writes docs/results/mesh_bench.json and .md. Example:
  /usr/bin/python3 bench/mesh_bench.py --volseg build/app/cli/volseg
"""
import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "e2e"))
import bench_util  # noqa: E402
import viewers_venv  # noqa: E402

p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
p.add_argument("--volseg", default="build/app/cli/volseg")
p.add_argument("--size", type=int, default=512)
p.add_argument("--repeat", type=int, default=3)
p.add_argument("--big", action="store_true", help="also the 1024^3 memory check")
p.add_argument("--work", default="", help="folder for the volumes (default: a temporary one)")
p.add_argument("--out", default=os.path.join(HERE, "..", "docs", "results", "mesh_bench"))
args = p.parse_args()
VOLSEG = os.path.abspath(args.volseg)
ENV = dict(os.environ, **bench_util.MPI_ENV)

ZMESH = r"""
import re, sys, time
import numpy as np
import zmesh
header = open(sys.argv[1]).read()
sizes = [int(s) for s in re.search(r"sizes: (.*)", header).group(1).split()]
labels = np.fromfile(sys.argv[1][:-5] + ".raw", dtype=np.uint32).reshape(sizes[::-1])
best = None
for _ in range(int(sys.argv[2])):
    start = time.perf_counter()
    mesher = zmesh.Mesher((1, 1, 1))
    mesher.mesh(labels)
    triangles = 0
    for i in mesher.ids():
        triangles += len(mesher.get(i, normals=False).faces)
    mesher.clear()
    seconds = time.perf_counter() - start
    best = seconds if best is None else min(best, seconds)
print(best, 0, triangles)
"""


def volseg(argv, ranks=1):
    cmd = ([VOLSEG] if ranks == 1 else ["mpirun", "-np", str(ranks), VOLSEG]) + [str(a) for a in argv]
    start = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True, env=ENV)
    seconds = time.perf_counter() - start
    if proc.returncode != 0:
        sys.exit("failed: %s\n%s" % (" ".join(cmd), proc.stderr))
    return proc.stdout, seconds


def best_of(run, repeat):
    runs = [run() for _ in range(repeat)]
    return min(runs, key=lambda r: r[1])


def mesh_runs(work, labels, rows):
    out = os.path.join(work, "mesh")
    python = viewers_venv.ensure_venv(["zmesh", "numpy"], ["zmesh"])
    bench_util.warm(labels[:-5] + ".raw")
    z = subprocess.run([python, "-c", ZMESH, labels, str(args.repeat)], capture_output=True, text=True, check=True)
    zmesh_seconds, _, zmesh_triangles = z.stdout.split()
    zmesh_seconds = float(zmesh_seconds)
    voxels = args.size ** 3
    rows.append({"what": "zmesh, in memory (marching cubes, no smoothing)", "ranks": 1, "seconds": zmesh_seconds,
                 "triangles": int(zmesh_triangles), "ratio": 1.0})
    one = {}
    for smooth in (True, False):
        for ranks in (1, 2):
            def run():
                bench_util.remove(out)
                text, seconds = volseg(["mesh", labels, "--out", out, "--quiet"] + ([] if smooth else ["--no-smooth"]),
                                       ranks)
                return text, seconds
            _, seconds = best_of(run, args.repeat)
            name = "volseg mesh, file to file" + ("" if smooth else " --no-smooth")
            row = {"what": name, "ranks": ranks, "seconds": seconds, "ratio": zmesh_seconds / seconds}
            if ranks == 1:
                one[smooth] = seconds
            else:
                row["speedup_over_1_rank"] = one[smooth] / seconds
            rows.append(row)
            print("%-45s %d rank(s): %.3f s, %.2fx zmesh (%.1f Mvoxels/s)"
                  % (name, ranks, seconds, zmesh_seconds / seconds, voxels / seconds / 1e6), flush=True)
    bench_util.remove(out)
    print("zmesh: %.3f s" % zmesh_seconds)


def level_runs(work, source, rows):
    times = {}
    for levels in (1, 0):
        out = os.path.join(work, "levels.ome.zarr")
        def run():
            bench_util.remove(out)
            return volseg(["label", source, "--lo", "0.6", "--hi", "2", "--out", out, "--levels", levels, "--quiet"])
        _, times[levels] = best_of(run, args.repeat)
        bench_util.remove(out)
    rows.append({"what": "volseg label to .ome.zarr, levels down to one chunk, against one level", "ranks": 1,
                 "seconds": times[0], "reference_seconds": times[1], "ratio": times[0] / times[1]})
    print("label with levels: %.3f s, one level %.3f s: +%.0f%%" % (times[0], times[1], 100 * (times[0] / times[1] - 1)))


def peak(summary):
    return float(re.search(r"peak memory per rank ([0-9.]+) MiB", summary).group(1))


def big_run(work, rows):
    source = os.path.join(work, "big.nhdr")
    volseg(["generate", source, "--field", "smooth", "--dims", 1024, "--quiet"], 2)
    labels = os.path.join(work, "big.ome.zarr")
    text, seconds = volseg(["label", source, "--lo", "0.6", "--hi", "2", "--out", labels, "--memory", "512MiB"], 2)
    label_peak = peak(text)
    text, mesh_seconds = volseg(["mesh", labels, "--out", os.path.join(work, "big-mesh"), "--quiet"], 2)
    text, _ = volseg(["mesh", labels, "--out", os.path.join(work, "big-mesh2")], 2)
    rows.append({"what": "1024^3: label to multiscale .ome.zarr, then mesh, 2 ranks", "ranks": 2,
                 "label_peak_mib": label_peak, "mesh_peak_mib": peak(text), "seconds": seconds + mesh_seconds})
    print("1024^3: label peak %.0f MiB per rank, mesh peak %.0f MiB per rank" % (label_peak, peak(text)))


def main():
    work = args.work or tempfile.mkdtemp(prefix="volseg-mesh-bench-")
    source = os.path.join(work, "s.nhdr")
    labels = os.path.join(work, "l.nhdr")
    if not os.path.exists(labels):
        volseg(["generate", source, "--field", "smooth", "--dims", args.size, "--quiet"], 2)
        volseg(["label", source, "--lo", "0.6", "--hi", "2", "--out", labels, "--quiet"], 2)
    rows = []
    mesh_runs(work, labels, rows)
    level_runs(work, source, rows)
    if args.big:
        big_run(work, rows)
    with open(args.out + ".json", "w") as f:
        json.dump({"size": args.size, "cpus": os.cpu_count(), "rows": rows}, f, indent=2)
    with open(args.out + ".md", "w") as f:
        f.write("# volseg mesh and multiscale levels (bench/mesh_bench.py)\n\n")
        f.write("%d^3 labels, %d CPUs, best of %d; ratio: zmesh's seconds over volseg's for meshes, "
                "the job with levels over the job without for levels.\n\n" % (args.size, os.cpu_count(), args.repeat))
        f.write("| what | ranks | seconds | ratio | notes |\n|---|---|---|---|---|\n")
        for r in rows:
            notes = []
            if "speedup_over_1_rank" in r:
                notes.append("%.2fx 1 rank" % r["speedup_over_1_rank"])
            if "reference_seconds" in r:
                notes.append("one level: %.3f s" % r["reference_seconds"])
            if "label_peak_mib" in r:
                notes.append("peak per rank: label %.0f MiB, mesh %.0f MiB" % (r["label_peak_mib"], r["mesh_peak_mib"]))
            f.write("| %s | %d | %.3f | %s | %s |\n" % (r["what"], r["ranks"], r["seconds"],
                                                         "%.2f" % r["ratio"] if "ratio" in r else "", "; ".join(notes)))
    print("wrote %s.md" % args.out)


main()
