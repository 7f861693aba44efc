#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""In situ off the simulation's critical path: volseg-sim's Gray-Scott at
256^3 on one simulation rank, 50 steps, the full pipeline every step
(threshold, statistics, labels, a mask written), against the same
simulation without the hook, in interleaved runs (medians):
  base          no hook, 1 rank
  sync          the synchronous hook, 1 rank
  async         --async: a helper thread analyses a copy, 1 rank
  async-borrow  --async --borrow: the thread reads the simulation's array
  ranks         --analysis-ranks 1 on 2 ranks: a copy sent to the analysis rank
  ranks-borrow  --analysis-ranks 1 --borrow: sent from the simulation's array
  ranks-borrow-nocma  the same with Open MPI's shared-memory single copy off
                (OMPI_MCA_btl_vader_single_copy_mechanism=none, as containers
                that forbid ptrace need): the sender must push the data
  skip          --analysis-ranks 1 --queue 1 --when-full skip with an image
                every step (an analysis slower than the simulation, on purpose)
Each hooked run reports the hand-off's time per step on the simulation rank
(volseg-sim --report), set beside a memcpy of the block measured here.
Writes docs/results/insitu_offload.{json,md,png}. Run under xvfb-run for the
skip variant's images:
  xvfb-run -a /usr/bin/python3 bench/insitu_offload_bench.py --sim build/app/insitu/volseg-sim
