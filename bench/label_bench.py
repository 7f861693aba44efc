#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Connected components: 'volseg label' against cc3d and scipy.ndimage.label.

Part 1, 1 rank, 512^3 random masks at three densities and two smooth ones
(volseg generate's shells and smooth fields, thresholded): the time of the same
job for each tool, file to file (read the u8 mask, label, write u32 labels;
the files in the page cache), and each library's compute alone. cc3d
(connected-components-3d from PyPI, single-threaded) runs in a virtual
environment this script creates; scipy is Debian's. Every tool's labels are
checked equal to volseg's (up to renumbering; scipy's are the same numbers).

Part 2, 1024^3: 1 and 2 ranks, and each rank's peak memory (the summary's
peak memory per rank), on masks from about 10^6 objects to one object that spans
the volume.

Ratios are against references measured in the same run (best of --repeat):
  volseg / cc3d throughput (bar: >= 1.0), volseg / scipy (bar: >= 3),
  2 ranks / 1 rank on 1024^3 (bar: >= 1.6), max RSS per rank (bar: <= 512 MiB).

  /usr/bin/python3 bench/label_bench.py            # both parts, ~15 min, 12 GiB in --dir
  /usr/bin/python3 bench/label_bench.py --part 1   # 512^3 only
Writes docs/results/label_bench.{md,json,png}."""
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
STRUCTURE_RANK = {6: 1, 18: 2, 26: 3}

# Runs in cc3d's venv or Debian's python: times one tool on one mask.
WORKER = r'''
import sys, time, json
import numpy as np
tool, path, shape, conn, out = sys.argv[1], sys.argv[2], tuple(map(int, sys.argv[3].split(","))), int(sys.argv[4]), sys.argv[5]
t0 = time.perf_counter()
mask = np.fromfile(path, dtype=np.uint8).reshape(shape)
t1 = time.perf_counter()
if tool == "cc3d":
    import cc3d
    labels, n = cc3d.connected_components(mask, connectivity=conn, out_dtype=np.uint32, return_N=True)
else:
    from scipy import ndimage
    labels = np.empty(shape, np.uint32)
    n = ndimage.label(mask, structure=ndimage.generate_binary_structure(3, {6: 1, 18: 2, 26: 3}[conn]), output=labels)
t2 = time.perf_counter()
labels.tofile(out)
t3 = time.perf_counter()
print(json.dumps({"objects": int(n), "read": t1 - t0, "compute": t2 - t1, "write": t3 - t2, "total": t3 - t0}))
'''


def log(*args):
    print(*args, file=sys.stderr, flush=True)


def cc3d_python(venv):
    python = os.path.join(venv, "bin", "python")
    probe = [python, "-c", "import cc3d, numpy"]
    if os.path.exists(python) and subprocess.run(probe, capture_output=True).returncode == 0:
        return python
    log("creating the cc3d virtual environment in", venv)
    subprocess.run(["/usr/bin/python3", "-m", "venv", venv], check=True)
    subprocess.run([os.path.join(venv, "bin", "pip"), "install", "-q", "connected-components-3d", "numpy"], check=True)
    subprocess.run(probe, check=True)
    return python


def write_mask(path, n, density, seed):
    """A u8 mask of n^3, in slabs (bounded memory), and its NRRD header."""
    raw = path + ".raw"
    rng = np.random.default_rng(seed)
    with open(raw, "wb") as f:
        for z in range(0, n, 64):
            slab = rng.random((min(64, n - z), n, n), dtype=np.float32) < density
            f.write(slab.astype(np.uint8).tobytes())
    with open(path + ".nhdr", "w") as f:
        f.write("NRRD0004\ntype: uint8\ndimension: 3\nsizes: %d %d %d\nendian: little\nencoding: raw\n"
                "data file: %s\n\n" % (n, n, n, os.path.basename(raw)))
    return path + ".nhdr", raw


# The smooth masks: a field of volseg generate, thresholded (lo, hi) in slabs.
SMOOTH = {"shells": ("shells", 20.0, 30.0), "smooth": ("smooth", 0.25, 0.5)}


def write_smooth_mask(args, path, n, name):
    """A u8 mask of n^3 from volseg's generated field, and its NRRD header."""
    field, lo, hi = SMOOTH[name]
    source = path + "-field.nhdr"
    subprocess.run([args.volseg, "generate", source, "--field", field, "--dims", str(n), "--quiet"], check=True)
    values = np.memmap(path + "-field.raw", dtype=np.float32, mode="r", shape=(n, n, n))
    raw = path + ".raw"
    with open(raw, "wb") as f:
        for z in range(0, n, 64):
            slab = values[z:z + 64]
            f.write(((slab >= lo) & (slab <= hi)).astype(np.uint8).tobytes())
    del values
    for leftover in (source, path + "-field.raw"):
        os.remove(leftover)
    with open(path + ".nhdr", "w") as f:
        f.write("NRRD0004\ntype: uint8\ndimension: 3\nsizes: %d %d %d\nendian: little\nencoding: raw\n"
                "data file: %s\n\n" % (n, n, n, os.path.basename(raw)))
    return path + ".nhdr", raw, "%s %g..%g" % (field, lo, hi)


