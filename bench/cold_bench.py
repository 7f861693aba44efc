#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Cold-cache segmentation: every raw backend and `auto` against the device's
ceiling, on 1 and 2 ranks.

Before every run the input is evicted from the page cache
(posix_fadvise(POSIX_FADV_DONTNEED) on the whole file, after a sync), so
every byte comes from the disk, and the last run's mask is deleted. Times,
interleaved round by round in a new random order so the shared machine's
drift falls on every case alike:

  fio                the device's ceiling: sequential O_DIRECT reads of the
                     cold file, 4 MiB, 32 deep (io_uring)
  dd bs=16M          buffered sequential reads of the cold file
  volseg auto, mmap, mmap-advise, ranged-mmap, ranged-uring, posix
                     on 1 and 2 ranks (auto's choice read from the report)

and prints GB/s, x ceiling, x mmap (same ranks), x dd, what the device saw
(/proc/diskstats: requests, merges, average request size, time a request,
time busy), and the bars: the best backend at least 0.9 x the
ceiling on 2 ranks; the best ranged backend (Fogal & Krüger's readanyv)
at least 1.0 x mmap; auto at least 0.95 x the best backend. Writes CSV,
Markdown and a PNG, then traces one ranged-uring run on 2 ranks and prints
its trace report (`volseg segment --trace`, `volseg trace-report --plots`).

Run: /usr/bin/python3 bench/cold_bench.py [--dir DIR] [--repeat N] [--ranks 1 2] [--only BACKEND ...]
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

BACKENDS = ["auto", "mmap", "mmap-advise", "ranged-mmap", "ranged-uring", "posix"]


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


def disk_of(path):
    """The /proc/diskstats name of the whole disk holding path."""
    st = os.stat(path)
    major, minor = os.major(st.st_dev), os.minor(st.st_dev)
    lines = [line.split() for line in open("/proc/diskstats")]
    for f in lines:
        if int(f[0]) == major and int(f[1]) == minor:
            name = f[2]
            # A partition (vda1): its disk is the name without the digits, if listed.
            base = name.rstrip("0123456789")
            if base != name and base.endswith("p") and any(g[2] == base[:-1] for g in lines):
                base = base[:-1]
            return base if any(g[2] == base for g in lines) else name
    return next(f[2] for f in lines if not f[2][-1].isdigit() and not f[2].startswith(("loop", "ram", "zram")))


def diskstats(disk):
    for f in (line.split() for line in open("/proc/diskstats")):
        if f[2] == disk:
            return [int(x) for x in f[3:14]]
    return [0] * 11


def device_view(before, after, seconds):
    """Reads, merges, KiB a read, ms a read, writes, MiB written, busy s, average queue."""
    d = [b - a for a, b in zip(before, after)]
    reads, merged, sectors, ms_reading, writes, _, sectors_written = d[0], d[1], d[2], d[3], d[4], d[5], d[6]
    return {"reads": reads, "merged": merged, "kib_per_read": sectors * 512 / 1024 / max(reads, 1),
            "ms_per_read": ms_reading / max(reads, 1), "writes": writes, "mib_written": sectors_written * 512 / 2**20,
            "busy_s": d[9] / 1000, "avg_queue": d[10] / max(seconds * 1000, 1e-9)}


def fio_cmd(raw):
    return ["fio", "--name=ceiling", f"--filename={raw}", "--rw=read", "--bs=4M", "--direct=1",
            "--ioengine=io_uring", "--iodepth=32", "--readonly", "--output-format=json"]


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dir", default="/tmp/volseg-bench", help="where the volume goes (needs 6 GiB)")
    parser.add_argument("--out", default=os.path.join(ROOT, "docs", "results"), help="CSV, PNG and trace go here")
    parser.add_argument("--volseg", default=os.path.join(ROOT, "build", "app", "cli", "volseg"))
    parser.add_argument("--size", type=int, default=1024, help="edge of the cube (default 1024: 4 GiB)")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--ranks", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--only", nargs="+", help="only these volseg backends (fio and dd always run)")
    parser.add_argument("--no-trace", action="store_true", help="skip the traced run")
    parser.add_argument("--plot-only", action="store_true", help="redraw the PNG from the CSV in --out")
    args = parser.parse_args()
    if args.plot_only:
        with open(os.path.join(args.out, "cold_segment.csv")) as f:
            rows = [dict(r, ranks=int(r["ranks"]),
                         **{k: float(r[k]) for k in ("seconds", "gb_s", "min_s", "max_s", "vs_ceiling")})
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

    data_out = out[:-5] + ".raw"
    disk = disk_of(raw)
    have_fio = subprocess.run(["which", "fio"], capture_output=True).returncode == 0
    cases = [("dd bs=16M", 1, ["dd", f"if={raw}", "of=/dev/null", "bs=16M"], "dd")]
    if have_fio:
        cases.insert(0, ("fio O_DIRECT 4M x32", 1, fio_cmd(raw), "fio"))
    backends = [b for b in BACKENDS if not args.only or b in args.only]
    for ranks in args.ranks:
        for backend in backends:
            cases.append((f"volseg {backend}", ranks, segment_cmd(args.volseg, ranks, backend, src, out, report),
                          "volseg"))
    times = {i: [] for i in range(len(cases))}
    views = {i: [] for i in range(len(cases))}
    choices = {i: [] for i in range(len(cases))}
    left = []
    print(f"input {raw}: {nbytes / 2**30:.1f} GiB on {disk}, evicted before every run, median of {args.repeat}, "
          f"cases interleaved in a new order each round", flush=True)
    order = random.Random(2026)
    for rep in range(args.repeat):
        # A new order every round: on a virtual machine, what the run before
        # left (pages the host must back again, its cache of the disk)
        # changes the next run, so no case may always follow the same one.
        shuffled = list(enumerate(cases))
        order.shuffle(shuffled)
        for i, (name, ranks, cmd, kind) in shuffled:
            for path in (out, data_out, report):
                if os.path.exists(path):
                    os.remove(path)
            evict(raw)
            left.append(resident_fraction(raw))
            before = diskstats(disk)
            start = time.perf_counter()
            result = run(cmd)
            wall = time.perf_counter() - start
            after = diskstats(disk)
            note = ""
            if kind == "volseg":
                with open(report) as f:
                    rep_json = json.load(f)
                wall = rep_json["seconds"]
                choice = rep_json.get("backend_choice")
                if name == "volseg auto":
                    chosen = choice["backend"] if choice else rep_json.get("backend", "?")
                    choices[i].append(chosen)
                    note = f"  auto chose {chosen}"
            elif kind == "fio":
                job = json.loads(result.stdout)["jobs"][0]["read"]
                wall = job["runtime"] / 1000 if job.get("runtime") else wall
            times[i].append(wall)
            views[i].append(device_view(before, after, wall))
            print(f"  round {rep + 1}: {name:<22} {ranks} rank(s) {wall:7.3f} s{note}", flush=True)
    print(f"page cache share of the input left after eviction: at most {max(left) * 100:.2f} %")

    rows = []
    for i, (name, ranks, _, _) in enumerate(cases):
        seconds = statistics.median(times[i])
        row = {"method": name, "ranks": ranks, "seconds": seconds, "gb_s": nbytes / seconds / 1e9,
               "min_s": min(times[i]), "max_s": max(times[i])}
        for key in views[i][0]:
            row[key] = statistics.median(v[key] for v in views[i])
        row["auto_choice"] = "/".join(sorted(set(choices[i]))) if choices[i] else ""
        rows.append(row)
    ceiling = next((r["gb_s"] for r in rows if r["method"].startswith("fio")), float("nan"))
    dd = next(r["gb_s"] for r in rows if r["method"].startswith("dd"))
    for r in rows:
        mmap = next((m["gb_s"] for m in rows if m["method"] == "volseg mmap" and m["ranks"] == r["ranks"]), None)
        r["vs_ceiling"] = r["gb_s"] / ceiling
        r["vs_mmap"] = r["gb_s"] / mmap if mmap and r["method"].startswith("volseg") else float("nan")
        r["vs_dd"] = r["gb_s"] / dd

    lines = ["| method | ranks | s (median) | min-max s | GB/s | x ceiling | x mmap | x dd |",
             "|---|---|---|---|---|---|---|---|"]
    for r in rows:
        method = r["method"] + (f" (chose {r['auto_choice']})" if r["auto_choice"] else "")
        lines.append(f"| {method} | {r['ranks']} | {r['seconds']:.3f} | {r['min_s']:.2f}-{r['max_s']:.2f} | "
                     f"{r['gb_s']:.2f} | {r['vs_ceiling']:.2f} | {r['vs_mmap']:.2f} | {r['vs_dd']:.2f} |")
    lines += ["", "What the device saw (medians; /proc/diskstats of " + disk + "):", "",
              "| method | ranks | reads | merged | KiB a read | ms a read | writes | MiB written | busy s | avg queue |",
              "|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['method']} | {r['ranks']} | {r['reads']:.0f} | {r['merged']:.0f} | {r['kib_per_read']:.0f} | "
                     f"{r['ms_per_read']:.1f} | {r['writes']:.0f} | {r['mib_written']:.0f} | {r['busy_s']:.2f} | "
                     f"{r['avg_queue']:.1f} |")
    lines += ["", "Bars (medians):", ""]

    def verdict(ok):
        return "PASS" if ok else "FAIL"
    volseg_rows = [r for r in rows if r["method"].startswith("volseg")]
    for ranks in args.ranks:
        mine = [r for r in volseg_rows if r["ranks"] == ranks]
        best = max(mine, key=lambda r: r["gb_s"])
        if ranks == 2 and ceiling == ceiling:
            lines.append(f"- best backend on 2 ranks: {best['method']} at {best['vs_ceiling']:.2f} x the fio "
                         f"ceiling (bar 0.9): {verdict(best['vs_ceiling'] >= 0.9)}")
        ranged = [r for r in mine if r["method"].startswith("volseg ranged")]
        if ranged and any(r["method"] == "volseg mmap" for r in mine):
            top = max(ranged, key=lambda r: r["gb_s"])
            lines.append(f"- best ranged backend on {ranks} rank(s): {top['method']} at {top['vs_mmap']:.2f} x mmap "
                         f"(bar 1.0{', and 1.2 met' if top['vs_mmap'] >= 1.2 else ', 1.2 not met'}): "
                         f"{verdict(top['vs_mmap'] >= 1.0)}")
        auto = next((r for r in mine if r["method"] == "volseg auto"), None)
        if auto:
            others = [r for r in mine if r is not auto]
            top = max(others, key=lambda r: r["gb_s"]) if others else auto
            ratio = auto["gb_s"] / top["gb_s"]
            lines.append(f"- auto on {ranks} rank(s) chose {auto['auto_choice']}; the best backend was "
                         f"{top['method'][7:]}: auto at {ratio:.2f} x the best (bar 0.95): {verdict(ratio >= 0.95)}")
    text = "\n".join(lines)
    print()
    print(text)

    csv_path = os.path.join(args.out, "cold_segment.csv")
    with open(csv_path, "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(rows[0].keys()))
        writer.writeheader()
        writer.writerows(rows)
    with open(os.path.join(args.out, "cold_segment.md"), "w") as f:
        f.write(f"Cold segmentation of {raw} ({nbytes / 2**30:.1f} GiB), {args.repeat} interleaved rounds, "
                f"`/usr/bin/python3 bench/cold_bench.py --repeat {args.repeat}`\n\n{text}\n")
    plot(rows, os.path.join(args.out, "cold_segment.png"), nbytes)
    print(f"wrote {csv_path}, cold_segment.md and cold_segment.png")

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
        plot_in_flight(trace, os.path.join(args.out, "cold-trace", "in_flight.png"))


def plot_in_flight(trace, path):
    """Bytes of reads in flight over time, per rank, from a volseg trace: each
    io_uring read is recorded from its submission to its completion."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    events = {}
    with open(trace) as f:
        for r in csv.DictReader(line for line in f if not line.startswith("#")):
            if r["op"] != "read":
                continue
            start, end, nbytes = float(r["start_s"]), float(r["start_s"]) + float(r["duration_s"]), int(r["bytes"])
            events.setdefault(int(r["rank"]), []).extend([(start, nbytes), (end, -nbytes)])
    fig, ax = plt.subplots(figsize=(9, 3.5))
    for rank, ev in sorted(events.items()):
        ev.sort()
        t, level, xs, ys = 0.0, 0, [], []
        for t, delta in ev:
            xs.append(t)
            ys.append(level / 2**20)
            level += delta
            xs.append(t)
            ys.append(level / 2**20)
        ax.plot(xs, ys, label=f"rank {rank}", linewidth=0.8)
    ax.set_xlabel("seconds since the job's start")
    ax.set_ylabel("MiB of reads in flight")
    ax.set_title("ranged-uring, cold input, 2 ranks: bytes submitted and not yet completed", fontsize=10)
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def plot(rows, path, nbytes):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    labels = [f"{r['method']} ({r['ranks']} rank{'s' if r['ranks'] > 1 else ''})"
              + (f" -> {r['auto_choice']}" if r.get("auto_choice") else "") if r["method"].startswith("volseg")
              else r["method"] for r in rows]
    colors = ["#888888" if not r["method"].startswith("volseg") else
              "#c44e52" if r["method"] == "volseg auto" else
              ("#55a868" if "ranged" in r["method"] else "#4c72b0") for r in rows]
    values = [r["gb_s"] for r in rows]
    errors = [[r["gb_s"] - nbytes / r["max_s"] / 1e9 for r in rows], [nbytes / r["min_s"] / 1e9 - r["gb_s"] for r in rows]]
    fig, ax = plt.subplots(figsize=(9, 0.42 * len(rows) + 1.3))
    ax.barh(range(len(rows)), values, color=colors, xerr=errors, capsize=3)
    ax.set_yticks(range(len(rows)), labels, fontsize=9)
    ax.invert_yaxis()
    ax.set_xlabel("GB/s of input (median; bars: fastest and slowest run)")
    ceiling = next((r["gb_s"] for r in rows if r["method"].startswith("fio")), None)
    if ceiling:
        ax.axvline(ceiling, color="#888888", linestyle="--", linewidth=1)
    ax.set_title(f"Threshold segmentation of a {nbytes / 2**30:.3g} GiB float32 volume, cold page cache\n"
                 "grey: fio (dashed line: its ceiling) and dd of the cold file, red: auto,\n"
                 "green: Fogal & Krüger's readanyv (ranged), blue: page-cache backends", fontsize=10)
    for i, v in enumerate(values):  # right of the slowest-to-fastest bar
        ax.text(v + errors[1][i], i, f"  {v:.2f}", va="center", fontsize=8)
    ax.set_xlim(0, max(v + e for v, e in zip(values, errors[1])) * 1.12)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


if __name__ == "__main__":
    main()
