#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""volseg-bench scaling: strong scaling of `volseg segment` per backend, like Fogal & Krüger's
Figures 2-5 (per-process time with min/max bars against process count, per backend).

One volume per format is generated once (raw NRRD, NetCDF CDF-5, NetCDF-4), then every backend
segments its format's volume at every rank count, warm (input in the page cache) and cold
(evicted with POSIX_FADV_DONTNEED after a sync), --rounds times in an order shuffled per round.
The launcher is a template: the default runs mpirun here; on a cluster pass
--launcher "srun -n {n}" (scripts/cluster/scaling-study.sbatch does).

Every run's mask is checked against the first run of the study: the report's voxel counts
(valid, in range) must be equal, so a backend that segments wrongly fails the study.

Outputs (--out): scaling.csv (one row per run, with every rank's total, open, read, compute, write
and close seconds), scaling.md (medians, speedup, efficiency), scaling-time.png (per-rank time
with min/max bars), scaling-speedup.png, scaling-efficiency.png. Ranks beyond this machine's
cores are oversubscribed; the plots say so.

Run: bench/volseg-bench scaling [--ranks 1,2,4,8] [--backends ...] [--size 512] [--rounds 3]
"""
import argparse
import csv
import json
import os
import random
import shlex
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE_DIR = os.path.dirname(HERE)
sys.path.insert(0, HERE)
from cold_bench import evict  # noqa: E402

MPI_ENV = {"OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1",
           "OMPI_MCA_rmaps_base_oversubscribe": "1", "OMPI_MCA_btl_vader_single_copy_mechanism": "none"}
FORMATS = {"raw": ("v.nhdr", "v.raw", []), "cdf5": ("v-cdf5.nc", "v-cdf5.nc", ["--format", "cdf5"]),
           "netcdf4": ("v-nc4.nc", "v-nc4.nc", ["--format", "netcdf4"])}
BACKENDS = {"posix": "raw", "mmap": "raw", "mmap-advise": "raw", "ranged-uring": "raw", "mpiio": "raw",
            "twophase": "raw", "pnetcdf": "cdf5", "netcdf4": "netcdf4"}
PHASES = ["open", "read", "compute", "write", "close"]
STYLE = {"posix": ("#222222", "o"), "mmap": ("#1f77b4", "s"), "mmap-advise": ("#17becf", "D"),
         "ranged-uring": ("#2ca02c", "^"), "mpiio": ("#9467bd", "v"), "twophase": ("#d62728", "P"),
         "pnetcdf": ("#ff7f0e", "X"), "netcdf4": ("#8c564b", "*")}


def find_volseg(args):
    if args.volseg:
        return args.volseg
    path = os.path.join(os.environ.get("VOLSEG_BUILD_DIR", os.path.join(SOURCE_DIR, "build")), "app", "cli", "volseg")
    if not os.access(path, os.X_OK):
        sys.exit("volseg-bench scaling: %s is not built (--volseg or VOLSEG_BUILD_DIR)" % path)
    return path


def run(cmd, env=None):
    return subprocess.run(cmd, env=dict(os.environ, **MPI_ENV, **(env or {})), capture_output=True, text=True)


def generate(args, volseg, fmt):
    name, data, extra = FORMATS[fmt]
    path = os.path.join(args.dir, name)
    stamp = path + ".size"
    if os.path.exists(path) and os.path.exists(stamp) and open(stamp).read() == str(args.size):
        return path, os.path.join(args.dir, data)
    cmd = args.launch(2) + [volseg, "generate", path, "--dims", str(args.size), "--field", "smooth", "--force"] + extra
    result = run(cmd)
    if result.returncode != 0:
        sys.exit("volseg-bench scaling: %s failed: %s" % (" ".join(cmd), result.stderr.strip()[-300:]))
    with open(stamp, "w") as f:
        f.write(str(args.size))
    return path, os.path.join(args.dir, data)


def one_run(args, volseg, backend, path, data, ranks, cache):
    out = os.path.join(args.dir, "mask-%s.%s" % (backend, "nc" if path.endswith(".nc") else "nhdr"))
    report = os.path.join(args.dir, "report-%s.json" % backend)
    if os.path.exists(report):
        os.unlink(report)
    if cache == "cold":
        evict(data)
    else:  # warm: make sure the input is in the page cache (a read costs little when it already is)
        with open(data, "rb") as f:
            while f.read(64 << 20):
                pass
    cmd = args.launch(ranks) + [volseg, "segment", path, "--lo", "0.2", "--hi", "0.6", "--out", out,
                                "--backend", backend, "--force", "--quiet", "--report", report]
    start = time.perf_counter()
    result = run(cmd)
    wall = time.perf_counter() - start
    row = {"backend": backend, "format": BACKENDS[backend], "cache": cache, "ranks": ranks, "wall_s": "%.4f" % wall}
    if result.returncode != 0 or not os.path.exists(report):
        # the last line that says something (mpirun frames its messages in lines of dashes)
        lines = [x.strip() for x in result.stderr.splitlines() if x.strip().strip("-")]
        row["error"] = ("exit %d: " % result.returncode) + (" / ".join(lines[-3:]) if lines else "no message")
        return row
    r = json.load(open(report))
    row.update({"job_s": "%.4f" % r["seconds"], "backend_used": r["backend"], "bytes_read": sum(
        p["bytes_read"] for p in r["per_rank"]), "valid": r["stats"]["valid"], "in_range": r["stats"]["in_range"]})
    for phase in ["total"] + PHASES:
        vals = [p.get(phase + "_s", 0.0) for p in r["per_rank"]]
        row[phase + "_min"] = "%.4f" % min(vals)
        row[phase + "_median"] = "%.4f" % statistics.median(vals)
        row[phase + "_max"] = "%.4f" % max(vals)
    row["per_rank_total_s"] = " ".join("%.4f" % p["total_s"] for p in r["per_rank"])
    for f in (out, out.replace(".nhdr", ".raw")):
        if os.path.exists(f):
            os.unlink(f)  # every run writes a new mask, as a job would
    return row


def main(argv=None):
    parser = argparse.ArgumentParser(prog="volseg-bench scaling", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--ranks", default="1,2,4,8", help="rank counts (default 1,2,4,8)")
    parser.add_argument("--backends", default=",".join(BACKENDS), help="default: all eight")
    parser.add_argument("--cache", default="warm,cold", help="warm, cold or both (default)")
    parser.add_argument("--size", type=int, default=512, help="edge of the float32 cube (default 512: 512 MiB)")
    parser.add_argument("--rounds", type=int, default=3, help="runs per point, medians reported (default 3)")
    parser.add_argument("--launcher", default="mpirun --oversubscribe --bind-to none -np {n}",
                        help='how to start n ranks; {n} is replaced (cluster: "srun -n {n}")')
    parser.add_argument("--dir", default="/tmp/volseg-scaling", help="volumes and masks (needs about 3.5x the volume)")
    parser.add_argument("--out", default=os.path.join(SOURCE_DIR, "docs", "results"), help="CSV, MD and PNG go here")
    parser.add_argument("--volseg", help="the volseg executable (default: the build tree's)")
    parser.add_argument("--plot-only", action="store_true", help="redraw from <out>/scaling.csv")
    args = parser.parse_args(argv)
    args.command = " ".join(shlex.quote(a) for a in (sys.argv[1:] if argv is None else argv))
    if "{n}" not in args.launcher:
        sys.exit("volseg-bench scaling: --launcher must contain {n}, the rank count")
    args.launch = lambda n: shlex.split(args.launcher.replace("{n}", str(n)))
    os.makedirs(args.out, exist_ok=True)
    csv_path = os.path.join(args.out, "scaling.csv")
    if args.plot_only:
        rows = list(csv.DictReader(open(csv_path)))
        report(rows, args)
        return 0
    ranks_list = [int(x) for x in args.ranks.split(",")]
    backends = [b for b in args.backends.split(",") if b]
    for b in backends:
        if b not in BACKENDS:
            sys.exit("volseg-bench scaling: unknown backend %r (known: %s)" % (b, ", ".join(BACKENDS)))
    caches = [c for c in args.cache.split(",") if c]
    if any(c not in ("warm", "cold") for c in caches):
        sys.exit("volseg-bench scaling: --cache takes warm and/or cold")
    os.makedirs(args.dir, exist_ok=True)
    volseg = find_volseg(args)
    volumes = {fmt: generate(args, volseg, fmt) for fmt in sorted({BACKENDS[b] for b in backends})}
    points = [(b, n, c) for b in backends for n in ranks_list for c in caches]
    total = len(points) * args.rounds
    rows, done, reference, failures = [], 0, None, 0
    for rnd in range(args.rounds):
        order = points[:]
        random.Random(rnd).shuffle(order)
        for backend, ranks, cache in order:
            done += 1
            path, data = volumes[BACKENDS[backend]]
            row = one_run(args, volseg, backend, path, data, ranks, cache)
            row["round"] = rnd
            if "error" not in row:
                counts = (row["valid"], row["in_range"])
                reference = reference or counts
                if counts != reference:
                    row["error"] = "mask differs: %d valid, %d in range against %d, %d" % (*counts, *reference)
            if "error" in row:
                failures += 1
                print("[%d/%d] %s %s np=%d: FAILED: %s" % (done, total, backend, cache, ranks, row["error"]),
                      file=sys.stderr, flush=True)
            else:
                print("[%d/%d] %-12s %-4s np=%d  %.3f s (per rank %s-%s)" % (
                    done, total, backend, cache, ranks, float(row["job_s"]), row["total_min"], row["total_max"]),
                    file=sys.stderr, flush=True)
            rows.append(row)
    write_csv(csv_path, rows)
    report(rows, args)
    if failures:
        print("volseg-bench scaling: %d run(s) failed (see the error column of %s)" % (failures, csv_path),
              file=sys.stderr)
        return 1
    return 0


def write_csv(path, rows):
    keys = []
    for r in rows:
        keys += [k for k in r if k not in keys]
    with open(path + ".part", "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=keys)
        w.writeheader()
        w.writerows(rows)
    os.replace(path + ".part", path)


def medians(rows):
    """{(backend, cache, ranks): medians of (job s, per-rank min, per-rank max, per-rank median)} of good runs."""
    groups = {}
    for r in rows:
        if r.get("error"):
            continue
        groups.setdefault((r["backend"], r["cache"], int(r["ranks"])), []).append(r)
    out = {}
    for k, g in groups.items():
        out[k] = tuple(statistics.median(float(r[c]) for r in g)
                       for c in ("job_s", "total_min", "total_max", "total_median"))
    return out


def report(rows, args):
    med = medians(rows)
    cores = os.cpu_count() or 1
    seen = {r["backend"] for r in rows}
    backends = [b for b in BACKENDS if b in seen]
    caches = list(dict.fromkeys(r["cache"] for r in rows))
    ranks_list = sorted({int(r["ranks"]) for r in rows})
    lines = ["# Strong scaling of `volseg segment` (Fogal & Krüger, Figures 2-5)", "",
             "Command: `bench/volseg-bench scaling %s`; %d round(s), medians. This machine has %d cores: "
             "**runs with more than %d ranks are oversubscribed**, so their speedup measures contention, "
             "not parallel hardware." % (args.command, args.rounds, cores, cores), ""]
    for cache in caches:
        lines += ["## %s cache" % cache, "",
                  "| backend | " + " | ".join("%d rank%s s (speedup, efficiency)" % (n, "s" if n > 1 else "")
                                             for n in ranks_list) + " |",
                  "|---|" + "---|" * len(ranks_list)]
        for b in backends:
            base = med.get((b, cache, ranks_list[0]))
            cells = []
            for n in ranks_list:
                m = med.get((b, cache, n))
                if not m:
                    cells.append("failed")
                elif base:
                    s = base[0] / m[0] * ranks_list[0]
                    cells.append("%.3f (%.2fx, %.0f%%)" % (m[0], s, 100 * s / n))
                else:
                    cells.append("%.3f" % m[0])
            lines.append("| %s | %s |" % (b, " | ".join(cells)))
        lines.append("")
    with open(os.path.join(args.out, "scaling.md.part"), "w") as f:
        f.write("\n".join(lines))
    os.replace(os.path.join(args.out, "scaling.md.part"), os.path.join(args.out, "scaling.md"))
    print("\n".join(lines))
    plot(med, backends, caches, ranks_list, cores, args.out)


def plot(med, backends, caches, ranks_list, cores, out):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    note = "ranks > %d are oversubscribed on this %d-core machine" % (cores, cores)
    for kind in ("time", "speedup", "efficiency"):
        fig, axes = plt.subplots(1, len(caches), figsize=(6.2 * len(caches), 4.6), squeeze=False)
        for ax, cache in zip(axes[0], caches):
            for i, b in enumerate(backends):
                pts = [(n, med[(b, cache, n)]) for n in ranks_list if (b, cache, n) in med]
                if not pts:
                    continue
                color, marker = STYLE.get(b, ("#444444", "o"))
                xs = [n * (1 + 0.03 * (i - len(backends) / 2)) for n, _ in pts]  # spread the bars apart
                base = med.get((b, cache, ranks_list[0]))
                if kind == "time":
                    ys = [m[3] for _, m in pts]
                    err = [[max(0.0, m[3] - m[1]) for _, m in pts], [max(0.0, m[2] - m[3]) for _, m in pts]]
                    ax.errorbar(xs, ys, yerr=err, marker=marker, color=color, capsize=3, label=b)
                elif base:
                    sp = [base[0] / m[0] * ranks_list[0] for n, m in pts]
                    ys = sp if kind == "speedup" else [s / n for s, (n, _) in zip(sp, pts)]
                    ax.plot(xs, ys, marker=marker, color=color, label=b)
            if kind == "speedup":
                ax.plot(ranks_list, ranks_list, "k:", lw=0.8, label="ideal")
            if kind == "efficiency":
                ax.axhline(1.0, color="k", ls=":", lw=0.8)
            ax.axvspan(cores + 0.5, max(ranks_list) * 1.3, color="#eeeeee", zorder=0)
            ax.set_xscale("log", base=2)
            ax.set_xticks(ranks_list)
            ax.set_xticklabels([str(n) for n in ranks_list])
            ax.set_xlabel("MPI ranks (shaded: oversubscribed)")
            ax.set_ylabel({"time": "seconds per rank (median, min-max bars)", "speedup": "speedup over %d rank" % ranks_list[0],
                           "efficiency": "parallel efficiency"}[kind])
            ax.set_title("%s cache" % cache, fontsize=10)
            ax.grid(alpha=0.3)
        axes[0][0].legend(fontsize=7, ncol=2)
        fig.suptitle("volseg segment, strong scaling (%s); %s" % (kind, note), fontsize=10)
        path = os.path.join(out, "scaling-%s.png" % kind)
        fig.savefig(path + ".part.png", dpi=100, bbox_inches="tight")
        os.replace(path + ".part.png", path)
        plt.close(fig)


if __name__ == "__main__":
    sys.exit(main())
