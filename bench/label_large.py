#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""`volseg label` against `volseg segment` on a volume larger than memory,
cold, 2 ranks.

The input is a 2048^3 raw float32 volume (32 GiB, more than this machine's
24 GiB of memory), generated once into --dir. Before every run it is evicted
from the page cache (a sync, then posix_fadvise(POSIX_FADV_DONTNEED)) and the
last run's output deleted, so each run reads every byte from the disk. Cases,
interleaved round by round in a new random order:

  dd read          dd bs=16M of the input: the buffered read rate
  dd write         dd bs=16M of as many bytes as the labels: the write rate
  segment          the band lo <= v <= hi into a u8 mask
  label            the same band's objects (the labels' type: --type, u16
                   by default, since 32 GiB of u32 labels beside the 32 GiB
                   input do not fit this disk)
  label old        the same, with the bricks and writes labelling had
                   before it chose its own (--brick 1,1536,2048, writes
                   through the page cache: --out-hint direct_write=0)

and prints the medians, label / segment, the peak memory per rank (from the
jobs' reports), and writes Markdown and JSON.

Run: /usr/bin/python3 bench/label_large.py [--dir DIR] [--repeat N] [--type u16] [--old-rounds 1]
     [--out docs/results/label_large]
"""
import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from cold_bench import evict  # noqa: E402
from segment_bench import MPI_ENV, ROOT  # noqa: E402

DIMS = 2048
LO, HI = 0.3, 0.5


def remove_outputs(folder):
    for name in os.listdir(folder):
        if name.startswith("out."):
            os.remove(os.path.join(folder, name))
    os.sync()


def cell(value, digits=1):
    """A table cell: blank where the run did not report the figure."""
    return f"{value:.{digits}f}" if value else ""


def timed(cmd):
    start = time.perf_counter()
    subprocess.run(cmd, env=dict(os.environ, **MPI_ENV), check=True, capture_output=True, text=True)
    return time.perf_counter() - start


def measure(args, cases, raw, out):
    times = {name: [] for name in cases}
    reports = {}
    for round_ in range(args.repeat):
        order = list(cases)
        random.shuffle(order)
        for name in order:
            if name == "label old" and round_ >= args.old_rounds:
                continue
            remove_outputs(args.dir)
            evict(raw)
            seconds = timed(cases[name])
            times[name].append(seconds)
            report = {"segment": ".segment.json", "label": ".label.json", "label old": ".label-old.json"}.get(name)
            if report:
                with open(out + report) as f:
                    reports[name] = json.load(f)
            print(f"round {round_ + 1}: {name}: {seconds:.1f} s", flush=True)
    remove_outputs(args.dir)
    with open(args.out + ".raw.json", "w") as f:
        json.dump({"times": times, "reports": {k: {key: v.get(key) for key in ("ranks", "bricks", "output", "backend",
                                                                                  "peak_rss_bytes", "seconds")}
                                               for k, v in reports.items()}}, f, indent=1)
    return times, reports


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dir", default="/tmp/volseg-large")
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--type", default="u16")
    parser.add_argument("--tables-from", help="write the tables again from a run's .raw.json, without running")
    parser.add_argument("--old-rounds", type=int, default=1,
                        help="rounds of 'label old' (2 minutes each here; the first ones)")
    parser.add_argument("--volseg", default=os.path.join(ROOT, "build", "app", "cli", "volseg"))
    parser.add_argument("--out", default=os.path.join(ROOT, "docs", "results", "label_large"))
    args = parser.parse_args()
    os.makedirs(args.dir, exist_ok=True)
    src = os.path.join(args.dir, "smooth-2048.nhdr")
    raw = src[:-5] + ".raw"
    if not os.path.exists(raw) and not args.tables_from:
        print(f"generating {src} (2048^3 f32, 32 GiB) ...", flush=True)
        subprocess.run(["mpirun", "-np", "2", args.volseg, "generate", src, "--field", "smooth", "--dims",
                        str(DIMS), "--quiet"], env=dict(os.environ, **MPI_ENV), check=True)
    nbytes = DIMS ** 3 * 4
    label_bytes = DIMS ** 3 * {"u8": 1, "u16": 2, "u32": 4}[args.type]
    out = os.path.join(args.dir, "out")
    band = ["--lo", str(LO), "--hi", str(HI), "--force", "--quiet"]
    mpi = ["mpirun", "-np", "2", args.volseg]
    cases = {
        "dd read": ["dd", f"if={raw}", "of=/dev/null", "bs=16M"],
        "dd write": ["dd", "if=/dev/zero", f"of={out}.dd", "bs=16M", f"count={label_bytes >> 24}", "conv=fsync"],
        "segment": [*mpi, "segment", src, *band, "--out", out + ".mask.nhdr", "--report", out + ".segment.json"],
        "label": [*mpi, "label", src, *band, "--type", args.type, "--out", out + ".labels.nhdr", "--report",
                  out + ".label.json"],
        "label old": [*mpi, "label", src, *band, "--type", args.type, "--brick", "1,1536,2048", "--out-hint",
                      "direct_write=0", "--out",
                      out + ".labels.nhdr", "--report", out + ".label-old.json"],
    }
    if args.tables_from:
        with open(args.tables_from) as f:
            saved = json.load(f)
        times, reports = saved["times"], saved["reports"]
    else:
        times, reports = measure(args, cases, raw, out)
    median = {name: statistics.median(values) for name, values in times.items()}
    rows = []
    for name in cases:
        report = reports.get(name, {})
        ranks = report.get("ranks", [])
        ranks = ranks if isinstance(ranks, list) else []
        peak = max((r.get("max_rss_bytes", 0) for r in ranks), default=report.get("peak_rss_bytes") or 0)
        bricks = report.get("bricks", {}) if isinstance(report.get("bricks"), dict) else {}
        output = report.get("output", {}) if isinstance(report.get("output"), dict) else {}
        row = {"case": name, "seconds": median[name], "all_seconds": times[name],
               "x_segment": median[name] / median["segment"], "peak_rss_mib_per_rank": peak / 2**20,
               "bricks": bricks.get("count"), "brick_zyx": bricks.get("shape_zyx"),
               "writer": output.get("backend"), "reader": report.get("backend")}
        for key in ("label_s", "write_s"):
            if ranks and key in ranks[0]:
                row[key] = max(r[key] for r in ranks)
        rows.append(row)
    objects = reports.get("label", {}).get("table_rows")
    lines = [f"`volseg label` against `volseg segment` on {raw} ({nbytes / 2**30:.0f} GiB f32, {DIMS}^3), "
             f"band {LO} <= v <= {HI}, 2 ranks, evicted from the page cache before every run, "
             f"median of {args.repeat} interleaved rounds; labels as {args.type} ({label_bytes / 2**30:.0f} GiB), "
             f"{objects} objects. `/usr/bin/python3 bench/label_large.py --repeat {args.repeat} --type {args.type}`",
             "",
             "| case | s (median) | runs | x segment | GB/s of input | pass 1 s | pass 2 s | peak MiB a rank "
             "| bricks | brick z,y,x | reader / writer |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        rate = nbytes / r["seconds"] / 1e9 if r["case"] != "dd write" else label_bytes / r["seconds"] / 1e9
        lines.append(f"| {r['case']} | {r['seconds']:.1f} | {' '.join(f'{s:.1f}' for s in r['all_seconds'])} "
                     f"| {r['x_segment']:.2f} | {rate:.2f} | {cell(r.get('label_s'))} "
                     f"| {cell(r.get('write_s'))} | {cell(r['peak_rss_mib_per_rank'], 0)} "
                     f"| {r['bricks'] or ''} | {','.join(map(str, r['brick_zyx'] or []))} "
                     f"| {r['reader'] or ''} / {r['writer'] or ''} |")
    lines += ["", "(dd write's GB/s is of the bytes it wrote, as many as the labels.)"]
    text = "\n".join(lines) + "\n"
    print(text)
    with open(args.out + ".md", "w") as f:
        f.write(text)
    with open(args.out + ".json", "w") as f:
        json.dump({"input": raw, "bytes": nbytes, "label_type": args.type, "objects": objects, "rows": rows}, f,
                  indent=1)


if __name__ == "__main__":
    main()