def mask_name(row):
    return row.get("mask") or "random %.2f" % row["density"]


def run_volseg(args, volseg, mask, out, conn, ranks, report=None):
    """The job as a user runs it (no table: --report would ask for one), its times from the summary."""
    argv = [volseg, "label", mask, "--mask-input", "--out", out, "--connectivity", str(conn), "--force",
            "--progress", "none"]
    if ranks > 1:
        argv = ["mpirun", "-np", str(ranks), "--bind-to", "none"] + argv
    start = time.perf_counter()
    text = subprocess.run(argv, check=True, capture_output=True, text=True).stdout
    wall = time.perf_counter() - start
    m = re.search(r"time ([0-9.e+-]+) s \(pass 1 ([0-9.e+-]+), merge ([0-9.e+-]+), pass 2 ([0-9.e+-]+)\).*"
                  r"peak memory per rank ([0-9.]+) MiB", text)
    objects = re.search(r"(\d+) objects", text)
    if not m or not objects:
        raise RuntimeError("no summary from volseg label:\n" + text)
    return {"total": wall, "job": float(m.group(1)), "objects": int(objects.group(1)),
            "max_rss": int(float(m.group(5)) * (1 << 20)), "label": float(m.group(2)), "merge": float(m.group(3)),
            "write": float(m.group(4))}


def run_kernel(args, raw, n, conn):
    """volseg's brick labeller alone, in memory (bench/label_kernel): label + paint."""
    if not os.path.exists(args.kernel):
        return None
    proc = subprocess.run([args.kernel, raw, "--dims", "%d,%d,%d" % (n, n, n), "--connectivity", str(conn),
                           "--repeat", str(args.repeat)], capture_output=True, text=True, check=True)
    return json.loads(proc.stdout)


def run_worker(python, tool, raw, n, conn, out):
    proc = subprocess.run([python, "-c", WORKER, tool, raw, "%d,%d,%d" % (n, n, n), str(conn), out],
                          capture_output=True, text=True, check=True)
    return json.loads(proc.stdout)


def same_up_to_renumbering(a_path, b_path, count):
    a = np.memmap(a_path, dtype=np.uint32, mode="r")
    b = np.memmap(b_path, dtype=np.uint32, mode="r")
    if np.array_equal(a, b):
        return True
    # A bijection: the distinct (a, b) pairs are as many as the objects, and
    # background meets background only.
    pairs = np.unique(a.astype(np.uint64) << np.uint64(32) | b.astype(np.uint64))
    return len(pairs) == count + 1 and ((a == 0) == (b == 0)).all()


def best(runs, key="total"):
    return min(runs, key=lambda r: r[key])