"""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import tempfile
import time

import numpy as np

p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
p.add_argument("--sim", default="build/app/insitu/volseg-sim")
p.add_argument("--dims", default="256")
p.add_argument("--steps", type=int, default=50)
p.add_argument("--repeat", type=int, default=3)
p.add_argument("--variants", default="base,sync,async,async-borrow,ranks,ranks-borrow,ranks-borrow-nocma,skip")
p.add_argument("--out", default="docs/results/insitu_offload")
p.add_argument("--dir", default=None, help="work folder (default: a temporary one)")
p.add_argument("--plot-only", action="store_true", help="redraw OUT.md and OUT.png from OUT.json")
a = p.parse_args()
a.sim = os.path.abspath(a.sim)

work = a.dir or tempfile.mkdtemp(prefix="volseg-offload-bench-")
pipeline = ["--insitu", "--lo", "0.1", "--hi", "1", "--label", "--stats", "stats.csv", "--out", "masks/m_%04d.nhdr",
            "--force"]
VARIANTS = {  # name: (ranks, hook options, environment)
    "base": (1, [], {}),
    "sync": (1, pipeline, {}),
    "async": (1, pipeline + ["--async"], {}),
    "async-borrow": (1, pipeline + ["--async", "--borrow"], {}),
    "ranks": (2, pipeline + ["--analysis-ranks", "1"], {}),
    "ranks-borrow": (2, pipeline + ["--analysis-ranks", "1", "--borrow"], {}),
    "ranks-borrow-nocma": (2, pipeline + ["--analysis-ranks", "1", "--borrow"],
                           {"OMPI_MCA_btl_vader_single_copy_mechanism": "none"}),
    "skip": (2, pipeline + ["--analysis-ranks", "1", "--queue", "1", "--when-full", "skip", "--image",
                            "images/f_%04d.png", "--size", "384x384"], {}),
}
variants = a.variants.split(",")
base_env = {k: v for k, v in os.environ.items() if k != "OMPI_MCA_btl_vader_single_copy_mechanism"}
base_env.update(OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")


def memcpy_seconds(nbytes, repeat=9):
    """A warm copy of one step's block, as numpy does it (memcpy)."""
    src = np.ones(nbytes // 8)
    dst = np.empty_like(src)
    np.copyto(dst, src)
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        np.copyto(dst, src)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def run(name, k):
    ranks, hook, extra_env = VARIANTS[name]
    folder = os.path.join(work, name)
    shutil.rmtree(folder, ignore_errors=True)
    os.sync()  # the last run's masks reach the disk before the clock starts
    os.makedirs(folder)
    report = os.path.join(folder, "report.json")
    argv = ["mpirun", "-np", str(ranks), "--bind-to", "none", "--oversubscribe", a.sim, "--dims", a.dims, "--steps",
            str(a.steps), "--quiet", "--report", report] + hook
    proc = subprocess.run(argv, cwd=folder, env=dict(base_env, **extra_env), capture_output=True, text=True)
    if proc.returncode != 0:
        raise SystemExit("%s failed:\n%s" % (name, proc.stderr))
    r = json.load(open(report))
    print("%-19s run %d: %.2f s wall, simulation %.2f s, hand-off %s" % (
        name, k, r["wall_seconds"], r["simulate_seconds"],
        {key: round(v, 3) for key, v in r.get("hand_off", {}).items() if key in ("seconds", "copy", "waited")}),
        flush=True)
    return r


if a.plot_only:
    summary = json.load(open(a.out + ".json"))
    dims, block, memcpy, base = summary["dims"], summary["block_bytes"], summary["memcpy_seconds"], summary[
        "base_wall_seconds"]
    variants, a.steps, a.repeat = list(summary["variants"]), summary["steps"], summary["repeat"]
else:
    dims = [int(d) for d in a.dims.split(",")] * (3 if "," not in a.dims else 1)
    block = dims[0] * dims[1] * dims[2] * 8
    memcpy = memcpy_seconds(block)
    print("memcpy of the %d MiB block: %.1f ms" % (block >> 20, 1e3 * memcpy), flush=True)
    results = {name: [] for name in variants}
    for k in range(a.repeat):
        for name in variants:  # interleaved: the machine's drift hits every variant alike
            results[name].append(run(name, k))

    base = statistics.median(r["wall_seconds"] for r in results["base"])
    summary = {"dims": dims, "steps": a.steps, "repeat": a.repeat, "block_bytes": block, "memcpy_seconds": memcpy,
               "base_wall_seconds": base, "variants": {}}
    for name in variants:
        walls = [r["wall_seconds"] for r in results[name]]
        entry = {"ranks": VARIANTS[name][0], "wall_seconds": walls, "median_wall_seconds": statistics.median(walls),
                 "overhead": statistics.median(walls) / base - 1, "overhead_min": min(walls) / base - 1,
                 "overhead_max": max(walls) / base - 1,
                 "simulate_seconds": statistics.median(r["simulate_seconds"] for r in results[name])}
        if name != "base":
            entry["hook_seconds"] = statistics.median(r["hook_seconds"] for r in results[name])
        handoffs = [r["hand_off"] for r in results[name] if "hand_off" in r]
        if handoffs:
            per = lambda key: statistics.median(h[key] / max(1, h["steps"]) for h in handoffs)  # noqa: E731
            entry["hand_off"] = {"ms_per_step": 1e3 * per("seconds"), "copy_ms_per_step": 1e3 * per("copy"),
                                 "waited_ms_per_step": 1e3 * per("waited"),
                                 "longest_ms": 1e3 * statistics.median(h["longest"] for h in handoffs),
                                 "vs_memcpy": per("seconds") / memcpy,
                                 "peak_MiB": max(h["peak_bytes"] for h in handoffs) / 2**20,
                                 "bound_MiB": max(h["bound_bytes"] for h in handoffs) / 2**20,
                                 "skipped": [h["skipped"] for h in handoffs], "steps": [h["steps"] for h in handoffs]}
        summary["variants"][name] = entry
    os.makedirs(os.path.dirname(a.out) or ".", exist_ok=True)
    with open(a.out + ".json", "w") as f:
        json.dump(summary, f, indent=1)

label = {"sync": "synchronous hook", "async": "--async", "async-borrow": "--async --borrow",
         "ranks": "--analysis-ranks 1", "ranks-borrow": "--analysis-ranks 1 --borrow",
         "ranks-borrow-nocma": "--analysis-ranks 1 --borrow, no single copy",
         "skip": "--analysis-ranks 1 --queue 1 --when-full skip, an image a step"}
lines = ["# In situ off the critical path: Gray-Scott %s on one simulation rank, %d steps, %d interleaved runs"
         % ("x".join(map(str, dims)), a.steps, a.repeat), "",
         "The full pipeline every step (threshold, statistics, labels, a %d MiB mask written). Overhead = the "
         "simulation's wall time with the hook / without it - 1 (median; min..max). Hand-off: the time publish "
         "took on the simulation rank per in-situ step (of which copying the block, and waiting for the queue), "
         "beside a memcpy of the %d MiB block measured in the same run: %.1f ms." % (
             block // 8 >> 20, block >> 20, 1e3 * memcpy), "",
         "| variant | ranks | wall s | overhead | hand-off ms/step | copy | waited | / memcpy | queue peak / bound MiB "
         "| skipped |", "|---|---|---|---|---|---|---|---|---|---|",
         "| no hook | 1 | %.2f | | | | | | | |" % base]
for name in variants:
    if name == "base":
        continue
    v = summary["variants"][name]
    h = v.get("hand_off")
    hand = ("%.2f | %.2f | %.2f | %.3f | %.0f / %.0f | %s" % (
        h["ms_per_step"], h["copy_ms_per_step"], h["waited_ms_per_step"], h["vs_memcpy"], h["peak_MiB"],
        h["bound_MiB"], ", ".join(str(s) for s in h["skipped"])) if h else "(inside the step) | | | | |")
    lines.append("| %s | %d | %.2f | %+.1f%% (%+.1f..%+.1f) | %s |" % (
        label[name], v["ranks"], v["median_wall_seconds"], 100 * v["overhead"], 100 * v["overhead_min"],
        100 * v["overhead_max"], hand))
lines += ["", "The simulation's own stepping time (median): " + ", ".join(
    "%s %.2f s" % (name, summary["variants"][name]["simulate_seconds"]) for name in variants), ""]
with open(a.out + ".md", "w") as f:
    f.write("\n".join(lines) + "\n")
print("\n".join(lines))

try:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
except ImportError:
    raise SystemExit(0)
import textwrap
names = [n for n in variants if n != "base"]
fig, (left, right) = plt.subplots(1, 2, figsize=(15, 5.5))
values = [100 * summary["variants"][n]["overhead"] for n in names]
errors = [[100 * (summary["variants"][n]["overhead"] - summary["variants"][n]["overhead_min"]) for n in names],
          [100 * (summary["variants"][n]["overhead_max"] - summary["variants"][n]["overhead"]) for n in names]]
left.bar(range(len(names)), values, yerr=errors, capsize=4, color="#1b9e77")
left.set_xticks(range(len(names)), [textwrap.fill(label[n], 13) for n in names], fontsize=7)
for i, v in enumerate(values):
    left.annotate("%+.1f%%" % v, (i, v), textcoords="offset points", xytext=(10, 4), fontsize=8)
left.axhline(10, color="k", ls="--", lw=0.8, label="10% (the bar)")
left.legend(fontsize=8)
left.set_ylabel("wall-time overhead against no hook, %")
left.set_title("Gray-Scott %s, %d steps, the full pipeline every step" % ("x".join(map(str, dims)), a.steps),
               fontsize=10)
with_hand = [n for n in names if "hand_off" in summary["variants"][n]]
copy = [summary["variants"][n]["hand_off"]["copy_ms_per_step"] for n in with_hand]
rest = [summary["variants"][n]["hand_off"]["ms_per_step"] - summary["variants"][n]["hand_off"]["copy_ms_per_step"]
        for n in with_hand]
right.bar(range(len(with_hand)), copy, color="#7570b3", label="copying the block")
right.bar(range(len(with_hand)), rest, bottom=copy, color="#d95f02", label="waiting, agreeing, sending")
right.axhline(1e3 * memcpy, color="k", ls="--", lw=0.8, label="memcpy of the block (%.1f ms)" % (1e3 * memcpy))
right.set_xticks(range(len(with_hand)), [textwrap.fill(label[n], 13) for n in with_hand], fontsize=7)
right.set_ylabel("publish on the simulation rank, ms per in-situ step (median)")
right.legend(fontsize=8)
right.set_title("What handing a step off costs the simulation", fontsize=10)
fig.tight_layout()
fig.savefig(a.out + ".png", dpi=110)
print("wrote", a.out + ".png")
