#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Cold-cache segmentation: seed 004's ranged API (readanyv) against mmap.

Before every run the input is evicted from the page cache
(posix_fadvise(POSIX_FADV_DONTNEED) on the whole file, after a sync), so
every byte comes from the disk. Times, interleaved round by round so the
shared machine's drift falls on every case alike:

  dd bs=16M          the disk's sequential bandwidth on the cold file
  volseg mmap, mmap-advise, ranged-mmap, ranged-uring   on 1 and 2 ranks

and prints GB/s, x mmap (same ranks) and x dd, with the issue's bars: the
best ranged backend at least 1.2 x mmap and 0.8 x dd. Writes CSV and a PNG,
then traces one ranged-uring run on 2 ranks and prints its trace report
(`volseg segment --trace`, `volseg trace-report --plots`).

Run: /usr/bin/python3 bench/cold_bench.py [--dir DIR] [--repeat N]
"""
import argparse
import csv
import json
import os
import random
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from segment_bench import ROOT, generate, run, segment_cmd  # noqa: E402

BACKENDS = ["mmap", "mmap-advise", "ranged-mmap", "ranged-uring"]


def evict(path):
    """Drops the file's pages from the page cache (clean pages go at once)."""
    os.sync()
    fd = os.open(path, os.O_RDONLY)
    try:
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    finally:
        os.close(fd)


