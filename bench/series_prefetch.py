#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""A time series read cold, with and without the next step announced to the
kernel while this step works (`segment|label --time all` call
posix_fadvise(WILLNEED) on step t+1's bytes before running step t;
VOLSEG_SERIES_PREFETCH=0 turns it off).

Writes a CDF-5 file of STEPS steps of N^3 float32 (a smooth field plus
noise), evicts it from the page cache before every run
(posix_fadvise DONTNEED: no root needed), and times the whole `volseg`
process, interleaving the two settings; prints the medians and their ratio.

  /usr/bin/python3 bench/series_prefetch.py --size 256 --steps 8 --ranks 2
Writes docs/results/series_prefetch.md."""
import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def write_series(path, n, steps):
    import netCDF4
    rng = np.random.default_rng(3)
    z, y, x = np.meshgrid(*(np.linspace(0, 1, n, dtype=np.float32),) * 3, indexing="ij")
    with netCDF4.Dataset(path, "w", format="NETCDF3_64BIT_DATA") as d:
        d.createDimension("time", None)
        for name in "zyx":
            d.createDimension(name, n)
        v = d.createVariable("u", "f4", ("time", "z", "y", "x"))
        for t in range(steps):
            field = np.sin(6 * x + 0.3 * t) * np.cos(5 * y) + z + 0.2 * rng.random((n, n, n), dtype=np.float32)
            v[t] = field.astype(np.float32)


def evict(path):
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    finally:
        os.close(fd)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=256)
    parser.add_argument("--steps", type=int, default=8)
    parser.add_argument("--ranks", type=int, default=2)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--dir", default=None, help="on the disk to measure (default: a new folder in /var/tmp)")
    parser.add_argument("--volseg", default=os.path.join(ROOT, "build", "app", "cli", "volseg"))
    parser.add_argument("--out", default=os.path.join(ROOT, "docs", "results"))
    args = parser.parse_args()
    work = args.dir or tempfile.mkdtemp(prefix="volseg-prefetch-", dir="/var/tmp")
    series = os.path.join(work, "series.nc")
    if not os.path.exists(series):
        print("writing %s (%d steps of %d^3 f32) ..." % (series, args.steps, args.size), flush=True)
        write_series(series, args.size, args.steps)
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
               OMPI_MCA_rmaps_base_oversubscribe="1")
    jobs = {
        "segment": ["segment", series, "--var", "u", "--time", "all", "--lo", "0.5", "--hi", "1",
                    "--out", os.path.join(work, "m_%d.nhdr"), "--force", "--quiet"],
        "label": ["label", series, "--var", "u", "--time", "all", "--lo", "0.5", "--hi", "1", "--connectivity", "6",
                  "--out", os.path.join(work, "l_%d.nhdr"), "--force", "--quiet"],
    }
    times = {(job, mode): [] for job in jobs for mode in ("off", "on")}
    for _ in range(args.repeat):
        for job, argv in jobs.items():
            for mode in ("off", "on"):
                evict(series)
                run_env = dict(env, VOLSEG_SERIES_PREFETCH="0" if mode == "off" else "1")
                start = time.perf_counter()
                subprocess.run(["mpirun", "-np", str(args.ranks), "--bind-to", "none", args.volseg] + argv,
                               env=run_env, check=True)
                times[(job, mode)].append(time.perf_counter() - start)
                print("%-8s prefetch %-3s %.2f s" % (job, mode, times[(job, mode)][-1]), flush=True)
    lines = ["# A series read cold, with and without the next step read ahead", "",
             "`bench/series_prefetch.py --size %d --steps %d --ranks %d --repeat %d`: a CDF-5 file of %d steps of "
             "%d^3 float32 (%.0f MiB a step) in `%s`, evicted from the page cache before each run; the whole "
             "`volseg` process, medians of %d interleaved runs." % (
                 args.size, args.steps, args.ranks, args.repeat, args.steps, args.size, args.size ** 3 * 4 / 2**20,
                 os.path.dirname(series), args.repeat), "",
             "| job | next step not announced | announced | ratio (off / on) |", "|---|---|---|---|"]
    for job in jobs:
        off, on = statistics.median(times[(job, "off")]), statistics.median(times[(job, "on")])
        lines.append("| %s --time all | %.2f s | %.2f s | %.2fx |" % (job, off, on, off / on))
    text = "\n".join(lines) + "\n"
    print(text)
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, "series_prefetch.md"), "w") as f:
        f.write(text)


if __name__ == "__main__":
    sys.exit(main())
