#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The in-situ hook's overhead on volseg-sim (run under xvfb-run: the Python
route starts ParaView's Catalyst Python, which needs an X display):
  whole wall time of the simulation (its own clock, MPI_Init to finalize,
  slowest rank) with the hook against without it, in interleaved runs:
  - base:    no hook;
  - volseg:  volseg's own pipeline every step (threshold + statistics + mask
             write), the bar being at most 10%;
  - budget:  the same with --budget 5%, the bar being within 1 point of 5%;
  - tmpfs:   volseg's pipeline every step, masks written to /dev/shm: the
             pipeline's own cost without the disk's file system;
  - every5:  volseg's pipeline every 5th step, for scale;
  - python:  the ParaView route to the same work (bench/insitu/threshold_extract.py:
             Python Calculator threshold, .pvti extract of the mask).
Catalyst's start-up (hook creation) and first in-situ step are reported apart.
Writes docs/results/insitu_bench.{json,md,png}. Example:
  xvfb-run -a /usr/bin/python3 bench/insitu_bench.py --sim build/app/insitu/volseg-sim
"""
import argparse
import csv
import json
import os
import shutil
import statistics
import subprocess
import tempfile

p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
p.add_argument("--sim", default="build/app/insitu/volseg-sim")
p.add_argument("--ranks", type=int, default=2)
p.add_argument("--dims", default="512,256,256", help="global grid (default: 256^3 per rank on 2 ranks)")
p.add_argument("--steps", type=int, default=50)
p.add_argument("--repeat", type=int, default=3)
p.add_argument("--lo", default="0.1")
p.add_argument("--hi", default="1")
p.add_argument("--variants", default="base,volseg,budget,tmpfs,every5,python")
p.add_argument("--out", default="docs/results/insitu_bench")
p.add_argument("--dir", default=None, help="work folder (default: a temporary one; masks need ~2 GB)")
p.add_argument("--plot-only", action="store_true", help="redraw OUT.png from OUT.json and DIR/budget/stats.csv")
a = p.parse_args()

here = os.path.dirname(os.path.abspath(__file__))
script = os.path.join(here, "insitu", "threshold_extract.py")
work = a.dir or tempfile.mkdtemp(prefix="volseg-insitu-bench-")
mpi = ["mpirun", "-np", str(a.ranks), "--bind-to", "none"]
common = [a.sim, "--dims", a.dims, "--steps", str(a.steps), "--quiet"]
volseg = ["--insitu", "--lo", a.lo, "--hi", a.hi, "--out", "masks/mask_%06d.nhdr", "--stats", "stats.csv", "--force"]
VARIANTS = {
    "base": [],
    "volseg": volseg,
    "budget": volseg + ["--budget", "5%"],
    "every5": volseg + ["--every", "5"],
    "tmpfs": [w if w != "masks/mask_%06d.nhdr" else "/dev/shm/volseg-insitu-bench/mask_%06d.nhdr" for w in volseg],
    "python": ["--insitu", "--stats", "stats.csv", "--catalyst-script", script, "--force"],
}
variants = a.variants.split(",")
env = dict(os.environ, VOLSEG_LO=a.lo, VOLSEG_HI=a.hi, VOLSEG_FIELD="field", VOLSEG_CATALYST_OUTPUT="catalyst")


def run(name, k):
    folder = os.path.join(work, name)
    # The last run's outputs go, and their dirty pages reach the disk, before
    # the clock starts: else the kernel's writeback of one run slows the next.
    shutil.rmtree(folder, ignore_errors=True)
    shutil.rmtree("/dev/shm/volseg-insitu-bench", ignore_errors=True)
    os.sync()
    os.makedirs(folder)
    report = os.path.join(folder, "report.json")
    proc = subprocess.run(mpi + common + ["--report", report] + VARIANTS[name], cwd=folder, env=env,
                          capture_output=True, text=True)
    if proc.returncode != 0:
        raise SystemExit("%s failed:\n%s" % (name, proc.stderr))
    r = json.load(open(report))
    rows = []
    if os.path.exists(os.path.join(folder, "stats.csv")):
        rows = list(csv.DictReader(open(os.path.join(folder, "stats.csv"))))
    print("%-7s run %d: %.3f s wall, in situ %.3f s, actions %s" % (name, k, r["wall_seconds"], r["hook_seconds"],
                                                                     r["actions"]), flush=True)
    return r, rows


if not a.plot_only:
    results = {name: [] for name in variants}
    # The machine's own cost of writing one rank's mask (16 MiB at 256^3) to a
    # new file: the floor under the mask write, on disk and on tmpfs.
    def write_seconds(folder, size=16 << 20, repeat=5):
        import time
        data = b"\1" * size
        times = []
        for i in range(repeat):
            path = os.path.join(folder, "probe-%d" % i)
            start = time.perf_counter()
            with open(path, "wb") as f:
                f.write(data)
            times.append(time.perf_counter() - start)
            os.remove(path)
        return statistics.median(times)
    os.makedirs(work, exist_ok=True)
    os.makedirs("/dev/shm/volseg-insitu-probe", exist_ok=True)
    probe = {"disk": write_seconds(work), "tmpfs": write_seconds("/dev/shm/volseg-insitu-probe")}
    shutil.rmtree("/dev/shm/volseg-insitu-probe", ignore_errors=True)
    print("writing 16 MiB to a new file: %.4f s on disk, %.4f s on tmpfs" % (probe["disk"], probe["tmpfs"]), flush=True)
    series = {}
    for k in range(a.repeat):
        for name in variants:  # interleaved, so drift of the machine hits every variant alike
            r, rows = run(name, k)
            results[name].append(r)
            series[name] = rows

    base = statistics.median(r["wall_seconds"] for r in results["base"])
    summary = {"dims": a.dims, "ranks": a.ranks, "steps": a.steps, "repeat": a.repeat, "base_wall_seconds": base,
               "write_16MiB_seconds": probe, "variants": {}}
    for name in variants:
        walls = [r["wall_seconds"] for r in results[name]]
        entry = {"wall_seconds": walls, "median_wall_seconds": statistics.median(walls),
                 "overhead": statistics.median(walls) / base - 1,
                 "overhead_min": min(walls) / base - 1, "overhead_max": max(walls) / base - 1}
        if name != "base":
            entry["hook_create_seconds"] = statistics.median(r["hook_create_seconds"] for r in results[name])
            entry["first_publish_seconds"] = statistics.median(r["first_publish_seconds"] for r in results[name])
            entry["hook_seconds"] = statistics.median(r["hook_seconds"] for r in results[name])
            entry["actions"] = results[name][-1]["actions"]
            rows = series.get(name, [])
            full = [row for row in rows if row["action"] == "full"]
            if full:  # the slowest rank's seconds per phase, median over the steps that ran everything
                entry["phase_seconds"] = {key: statistics.median(float(row[key + "_s"]) for row in full)
                                          for key in ("segment", "reduce", "write", "scripts", "total")}
                entry["simulation_step_seconds"] = statistics.median(float(row["simulation_s"]) for row in full)
            if rows:
                entry["final_share"] = float(rows[-1]["share"])
        summary["variants"][name] = entry
    os.makedirs(os.path.dirname(a.out) or ".", exist_ok=True)
    with open(a.out + ".json", "w") as f:
        json.dump(summary, f, indent=1)

    label = {"volseg": "volseg pipeline every step", "budget": "the same, --budget 5%",
             "tmpfs": "volseg pipeline every step, masks on tmpfs",
             "every5": "volseg pipeline every 5th step", "python": "ParaView route (Python script) every step"}
    lines = ["# In-situ overhead: volseg-sim %s on %d ranks, %d steps, %d interleaved runs" % (a.dims, a.ranks, a.steps,
                                                                                               a.repeat), "",
             "Overhead = the simulation's whole wall time with the hook / without it - 1 (median; min..max).", "",
             "| variant | wall s | overhead | Catalyst start-up s | first in-situ step s | actions |", "|---|---|---|---|---|---|",
             "| no hook | %.2f | | | | |" % base]
    for name in variants:
        if name == "base":
            continue
        v = summary["variants"][name]
        lines.append("| %s | %.2f | %+.1f%% (%+.1f..%+.1f) | %.3f | %.3f | %s |" % (
            label[name], v["median_wall_seconds"], 100 * v["overhead"], 100 * v["overhead_min"], 100 * v["overhead_max"],
            v["hook_create_seconds"], v["first_publish_seconds"],
            ", ".join("%s %d" % kv for kv in sorted(v["actions"].items()))))
    lines.append("")
    lines.append("Writing 16 MiB (one rank's mask of a step) to a new file with Python on this machine: %.3f s on the "
                 "disk's ext4, %.3f s on tmpfs." % (probe["disk"], probe["tmpfs"]))
    lines.append("")
    for name in variants:
        v = summary["variants"][name]
        if "phase_seconds" in v:
            ph = v["phase_seconds"]
            lines.append("- %s, per full step (slowest rank, median): segment %.3f s, reduce %.3f s, write %.3f s, "
                         "scripts %.3f s, total %.3f s; a simulation step %.3f s" % (
                             label[name], ph["segment"], ph["reduce"], ph["write"], ph["scripts"], ph["total"],
                             v["simulation_step_seconds"]))
    with open(a.out + ".md", "w") as f:
        f.write("\n".join(lines) + "\n")
    print("\n".join(lines))

else:
    summary = json.load(open(a.out + ".json"))
    budget_csv = os.path.join(work, "budget", "stats.csv")
    series = {"budget": list(csv.DictReader(open(budget_csv)))} if os.path.exists(budget_csv) else {}
label = {"volseg": "volseg pipeline every step", "budget": "the same, --budget 5%",
         "tmpfs": "volseg pipeline every step, masks on tmpfs",
         "every5": "volseg pipeline every 5th step", "python": "ParaView route (Python script) every step"}

try:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
except ImportError:
    raise SystemExit(0)
import textwrap
fig, (left, right) = plt.subplots(1, 2, figsize=(14, 5))
names = [n for n in summary["variants"] if n != "base"]
values = [100 * summary["variants"][n]["overhead"] for n in names]
errors = [[100 * (summary["variants"][n]["overhead"] - summary["variants"][n]["overhead_min"]) for n in names],
          [100 * (summary["variants"][n]["overhead_max"] - summary["variants"][n]["overhead"]) for n in names]]
left.bar(range(len(names)), values, yerr=errors, color=["#d95f02", "#7570b3", "#e7298a", "#1b9e77", "#666666"][:len(names)],
         capsize=4)
left.set_xticks(range(len(names)), [textwrap.fill(label[n], 16) for n in names], fontsize=8)
for i, v in enumerate(values):
    left.annotate("%+.1f%%" % v, (i, v), textcoords="offset points", xytext=(12, 4), fontsize=8)
left.axhline(10, color="k", ls="--", lw=0.8, label="10% (the pipeline's bar)")
left.axhline(5, color="#7570b3", ls=":", lw=0.8, label="5% (the budget asked)")
left.legend(fontsize=8, loc="upper left")
left.set_yscale("symlog", linthresh=10)
left.set_ylabel("wall-time overhead, % (symlog)")
left.set_title("volseg-sim %s, %d ranks, %d steps: wall time with the hook / without - 1"
               % (summary["dims"], summary["ranks"], summary["steps"]), fontsize=10)
if "budget" in series and series["budget"]:
    rows = series["budget"]
    steps = [int(r["step"]) for r in rows]
    right.plot(steps, [100 * float(r["share"]) for r in rows], color="#7570b3", label="hook share so far")
    ran = [int(r["step"]) for r in rows if r["action"] != "skipped"]
    right.scatter(ran, [5] * len(ran), marker="|", color="k", label="steps that ran work")
    right.axhline(5, color="#7570b3", ls=":", lw=0.8)
    right.set_ylim(0, 20)
    right.annotate("Catalyst start-up and the first steps\nare paid back by skipping", (2, 19), fontsize=8, va="top")
    right.set_xlabel("step")
    right.set_ylabel("in-situ time / simulation time, %")
    right.set_title("--budget 5%: what the governor let run")
    right.legend(fontsize=8)
fig.tight_layout()
fig.savefig(a.out + ".png", dpi=110)
print("wrote", a.out + ".json", a.out + ".md", a.out + ".png")