def resident_fraction(path):
    """Share of the file's pages in the page cache (mmap + mincore)."""
    import ctypes
    import mmap
    libc = ctypes.CDLL(None, use_errno=True)
    libc.mmap.restype = ctypes.c_void_p
    libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_long]
    libc.mincore.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_void_p]
    libc.munmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
    size = os.path.getsize(path)
    pages = (size + mmap.PAGESIZE - 1) // mmap.PAGESIZE
    fd = os.open(path, os.O_RDONLY)
    try:
        address = libc.mmap(None, size, mmap.PROT_READ, mmap.MAP_SHARED, fd, 0)
        if address in (None, ctypes.c_void_p(-1).value):
            return float("nan")
        vec = (ctypes.c_ubyte * pages)()
        rc = libc.mincore(address, size, vec)
        libc.munmap(address, size)
        return float("nan") if rc != 0 else sum(v & 1 for v in vec) / pages
    finally:
        os.close(fd)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dir", default="/tmp/volseg-bench", help="where the volume goes (needs 6 GiB)")
    parser.add_argument("--out", default=os.path.join(ROOT, "docs", "results"), help="CSV, PNG and trace go here")
    parser.add_argument("--volseg", default=os.path.join(ROOT, "build", "app", "cli", "volseg"))
    parser.add_argument("--size", type=int, default=1024, help="edge of the cube (default 1024: 4 GiB)")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--no-trace", action="store_true", help="skip the traced run")
    parser.add_argument("--plot-only", action="store_true", help="redraw the PNG from the CSV in --out")
    args = parser.parse_args()
    if args.plot_only:
        with open(os.path.join(args.out, "cold_segment.csv")) as f:
            rows = [dict(r, ranks=int(r["ranks"]), **{k: float(r[k]) for k in ("seconds", "gb_s", "min_s", "max_s")})
                    for r in csv.DictReader(f)]
        plot(rows, os.path.join(args.out, "cold_segment.png"), args.size ** 3 * 4)
        return
    if not os.access(args.volseg, os.X_OK):
        sys.exit(f"cold_bench: {args.volseg} not found; build first (scripts/build.sh)")
    os.makedirs(args.dir, exist_ok=True)
    os.makedirs(args.out, exist_ok=True)
    src = os.path.join(args.dir, f"smooth-{args.size}.nhdr")
    raw = src[:-5] + ".raw"
    generate(args.volseg, src, (args.size,) * 3)
    nbytes = os.path.getsize(raw)
    out = os.path.join(args.dir, "cold-mask.nhdr")
    report = os.path.join(args.dir, "cold-report.json")

    cases = [("dd bs=16M", 1, ["dd", f"if={raw}", "of=/dev/null", "bs=16M"], False)]
    for ranks in (1, 2):
        for backend in BACKENDS:
            cases.append((f"volseg {backend}", ranks, segment_cmd(args.volseg, ranks, backend, src, out, report), True))
    times = {i: [] for i in range(len(cases))}
    left = []
    print(f"input {raw}: {nbytes / 2**30:.1f} GiB, evicted before every run, median of {args.repeat}, "
          f"cases interleaved in a new order each round", flush=True)
    order = random.Random(2026)
    for rep in range(args.repeat):
        # A new order every round: on a virtual machine, what the run before
        # left (pages the host must back again, its cache of the disk)
        # changes the next run, so no case may always follow the same one.
        shuffled = list(enumerate(cases))
        order.shuffle(shuffled)
        for i, (name, ranks, cmd, has_report) in shuffled:
            evict(raw)
            left.append(resident_fraction(raw))
            start = time.perf_counter()
            run(cmd)
            wall = time.perf_counter() - start
            if has_report:
                with open(report) as f:
                    wall = json.load(f)["seconds"]
            times[i].append(wall)
            print(f"  round {rep + 1}: {name:<20} {ranks} rank(s) {wall:7.3f} s", flush=True)
    print(f"page cache share of the input left after eviction: at most {max(left) * 100:.2f} %")

    rows = []
    for i, (name, ranks, _, _) in enumerate(cases):
        seconds = statistics.median(times[i])
        rows.append({"method": name, "ranks": ranks, "seconds": seconds, "gb_s": nbytes / seconds / 1e9,
                     "min_s": min(times[i]), "max_s": max(times[i])})
    dd = rows[0]["gb_s"]
    print()
    print(f"{'method':<22} {'ranks':>5} {'s':>8} {'GB/s':>7} {'x mmap':>7} {'x dd':>6}")
    for r in rows:
        mmap = next((m["gb_s"] for m in rows if m["method"] == "volseg mmap" and m["ranks"] == r["ranks"]), None)
        r["vs_mmap"] = r["gb_s"] / mmap if mmap and r["method"].startswith("volseg") else float("nan")
        r["vs_dd"] = r["gb_s"] / dd
        print(f"{r['method']:<22} {r['ranks']:>5} {r['seconds']:8.3f} {r['gb_s']:7.2f} {r['vs_mmap']:7.2f} "
              f"{r['vs_dd']:6.2f}")
    for ranks in (1, 2):
        ranged = [r for r in rows if r["method"].startswith("volseg ranged") and r["ranks"] == ranks]
        best = max(ranged, key=lambda r: r["gb_s"])
        print(f"best ranged backend on {ranks} rank(s): {best['method']} at {best['vs_mmap']:.2f} x mmap (bar 1.2) "
              f"and {best['vs_dd']:.2f} x dd (bar 0.8)")

    csv_path = os.path.join(args.out, "cold_segment.csv")
    with open(csv_path, "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(rows[0].keys()))
        writer.writeheader()
        writer.writerows(rows)
    plot(rows, os.path.join(args.out, "cold_segment.png"), nbytes)
    print(f"wrote {csv_path} and cold_segment.png")

    if not args.no_trace:
        trace = os.path.join(args.out, "cold-ranged-uring-trace.csv")
        evict(raw)
        run(segment_cmd(args.volseg, 2, "ranged-uring", src, out, report, extra=["--trace", trace]))
        plots = os.path.join(args.out, "cold-trace")
        result = subprocess.run([args.volseg, "trace-report", trace, "--plots", plots], check=True, text=True,
                                capture_output=True)
        print(f"\ntrace of one cold ranged-uring run on 2 ranks ({trace}):\n{result.stdout}")
        with open(os.path.join(args.out, "cold-trace-report.txt"), "w") as f:
            f.write(result.stdout)


def plot(rows, path, nbytes):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    labels = [f"{r['method']} ({r['ranks']} rank{'s' if r['ranks'] > 1 else ''})" if r["method"].startswith("volseg")
              else r["method"] for r in rows]
    colors = ["#888888" if not r["method"].startswith("volseg") else
              ("#55a868" if "ranged" in r["method"] else "#4c72b0") for r in rows]
    values = [r["gb_s"] for r in rows]
    errors = [[r["gb_s"] - nbytes / r["max_s"] / 1e9 for r in rows], [nbytes / r["min_s"] / 1e9 - r["gb_s"] for r in rows]]
    fig, ax = plt.subplots(figsize=(9, 0.42 * len(rows) + 1.3))
    ax.barh(range(len(rows)), values, color=colors, xerr=errors, capsize=3)
    ax.set_yticks(range(len(rows)), labels, fontsize=9)
    ax.invert_yaxis()
    ax.set_xlabel("GB/s of input (median; bars: fastest and slowest run)")
    ax.set_title(f"Threshold segmentation of a {nbytes / 2**30:.0f} GiB float32 volume, cold page cache\n"
                 "grey: dd of the cold file, green: seed 004's readanyv (ranged), blue: mmap", fontsize=10)
    for i, v in enumerate(values):  # right of the slowest-to-fastest bar
        ax.text(v + errors[1][i], i, f"  {v:.2f}", va="center", fontsize=8)
    ax.set_xlim(0, max(v + e for v, e in zip(values, errors[1])) * 1.12)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


if __name__ == "__main__":
    main()
