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
import os
import random
import subprocess
import sys
import tempfile

import pfs_sim as ps

from common import SOURCE_DIR, build_dir, dataclasses_replace, exe, nnls, plan, savefig, write_csv  # noqa: F401
from validate import fitted_local, run_validate, segment_trace

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
            tpos, _ = ps.simulate_posix(prof, ranks, pieces_of, sim=ps.Sim(
                prof, node_of=(lambda r: 0) if one_node else (lambda r: r // per_node)))
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
