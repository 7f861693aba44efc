#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""The distance transform and the split: 'volseg distance' against seung-lab's
edt 3.1.2 and scipy.ndimage.distance_transform_edt; 'volseg label --split'
against scikit-image's pipeline.

Part 1, 512^3 u8 masks (random density 0.5; the spheres generator's
touching balls; a smooth band: volseg generate's smooth field in
[0.25, 0.5]): the time of the same job for each tool, file to file (read the
mask, transform, write f32 distances; the files in the page cache). volseg
on 1 and 2 ranks; edt single-threaded (parallel=1) in a virtual environment
this script creates (PyPI's edt==3.1.2); scipy is Debian's. Every tool's
distances are checked against volseg's: edt's and scipy's (cast to f32)
must be equal voxel for voxel.

Part 2, 1024^3 spheres on 2 ranks within --memory 512MiB: each rank's peak
resident memory (the summary's).

Part 3, the split of the spheres generator's touching balls at 256^3 and
512^3: 'volseg label --split --h 0.5' (distance, h-maxima, watershed,
labels; file to file) on 1 and 2 ranks against scikit-image's pipeline on
one core (scipy's distance_transform_edt, h_maxima, label, watershed with
connectivity 3; read the mask, write u32 labels). The object counts must be
equal and the labels agree on at least 99.9% of the voxels.

Ratios against references measured in the same run (best of --repeat); the
2-rank ratio both by the wall clock (mpirun's start included) and by the
job's own time (its summary's):
  volseg 1 rank / edt per core (bar: >= 1.0), volseg / scipy (bar: >= 5),
  volseg 2 ranks / 1 rank (bar: >= 1.8, on a machine with 2 free cores),
  volseg split / scikit-image per core (bar: >= 2).

  /usr/bin/python3 bench/split_bench.py             # every part, ~20 min, 6 GiB in --dir
  /usr/bin/python3 bench/split_bench.py --part 1
Writes docs/results/split_bench.{md,json,png}."""
import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
EDT_VERSION = "3.1.2"

# Runs in edt's venv or Debian's python: one tool on one mask, file to file.
WORKER = r'''
import sys, time, json
import numpy as np
tool, path, n, out = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
t0 = time.perf_counter()
mask = np.fromfile(path, dtype=np.uint8).reshape(n, n, n)
t1 = time.perf_counter()
if tool == "edt":
    import edt
    d = edt.edt(mask, parallel=1)
else:
    from scipy import ndimage
    d = ndimage.distance_transform_edt(mask).astype(np.float32)
t2 = time.perf_counter()
d.astype(np.float32).tofile(out)
t3 = time.perf_counter()
print(json.dumps({"read": t1 - t0, "compute": t2 - t1, "write": t3 - t2, "total": t3 - t0}))
'''


def log(*args):
    print(*args, file=sys.stderr, flush=True)


def edt_python(venv):
    python = os.path.join(venv, "bin", "python")
    probe = [python, "-c", "import edt, numpy, importlib.metadata as m; assert m.version('edt') == '%s'" % EDT_VERSION]
    if os.path.exists(python) and subprocess.run(probe, capture_output=True).returncode == 0:
        return python
    log("creating edt's virtual environment in", venv)
    subprocess.run(["/usr/bin/python3", "-m", "venv", venv], check=True)
    subprocess.run([os.path.join(venv, "bin", "pip"), "install", "-q", "edt==" + EDT_VERSION, "numpy"], check=True)
    subprocess.run(probe, check=True)
    return python


def header(path, n, raw):
    with open(path, "w") as f:
        f.write("NRRD0004\ntype: uint8\ndimension: 3\nsizes: %d %d %d\nendian: little\nencoding: raw\n"
                "data file: %s\n\n" % (n, n, n, os.path.basename(raw)))


def random_mask(path, n, density=0.5, seed=1):
    raw = path + ".raw"
    rng = np.random.default_rng(seed)
    with open(raw, "wb") as f:
        for z in range(0, n, 64):
            f.write((rng.random((min(64, n - z), n, n), dtype=np.float32) < density).astype(np.uint8).tobytes())
    header(path + ".nhdr", n, raw)
    return path + ".nhdr", raw


def spheres_mask(args, path, n, count):
    subprocess.run([args.volseg, "generate", path + ".nhdr", "--field", "spheres", "--count", str(count), "--seed",
                    "7", "--dims", str(n), "--dtype", "u8", "--quiet", "--force"], check=True)
    return path + ".nhdr", path + ".raw"


def band_mask(args, path, n, lo=0.25, hi=0.5):
    source = path + "-field.nhdr"
    subprocess.run([args.volseg, "generate", source, "--field", "smooth", "--dims", str(n), "--quiet", "--force"],
                   check=True)
    values = np.memmap(path + "-field.raw", dtype=np.float32, mode="r", shape=(n, n, n))
    raw = path + ".raw"
    with open(raw, "wb") as f:
        for z in range(0, n, 64):
            slab = values[z:z + 64]
            f.write(((slab >= lo) & (slab <= hi)).astype(np.uint8).tobytes())
    del values
    for leftover in (source, path + "-field.raw"):
        os.remove(leftover)
    header(path + ".nhdr", n, raw)
    return path + ".nhdr", raw


def run_volseg(args, mask, out, ranks, memory=None):
    argv = [args.volseg, "distance", mask, "--mask-input", "--out", out, "--force", "--progress", "none"]
    if memory:
        argv += ["--memory", memory]
    if ranks > 1:
        argv = ["mpirun", "-np", str(ranks), "--bind-to", "none"] + argv
    start = time.perf_counter()
    text = subprocess.run(argv, check=True, capture_output=True, text=True).stdout
    wall = time.perf_counter() - start
    m = re.search(r"time ([0-9.e+-]+) s \(columns ([0-9.e+-]+), planes ([0-9.e+-]+)\).*"
                  r"peak memory per rank ([0-9.]+) MiB", text)
    if not m:
        raise RuntimeError("no summary from volseg distance:\n" + text)
    return {"total": wall, "job": float(m.group(1)), "columns": float(m.group(2)), "planes": float(m.group(3)),
            "max_rss": int(float(m.group(4)) * (1 << 20))}


def run_worker(python, tool, raw, n, out):
    proc = subprocess.run([python, "-c", WORKER, tool, raw, str(n), out], capture_output=True, text=True, check=True)
    return json.loads(proc.stdout)


def same(a_path, b_path):
    a = np.memmap(a_path, dtype=np.float32, mode="r")
    b = np.memmap(b_path, dtype=np.float32, mode="r")
    return bool(np.array_equal(a, b))


def part1(args, python_edt, work):
    rows = []
    n = args.size1
    for name in args.masks:
        path = os.path.join(work, name)
        if name == "random":
            mask, raw = random_mask(path, n)
            label = "random 0.50"
        elif name == "spheres":
            mask, raw = spheres_mask(args, path, n, args.spheres)
            label = "spheres (%d)" % args.spheres
        else:
            mask, raw = band_mask(args, path, n)
            label = "smooth band 0.25..0.5"
        out = os.path.join(work, "volseg.nhdr")
        got = {"volseg": [], "volseg2": [], "edt": []}
        for _ in range(args.repeat):
            got["volseg"].append(run_volseg(args, mask, out, 1))
            got["volseg2"].append(run_volseg(args, mask, out, 2))
            got["edt"].append(run_worker(python_edt, "edt", raw, n, os.path.join(work, "edt.f32")))
        row = {"size": n, "mask": label, "volseg": min(got["volseg"], key=lambda r: r["total"]),
               "volseg2": min(got["volseg2"], key=lambda r: r["total"]),
               "edt": min(got["edt"], key=lambda r: r["total"])}
        row["checks"] = {"edt": same(os.path.join(work, "volseg.raw"), os.path.join(work, "edt.f32"))}
        if not args.no_scipy:
            row["scipy"] = run_worker("/usr/bin/python3", "scipy", raw, n, os.path.join(work, "scipy.f32"))
            row["checks"]["scipy"] = same(os.path.join(work, "volseg.raw"), os.path.join(work, "scipy.f32"))
        row["vs_edt"] = row["edt"]["total"] / row["volseg"]["total"]
        row["two_ranks"] = row["volseg"]["total"] / row["volseg2"]["total"]
        if "scipy" in row:
            row["vs_scipy"] = row["scipy"]["total"] / row["volseg"]["total"]
        log("%-24s volseg %.2f s, 2 ranks %.2f s, edt %.2f s%s; vs edt %.2fx, checks %s" % (
            label, row["volseg"]["total"], row["volseg2"]["total"], row["edt"]["total"],
            ", scipy %.2f s" % row["scipy"]["total"] if "scipy" in row else "", row["vs_edt"], row["checks"]))
        rows.append(row)
        for leftover in (raw, mask):
            os.remove(leftover)
    return rows


def part2(args, work):
    n = args.size2
    mask, raw = spheres_mask(args, os.path.join(work, "big"), n, args.spheres * 8)
    run = run_volseg(args, mask, os.path.join(work, "big-d.nhdr"), 2, memory="512MiB")
    for leftover in (os.path.join(work, "big-d.nhdr"), os.path.join(work, "big-d.raw")):
        os.remove(leftover)
    split = run_split(args, mask, os.path.join(work, "big-l.nhdr"), 2, memory="512MiB")
    for leftover in (raw, mask, os.path.join(work, "big-l.nhdr"), os.path.join(work, "big-l.raw")):
        if os.path.exists(leftover):
            os.remove(leftover)
    log("%d^3 spheres on 2 ranks, --memory 512MiB: distance %.1f s, peak %.0f MiB a rank; label --split %.1f s "
        "(%d objects), peak %.0f MiB a rank" % (n, run["total"], run["max_rss"] / 2**20, split["total"],
                                                split["objects"], split["max_rss"] / 2**20))
    return {"size": n, "ranks": 2, "memory": "512MiB", **run, "split": split}


# Debian's python: scikit-image's pipeline on one mask, file to file.
SKIMAGE = r'''
import sys, time, json
import numpy as np
from scipy import ndimage
from skimage.measure import label
from skimage.morphology import h_maxima
from skimage.segmentation import watershed
path, n, h, out = sys.argv[1], int(sys.argv[2]), float(sys.argv[3]), sys.argv[4]
t0 = time.perf_counter()
mask = np.fromfile(path, dtype=np.uint8).reshape(n, n, n) != 0
t1 = time.perf_counter()
distance = ndimage.distance_transform_edt(mask).astype(np.float32)
t2 = time.perf_counter()
markers = label(h_maxima(distance, h))
t3 = time.perf_counter()
labels = watershed(-distance, markers, mask=mask, connectivity=3)
t4 = time.perf_counter()
labels.astype(np.uint32).tofile(out)
t5 = time.perf_counter()
print(json.dumps({"read": t1 - t0, "distance": t2 - t1, "markers": t3 - t2, "watershed": t4 - t3,
                  "write": t5 - t4, "total": t5 - t0, "objects": int(labels.max())}))
'''


def run_split(args, mask, out, ranks, memory=None):
    argv = [args.volseg, "label", mask, "--mask-input", "--split", "--h", str(args.h), "--out", out, "--force",
            "--label-type", "u32", "--progress", "none"] + (["--memory", memory] if memory else [])
    if ranks > 1:
        argv = ["mpirun", "-np", str(ranks), "--bind-to", "none"] + argv
    start = time.perf_counter()
    text = subprocess.run(argv, check=True, capture_output=True, text=True).stdout
    wall = time.perf_counter() - start
    objects = re.search(r"(\d+) objects, ", text)
    rss = re.search(r"peak memory per rank ([0-9.]+) MiB", text)
    split = re.search(r"distance ([0-9.e+-]+) s, floods ([0-9.e+-]+) s", text)
    return {"total": wall, "objects": int(objects.group(1)), "max_rss": int(float(rss.group(1)) * (1 << 20)),
            "distance": float(split.group(1)), "floods": float(split.group(2))}


def agreement(a_path, b_path):
    """The share of voxels where two labelings agree once each id of a is
    matched to the id of b it overlaps most (background included)."""
    a = np.fromfile(a_path, dtype=np.uint32).astype(np.uint64)
    b = np.fromfile(b_path, dtype=np.uint32).astype(np.uint64)
    pairs, counts = np.unique(a << np.uint64(32) | b, return_counts=True)
    first = pairs >> np.uint64(32)
    order = np.lexsort((-counts, first))
    keep = np.ones(len(order), bool)
    keep[1:] = first[order][1:] != first[order][:-1]
    return float(counts[order][keep].sum()) / len(a)


def part3(args, work):
    rows = []
    for n in args.split_sizes:
        count = max(100, int(args.spheres * (n / 512.0) ** 3))
        mask, raw = spheres_mask(args, os.path.join(work, "split%d" % n), n, count)
        out = os.path.join(work, "split.nhdr")
        got = {"volseg": [], "volseg2": [], "skimage": []}
        for _ in range(args.repeat):
            got["volseg"].append(run_split(args, mask, out, 1))
            got["volseg2"].append(run_split(args, mask, out, 2))
        proc = subprocess.run(["/usr/bin/python3", "-c", SKIMAGE, raw, str(n), str(args.h),
                               os.path.join(work, "skimage.u32")], capture_output=True, text=True, check=True)
        got["skimage"].append(json.loads(proc.stdout))
        row = {"size": n, "balls": count, "volseg": min(got["volseg"], key=lambda r: r["total"]),
               "volseg2": min(got["volseg2"], key=lambda r: r["total"]), "skimage": got["skimage"][0]}
        row["agreement"] = agreement(os.path.join(work, "split.raw"), os.path.join(work, "skimage.u32"))
        row["vs_skimage"] = row["skimage"]["total"] / row["volseg"]["total"]
        row["two_ranks"] = row["volseg"]["total"] / row["volseg2"]["total"]
        log("split %d^3 (%d balls): volseg %.2f s (%d objects), 2 ranks %.2f s, scikit-image %.2f s (%d objects); "
            "%.1fx, agreement %.5f" % (n, count, row["volseg"]["total"], row["volseg"]["objects"],
                                        row["volseg2"]["total"], row["skimage"]["total"], row["skimage"]["objects"],
                                        row["vs_skimage"], row["agreement"]))
        rows.append(row)
        for leftover in (raw, mask):
            os.remove(leftover)
    return rows


def write_results(args, rows, big, splits=()):
    os.makedirs(args.results, exist_ok=True)
    base = os.path.join(args.results, "split_bench")
    cpu = open("/proc/cpuinfo").read()
    model = re.search(r"model name\s*:\s*(.*)", cpu)
    info = {"machine": model.group(1) if model else "?", "cores": os.cpu_count(), "date": time.strftime("%Y-%m-%d"),
            "edt": EDT_VERSION, "distance": rows, "memory": big, "split": list(splits)}
    with open(base + ".json", "w") as f:
        json.dump(info, f, indent=1)
    lines = ["# The distance transform: volseg distance, edt %s, scipy" % EDT_VERSION, "",
             "Measured by `/usr/bin/python3 bench/split_bench.py` on %s (%d cores), %s. Seconds, file to file "
             "(read the u8 mask, transform, write f32), best of %d; the files in the page cache." % (
                 info["machine"], info["cores"], info["date"], args.repeat), "",
             "| mask (%d^3) | volseg 1 rank | volseg 2 ranks | edt (1 thread) | scipy | vs edt | vs scipy | "
             "2 ranks / 1 | 2 ranks / 1, the job's own time | equal to edt, scipy |" % args.size1,
             "|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append("| %s | %.2f | %.2f | %.2f | %s | %.2fx | %s | %.2fx | %.2fx | %s |" % (
            r["mask"], r["volseg"]["total"], r["volseg2"]["total"], r["edt"]["total"],
            "%.2f" % r["scipy"]["total"] if "scipy" in r else "-", r["vs_edt"],
            "%.1fx" % r["vs_scipy"] if "vs_scipy" in r else "-", r["two_ranks"],
            r["volseg"]["job"] / r["volseg2"]["job"],
            ", ".join("%s %s" % (k, "yes" if v else "NO") for k, v in r["checks"].items())))
    if big:
        lines += ["", "%d^3 spheres (%d balls) on 2 ranks within --memory %s: `volseg distance` %.1f s, peak resident "
                  "memory %.0f MiB a rank; `volseg label --split` %.1f s (%d objects), peak %.0f MiB a rank." % (
                      big["size"], args.spheres * 8, big["memory"], big["total"], big["max_rss"] / 2**20,
                      big["split"]["total"], big["split"]["objects"], big["split"]["max_rss"] / 2**20)]
    if splits:
        lines += ["", "## The split: label --split --h %g against scikit-image" % args.h, "",
                  "Seconds, file to file (the mask in, u32 labels out); scikit-image: scipy's distance, h_maxima, "
                  "label, watershed (connectivity 3) on one core.", "",
                  "| spheres | balls | volseg 1 rank | volseg 2 ranks | scikit-image | vs scikit-image | "
                  "2 ranks / 1 | objects (volseg, scikit-image) | voxels that agree | peak MiB a rank (1 rank) |",
                  "|---|---|---|---|---|---|---|---|---|---|"]
        for r in splits:
            lines.append("| %d^3 | %d | %.2f | %.2f | %.2f | %.2fx | %.2fx | %d, %d | %.3f%% | %.0f |" % (
                r["size"], r["balls"], r["volseg"]["total"], r["volseg2"]["total"], r["skimage"]["total"],
                r["vs_skimage"], r["two_ranks"], r["volseg"]["objects"], r["skimage"]["objects"],
                100 * r["agreement"], r["volseg"]["max_rss"] / 2**20))
    with open(base + ".md", "w") as f:
        f.write("\n".join(lines) + "\n")
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        log("no matplotlib: no plot")
        return
    fig, ax = plt.subplots(figsize=(8, 4))
    names = [r["mask"] for r in rows]
    tools = [("volseg 1 rank", lambda r: r["volseg"]["total"]), ("volseg 2 ranks", lambda r: r["volseg2"]["total"]),
             ("edt 3.1.2, 1 thread", lambda r: r["edt"]["total"]),
             ("scipy", lambda r: r["scipy"]["total"] if "scipy" in r else 0)]
    width = 0.2
    for i, (label, value) in enumerate(tools):
        ax.bar(np.arange(len(rows)) + (i - 1.5) * width, [value(r) for r in rows], width, label=label)
    ax.set_xticks(np.arange(len(rows)), names)
    ax.set_yscale("log")
    ax.set_ylabel("seconds, file to file (log)")
    ax.set_title("Exact Euclidean distance transform of %d^3 masks" % args.size1)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(base + ".png", dpi=110)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--volseg", default=os.path.join(ROOT, "build", "app", "cli", "volseg"))
    parser.add_argument("--dir", default=None, help="scratch folder (default: a temporary one in /tmp)")
    parser.add_argument("--venv", default=os.path.join(os.path.expanduser("~"), ".cache", "volseg-bench-edt"))
    parser.add_argument("--results", default=os.path.join(ROOT, "docs", "results"))
    parser.add_argument("--part", type=int, choices=(1, 2, 3), default=None)
    parser.add_argument("--split-sizes", type=int, nargs="+", default=[256, 512])
    parser.add_argument("--h", type=float, default=0.5)
    parser.add_argument("--size1", type=int, default=512)
    parser.add_argument("--size2", type=int, default=1024)
    parser.add_argument("--spheres", type=int, default=1500, help="balls in the 512^3 spheres mask (x8 at 1024^3)")
    parser.add_argument("--masks", nargs="+", default=["random", "spheres", "band"])
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--no-scipy", action="store_true")
    parser.add_argument("--tables-from", metavar="JSON",
                        help="write the table and plot again from a run's JSON, without measuring")
    args = parser.parse_args()
    if args.tables_from:
        with open(args.tables_from) as f:
            kept = json.load(f)
        write_results(args, kept["distance"], kept["memory"], kept["split"])
        return
    python = edt_python(args.venv)
    with tempfile.TemporaryDirectory(dir=args.dir) as work:
        rows = part1(args, python, work) if args.part in (None, 1) else []
        big = part2(args, work) if args.part in (None, 2) else None
        splits = part3(args, work) if args.part in (None, 3) else []
    write_results(args, rows, big, splits)


if __name__ == "__main__":
    main()
