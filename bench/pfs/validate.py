# SPDX-License-Identifier: MIT
"""volseg-bench pfs-sim validate: the `local` profile fitted on some of this machine's NCIO points
(measured now) and checked on the others, and on traced `segment` runs (docs/pfs.md)."""
import json
import os
import subprocess
import sys

import pfs_sim as ps
from common import MPI_ENV, dataclasses_replace, exe, nnls, plan, savefig, write_csv

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


def fitted_local(args):
    """The local profile that `validate` fitted (pfs-local.json in --out)."""
    path = os.path.join(args.out, "pfs-local.json")
    if not os.path.exists(path):
        sys.exit("volseg-bench pfs-sim: %s is missing: run `volseg-bench pfs-sim validate` first" % path)
    params = json.load(open(path))
    return local_profile([params[name] for name, _ in PARAMS])
