#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""The Python API's speed bars, measured in one run with the
references interleaved (the machines are shared and noisy):

  threshold: volseg.threshold on a GiB of float32 against numpy's
             ((a >= lo) & (a <= hi)).astype(uint8) (bar: >= 3x numpy);
  segment:   volseg.segment from Python against the `volseg segment`
             command on the same job, each its own process on 1 rank, whole
             job seconds from the report (bar: within 5%).

  PYTHONPATH=build/python /usr/bin/python3 bench/python_bench.py [--gib 1] [--size 512] [--repeat 5]
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ENV = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
           PYTHONPATH=os.path.join(ROOT, "build", "python"))


def best(fn, repeat):
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--gib", type=float, default=1.0)
    parser.add_argument("--size", type=int, default=512, help="edge of the f32 volume segmented")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--volseg", default=os.path.join(ROOT, "build", "app", "cli", "volseg"))
    parser.add_argument("--out", default=os.path.join(ROOT, "docs", "results"))
    args = parser.parse_args()
    sys.path.insert(0, os.path.join(ROOT, "build", "python"))
    import volseg

    n = int(args.gib * (1 << 30) / 4)
    a = np.random.default_rng(1).random(n, dtype=np.float32)
    lo, hi = 0.25, 0.5
    t_numpy = best(lambda: ((a >= lo) & (a <= hi)).astype(np.uint8), args.repeat)
    t_volseg = best(lambda: volseg.threshold(a, lo, hi), args.repeat)
    same = bool(np.array_equal(volseg.threshold(a, lo, hi), ((a >= lo) & (a <= hi)).astype(np.uint8)))
    del a

    work = tempfile.mkdtemp(prefix="volseg-python-bench-", dir="/dev/shm")
    volume = os.path.join(work, "v.nhdr")
    subprocess.run([args.volseg, "generate", volume, "--field", "smooth", "--dims", str(args.size), "--quiet"],
                   env=ENV, check=True)
    report = os.path.join(work, "r.json")
    code = ("import volseg, json, sys; r = volseg.segment(%r, lo=0.25, hi=0.5, out=%r, force=True); "
            "print(json.dumps(r['seconds']))" % (volume, os.path.join(work, "py.nhdr")))
    cli, python = [], []
    for _ in range(args.repeat):
        subprocess.run([args.volseg, "segment", volume, "--lo", "0.25", "--hi", "0.5", "--out",
                        os.path.join(work, "cli.nhdr"), "--force", "--quiet", "--report", report], env=ENV, check=True)
        with open(report) as f:
            cli.append(json.load(f)["seconds"])
        out = subprocess.run([sys.executable, "-c", code], env=ENV, check=True, capture_output=True, text=True)
        python.append(float(out.stdout.strip()))
    with open(os.path.join(work, "cli.raw"), "rb") as f1, open(os.path.join(work, "py.raw"), "rb") as f2:
        masks_equal = f1.read() == f2.read()
    subprocess.run(["rm", "-rf", work], check=True)

    result = {"threshold_gib": args.gib, "numpy_s": t_numpy, "volseg_threshold_s": t_volseg,
              "threshold_speedup": t_numpy / t_volseg, "threshold_equal": same,
              "segment_size": args.size, "cli_job_s": min(cli), "python_job_s": min(python),
              "segment_ratio": min(python) / min(cli), "masks_equal": masks_equal,
              "cli_all_s": cli, "python_all_s": python}
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, "python_bench.json"), "w") as f:
        json.dump(result, f, indent=1)
    lines = ["# The Python API's speed (`bench/python_bench.py`)", "",
             "`PYTHONPATH=build/python /usr/bin/python3 bench/python_bench.py --gib %g --size %d --repeat %d`, "
             "%d cores, best of %d." % (args.gib, args.size, args.repeat, os.cpu_count(), args.repeat), "",
             "| measure | volseg | reference | ratio | bar |", "|---|---|---|---|---|",
             "| threshold, %g GiB f32 | %.3f s | numpy %.3f s | **%.2fx** faster | >= 3x |" % (
                 args.gib, t_volseg, t_numpy, t_numpy / t_volseg),
             "| segment %d^3 f32 (job seconds) | Python %.3f s | CLI %.3f s | **%.3f** | within 5%% |" % (
                 args.size, min(python), min(cli), min(python) / min(cli)),
             "", "Masks equal byte for byte: %s; threshold equal to numpy's: %s." % (masks_equal, same)]
    with open(os.path.join(args.out, "python_bench.md"), "w") as f:
        f.write("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
