# SPDX-License-Identifier: MIT
"""volseg-bench pfs-sim: the parallel-file-system simulator's studies (bench/pfs/pfs_sim.py).

  validate   fit the `local` profile on some of this machine's NCIO points (measured now, 4 ranks,
             POSIX and two-phase) and predict the others; fit read speed on one traced `segment`
             run and predict another (other rank count, other backend). Prints the error of every
             held-out point; writes pfs-validation.csv/.md/.png and pfs-local.json (the fit).
  partition  Liao & Choudhary: ROMIO's coll_perf (3D block-partitioned ints, 128^3 and 100^3 per
             rank) written and read collectively at 16-1024 ranks, four ranks per node, one
             aggregator per node, with even, aligned, static-cyclic and group-cyclic file domains,
             under the Lustre-like and GPFS-like profiles. Writes pfs-partition.csv/.png.
  latency    Ching et al.: the nc-nc default point (4 ranks, 4096 regions of 8 B, 128 B apart),
             two-phase against POSIX one call per region, on a networked file system whose cost
             per call goes from 1 us to 1 ms. Writes pfs-latency.csv/.png.
  realms     Coloma et al.: persistent file realms and realm alignment against even, over a run of
             collective writes whose aggregate access region moves from call to call, with lock
             state carried from call to call. Writes pfs-realms.csv/.png.
  access     Fogal & Krüger §2: T_access and R_trans of this machine's disk, fitted on O_DIRECT reads
             of 4 KiB to 16 MiB at random offsets, and their constant G; then their Advised (mmap +
             WILLNEED on the next brick) against Raw (mmap) on a desktop disk and on this one,
             modelled. Writes access-time.csv/.json/.png and advise-model.csv.
  segment    traces of `volseg segment` with posix, mpiio and twophase on 2 and 4 ranks (measured
             here), replayed on this machine's fitted profile and the Lustre- and GPFS-like ones:
             where the two-phase backend stands against the independent ones. pfs-segment.csv.
  all        every study above.

Every figure it prints comes from the model; `validate` says how far the model is from this machine.
"""
import argparse
import json
import math
import os
import random
import subprocess
import sys
import tempfile

import pfs_sim as ps

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE_DIR = os.path.dirname(os.path.dirname(HERE))
MPI_ENV = {"OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1",
           "OMPI_MCA_rmaps_base_oversubscribe": "1", "OMPI_MCA_btl_vader_single_copy_mechanism": "none"}


def build_dir():
    return os.environ.get("VOLSEG_BUILD_DIR", os.path.join(SOURCE_DIR, "build"))


def exe(name, sub):
    path = os.path.join(build_dir(), sub, name)
    if not os.access(path, os.X_OK):
        sys.exit("volseg-bench pfs-sim: %s is not built (set VOLSEG_BUILD_DIR or build first)" % path)
    return path


def plan(ranks, pattern="ncio", direction="write", hints=(), aggregators=0, ranks_per_node=4, **shape):
    """Runs volseg-twophase-plan; returns (facts, plan)."""
    cmd = [exe("volseg-twophase-plan", "bench"), "--ranks", str(ranks), "--pattern", pattern,
           "--direction", direction, "--ranks-per-node", str(ranks_per_node)]
    if aggregators:
        cmd += ["--aggregators", str(aggregators)]
    for k, v in shape.items():
        cmd += ["--" + k, str(v)]
    for h in hints:
        cmd += ["--hint", h]
    result = subprocess.run(cmd, capture_output=True, text=True)
    if result.returncode != 0:
        sys.exit("volseg-bench pfs-sim: %s: %s" % (" ".join(cmd), result.stderr.strip()))
    return ps.read_plan(result.stdout.splitlines())


def savefig(fig, path):
    tmp = path + ".part.png"
    fig.savefig(tmp, dpi=110, bbox_inches="tight")
    os.replace(tmp, path)


def write_csv(path, rows):
    import csv
    keys = list(rows[0].keys())
    for r in rows:
        keys += [k for k in r if k not in keys]
    tmp = path + ".part"
    with open(tmp, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=keys)
        w.writeheader()
        w.writerows(rows)
    os.replace(tmp, path)


# ---------------------------------------------------------------------------------------------------
# validate: the local profile against this machine

NCIO_POINTS = [  # (case, count, size, spacing); 4 ranks, both methods at each
    ("nc-nc", 256, 8, 128), ("nc-nc", 1024, 8, 128), ("nc-nc", 4096, 8, 128), ("nc-nc", 16384, 8, 128),
    ("nc-nc", 65536, 8, 128), ("nc-nc", 4096, 64, 128), ("nc-nc", 4096, 512, 128), ("nc-nc", 4096, 4096, 128),
    ("nc-nc", 4096, 8, 8), ("nc-nc", 4096, 8, 2048), ("c-c", 4096, 8, 128), ("nc-c", 4096, 8, 128),
    ("c-nc", 4096, 8, 128), ("nc-c", 16384, 8, 128),
]
# Fitted on these; every other point is predicted.
FIT = {("posix", "nc-nc", 256, 8, 128), ("posix", "nc-nc", 65536, 8, 128), ("posix", "nc-nc", 4096, 4096, 128),
       ("posix", "c-c", 4096, 8, 128), ("posix", "nc-c", 4096, 8, 128), ("twophase", "nc-nc", 256, 8, 128),
       ("twophase", "nc-nc", 65536, 8, 128), ("twophase", "nc-nc", 4096, 4096, 128),
       ("twophase", "c-c", 4096, 8, 128), ("twophase", "nc-nc", 4096, 8, 2048), ("twophase", "nc-c", 4096, 8, 128)}