def part1(args, python_cc3d, work):
    rows = []
    n = args.size1
    masks = [(density, None) for density in args.densities] + [(None, name) for name in args.smooth]
    for density, smooth in masks:
        if smooth:
            mask, raw, name = write_smooth_mask(args, os.path.join(work, smooth), n, smooth)
        else:
            mask, raw = write_mask(os.path.join(work, "m%d" % int(density * 100)), n, density, 1)
            name = "random %.2f" % density
        labels = {tool: os.path.join(work, "%s.u32" % tool) for tool in ("cc3d", "scipy")}
        out = os.path.join(work, "volseg.nhdr")
        report = os.path.join(work, "volseg.json")
        for conn in args.connectivity:
            got = {"volseg": [], "volseg2": [], "cc3d": [], "scipy": []}
            for _ in range(args.repeat):
                got["volseg"].append(run_volseg(args, args.volseg, mask, out, conn, 1, report))
                got["volseg2"].append(run_volseg(args, args.volseg, mask, out, conn, 2, report))
                got["cc3d"].append(run_worker(python_cc3d, "cc3d", raw, n, conn, labels["cc3d"]))
                if not args.no_scipy:
                    got["scipy"].append(run_worker("/usr/bin/python3", "scipy", raw, n, conn, labels["scipy"]))
            v, c = best(got["volseg"], "job"), best(got["cc3d"])
            kernel = run_kernel(args, raw, n, conn)
            count = v["objects"]
            checks = {"cc3d": c["objects"] == count and same_up_to_renumbering(os.path.join(work, "volseg.raw"),
                                                                                 labels["cc3d"], count)}
            row = {"size": n, "mask": name, "density": density, "connectivity": conn, "objects": count,
                   "volseg": v, "volseg2": best(got["volseg2"], "job"), "cc3d": c, "cc3d_compute": best(got["cc3d"], "compute")["compute"],
                   "checks": checks, "kernel": kernel}
            if got["scipy"]:
                s = best(got["scipy"])
                checks["scipy"] = s["objects"] == count and same_up_to_renumbering(
                    os.path.join(work, "volseg.raw"), labels["scipy"], count)
                row["scipy"] = s
                row["scipy_compute"] = best(got["scipy"], "compute")["compute"]
            rows.append(row)
            log("%d^3 %s c=%d: volseg %.2f s (process %.2f; 2 ranks %.2f s), cc3d %.2f s (compute %.2f), scipy %s; "
                "%d objects; same labels: %s" % (n, name, conn, v["job"], v["total"], row["volseg2"]["job"],
                                                 c["total"], row["cc3d_compute"],
                                      "%.2f s" % row["scipy"]["total"] if "scipy" in row else "-", count, checks))
        for path in (raw, mask):
            os.remove(path)
    return rows


def part2(args, work):
    rows = []
    n = args.size2
    for density in args.densities2:
        mask, raw = write_mask(os.path.join(work, "big"), n, density, 2)
        out = os.path.join(work, "big-labels.nhdr")
        report = os.path.join(work, "big.json")
        row = {"size": n, "density": density, "connectivity": 26}
        for ranks in (1, 2):
            runs = [run_volseg(args, args.volseg, mask, out, 26, ranks, report) for _ in range(args.repeat2)]
            row[str(ranks)] = best(runs, "job")
            row["objects"] = runs[0]["objects"]
        rows.append(row)
        log("%d^3 d=%.3f: %d objects; 1 rank %.1f s (%.0f MiB), 2 ranks %.1f s (%.0f MiB): %.2fx"
            % (n, density, row["objects"], row["1"]["job"], row["1"]["max_rss"] / 2**20, row["2"]["job"],
               row["2"]["max_rss"] / 2**20, row["1"]["job"] / row["2"]["job"]))
        for path in (raw, mask, out, os.path.join(work, "big-labels.raw")):
            if os.path.exists(path):
                os.remove(path)
    return rows


