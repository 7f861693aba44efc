#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""What segment's journal costs (docs/reliability.md, "Resuming a job").

Runs `volseg segment` on one generated volume, interleaved, in rounds:
  sync      the default: each brick's data flushed (fdatasync), then its record
  no-sync   --no-journal-sync: records written, nothing flushed
and a resumed job: a run stopped by SIGUSR1 half-way, then --resume, whose
mask is compared byte for byte with the uninterrupted one's.
Prints medians and the ratio sync / no-sync (same machine, same rounds).

  /usr/bin/python3 bench/journal_bench.py --volseg build/app/cli/volseg [--dims 512,512,512] [--ranks 2]
"""
import argparse
import hashlib
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--volseg", default="build/app/cli/volseg")
    ap.add_argument("--mpirun", default="mpirun")
    ap.add_argument("--dims", default="512,512,512")
    ap.add_argument("--ranks", type=int, default=2)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--backend", default="posix")
    ap.add_argument("--dir", default=None, help="where the volume goes (default: a temporary folder in /tmp)")
    args = ap.parse_args()
    volseg = os.path.abspath(args.volseg)
    tmp = tempfile.TemporaryDirectory(prefix="volseg-journal-bench-", dir=args.dir)
    d = tmp.name
    mpi = [args.mpirun, "-q", "--oversubscribe", "--bind-to", "none", "-np", str(args.ranks), volseg]
    subprocess.run(mpi + ["generate", "in.nhdr", "--field", "noise", "--dims", args.dims, "--dtype", "f32",
                          "--quiet"], cwd=d, check=True)
    seg = ["segment", "in.nhdr", "--lo", "0.1", "--hi", "0.5", "--backend", args.backend, "--progress", "none",
           "--quiet"]

    def run(out, extra=()):
        for f in os.listdir(d):
            if f.startswith(("o.", ".o.")):
                os.remove(os.path.join(d, f))
        start = time.perf_counter()
        subprocess.run(mpi + seg + ["--out", out, *extra], cwd=d, check=True)
        return time.perf_counter() - start

    times = {"sync": [], "no-sync": []}
    for r in range(args.rounds):
        order = ["sync", "no-sync"] if r % 2 == 0 else ["no-sync", "sync"]
        for mode in order:
            times[mode].append(run("o.nhdr", [] if mode == "sync" else ["--no-journal-sync"]))
        print("round %d: sync %.3f s, no-sync %.3f s" % (r + 1, times["sync"][-1], times["no-sync"][-1]), flush=True)
    with open(os.path.join(d, "o.raw"), "rb") as f:
        want = hashlib.md5(f.read()).hexdigest()
    med = {k: statistics.median(v) for k, v in times.items()}

    # Stopped half-way by the scheduler's signal, then resumed.
    for f in os.listdir(d):
        if f.startswith(("o.", ".o.")):
            os.remove(os.path.join(d, f))
    start = time.perf_counter()
    proc = subprocess.Popen(mpi + seg + ["--out", "o.nhdr"], cwd=d)
    time.sleep(med["sync"] / 2)
    proc.send_signal(signal.SIGUSR1)
    status = proc.wait()
    stopped = time.perf_counter() - start
    start = time.perf_counter()
    out = subprocess.run(mpi + seg[:-1] + ["--out", "o.nhdr", "--resume"], cwd=d, check=True, capture_output=True,
                         text=True).stdout
    resumed = time.perf_counter() - start
    with open(os.path.join(d, "o.raw"), "rb") as f:
        same = hashlib.md5(f.read()).hexdigest() == want
    line = [l.strip() for l in out.splitlines() if l.strip().startswith("resumed:")]

    print()
    print("volume %s f32, %d ranks, backend %s, %d rounds (medians)" % (args.dims, args.ranks, args.backend,
                                                                      args.rounds))
    print("| journal | seconds | x no-sync |")
    print("|---|---|---|")
    for k in ("no-sync", "sync"):
        print("| %s | %.3f | %.2f |" % (k, med[k], med[k] / med["no-sync"]))
    print()
    print("stopped by SIGUSR1 after %.2f s (status %d), resumed in %.2f s: %s; mask %s the uninterrupted run's" % (
        stopped, status, resumed, line[0] if line else "(no resume line)", "equals" if same else "DIFFERS FROM"))
    return 0 if same and status == 75 else 1


if __name__ == "__main__":
    sys.exit(main())
