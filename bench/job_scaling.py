#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Strong scaling of whole jobs: `volseg segment`, `volseg label` (6- and
26-connected) and `volseg pyramid` at each rank count, whole process, best of
--rounds (the 16-core study: segment and pyramid on a 4 GiB f32 volume, label
on a 768^3 random mask of density 0.3, about 26 million objects at 6).

Every run's output is checked against the 1-rank run's (mask and labels byte
for byte, the pyramid's brick tables), so a rank count that computes wrongly
fails the study. The launcher is a template: mpirun here, or on a cluster
--launcher "srun -n {n}".

Outputs (--out): job_scaling.csv (every run), job_scaling.md (best seconds,
speedup and efficiency against 1 rank, and the bar: label at 16 ranks >= 10x
1 rank) and job_scaling.png (speedup against ranks, with the ideal line).

  /usr/bin/python3 bench/job_scaling.py --ranks 1,2,4,8,16          # the study (needs 16 cores to mean much)
  /usr/bin/python3 bench/job_scaling.py --ranks 1,2 --size 128 --label-size 128 --out /tmp/js   # a smoke run
"""
import argparse
import csv
import hashlib
import json
import os
import shlex
import subprocess
import sys
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MPI_ENV = {"OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1",
           "OMPI_MCA_rmaps_base_oversubscribe": "1", "OMPI_MCA_btl_vader_single_copy_mechanism": "none"}


FIELDS = ["job", "ranks", "round", "seconds", "same_as_first", "merge_s", "rss_rank0_mib", "rss_max_mib"]


def files_of(path):
    """A file, or every file under a folder (a Zarr store) in sorted order."""
    if not os.path.isdir(path):
        return [path]
    return sorted(os.path.join(d, f) for d, _, names in os.walk(path) for f in names)


def digest(paths):
    h = hashlib.md5()
    for path in (f for p in paths for f in files_of(p)):
        h.update(os.path.relpath(path, os.path.dirname(paths[0])).encode())
        with open(path, "rb") as f:
            for block in iter(lambda: f.read(1 << 24), b""):
                h.update(block)
    return h.hexdigest()


def write_mask(path, size, density, seed=7):
    """A random u8 mask of size^3 as a raw NRRD, written plane block by plane block."""
    rng = np.random.default_rng(seed)
    raw = os.path.splitext(path)[0] + ".raw"
    with open(raw, "wb") as f:
        for z in range(0, size, 32):
            n = min(32, size - z)
            f.write((rng.random((n, size, size), dtype=np.float32) < density).astype(np.uint8).tobytes())
    with open(path, "w") as f:
        f.write("NRRD0004\ntype: uint8\ndimension: 3\nsizes: %d %d %d\nendian: little\nencoding: raw\n"
                "data file: %s\n\n" % (size, size, size, os.path.basename(raw)))


def jobs(args, work):
    """name -> (argv after 'volseg', files whose bytes must match 1 rank's)."""
    volume, mask = os.path.join(work, "v.nhdr"), os.path.join(work, "mask.nhdr")
    out = lambda name: os.path.join(work, name)  # noqa: E731
    return {
        "segment": (["segment", volume, "--lo", "0.25", "--hi", "0.5", "--out", out("m.nhdr"), "--force"],
                    [out("m.raw")]),
        # The same mask as Zarr (one file a chunk): no shared file whose writes serialize in the kernel.
        "segment zarr": (["segment", volume, "--lo", "0.25", "--hi", "0.5", "--out", out("m.zarr"), "--force"],
                         [out("m.zarr")]),
        "label 6": (["label", mask, "--mask-input", "--connectivity", "6", "--out", out("l6.nhdr"), "--force"],
                    [out("l6.raw")]),
        "label 26": (["label", mask, "--mask-input", "--connectivity", "26", "--out", out("l26.nhdr"), "--force"],
                     [out("l26.raw")]),
        "label 6 zarr": (["label", mask, "--mask-input", "--connectivity", "6", "--out", out("l6.zarr"), "--force"],
                         [out("l6.zarr")]),
        "label 26 zarr": (["label", mask, "--mask-input", "--connectivity", "26", "--out", out("l26.zarr"),
                           "--force"], [out("l26.zarr")]),
        "pyramid": (["pyramid", volume, "--pyramid-dir", out("v.pyramid"), "--force"],
                    [os.path.join(out("v.pyramid"), "bricks.bin"), os.path.join(out("v.pyramid"), "histograms.u32")]),
    }


def plot(path, rows, ranks, cores):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(7, 5))
    for job in dict.fromkeys(r["job"] for r in rows):
        best = {n: min(r["seconds"] for r in rows if r["job"] == job and r["ranks"] == n) for n in ranks}
        ax.plot(ranks, [best[ranks[0]] / best[n] for n in ranks], marker="o", label=job)
    ax.plot(ranks, [n / ranks[0] for n in ranks], "k--", linewidth=1, label="ideal")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log", base=2)
    ax.set_xticks(ranks, [str(n) for n in ranks])
    ax.set_xlabel("MPI ranks")
    ax.set_ylabel("speedup over %d rank(s), whole process" % ranks[0])
    ax.set_title("volseg strong scaling, whole process (%d cores)" % cores)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--ranks", default="1,2,4,8,16")
    parser.add_argument("--jobs", default="segment,label 6,label 26,pyramid",
                        help="comma-separated, among: segment, segment zarr, label 6, label 26, label 6 zarr, "
                             "label 26 zarr, pyramid")
    parser.add_argument("--size", type=int, default=1024, help="edge of the f32 volume (default 1024: 4 GiB)")
    parser.add_argument("--label-size", type=int, default=768, help="edge of the random mask (default 768)")
    parser.add_argument("--density", type=float, default=0.3)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--launcher", default="mpirun --oversubscribe --bind-to none -np {n}")
    parser.add_argument("--dir", default="/tmp/volseg-job-scaling")
    parser.add_argument("--out", default=os.path.join(ROOT, "docs", "results"))
    parser.add_argument("--volseg", default=os.path.join(ROOT, "build", "app", "cli", "volseg"))
    parser.add_argument("--from-csv", help="write the table and plot from a study's job_scaling.csv, running nothing")
    parser.add_argument("--cores", type=int, help="the study machine's cores, for the table (default: this one's)")
    args = parser.parse_args()
    if args.from_csv:
        with open(args.from_csv) as f:
            rows = [dict(r, ranks=int(r["ranks"]), round=int(r["round"]), seconds=float(r["seconds"]),
                         same_as_first=r["same_as_first"] == "True") for r in csv.DictReader(f)]
        wanted = list(dict.fromkeys(r["job"] for r in rows))
        ranks = sorted({r["ranks"] for r in rows})
        ranks = [n for n in ranks if all(any(r["job"] == j and r["ranks"] == n for r in rows) for j in wanted)]
        os.makedirs(args.out, exist_ok=True)
        return summarise(args, rows, wanted, ranks)
    if "{n}" not in args.launcher:
        sys.exit("job_scaling: --launcher must contain {n}, the rank count")
    ranks = [int(n) for n in args.ranks.split(",")]
    wanted = [j.strip() for j in args.jobs.split(",")]
    os.makedirs(args.dir, exist_ok=True)
    os.makedirs(args.out, exist_ok=True)
    env = dict(os.environ, **MPI_ENV)
    volume = os.path.join(args.dir, "v.nhdr")
    if not os.path.exists(volume):
        print("generating %s (%d^3 f32, smooth) ..." % (volume, args.size), flush=True)
        subprocess.run(shlex.split(args.launcher.replace("{n}", str(max(ranks)))) +
                       [args.volseg, "generate", volume, "--field", "smooth", "--dims", "%d,%d,%d" % ((args.size,) * 3),
                        "--quiet"], env=env, check=True)
    mask = os.path.join(args.dir, "mask.nhdr")
    if not os.path.exists(mask):
        print("writing %s (%d^3 random mask, density %g) ..." % (mask, args.label_size, args.density), flush=True)
        write_mask(mask, args.label_size, args.density)
    table = jobs(args, args.dir)
    unknown = [j for j in wanted if j not in table]
    if unknown:
        sys.exit("job_scaling: unknown job(s) %s; choose from %s" % (unknown, ", ".join(table)))
    rows, reference = [], {}
    report = os.path.join(args.dir, "label.json")
    # Each run is appended as it ends: a study cut short keeps what it measured.
    with open(os.path.join(args.out, "job_scaling.csv"), "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=FIELDS)
        writer.writeheader()
        for round_ in range(args.rounds):
            for job in wanted:
                argv, outputs = table[job]
                labelling = job.startswith("label")
                for n in ranks:
                    command = (shlex.split(args.launcher.replace("{n}", str(n))) + [args.volseg] + argv + ["--quiet"]
                               + (["--report", report] if labelling else []))
                    start = time.perf_counter()
                    proc = subprocess.run(command, env=env, capture_output=True, text=True)
                    seconds = time.perf_counter() - start
                    if proc.returncode != 0:
                        sys.exit("job_scaling: %s failed:\n%s" % (" ".join(command), proc.stderr))
                    got = digest(outputs)
                    same = reference.setdefault(job, got) == got
                    row = {"job": job, "ranks": n, "round": round_ + 1, "seconds": seconds, "same_as_first": same,
                           "merge_s": "", "rss_rank0_mib": "", "rss_max_mib": ""}
                    if labelling:  # the merge's time and every rank's peak memory, from the job's report
                        with open(report) as r:
                            per_rank = json.load(r)["ranks"]
                        row["merge_s"] = max(x["merge_s"] for x in per_rank)
                        row["rss_rank0_mib"] = per_rank[0]["max_rss_bytes"] >> 20
                        row["rss_max_mib"] = max(x["max_rss_bytes"] for x in per_rank) >> 20
                    rows.append(row)
                    writer.writerow(row)
                    f.flush()
                    print("  round %d: %-9s %2d rank(s) %8.2f s%s" % (round_ + 1, job, n, seconds,
                                                                     "" if same else "  OUTPUT DIFFERS"), flush=True)
    summarise(args, rows, wanted, ranks)


def summarise(args, rows, wanted, ranks):
    lines = ["# volseg strong scaling, whole process (`bench/job_scaling.py`)", "",
             "%s cores, best of %d; segment and pyramid on %d^3 f32, label on a %d^3 random mask (density %g)."
             % (args.cores or os.cpu_count(), max(r["round"] for r in rows), args.size, args.label_size, args.density),
             "",
             "| job | " + " | ".join("%d" % n for n in ranks) + " | speedup at %d | efficiency |" % ranks[-1],
             "|---|" + "---|" * (len(ranks) + 2)]
    bars = []
    for job in wanted:
        best = {n: min(r["seconds"] for r in rows if r["job"] == job and r["ranks"] == n) for n in ranks}
        speedup = best[ranks[0]] / best[ranks[-1]]
        lines.append("| %s | %s | %.2fx | %.0f%% |" % (job, " | ".join("%.2f s" % best[n] for n in ranks), speedup,
                                                       100 * speedup * ranks[0] / ranks[-1]))
        if job.startswith("label") and ranks[0] == 1 and ranks[-1] == 16:
            bars.append("- %s at 16 ranks: %.2fx 1 rank (bar >= 10x): %s" % (job, speedup,
                                                                             "PASS" if speedup >= 10 else "MISS"))
    labels = [r for r in rows if r["job"].startswith("label") and r["rss_rank0_mib"] != ""]
    if labels:
        lines += ["", "Label: the merge's seconds and the peak memory per rank (MiB), best run:", "",
                  "| job | ranks | merge | rank 0 | largest rank |", "|---|---|---|---|---|"]
        for job in dict.fromkeys(r["job"] for r in labels):
            for n in ranks:
                runs = [r for r in labels if r["job"] == job and r["ranks"] == n]
                if runs:
                    best = min(runs, key=lambda r: r["seconds"])
                    lines.append("| %s | %d | %.2f s | %d | %d |" % (job, n, float(best["merge_s"]),
                                                                    int(best["rss_rank0_mib"]), int(best["rss_max_mib"])))
    lines += ["", *bars, "", "Every output equals the first run's: %s" % all(r["same_as_first"] for r in rows), ""]
    text = "\n".join(lines)
    with open(os.path.join(args.out, "job_scaling.md"), "w") as f:
        f.write(text)
    try:
        plot(os.path.join(args.out, "job_scaling.png"), rows, ranks, args.cores or os.cpu_count())
    except ImportError:  # a compute node without matplotlib: --from-csv plots later
        print("job_scaling: no matplotlib here; plot with --from-csv")
    print(text)
    if not all(r["same_as_first"] for r in rows):
        sys.exit("job_scaling: an output differs from the first run's")


if __name__ == "__main__":
    main()