def markdown(rows1, rows2, command):
    lines = ["# volseg label against cc3d and scipy.ndimage.label", "",
             "`%s`, on this machine (2 cores, files in the page cache). Best of the repeats; "
             "file to file = read the u8 mask file, label, write the u32 labels file, timed inside each process "
             "(volseg: the job's time from its summary, `volseg label MASK --mask-input --out L`, no table; the "
             "whole `volseg label` process, MPI start-up and library loading included, is in the JSON as `total`, "
             "about 0.3 s more)." % command, ""]
    if rows1:
        lines += ["## 1 and 2 ranks, %d^3 masks" % rows1[0]["size"], "",
                  "Bars: volseg/cc3d >= 1.0x on 1 rank (per core), >= 1.8x on 2 ranks.", "",
                  "| mask | conn. | objects | volseg s (pass 1, merge, pass 2) | 2 ranks s | cc3d s (compute) | "
                  "scipy s (compute) | volseg/cc3d | 2 ranks/cc3d | volseg/cc3d compute | volseg/scipy | "
                  "same labels |",
                  "|---|---|---|---|---|---|---|---|---|---|---|---|"]
        for r in rows1:
            v, c = r["volseg"]["job"], r["cc3d"]["total"]
            v2 = r["volseg2"]["job"] if "volseg2" in r else None
            s = r["scipy"]["total"] if "scipy" in r else None
            lines.append("| %s | %d | %d | %.2f (%.2f, %.2f, %.2f) | %s | %.2f (%.2f) | %s | %.2fx | %s | %.2fx | %s | %s |" % (
                mask_name(r), r["connectivity"], r["objects"], v, r["volseg"]["label"], r["volseg"]["merge"],
                r["volseg"]["write"], "%.2f" % v2 if v2 else "-", c, r["cc3d_compute"],
                "%.2f (%.2f)" % (s, r["scipy_compute"]) if s else "-", c / v, "%.2fx" % (c / v2) if v2 else "-",
                r["cc3d_compute"] / v,
                "%.2fx" % (s / v) if s else "-", ", ".join("%s %s" % (k, "yes" if ok else "NO")
                                                          for k, ok in r["checks"].items())))
        kernels = [r for r in rows1 if r.get("kernel")]
        if kernels:
            lines += ["", "The labelling alone against cc3d's compute: volseg's brick labeller in memory "
                      "(`build/bench/volseg-label-kernel`: runs, row joins, numbering and painting u32 labels, "
                      "slab brick by slab brick; no files, object table, merge or second pass), best of the "
                      "repeats:", "",
                      "| mask | conn. | label s | paint s | together | cc3d compute s | cc3d compute / volseg labeller |",
                      "|---|---|---|---|---|---|---|"]
            for r in kernels:
                k = r["kernel"]
                together = k["label_s"] + k["paint_s"]
                lines.append("| %s | %d | %.2f | %.2f | %.2f | %.2f | %.2fx |" % (
                    mask_name(r), r["connectivity"], k["label_s"], k["paint_s"], together, r["cc3d_compute"],
                    r["cc3d_compute"] / together))
        lines += ["", "volseg's phases (s): " + "; ".join(
            "%s/%d: pass 1 %.2f, merge %.2f, pass 2 and write %.2f" % (mask_name(r), r["connectivity"],
                                                                      r["volseg"]["label"],
                                                                       r["volseg"]["merge"], r["volseg"]["write"])
            for r in rows1), ""]
    if rows2:
        lines += ["## %d^3, 1 and 2 ranks (26-connected)" % rows2[0]["size"], "",
                  "| density | objects | 1 rank s | 2 ranks s | speed-up | max RSS/rank, 1 rank | 2 ranks |",
                  "|---|---|---|---|---|---|---|"]
        for r in rows2:
            lines.append("| %.3f | %d | %.1f | %.1f | %.2fx | %.0f MiB | %.0f MiB |" % (
                r["density"], r["objects"], r["1"]["job"], r["2"]["job"], r["1"]["job"] / r["2"]["job"],
                r["1"]["max_rss"] / 2**20, r["2"]["max_rss"] / 2**20))
        lines.append("")
    return "\n".join(lines)


