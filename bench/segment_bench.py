#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Throughput and memory of `volseg segment` against references measured in
the same run (the machines are shared and noisy, so only ratios mean much).

  throughput: a 1024^3 float32 field (4 GiB) in the page cache; times
              `dd bs=16M`, a numpy memmap threshold, and volseg with every
              raw backend on 1 and 2 ranks; prints GB/s and ratios, writes
              CSV and a PNG bar chart.
  --memory:   an 8 GiB input; each rank's maximum resident set size
              (/usr/bin/time) for every backend on 2 ranks.
  --masks:    the mask's format as a second dimension: every method writes
              each of these (default: `input`, the input's own format), e.g.
              `--only mmap --masks raw zarr netcdf4-deflate` for what a
              compressed mask costs and saves; the table gains the mask's
              bytes on disk.

Run: /usr/bin/python3 bench/segment_bench.py [--dir DIR] [--memory] [--masks F ...]
"""
import argparse
import csv
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# (label, backend, input format, extra arguments, extra environment)
METHODS = [
    ("auto", "auto", "raw", [], {}),
    ("posix", "posix", "raw", [], {}),
    ("mmap", "mmap", "raw", [], {}),
    ("mmap-advise", "mmap-advise", "raw", [], {}),
    ("mpiio OMPIO", "mpiio", "raw", [], {"OMPI_MCA_io": "ompio"}),
    ("mpiio ROMIO", "mpiio", "raw", [], {"OMPI_MCA_io": "romio321"}),
    ("pnetcdf CDF-2", "pnetcdf", "cdf2", [], {}),
    ("pnetcdf CDF-2 nonblocking", "pnetcdf", "cdf2", ["--hint", "nonblocking=1"], {}),
    ("netcdf4 contiguous", "netcdf4", "netcdf4", [], {}),
    ("twophase", "twophase", "raw", [], {}),
    ("twophase aggregated", "twophase", "raw", ["--hint", "cb_read=enable", "--hint", "cb_write=enable"], {}),
    ("ranged-mmap", "ranged-mmap", "raw", [], {}),
    ("ranged-uring", "ranged-uring", "raw", [], {}),
]
EXTENSIONS = {"raw": ".nhdr", "cdf2": ".nc", "cdf5": ".nc", "netcdf4": ".nc"}
# The mask formats of --masks: (file name, segment's extra arguments).
# Compressed NetCDF-4 writes a chunk a brick, deflated (docs/zarr.md).
MASK_FORMATS = {
    "raw": ("bench-mask.nhdr", []),
    "cdf5": ("bench-mask.nc", ["--format", "cdf5"]),
    "netcdf4": ("bench-mask.nc", ["--format", "netcdf4"]),
    "netcdf4-deflate": ("bench-mask.nc", ["--format", "netcdf4", "--out-hint", "deflate=1", "--out-hint",
                                          "chunks=brick"]),
    "zarr": ("bench-mask.zarr", []),
    "ome-zarr": ("bench-mask.ome.zarr", []),
}
MPI_ENV = {
    "OMPI_ALLOW_RUN_AS_ROOT": "1",
    "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1",
    "OMPI_MCA_rmaps_base_oversubscribe": "1",
    "OMPI_MCA_btl_vader_single_copy_mechanism": "none",
}
LO, HI = 0.4, 0.6

NUMPY_THRESHOLD = r"""
import sys, numpy as np
path, out, nz, ny, nx, lo, hi = sys.argv[1], sys.argv[2], *map(int, sys.argv[3:6]), *map(float, sys.argv[6:8])
v = np.memmap(path, dtype='<f4', mode='r', shape=(nz, ny, nx))
m = np.memmap(out, dtype='u1', mode='w+', shape=(nz, ny, nx))
for z in range(0, nz, 64):
    s = v[z:z + 64]
    m[z:z + 64] = (s >= lo) & (s <= hi)
m.flush()
del m
"""


def run(cmd, extra_env=None, **kwargs):
    env = dict(os.environ, **MPI_ENV, **(extra_env or {}))
    return subprocess.run(cmd, env=env, check=True, text=True, capture_output=True, **kwargs)


def timed(cmd, extra_env=None):
    start = time.perf_counter()
    result = run(cmd, extra_env)
    return time.perf_counter() - start, result


def generate(volseg, path, dims, fmt="raw"):
    if os.path.exists(path):
        return
    print(f"generating {path} ({'x'.join(map(str, dims))} f32, {fmt}) ...", flush=True)
    run(["mpirun", "-np", "2", volseg, "generate", path, "--field", "smooth", "--format", fmt,
         "--dims", ",".join(map(str, dims)), "--dtype", "f32", "--quiet"])


def input_path(args, stem, fmt):
    return os.path.join(args.dir, f"{stem}{'' if fmt == 'raw' else '-' + fmt}{EXTENSIONS[fmt]}")


def warm(path):
    with open(path, "rb") as f:
        while f.read(1 << 24):
            pass


def segment_cmd(volseg, ranks, backend, src, out, report, wrapper=(), extra=()):
    return ["mpirun", "-np", str(ranks), *wrapper, volseg, "segment", src, "--lo", str(LO), "--hi", str(HI),
            "--out", out, "--backend", backend, "--force", "--quiet", "--report", report, *extra]


def OUTPUTS(folder):
    """Every output a benchmark run leaves, deleted before the next."""
    return [os.path.join(folder, name) for name in
            ("bench-mask.nhdr", "bench-mask.raw", "bench-mask.nc", "bench-mask.zarr", "bench-mask.ome.zarr",
             "numpy-mask.raw", "bench-report.json")]


def remove_outputs(folder):
    for path in OUTPUTS(folder):
        if os.path.isdir(path):
            shutil.rmtree(path)
        elif os.path.exists(path):
            os.remove(path)


def disk_bytes(path):
    """Bytes of a mask: its data file, or every file of a Zarr store."""
    if path.endswith(".nhdr"):
        path = path[:-5] + ".raw"
    if not os.path.isdir(path):
        return os.path.getsize(path)
    return sum(os.path.getsize(os.path.join(d, n)) for d, _, names in os.walk(path) for n in names)


def throughput(args, volseg):
    dims = (args.size, args.size, args.size)
    src = os.path.join(args.dir, f"smooth-{args.size}.nhdr")
    raw = src[:-5] + ".raw"
    generate(volseg, src, dims)
    nbytes = os.path.getsize(raw)
    warm(raw)
    warm(raw)
    rows = []

    def measure(cases):
        """Times every case `args.repeat` times, interleaved round by round in a
        new random order, so a drift of this shared machine falls on every
        case alike. Each run starts with its output deleted and no dirty
        pages left from the one before (os.sync), so no run pays for the
        previous run's mask writeback."""
        walls = {i: [] for i in range(len(cases))}
        jobs = {i: [] for i in range(len(cases))}
        choices = {i: [] for i in range(len(cases))}
        mask_bytes = {}
        order = random.Random(2026)
        for round_ in range(args.repeat):
            shuffled = list(enumerate(cases))
            order.shuffle(shuffled)
            for i, (name, ranks, cmd, report, extra_env, before) in shuffled:
                remove_outputs(args.dir)
                if before:
                    before()
                os.sync()
                wall, _ = timed(cmd, extra_env)
                walls[i].append(wall)
                if "--out" in cmd:
                    mask_bytes[i] = disk_bytes(cmd[cmd.index("--out") + 1])
                note = ""
                if report:
                    with open(report) as f:
                        rep = json.load(f)
                    jobs[i].append(rep["seconds"])
                    if rep.get("backend_choice"):
                        choices[i].append(rep["backend_choice"]["backend"])
                        note = f"  (auto chose {choices[i][-1]})"
                print(f"  round {round_ + 1}: {name:<32} {ranks} rank(s) "
                      f"{jobs[i][-1] if report else wall:7.3f} s{note}", flush=True)
        for i, (name, ranks, *_rest) in enumerate(cases):
            wall = statistics.median(walls[i])
            job = statistics.median(jobs[i]) if jobs[i] else wall
            rows.append({"method": name, "ranks": ranks, "wall_s": wall, "job_s": job, "gb_s": nbytes / job / 1e9,
                         "min_s": min(jobs[i] or walls[i]), "max_s": max(jobs[i] or walls[i]),
                         "auto_choice": "/".join(sorted(set(choices[i]))), "mask_bytes": mask_bytes.get(i, "")})

    print(f"input {raw}: {nbytes / 2**30:.1f} GiB, page cache warm, median of {args.repeat}, cases interleaved")
    # What any tool pays to create the mask (a quarter of the input) in the
    # page cache: fresh pages are costly on virtual machines.
    scratch = os.path.join(args.dir, "dd-write.tmp")
    references = [
        ("dd bs=16M", 1, ["dd", f"if={raw}", "of=/dev/null", "bs=16M"], None, None, None),
        ("dd write mask-size", 1, ["bash", "-c", f"rm -f {scratch}; dd if=/dev/zero of={scratch} bs=16M "
                                   f"count={nbytes // 4 // (16 << 20)} 2>/dev/null; rm -f {scratch}"], None, None, None),
        ("numpy memmap", 1, ["/usr/bin/python3", "-c", NUMPY_THRESHOLD, raw, os.path.join(args.dir, "numpy-mask.raw"),
                             *map(str, dims), str(LO), str(HI)], None, None, None),
    ]
    report = os.path.join(args.dir, "bench-report.json")
    methods = [m for m in METHODS if args.only is None or m[0] in args.only]
    for _, _, fmt, _, _ in methods:
        generate(volseg, input_path(args, f"smooth-{args.size}", fmt), dims, fmt)
    warm(raw)
    cases = [(name, ranks, cmd, rep, env, lambda: warm(raw)) for name, ranks, cmd, rep, env, _ in references]
    for ranks in (1, 2):
        for label, backend, fmt, extra, env in methods:
            src_fmt = input_path(args, f"smooth-{args.size}", fmt)
            for mask in args.masks:
                if mask == "input":
                    name, out, mask_extra = f"volseg {label}", os.path.join(args.dir, "bench-mask" + EXTENSIONS[fmt]), []
                else:
                    name, (file, mask_extra) = f"volseg {label} -> {mask}", MASK_FORMATS[mask]
                    out = os.path.join(args.dir, file)
                cases.append((name, ranks,
                              segment_cmd(volseg, ranks, backend, src_fmt, out, report, extra=[*extra, *mask_extra]),
                              report, env, (lambda p=(src_fmt if fmt != "raw" else raw): warm(p))))
    measure(cases)

    dd = next(r for r in rows if r["method"] == "dd bs=16M")["gb_s"]
    floor_s = sum(r["job_s"] for r in rows if r["method"].startswith("dd"))
    npy = next(r for r in rows if r["method"].startswith("numpy"))["gb_s"]
    print()
    print(f"{'method':<30} {'ranks':>5} {'job s':>8} {'wall s':>8} {'GB/s':>7} {'x dd':>6} {'x numpy':>8} "
          f"{'x floor':>8} {'mask MB':>9}")
    for r in rows:
        r["vs_dd"], r["vs_numpy"], r["vs_floor"] = r["gb_s"] / dd, r["gb_s"] / npy, floor_s / r["job_s"]
        mb = f"{r['mask_bytes'] / 1e6:9.1f}" if r["mask_bytes"] != "" else f"{'':>9}"
        print(f"{r['method']:<30} {r['ranks']:>5} {r['job_s']:8.3f} {r['wall_s']:8.3f} {r['gb_s']:7.2f} "
              f"{r['vs_dd']:6.2f} {r['vs_numpy']:8.2f} {r['vs_floor']:8.2f} {mb}")
    bars = []
    for ranks in (1, 2):
        mine = [r for r in rows if r["method"].startswith("volseg") and r["ranks"] == ranks]
        backends = [r for r in mine if r["method"] != "volseg auto"]
        if not backends:
            continue
        best = max(backends, key=lambda r: r["gb_s"])
        bars.append(f"- best backend on {ranks} rank(s): {best['method'][7:]} at {best['vs_numpy']:.2f} x numpy "
                    f"(bar 5): {'PASS' if best['vs_numpy'] >= 5 else 'FAIL'}")
        auto = next((r for r in mine if r["method"] == "volseg auto"), None)
        if auto:
            ratio = auto["gb_s"] / best["gb_s"]
            bars.append(f"- auto on {ranks} rank(s) chose {auto['auto_choice']}; best was {best['method'][7:]}: "
                        f"auto at {ratio:.2f} x the best (bar 0.95): {'PASS' if ratio >= 0.95 else 'FAIL'}")
        advise = next((r for r in mine if r["method"] == "volseg mmap-advise"), None)
        for r in mine:
            if advise and ranks == 2 and r["method"].startswith("volseg twophase"):
                bars.append(f"- {r['method'][7:]} at {advise['job_s'] / r['job_s']:.2f} x mmap-advise on 2 ranks")
        # The mask formats against the raw mask, method by method.
        for r in mine:
            if " -> " not in r["method"] or r["method"].endswith(" -> raw"):
                continue
            base = next((b for b in mine if b["method"] == r["method"].rsplit(" -> ", 1)[0] + " -> raw"), None)
            if base and base["mask_bytes"] and r["mask_bytes"]:
                bars.append(f"- {r['method'][7:]} on {ranks} rank(s): {r['job_s'] / base['job_s']:.2f} x the raw "
                            f"mask's time (Zarr bar <= 0.8), {base['mask_bytes'] / r['mask_bytes']:.0f} x smaller "
                            f"(bar >= 20)")
    print("\nBars (medians):\n" + "\n".join(bars))
    print("job s: volseg's own open-to-close time from its report (mpirun start-up excluded); "
          "wall s: the whole command")
    print(f"x floor: (dd read of the input + dd write of a mask-sized new file = {floor_s:.3f} s) / job s")

    stem = "segment_throughput" if args.masks == ["input"] else "segment_masks"
    csv_path = os.path.join(args.out, stem + ".csv")
    with open(csv_path, "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(rows[0].keys()))
        writer.writeheader()
        writer.writerows(rows)
    lines = ["| method | ranks | job s (median) | min-max s | GB/s | x dd | x numpy | mask MB |",
             "|---|---|---|---|---|---|---|---|"]
    for r in rows:
        method = r["method"] + (f" (chose {r['auto_choice']})" if r["auto_choice"] else "")
        mb = f"{r['mask_bytes'] / 1e6:.1f}" if r["mask_bytes"] != "" else ""
        lines.append(f"| {method} | {r['ranks']} | {r['job_s']:.3f} | {r['min_s']:.2f}-{r['max_s']:.2f} | "
                     f"{r['gb_s']:.2f} | {r['vs_dd']:.2f} | {r['vs_numpy']:.2f} | {mb} |")
    with open(os.path.join(args.out, stem + ".md"), "w") as f:
        f.write(f"Warm segmentation of {raw} ({nbytes / 2**30:.1f} GiB in the page cache), {args.repeat} interleaved "
                f"rounds, `/usr/bin/python3 {' '.join(['bench/segment_bench.py'] + sys.argv[1:])}`; job s is volseg's own "
                f"open-to-close time, numpy's and dd's their whole run\n\n" + "\n".join(lines) + "\n\nBars:\n\n"
                + "\n".join(bars) + "\n")
    plot(rows, os.path.join(args.out, stem + ".png"), nbytes)
    print(f"wrote {csv_path}, {stem}.md and {stem}.png")


def plot(rows, path, nbytes):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    rows = [r for r in rows if r["method"] != "dd write mask-size"]  # its GB/s is of another size
    labels = [f"{r['method']} ({r['ranks']} rank{'s' if int(r['ranks']) > 1 else ''})"
              if r["method"].startswith("volseg") else r["method"] for r in rows]
    colors = ["#888888" if not r["method"].startswith("volseg") else ("#4c72b0" if int(r["ranks"]) == 1 else "#dd8452")
              for r in rows]
    values = [float(r["gb_s"]) for r in rows]
    fig, ax = plt.subplots(figsize=(9, 0.38 * len(rows) + 1.2))
    ax.barh(range(len(rows)), values, color=colors)
    ax.set_yticks(range(len(rows)), labels, fontsize=9)
    ax.invert_yaxis()
    ax.set_xlabel("GB/s of input")
    ax.set_title(f"Threshold segmentation of a {nbytes / 2**30:.0f} GiB float32 volume (page cache warm)\n"
                 "grey: references, blue: 1 rank, orange: 2 ranks", fontsize=10)
    for i, v in enumerate(values):
        ax.text(v, i, f" {v:.2f}", va="center", fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def memory(args, volseg):
    """Each rank's peak resident set on a 2*size x size^2 input (8 GiB by
    default), against the same backend's on a 16-plane slice: the libraries
    (MPI, PnetCDF, HDF5, VTK) hold about 80 MiB whatever the size, so the
    bar is on the growth: at most 64 MiB for 128 times the volume."""
    dims = (2 * args.size, args.size, args.size)
    stem = f"smooth-{dims[0]}x{args.size}x{args.size}"
    report = os.path.join(args.dir, "bench-report.json")
    print(f"input {stem}: {dims[0] * args.size * args.size * 4 / 2**30:.1f} GiB f32, default bricks, 2 ranks")

    def peak(backend, src, out, extra, env):
        prefix = os.path.join(args.dir, f"maxrss-{backend}")
        wrapper = ["bash", "-c", f'exec /usr/bin/time -f %M -o {prefix}.$OMPI_COMM_WORLD_RANK "$@"', "time"]
        remove_outputs(args.dir)
        timed(segment_cmd(volseg, 2, backend, src, out, report, wrapper, extra), env)
        rss = []
        for rank in range(2):
            with open(f"{prefix}.{rank}") as f:
                rss.append(int(f.read().split()[-1]) / 1024)
            os.remove(f"{prefix}.{rank}")
        return rss

    small = os.path.join(args.dir, "smooth-16-planes.nhdr")
    generate(volseg, small, (16, args.size, args.size))
    lines = []
    for label, backend, fmt, extra, env in METHODS:
        if args.only is not None and label not in args.only:
            continue
        src = input_path(args, stem, fmt)
        small_src = input_path(args, "smooth-16-planes", fmt)
        generate(volseg, src, dims, fmt)
        generate(volseg, small_src, (16, args.size, args.size), fmt)
        out = os.path.join(args.dir, "bench-mask" + EXTENSIONS[fmt])
        base = max(peak(backend, small_src, out, extra, env))
        rss = peak(backend, src, out, extra, env)
        grown = max(rss) - base
        line = (f"  {label:<28} max resident set per rank: {', '.join(f'{m:.0f} MiB' for m in rss)}; on 16 planes "
                f"{base:.0f} MiB: {grown:+.0f} MiB for {dims[0] // 16}x the volume (bar 64): "
                f"{'PASS' if grown <= 64 else 'FAIL'}")
        print(line, flush=True)
        lines.append(line)
    with open(os.path.join(args.out, "segment_memory.md"), "w") as f:
        f.write(f"Peak resident set per rank, 2 ranks, {stem} f32 "
                f"(`/usr/bin/python3 bench/segment_bench.py --memory`), against the same backend on a 16-plane "
                f"slice (what the libraries hold whatever the size)\n\n```\n"
                + "\n".join(lines) + "\n```\n")


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dir", default="/tmp/volseg-bench", help="where the volumes go (needs 6 GiB, 11 with --memory)")
    parser.add_argument("--out", default=os.path.join(ROOT, "docs", "results"), help="CSV and PNG go here")
    parser.add_argument("--volseg", default=os.path.join(ROOT, "build", "app", "cli", "volseg"))
    parser.add_argument("--size", type=int, default=1024, help="edge of the cube (default 1024: 4 GiB)")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--memory", action="store_true", help="measure peak memory on a 2*size x size^2 input")
    parser.add_argument("--plot-only", action="store_true", help="redraw the PNG from the CSV in --out")
    parser.add_argument("--only", nargs="+", help="only these methods (labels as printed, e.g. 'mmap' 'pnetcdf CDF-2')")
    parser.add_argument("--masks", nargs="+", default=["input"], choices=["input", *MASK_FORMATS],
                        help="the mask formats each method writes (default: input, the input's own format)")
    args = parser.parse_args()
    os.makedirs(args.dir, exist_ok=True)
    os.makedirs(args.out, exist_ok=True)
    if not os.access(args.volseg, os.X_OK):
        sys.exit(f"segment_bench: {args.volseg} not found; build first (scripts/build.sh)")
    if args.plot_only:
        with open(os.path.join(args.out, "segment_throughput.csv")) as f:
            rows = list(csv.DictReader(f))
        plot(rows, os.path.join(args.out, "segment_throughput.png"), args.size ** 3 * 4)
    elif args.memory:
        memory(args, args.volseg)
    else:
        throughput(args, args.volseg)


if __name__ == "__main__":
    main()