# The local profile's free parameters, each entering the model linearly: (name, how to set it from x).
PARAMS = [
    ("server_latency", lambda x: {"server_latency": x}),
    ("s_per_byte", lambda x: {"server_bw": 1 / x if x else float("inf")}),
    ("sync_latency", lambda x: {"sync_latency": x}),
    ("sync_s_per_byte", lambda x: {"sync_bw": 1 / x if x else float("inf")}),
    ("piece_cpu", lambda x: {"piece_cpu": x}),
    ("exchange_s_per_byte", lambda x: {"exchange_bw": 1 / x if x else float("inf")}),
    ("collective", lambda x: {"collective": x}),
    ("alloc_partial", lambda x: {"alloc_partial": x}),
    ("alloc_full", lambda x: {"alloc_full": x}),
    ("bounce", lambda x: {"bounce": x}),
    ("pack_cpu", lambda x: {"pack_cpu": x}),
]
RANKS = 4


def local_profile(x):
    over = {}
    for (_, setter), v in zip(PARAMS, x):
        over.update(setter(v))
    over.update(call_cpu=0.0, call_rtt=0.0)
    return ps.profile("local", **over)


def touched_pages(pieces_of, ranks):
    pages = set()
    for r in range(ranks):
        for o, n in pieces_of(r):
            pages.update(range(o // 4096, (o + n - 1) // 4096 + 1))
    return len(pages) * 4096


def predict_ncio(x, method, case, count, size, spacing, cache):
    prof = local_profile(x)
    if method == "posix":
        pieces_of = ps.ncio_pieces(case, count, size, spacing, RANKS)
        if "sync" not in cache:
            cache["sync"] = touched_pages(pieces_of, RANKS)
        # NCIO merges pieces contiguous in both file and memory: c-c is one call per rank
        t, _ = ps.simulate_posix(prof, RANKS, pieces_of, sync_bytes=cache["sync"])
        return t
    if "plan" not in cache:
        cache["plan"] = plan(RANKS, "ncio", "write", ["lock_size=4096"], aggregators=1, ranks_per_node=RANKS,
                             case=case, count=count, size=size, spacing=spacing)
    facts, p = cache["plan"]
    t, _ = ps.simulate_plan(prof, facts, p, ranks_per_node=RANKS)
    return t


def measure_ncio(args):
    """Times of this machine for every point and method: volseg-ncio, 4 ranks, files opened per write
    and synced after it (Ching et al.'s rules), trimmed mean of --reps; --passes passes over all the
    points, averaged. Returns ({point: seconds}, {point: spread between passes})."""
    passes = [measure_ncio_once(args) for _ in range(args.passes)]
    mean = {k: sum(p[k] for p in passes) / len(passes) for k in passes[0]}
    spread = {k: (max(p[k] for p in passes) - min(p[k] for p in passes)) / mean[k] for k in mean}
    return mean, spread


def measure_ncio_once(args):
    import csv
    import io
    rows = {}
    for case, count, size, spacing in NCIO_POINTS:
        cmd = ["mpirun", "--bind-to", "none", "-np", str(RANKS), exe("volseg-ncio", "bench"), "--dir", args.dir,
               "--reps", str(args.reps), "--case", case, "--count", str(count), "--size", str(size),
               "--spacing", str(spacing), "--method", "posix,twophase-auto", "--header"]
        result = subprocess.run(cmd, env=dict(os.environ, **MPI_ENV), capture_output=True, text=True)
        if result.returncode != 0:
            sys.exit("volseg-bench pfs-sim: %s failed: %s" % (" ".join(cmd), result.stderr.strip()[-400:]))
        for r in csv.DictReader(io.StringIO(result.stdout)):
            method = "posix" if r["method"] == "posix" else "twophase"
            rows[(method, case, count, size, spacing)] = float(r["time_s"])
        print("  measured %s count %d size %d spacing %d" % (case, count, size, spacing), file=sys.stderr, flush=True)
    return rows


def nnls(A, b, iters=200):
    """Least squares with x >= 0 (Lawson & Hanson's active set), numpy only."""
    import numpy as np
    m, n = A.shape
    x = np.zeros(n)
    passive = np.zeros(n, bool)
    for _ in range(iters):
        w = A.T @ (b - A @ x)
        if passive.all() or (w[~passive] <= 1e-12).all():
            break
        j = int(np.argmax(np.where(passive, -np.inf, w)))
        passive[j] = True
        while True:
            z = np.zeros(n)
            z[passive] = np.linalg.lstsq(A[:, passive], b, rcond=None)[0]
            if (z[passive] > 0).all():
                x = z
                break
            neg = passive & (z <= 0)
            alpha = np.min(x[neg] / (x[neg] - z[neg]))
            x = x + alpha * (z - x)
            passive &= x > 1e-15
    return x


def fit_local(measured, caches):
    """The model is linear in the parameters on one server: each point's time is sum_j x_j f_j, with
    f_j the model's time when parameter j is 1 and the others 0. Fit relative errors, x >= 0."""
    import numpy as np
    keys = [k for k in measured if k in FIT]
    F = np.zeros((len(keys), len(PARAMS)))
    for i, k in enumerate(keys):
        for j in range(len(PARAMS)):
            e = [0.0] * len(PARAMS)
            e[j] = 1.0
            F[i, j] = predict_ncio(e, *k, caches.setdefault(k[1:], {}))
    m = np.array([measured[k] for k in keys])
    scale = F.max(axis=0)
    scale[scale == 0] = 1
    x = nnls(F / scale / m[:, None], np.ones(len(keys))) / scale
    return list(x)


def segment_trace(args, backend, ranks, volume, tag, brick=None):
    out = os.path.join(args.dir, "seg-%s.nhdr" % tag)
    trace = os.path.join(args.dir, "seg-%s.csv" % tag)
    cmd = ["mpirun", "--bind-to", "none", "-np", str(ranks), exe("volseg", "app/cli"), "segment", volume,
           "--lo", "0.2", "--hi", "0.6", "--out", out, "--backend", backend, "--force", "--progress", "none",
           "--quiet", "--trace", trace] + (["--brick", brick] if brick else [])
    for _ in range(2):  # the first run warms the page cache; the second is traced and kept
        result = subprocess.run(cmd, env=dict(os.environ, **MPI_ENV), capture_output=True, text=True)
        if result.returncode != 0:
            sys.exit("volseg-bench pfs-sim: %s failed: %s" % (" ".join(cmd), result.stderr.strip()[-400:]))
    return trace


def fit_calls(calls, op):
    """Per-call latency and seconds per byte of one kind of call in a traced run: the latency is the
    median duration of its small calls (under 64 KiB), the rest of the measured total is per byte, so
    the fitted calls add up to the run's measured time."""
    import statistics
    sel = [c for r in calls.values() for c in r if c[0] == op and c[4] > 0]
    if not sel:
        return 0.0, 0.0
    small = [c[2] for c in sel if c[4] < 64 * 1024]
    lat = statistics.median(small) if small else 0.0
    total, nbytes = sum(c[2] for c in sel), sum(c[4] for c in sel)
    return lat, max(0.0, total - lat * len(sel)) / nbytes


def run_validate(args):
    import numpy as np
    os.makedirs(args.dir, exist_ok=True)
    print("validate: measuring %d NCIO points x 2 methods on this machine (%d ranks, %d reps each)" %
          (len(NCIO_POINTS), RANKS, args.reps), file=sys.stderr)
    measured, spread = measure_ncio(args)
    caches = {}
    x = fit_local(measured, caches)
    rows = []
    for k, m in sorted(measured.items(), key=lambda kv: (kv[0][0], kv[0][1:])):
        p = predict_ncio(x, *k, caches.setdefault(k[1:], {}))
        rows.append({"kind": "ncio", "method": k[0], "case": k[1], "count": k[2], "size": k[3], "spacing": k[4],
                     "role": "fit" if k in FIT else "predicted", "measured_s": "%.6g" % m, "model_s": "%.6g" % p,
                     "error": "%+.3f" % (p / m - 1), "pass_spread": "%.3f" % spread[k]})
    # segment: read speed fitted on a 1-rank posix run, predicted for 2 ranks (posix) and 2 ranks (mmap)
    volume = os.path.join(args.dir, "seg-volume.nhdr")
    gen = [exe("volseg", "app/cli"), "generate", volume, "--dims", str(args.segment_dims), "--force"]
    if subprocess.run(gen, capture_output=True).returncode != 0:
        sys.exit("volseg-bench pfs-sim: %s failed" % " ".join(gen))
    base = ps.read_trace(segment_trace(args, "posix", 1, volume, "np1"))
    read_lat, read_spb = fit_calls(base, "read")
    write_lat, write_spb = fit_calls(base, "write")
    # segment's own profile, fitted on its 1-rank run: reads copy from the page cache (one channel: the
    # memory bus, which two cores share), mask writes go straight to the device (O_DIRECT, one channel)
    seg_prof = ps.profile("local", read_bw=1 / read_spb, read_latency=read_lat, read_channels=1,
                          server_bw=1 / write_spb if write_spb else float("inf"), server_latency=write_lat, channels=1,
                          call_cpu=0.0, call_rtt=0.0)
    for tag, ranks, brick, role in (("np1", 1, None, "fit"), ("np2", 2, None, "predicted"),
                                    ("np2-small-bricks", 2, "8,%d,%d" % (args.segment_dims, args.segment_dims),
                                     "predicted")):
        calls = base if role == "fit" else ps.read_trace(segment_trace(args, "posix", ranks, volume, tag, brick))
        sim, meas = ps.simulate_trace(seg_prof, calls, ranks_per_node=ranks)
        s, m = max(sim.values()), max(meas.values())
        rows.append({"kind": "segment", "method": "posix", "case": tag, "count": "", "size": "",
                     "spacing": "", "role": role, "measured_s": "%.6g" % m, "model_s": "%.6g" % s,
                     "error": "%+.3f" % (s / m - 1), "pass_spread": ""})
    held = [abs(float(r["error"])) for r in rows if r["role"] == "predicted"]
    ncio_held = [abs(float(r["error"])) for r in rows if r["role"] == "predicted" and r["kind"] == "ncio"]
    params = {p[0]: v for p, v in zip(PARAMS, x)}
    params.update(segment_read_latency=read_lat, segment_read_s_per_byte=read_spb,
                  segment_write_latency=write_lat, segment_write_s_per_byte=write_spb)
    os.makedirs(args.out, exist_ok=True)
    write_csv(os.path.join(args.out, "pfs-validation.csv"), rows)
    with open(os.path.join(args.out, "pfs-local.json.part"), "w") as f:
        json.dump(params, f, indent=1)
    os.replace(os.path.join(args.out, "pfs-local.json.part"), os.path.join(args.out, "pfs-local.json"))
    print("\nlocal profile fitted on %d points:" % sum(1 for r in rows if r["role"] == "fit"))
    for k, v in params.items():
        print("  %-20s %.4g" % (k, v))
    print("\n%-8s %-9s %-16s %6s %5s %7s %-9s %11s %11s %7s %7s" % (
        "kind", "method", "case", "count", "size", "spacing", "role", "measured s", "model s", "error", "spread"))
    for r in rows:
        print("%-8s %-9s %-16s %6s %5s %7s %-9s %11s %11s %7s %7s" % (
            r["kind"], r["method"], r["case"], r["count"], r["size"], r["spacing"], r["role"], r["measured_s"],
            r["model_s"], r["error"], r["pass_spread"]))
    print("\nheld-out NCIO points: %d, median |error| %.1f%%, max %.1f%% (bar: every one within 25%%: %s)" %
          (len(ncio_held), 100 * float(np.median(ncio_held)), 100 * max(ncio_held),
           "met" if max(ncio_held) <= 0.25 else "NOT met"))
    print("all held-out points (NCIO and segment): %d, max |error| %.1f%%" % (len(held), 100 * max(held)))
    plot_validation(rows, os.path.join(args.out, "pfs-validation.png"))
    write_validation_md(rows, params, os.path.join(args.out, "pfs-validation.md"))
    return rows


def dataclasses_replace(prof, **kw):
    import dataclasses
    known = {f.name for f in dataclasses.fields(prof)}
    return dataclasses.replace(prof, **{k: v for k, v in kw.items() if k in known})


def plot_validation(rows, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(6.4, 5.6))
    marks = {("ncio", "posix"): "o", ("ncio", "twophase"): "s", ("segment", "posix"): "^"}
    for role, color in (("fit", "#888888"), ("predicted", "#d62728")):
        for key, mk in marks.items():
            pts = [(float(r["measured_s"]), float(r["model_s"])) for r in rows
                   if r["role"] == role and (r["kind"], r["method"]) == key]
            if pts:
                ax.scatter(*zip(*pts), marker=mk, color=color, label="%s %s (%s)" % (key[0], key[1], role))
    lo = min(min(float(r["measured_s"]), float(r["model_s"])) for r in rows) / 1.5
    hi = max(max(float(r["measured_s"]), float(r["model_s"])) for r in rows) * 1.5
    ax.plot([lo, hi], [lo, hi], "k-", lw=0.8)
    ax.plot([lo, hi], [lo * 1.25, hi * 1.25], "k:", lw=0.8, label="+-25%")
    ax.plot([lo, hi], [lo * 0.75, hi * 0.75], "k:", lw=0.8)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("measured on this machine (s)")
    ax.set_ylabel("simulated, local profile (s)")
    ax.set_title("PFS simulator against this machine\n(grey: fitted on; red: predicted)", fontsize=10)
    ax.legend(fontsize=7, loc="upper left")
    savefig(fig, path)
    plt.close(fig)


def write_validation_md(rows, params, path):
    lines = ["# PFS simulator: validation against this machine", "",
             "Command: `bench/volseg-bench pfs-sim validate`. The `local` profile's parameters are fitted on the "
             "rows marked *fit*; every *predicted* row is a point the fit never saw.", "",
             "| kind | method | case | count | size | spacing | role | measured s | model s | error | spread between passes |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append("| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |" % tuple(
            r[k] for k in ("kind", "method", "case", "count", "size", "spacing", "role", "measured_s", "model_s",
                           "error", "pass_spread")))
    lines += ["", "Fitted parameters:", ""] + ["- `%s` = %.4g" % kv for kv in params.items()] + [""]
    with open(path + ".part", "w") as f:
        f.write("\n".join(lines))
    os.replace(path + ".part", path)


# ---------------------------------------------------------------------------------------------------
# partition: Liao & Choudhary

PARTITIONS = ["even", "aligned", "static-cyclic", "group-cyclic"]
PART_STYLE = {"even": ("#1f77b4", "o"), "aligned": ("#2ca02c", "s"), "static-cyclic": ("#ff7f0e", "^"),
              "group-cyclic": ("#d62728", "v"), "persistent": ("#9467bd", "D")}


def run_partition(args):
    ranks_list = [r for r in (16, 32, 64, 128, 256, 512, 1024, 2048, 4096) if r <= args.max_ranks]
    rows = []
    for fs in ("lustre", "gpfs"):
        prof = ps.profile(fs)
        for edge in (128, 100):
            for direction in ("write", "read"):
                for ranks in ranks_list:
                    for part in PARTITIONS:
                        hints = ["partition=" + part, "lock_size=%d" % prof.stripe_size,
                                 "io_servers=%d" % prof.stripe_count, "cb_buffer_size=4M"]
                        facts, p = plan(ranks, "coll_perf", direction, hints, ranks_per_node=4, edge=edge)
                        t, sim = ps.simulate_plan(prof, facts, p, ranks_per_node=4)
                        nbytes = int(facts["bytes"])
                        rows.append({"fs": fs, "edge": edge, "direction": direction, "ranks": ranks,
                                     "aggregators": facts["aggregators"], "partition": part, "bytes": nbytes,
                                     "seconds": "%.6g" % t, "bw_mbs": "%.1f" % (nbytes / t / 1e6),
                                     "calls": sim.stats["calls"], "lock_rpcs": sim.stats["lock_rpcs"],
                                     "revocations": sim.stats["revocations"], "rmw_reads": sim.stats["rmw_reads"]})
                    best = max((r for r in rows[-len(PARTITIONS):]), key=lambda r: float(r["bw_mbs"]))
                    print("  %-6s %3d^3 %-5s %5d ranks: best %-13s %s" % (
                        fs, edge, direction, ranks, best["partition"],
                        "  ".join("%s %s" % (r["partition"], r["bw_mbs"]) for r in rows[-len(PARTITIONS):])),
                        file=sys.stderr, flush=True)
    os.makedirs(args.out, exist_ok=True)
    write_csv(os.path.join(args.out, "pfs-partition.csv"), rows)
    plot_partition(rows, os.path.join(args.out, "pfs-partition.png"))
    summarize_partition(rows)
    return rows


def best_of(rows, **sel):
    group = [r for r in rows if all(str(r[k]) == str(v) for k, v in sel.items())]
    return max(group, key=lambda r: float(r["bw_mbs"]))["partition"] if group else None


def summarize_partition(rows):
    print("\nLiao & Choudhary's claims against the model (best method per case):")
    ranks_list = sorted({int(r["ranks"]) for r in rows})
    for fs, direction in (("lustre", "write"), ("gpfs", "write"), ("lustre", "read"), ("gpfs", "read")):
        for edge in (128, 100):
            bests = [best_of(rows, fs=fs, direction=direction, ranks=n, edge=edge) for n in ranks_list]
            print("  %-6s %-5s %3d^3: %s" % (fs, direction, edge,
                                           " ".join("%d:%s" % (n, b) for n, b in zip(ranks_list, bests))))


def plot_partition(rows, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    panels = [(fs, d, e) for d in ("write", "read") for fs in ("lustre", "gpfs") for e in (128, 100)]
    fig, axes = plt.subplots(2, 4, figsize=(17, 7.6), sharex=True)
    for ax, (fs, d, e) in zip(axes.flat, panels):
        for part in PARTITIONS:
            pts = sorted((int(r["ranks"]), float(r["bw_mbs"])) for r in rows
                         if r["fs"] == fs and r["direction"] == d and int(r["edge"]) == e and r["partition"] == part)
            if pts:
                c, m = PART_STYLE[part]
                ax.plot(*zip(*pts), marker=m, color=c, label=part)
        ax.set_xscale("log", base=2)
        ax.set_title("%s-like, %s, %d^3 ints per rank" % ("Lustre" if fs == "lustre" else "GPFS", d, e), fontsize=9)
        ax.set_ylabel("MB/s (simulated)")
        ax.grid(alpha=0.3)
    for ax in axes[1]:
        ax.set_xlabel("MPI ranks (4 per node, one aggregator per node)")
    axes[0][0].legend(fontsize=8)
    fig.suptitle("Liao & Choudhary's coll_perf on the simulated file systems (volseg's planner, bench/pfs; "
                 "Lustre-like: 64 servers, GPFS-like: 54, 512 KiB stripes, cb_buffer_size 4 MiB)", fontsize=10)
    savefig(fig, path)
    plt.close(fig)


# ---------------------------------------------------------------------------------------------------
# latency: Ching et al., two-phase against POSIX as the cost per call grows

LATENCIES = [1e-6, 3e-6, 10e-6, 30e-6, 100e-6, 300e-6, 1e-3]


def feynman(rtt):
    """Ching et al.'s Feynman cluster, as a profile: PVFS2 (no locks) on 16 servers of 64 KiB strips,
    Myrinet-2000 links, synced writes (their best synced rate: 389 MB/s over 16 servers)."""
    return ps.profile("nfs", stripe_size=64 * ps.KiB, stripe_count=16, server_bw=389e6 / 16, server_latency=20e-6,
                      client_bw=250e6, call_cpu=2e-6, call_rtt=rtt, lock="none", exchange_bw=250e6,
                      collective=10e-6, piece_cpu=0.1e-6, cores=2, sync_latency=5e-3, sync_bw=389e6)


def fitted_local(args):
    """The local profile that `validate` fitted (pfs-local.json in --out)."""
    path = os.path.join(args.out, "pfs-local.json")
    if not os.path.exists(path):
        sys.exit("volseg-bench pfs-sim: %s is missing: run `volseg-bench pfs-sim validate` first" % path)
    params = json.load(open(path))
    return local_profile([params[name] for name, _ in PARAMS])


def run_latency(args):
    """Two curves: this machine's fitted profile with a network cost per call added (what volseg's
    own NCIO default would do on a networked file system: the bar), and a PVFS2-like profile of Ching
    et al.'s 2004 cluster, whose synced storage makes the sieved extent's bytes count."""
    rows = []
    local = fitted_local(args)
    cases = [("this machine + network", 4, 4, lambda rtt: dataclasses_replace(local, call_rtt=rtt)),
             ("PVFS2-like (2004)", 4, 1, feynman), ("PVFS2-like (2004)", 64, 2, feynman)]
    for label, ranks, per_node, make in cases:
        facts, p = plan(ranks, "ncio", "write", ["lock_size=%d" % (4096 if per_node == ranks else 65536)],
                        ranks_per_node=per_node, case="nc-nc", count=4096, size=8, spacing=128)
        pieces_of = ps.ncio_pieces("nc-nc", 4096, 8, 128, ranks)
        for rtt in LATENCIES:
            prof = make(rtt)
            tp, _ = ps.simulate_plan(prof, facts, p, ranks_per_node=per_node)
            one_node = per_node == ranks
            tpos, _ = simulate_posix_on(ps.Sim(prof, node_of=(lambda r: 0) if one_node else (lambda r: r // per_node)),
                                        prof, ranks, pieces_of)
            rows.append({"profile": label, "ranks": ranks, "call_latency_s": rtt, "twophase_s": "%.6g" % tp,
                         "posix_s": "%.6g" % tpos, "ratio": "%.2f" % (tpos / tp), "aggregators": facts["aggregators"]})
            print("  %-24s %2d ranks, %6.0f us per call: two-phase %.4f s, POSIX %.4f s, ratio %.1f" % (
                label, ranks, rtt * 1e6, tp, tpos, tpos / tp), file=sys.stderr, flush=True)
    os.makedirs(args.out, exist_ok=True)
    write_csv(os.path.join(args.out, "pfs-latency.csv"), rows)
    plot_latency(rows, os.path.join(args.out, "pfs-latency.png"))
    for label in ("this machine + network", "PVFS2-like (2004)"):
        at = [r for r in rows if r["profile"] == label and r["ranks"] == 4 and abs(r["call_latency_s"] - 100e-6) < 1e-9][0]
        print("simulated two-phase / POSIX at 100 us per call, nc-nc default, 4 ranks, %s: %sx%s" % (
            label, at["ratio"], " (bar 50x: %s)" % ("met" if float(at["ratio"]) >= 50 else "NOT met")
            if label.startswith("this") else ""))
    return rows


def simulate_posix_on(sim, prof, ranks, pieces_of):
    import heapq
    heap = [(0.0, r, 0) for r in range(ranks)]
    lists = {r: pieces_of(r) for r in range(ranks)}
    end, written = 0.0, 0
    while heap:
        t, r, i = heapq.heappop(heap)
        o, n = lists[r][i]
        t = sim.call(r, "write", o, n, t)
        written += n
        end = max(end, t)
        if i + 1 < len(lists[r]):
            heapq.heappush(heap, (t, r, i + 1))
    return end + ps.sync_time(prof, written), sim


def plot_latency(rows, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(7.4, 4.8))
    styles = {("this machine + network", 4): ("#d62728", "o", "-"), ("PVFS2-like (2004)", 4): ("#1f77b4", "s", "--"),
              ("PVFS2-like (2004)", 64): ("#1f77b4", "^", ":")}
    for (label, ranks), (color, marker, ls) in styles.items():
        pts = [(r["call_latency_s"] * 1e6, float(r["ratio"])) for r in rows
               if r["profile"] == label and r["ranks"] == ranks]
        if pts:
            ax.plot(*zip(*pts), marker=marker, color=color, ls=ls, label="%s, %d ranks" % (label, ranks))
    ax.axhline(50, color="k", ls=":", lw=1, label="bar: 50x at 100 us")
    ax.axvline(100, color="k", ls=":", lw=0.6)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("file system cost per call added (us)")
    ax.set_ylabel("two-phase speed / POSIX (one call per region)")
    ax.set_title("Ching et al.'s nc-nc default (4096 regions of 8 B, 128 B apart, per rank), synced writes;\n"
                 "simulated: this machine's fitted profile with a network in front, and a PVFS2-like 2004 cluster",
                 fontsize=9)
    ax.grid(alpha=0.3, which="both")
    ax.legend(fontsize=8)
    savefig(fig, path)
    plt.close(fig)


# ---------------------------------------------------------------------------------------------------
# realms: Coloma et al. §6.4

def run_realms(args):
    steps, points, elements, element = 32, 2048, 100, 32
    # Lustre with its client write-back cache: a revoked lock first writes back the dirty pages under it
    prof = ps.profile("lustre", stripe_size=2 * ps.MiB, stripe_count=16, write_back=True)
    rows = []
    for ranks in (16, 32, 48, 64):
        aggs = ranks // 2  # "half of the total clients were also used as aggregators"
        extent = points * steps * elements * element
        variants = {
            "even": ["partition=even"],
            "aligned": ["partition=aligned"],
            "persistent (unaligned)": ["partition=persistent", "lock_size=1"],
            "persistent + aligned": ["partition=persistent", "lock_size=%d" % prof.stripe_size],
        }
        for name, hints in variants.items():
            sim, t = None, 0.0
            for step in range(steps):
                lock = [] if any(h.startswith("lock_size=") for h in hints) else ["lock_size=%d" % prof.stripe_size]
                facts, p = plan(ranks, "realms", "write", hints + lock + ["ds=always"], aggregators=aggs,
                                points=points, elements=elements, element=element, steps=steps, step=step)
                t, sim = ps.simulate_plan(prof, facts, p, ranks_per_node=1, sim=sim, t_start=t,
                                          flush=step == steps - 1)
            nbytes = steps * points * elements * element
            rows.append({"ranks": ranks, "aggregators": aggs, "realms": name, "seconds": "%.6g" % t,
                         "bw_mbs": "%.2f" % (nbytes / t / 1e6), "lock_rpcs": sim.stats["lock_rpcs"],
                         "revocations": sim.stats["revocations"], "flushed_mb": "%.1f" % (sim.stats.get("flushed", 0) / 1e6)})
            print("  %2d ranks %-24s %8.2f MB/s  lock RPCs %6d revocations %6d, %8.1f MB written back" % (
                ranks, name, nbytes / t / 1e6, sim.stats["lock_rpcs"], sim.stats["revocations"],
                sim.stats.get("flushed", 0) / 1e6), file=sys.stderr, flush=True)
    os.makedirs(args.out, exist_ok=True)
    write_csv(os.path.join(args.out, "pfs-realms.csv"), rows)
    plot_realms(rows, os.path.join(args.out, "pfs-realms.png"))
    return rows


def plot_realms(rows, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    names = list(dict.fromkeys(r["realms"] for r in rows))
    ranks = sorted({r["ranks"] for r in rows})
    fig, ax = plt.subplots(figsize=(7.5, 4.4))
    width = 0.8 / len(names)
    for i, name in enumerate(names):
        vals = [float([r for r in rows if r["ranks"] == n and r["realms"] == name][0]["bw_mbs"]) for n in ranks]
        ax.bar([k + i * width for k in range(len(ranks))], vals, width, label=name)
    ax.set_xticks([k + 0.4 - width / 2 for k in range(len(ranks))])
    ax.set_xticklabels([str(n) for n in ranks])
    ax.set_xlabel("MPI ranks (half of them aggregators)")
    ax.set_ylabel("MB/s of useful data (simulated)")
    ax.set_title("Coloma et al. §6.4: 32 collective writes (one per time step), data sieving on,\n"
                 "simulated Lustre-like file system, 2 MiB stripes on 16 servers", fontsize=9)
    ax.legend(fontsize=8)
    savefig(fig, path)
    plt.close(fig)


# ---------------------------------------------------------------------------------------------------
# segment: where the two-phase backend stands against the independent ones on a striped file system

def run_segment(args):
    """Traces of `volseg segment` with posix, mpiio and twophase (measured here, warm input), replayed
    on this machine's fitted profile and on the Lustre- and GPFS-like profiles: the simulated I/O time
    of the slowest rank, the measured gaps (compute, waiting) kept."""
    os.makedirs(args.dir, exist_ok=True)
    volume = os.path.join(args.dir, "seg-volume.nhdr")
    gen = [exe("volseg", "app/cli"), "generate", volume, "--dims", str(args.segment_dims), "--force"]
    if subprocess.run(gen, capture_output=True).returncode != 0:
        sys.exit("volseg-bench pfs-sim: %s failed" % " ".join(gen))
    local = fitted_local(args)
    params = json.load(open(os.path.join(args.out, "pfs-local.json")))
    local = dataclasses_replace(local, read_bw=1 / params["segment_read_s_per_byte"],
                                read_latency=params["segment_read_latency"], read_channels=1)
    profiles = {"this machine (fitted)": local,
                "Lustre-like": ps.profile("lustre", stripe_size=4 * ps.MiB, stripe_count=64),
                "GPFS-like": ps.profile("gpfs")}
    rows = []
    for ranks in (2, 4):
        for backend in ("posix", "mpiio", "twophase"):
            calls = ps.read_trace(segment_trace(args, backend, ranks, volume, "%s-np%d" % (backend, ranks)))
            measured = max(sum(c[2] for c in v) for v in calls.values())
            for name, prof in profiles.items():
                sim, _ = ps.simulate_trace(prof, calls, ranks_per_node=ranks if name.startswith("this") else 1)
                rows.append({"ranks": ranks, "backend": backend, "profile": name, "measured_io_s": "%.4f" % measured,
                             "simulated_io_s": "%.4f" % max(sim.values()),
                             "calls": sum(len(v) for v in calls.values())})
                print("  %d ranks %-8s on %-22s simulated I/O %.4f s (measured here %.4f s)" % (
                    ranks, backend, name, max(sim.values()), measured), file=sys.stderr, flush=True)
    os.makedirs(args.out, exist_ok=True)
    write_csv(os.path.join(args.out, "pfs-segment.csv"), rows)
    print("\nslowest rank's I/O seconds, twophase / posix and twophase / mpiio per profile:")
    for ranks in (2, 4):
        for name in profiles:
            get = lambda b: float([r for r in rows if r["ranks"] == ranks and r["backend"] == b
                                   and r["profile"] == name][0]["simulated_io_s"])
            print("  %d ranks, %-22s twophase %.4f s: %.2fx posix's time, %.2fx mpiio's" % (
                ranks, name, get("twophase"), get("twophase") / get("posix"), get("twophase") / get("mpiio")))
    return rows


# ---------------------------------------------------------------------------------------------------
# access: Fogal & Krüger §2 on this disk, and their Advised against Raw

ACCESS_SIZES = [4 * ps.KiB, 16 * ps.KiB, 64 * ps.KiB, 256 * ps.KiB, ps.MiB, 4 * ps.MiB, 16 * ps.MiB]


def measure_access(path, size, samples):
    """Median seconds of one O_DIRECT read of `size` bytes at a random aligned offset of a cold file,
    queue depth one: T_access + size / R_trans, as Fogal & Krüger model a disk."""
    import mmap
    import statistics
    import time
    fd = os.open(path, os.O_RDONLY | os.O_DIRECT)
    try:
        length = os.fstat(fd).st_size
        buf = mmap.mmap(-1, size)  # page-aligned, as O_DIRECT needs
        times = []
        rng = random.Random(size)
        for _ in range(samples):
            off = rng.randrange(0, (length - size) // 4096) * 4096
            t = time.perf_counter()
            if os.preadv(fd, [buf], off) != size:
                sys.exit("volseg-bench pfs-sim: short read of %s" % path)
            times.append(time.perf_counter() - t)
        return statistics.median(times)
    finally:
        os.close(fd)


def run_access(args):
    import numpy as np
    os.makedirs(args.dir, exist_ok=True)
    path = os.path.join(args.dir, "access-test.bin")
    want = args.access_mib * ps.MiB
    if not os.path.exists(path) or os.path.getsize(path) != want:
        block = os.urandom(4 * ps.MiB)
        with open(path + ".part", "wb") as f:
            for _ in range(want // len(block)):
                f.write(block)
            f.flush()
            os.fsync(f.fileno())
        os.replace(path + ".part", path)
    rows = []
    for size in ACCESS_SIZES:
        samples = max(8, min(200, int(256 * ps.MiB // size)))
        t = measure_access(path, size, samples)
        rows.append({"bytes": size, "samples": samples, "median_s": "%.6g" % t})
        print("  O_DIRECT read of %8d B at a random offset: %.3f ms (median of %d)" % (size, t * 1e3, samples),
              file=sys.stderr, flush=True)
    A = np.array([[1.0, r["bytes"]] for r in rows])
    b = np.array([float(r["median_s"]) for r in rows])
    t_access, s_per_byte = nnls(A / b[:, None], np.ones(len(b)))  # relative errors: small reads count too
    r_trans = 1 / s_per_byte / 1e6  # MB/s, as the paper writes it
    g = t_access * 1e3 * r_trans / 10  # G = F/M * T_access[ms] * R_trans[MB/s] / 10
    for r in rows:
        r["model_s"] = "%.6g" % (t_access + r["bytes"] * s_per_byte)
    print("\nFogal & Krüger §2 on this disk: T_access = %.3f ms, R_trans = %.0f MB/s, so G = F/M x %.1f "
          "(their hypothetical desktop disk: 8 ms, 100 MB/s, G = F/M x 80)" % (t_access * 1e3, r_trans, g))
    for label, m in (("10 MB blocks", 10 * 1e6), ("900 B blocks", 900)):
        def speedup(ta, rate):  # a layout that makes a third of the seeks (F = 3), one seek per block before
            return (ta + m / rate) / (ta / 3 + m / rate)
        print("  a layout with 3x fewer seeks speeds up reads of %s by %.3fx here, %.3fx on the paper's disk "
              "(paper: %s)" % (label, speedup(t_access, 1 / s_per_byte), speedup(8e-3, 100e6),
                               "2.6%" if m > 1e6 else "almost 3x"))
    # Advised against Raw, modelled: the paper's desktop disk and this disk, 1 to 4 ranks.
    volume, brick = 1 * ps.GiB, 8 * ps.MiB
    adv_rows = []
    for disk, t_acc, rate in (("desktop disk (8 ms, 100 MB/s)", 8e-3, 100e6),
                              ("this disk (measured)", t_access, 1 / s_per_byte)):
        prof = ps.profile("local", read_bw=rate, read_latency=0.0, server_bw=rate, seek=t_acc, read_channels=1,
                          call_cpu=0.0, call_rtt=0.0, free_past_eof=True)
        for ranks in (1, 2, 4):
            for compute in (200e6, 2e9):
                raw = ps.simulate_bricks(prof, ranks, volume, brick, compute, advised=False)
                adv = ps.simulate_bricks(prof, ranks, volume, brick, compute, advised=True)
                adv_rows.append({"disk": disk, "ranks": ranks, "compute_mbs": compute / 1e6, "raw_s": "%.4g" % raw,
                                 "advised_s": "%.4g" % adv, "advised_speedup": "%.2f" % (raw / adv)})
                print("  %-30s %d rank(s), threshold at %4.0f MB/s: Raw %.2f s, Advised %.2f s: %.2fx" % (
                    disk, ranks, compute / 1e6, raw, adv, raw / adv))
    os.makedirs(args.out, exist_ok=True)
    write_csv(os.path.join(args.out, "access-time.csv"), rows)
    write_csv(os.path.join(args.out, "advise-model.csv"), adv_rows)
    with open(os.path.join(args.out, "access-time.json.part"), "w") as f:
        json.dump({"t_access_ms": t_access * 1e3, "r_trans_mbs": r_trans, "g_constant": g}, f, indent=1)
    os.replace(os.path.join(args.out, "access-time.json.part"), os.path.join(args.out, "access-time.json"))
    plot_access(rows, t_access, s_per_byte, os.path.join(args.out, "access-time.png"))


def plot_access(rows, t_access, s_per_byte, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(6.6, 4.4))
    x = [r["bytes"] for r in rows]
    ax.plot(x, [float(r["median_s"]) * 1e3 for r in rows], "o", color="#d62728", label="measured (median)")
    xs = [2 ** k for k in range(12, 25)]
    ax.plot(xs, [(t_access + v * s_per_byte) * 1e3 for v in xs], "-", color="#1f77b4",
            label="T_access + M / R_trans = %.3f ms + M / %.0f MB/s" % (t_access * 1e3, 1 / s_per_byte / 1e6))
    ax.plot(xs, [(8e-3 + v / 100e6) * 1e3 for v in xs], "--", color="#888888", label="the paper's disk: 8 ms + M / 100 MB/s")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("bytes per read (O_DIRECT, random offset, one at a time)")
    ax.set_ylabel("ms per read")
    ax.set_title("Fogal & Krüger §2's access-time model on this machine's disk", fontsize=10)
    ax.legend(fontsize=8)
    ax.grid(alpha=0.3, which="both")
    savefig(fig, path)
    plt.close(fig)


# ---------------------------------------------------------------------------------------------------

def main(argv=None):
    parser = argparse.ArgumentParser(prog="volseg-bench pfs-sim", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("study", choices=["validate", "partition", "latency", "realms", "access", "segment", "all"])
    parser.add_argument("--out", default=os.path.join(SOURCE_DIR, "docs", "results"), help="CSV, PNG, MD go here")
    parser.add_argument("--dir", default=os.path.join(tempfile.gettempdir(), "volseg-pfs"), help="scratch files")
    parser.add_argument("--reps", type=int, default=10, help="validate: NCIO repetitions per point (default 10)")
    parser.add_argument("--passes", type=int, default=2, help="validate: passes over the NCIO points, averaged")
    parser.add_argument("--segment-dims", type=int, default=384, help="validate: the traced segment volume's edge")
    parser.add_argument("--access-mib", type=int, default=2048, help="access: the test file's size in MiB")
    parser.add_argument("--max-ranks", type=int, default=1024, help="partition: the largest job (default 1024)")
    args = parser.parse_args(argv)
    studies = {"validate": run_validate, "partition": run_partition, "latency": run_latency, "realms": run_realms,
               "access": run_access, "segment": run_segment}
    for name in (["validate", "partition", "latency", "realms", "access", "segment"] if args.study == "all"
                 else [args.study]):
        if name not in studies:
            sys.exit("volseg-bench pfs-sim: %s is not written yet" % name)
        studies[name](args)


if __name__ == "__main__":
    main()