def plot(rows1, rows2, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    panels = (1 if rows1 else 0) + (1 if rows2 else 0)
    width1 = max(6.5, 1.0 * len(rows1))
    fig, axes = plt.subplots(1, panels, figsize=(width1 + 6.5 * (panels - 1), 4.5), squeeze=False,
                             gridspec_kw={"width_ratios": [width1 / 6.5] + [1] * (panels - 1)})
    axes = list(axes[0])
    if rows1:
        ax = axes.pop(0)
        short = lambda r: mask_name(r).replace("random ", "d=").split(" ")[0]  # noqa: E731
        labels = ["%s\n%d-conn." % (short(r), r["connectivity"]) for r in rows1]
        x = np.arange(len(rows1))
        mvox = rows1[0]["size"] ** 3 / 1e6
        series = [("volseg label (file to file)", [mvox / r["volseg"]["job"] for r in rows1], "tab:blue"),
                  ("cc3d (file to file)", [mvox / r["cc3d"]["total"] for r in rows1], "tab:orange"),
                  ("cc3d (compute only)", [mvox / r["cc3d_compute"] for r in rows1], "navajowhite")]
        if all(r.get("kernel") for r in rows1):
            series.insert(1, ("volseg's brick labeller alone (label + paint, in memory)",
                              [mvox / (r["kernel"]["label_s"] + r["kernel"]["paint_s"]) for r in rows1], "lightsteelblue"))
        if all("scipy" in r for r in rows1):
            series.append(("scipy.ndimage.label (file to file)", [mvox / r["scipy"]["total"] for r in rows1],
                           "tab:green"))
        width = 0.8 / len(series)
        for i, (name, values, colour) in enumerate(series):
            ax.bar(x + (i - (len(series) - 1) / 2) * width, values, width, label=name, color=colour)
        ax.set_xticks(x, labels)
        ax.set_yscale("log")  # smooth masks label 10-50x faster than random ones
        ax.set_ylabel("Mvoxels/s (1 core), log scale")
        ax.set_title("%d^3 masks, 1 rank" % rows1[0]["size"])
        ax.legend(fontsize=8)
    if rows2:
        ax = axes.pop(0)
        x = np.arange(len(rows2))
        ax.bar(x - 0.2, [r["1"]["job"] for r in rows2], 0.4, label="1 rank")
        ax.bar(x + 0.2, [r["2"]["job"] for r in rows2], 0.4, label="2 ranks")
        for i, r in enumerate(rows2):
            ax.annotate("%.2fx\n%.0f MiB" % (r["1"]["job"] / r["2"]["job"], r["2"]["max_rss"] / 2**20),
                        (i + 0.2, r["2"]["job"]), ha="center", va="bottom", fontsize=8)
        ax.set_xticks(x, ["d=%.3f\n%d objects" % (r["density"], r["objects"]) for r in rows2])
        ax.set_ylabel("seconds, file to file")
        ax.set_title("%d^3, 26-connected: speed-up and peak RSS per rank" % rows2[0]["size"])
        ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def write_results(out, rows1, rows2, command):
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, "label_bench.json"), "w") as f:
        json.dump({"command": command, "part1": rows1, "part2": rows2}, f, indent=1)
    with open(os.path.join(out, "label_bench.md"), "w") as f:
        f.write(markdown(rows1, rows2, command.strip()))
    plot(rows1, rows2, os.path.join(out, "label_bench.png"))
    print(markdown(rows1, rows2, command.strip()))


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--volseg", default=os.path.join(ROOT, "build", "app", "cli", "volseg"))
    parser.add_argument("--kernel", default=os.path.join(ROOT, "build", "bench", "volseg-label-kernel"),
                        help="the labeller-alone benchmark (skipped when missing)")
    parser.add_argument("--dir", default=None, help="scratch folder (default: a new one in /tmp)")
    parser.add_argument("--venv", default=os.path.join(tempfile.gettempdir(), "volseg-cc3d-venv"))
    parser.add_argument("--out", default=os.path.join(ROOT, "docs", "results"))
    parser.add_argument("--part", type=int, choices=(1, 2), help="only this part")
    parser.add_argument("--size1", type=int, default=512)
    parser.add_argument("--size2", type=int, default=1024)
    parser.add_argument("--densities", type=float, nargs="*", default=[0.1, 0.3, 0.5])
    parser.add_argument("--smooth", nargs="*", choices=sorted(SMOOTH), default=sorted(SMOOTH),
                        help="smooth masks too: volseg generate's fields, thresholded (none: --smooth with no name)")
    parser.add_argument("--densities2", type=float, nargs="+", default=[0.001, 0.1, 0.5])
    parser.add_argument("--connectivity", type=int, nargs="+", default=[26])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--repeat2", type=int, default=1)
    parser.add_argument("--no-scipy", action="store_true")
    parser.add_argument("--from-json", nargs="+", metavar="JSON",
                        help="measure nothing: write the table and plot from these runs' JSON (parts 1 and 2 "
                             "measured separately)")
    args = parser.parse_args()
    if args.from_json:
        rows1, rows2, commands = [], [], []
        for path in args.from_json:
            with open(path) as f:
                saved = json.load(f)
            rows1 += saved["part1"]
            rows2 += saved["part2"]
            commands.append(saved["command"].strip())
        write_results(args.out, rows1, rows2, "; ".join(commands))
        return
    os.environ.setdefault("OMPI_ALLOW_RUN_AS_ROOT", "1")
    os.environ.setdefault("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
    os.environ.setdefault("OMPI_MCA_rmaps_base_oversubscribe", "1")
    work = args.dir or tempfile.mkdtemp(prefix="volseg-label-bench-")
    os.makedirs(work, exist_ok=True)
    rows1 = part1(args, cc3d_python(args.venv), work) if args.part in (None, 1) else []
    rows2 = part2(args, work) if args.part in (None, 2) else []
    write_results(args.out, rows1, rows2, "bench/label_bench.py " + " ".join(sys.argv[1:]))
    if not all(all(r["checks"].values()) for r in rows1):
        sys.exit("label_bench: a tool's labels differ from volseg's")


if __name__ == "__main__":
    main()
