#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Zarr v2 against raw, for `volseg segment` (Zarr's speed bars), measured
in one run with the references interleaved (the machines are shared and noisy).

  mask out:  the same job writing the u8 mask as raw (.nhdr) and as Zarr
             (blosc-lz4, bit shuffle, chunks = the bricks): time ratio
             (bar: Zarr <= 0.8x raw) and store size ratio (bar: >= 20x smaller);
  input in:  the f32 field read from raw and from Zarr (blosc-lz4, 64^3 chunks,
             written by `volseg generate`): speed ratio (bar: Zarr >= 0.7x raw).

Whole-process wall time of each `mpirun -np RANKS volseg segment`, best of
--repeat. The field is `volseg generate --field shells` (4 GiB at the default
1024^3). Writes docs/results/zarr_bench.{md,json,png}.

  /usr/bin/python3 bench/zarr_bench.py [--size 1024] [--ranks 2] [--repeat 3] [--dir DIR]
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_util import MPI_ENV, remove, size_of, warm  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LO, HI = 10, 30  # shells 10-30 of width 8: a thick spherical band, 30% of the volume at 1024^3


def log(*args):
    print(*args, file=sys.stderr, flush=True)


def run(cmd):
    env = dict(os.environ, **MPI_ENV)
    start = time.perf_counter()
    subprocess.run(cmd, env=env, check=True, text=True, capture_output=True)
    return time.perf_counter() - start


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--volseg", default=os.path.join(ROOT, "build", "app", "cli", "volseg"))
    parser.add_argument("--size", type=int, default=1024)
    parser.add_argument("--ranks", type=int, default=2)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--dir", default=None)
    parser.add_argument("--out", default=os.path.join(ROOT, "docs", "results"))
    args = parser.parse_args()
    work = args.dir or tempfile.mkdtemp(prefix="volseg-zarr-bench-")
    os.makedirs(work, exist_ok=True)
    v, n = args.volseg, str(args.ranks)
    raw_in, zarr_in = os.path.join(work, "shells.nhdr"), os.path.join(work, "shells.zarr")
    dims = ",".join([str(args.size)] * 3)
    if not os.path.exists(raw_in):
        log("generating %s (%s f32)" % (raw_in, dims))
        run(["mpirun", "-np", n, v, "generate", raw_in, "--dims", dims, "--quiet"])
    if not os.path.exists(zarr_in):
        log("generating %s (blosc-lz4, 64^3 chunks, 1 rank)" % zarr_in)
        run([v, "generate", zarr_in, "--dims", dims, "--hint", "compressor=blosc-lz4", "--hint", "chunks=64,64,64",
             "--quiet"])
    raw_out, zarr_out = os.path.join(work, "mask.nhdr"), os.path.join(work, "mask.zarr")
    nc_out = os.path.join(work, "mask.nc4")
    jobs = {
        "raw in, raw mask": (raw_in, raw_out, []),
        "raw in, Zarr mask": (raw_in, zarr_out, []),
        "Zarr in, raw mask": (zarr_in, raw_out, []),
        "Zarr in, Zarr mask": (zarr_in, zarr_out, []),
        "raw in, NetCDF-4 mask (deflate=1)": (raw_in, nc_out, ["--out-hint", "deflate=1", "--out-hint", "chunks=brick"]),
    }
    times = {name: [] for name in jobs}
    sizes = {}
    for r in range(args.repeat):
        for name, (src, out, extra) in jobs.items():
            warm(src)
            for path in (raw_out, raw_out[:-5] + ".raw", zarr_out, nc_out):
                remove(path)
            t = run(["mpirun", "-np", n, v, "segment", src, "--lo", str(LO), "--hi", str(HI), "--out", out,
                     "--quiet", *extra])
            times[name].append(t)
            sizes[name] = size_of(out[:-5] + ".raw" if out.endswith(".nhdr") else out)
            log("repeat %d: %s %.2f s, %.1f MB" % (r + 1, name, t, sizes[name] / 1e6))
    best = {name: min(ts) for name, ts in times.items()}
    result = {
        "command": "bench/zarr_bench.py --size %d --ranks %d --repeat %d" % (args.size, args.ranks, args.repeat),
        "best_s": best, "times_s": times, "bytes": sizes,
        "zarr_mask_time_ratio": best["raw in, Zarr mask"] / best["raw in, raw mask"],
        "zarr_mask_size_ratio": sizes["raw in, raw mask"] / sizes["raw in, Zarr mask"],
        "zarr_input_speed_ratio": best["raw in, raw mask"] / best["Zarr in, raw mask"],
        "zarr_input_speed_ratio_zarr_masks": best["raw in, Zarr mask"] / best["Zarr in, Zarr mask"],
        "netcdf4_mask_time_ratio": best["raw in, NetCDF-4 mask (deflate=1)"] / best["raw in, raw mask"],
        "zarr_input_bytes": size_of(zarr_in), "raw_input_bytes": os.path.getsize(raw_in[:-5] + ".raw"),
    }
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, "zarr_bench.json"), "w") as f:
        json.dump(result, f, indent=1)
    lines = ["# Zarr against raw: `volseg segment`", "",
             "`%s` on this machine (2 cores; files in the page cache; whole `mpirun` process, best of %d). "
             "Field: %d^3 f32 shells, threshold [%g, %g]." % (result["command"], args.repeat, args.size, LO, HI), "",
             "| job | best s | output |", "|---|---|---|"]
    for name in jobs:
        lines.append("| %s | %.2f | %.1f MB |" % (name, best[name], sizes[name] / 1e6))
    lines += ["",
              "- Zarr mask / raw mask time: **%.2fx** (bar: <= 0.8x)" % result["zarr_mask_time_ratio"],
              "- raw mask / Zarr mask size: **%.0fx** smaller (bar: >= 20x)" % result["zarr_mask_size_ratio"],
              "- Zarr input speed / raw input speed: **%.2fx** (bar: >= 0.7x); the Zarr input is %.0f MB "
              "against %.0f MB raw" % (result["zarr_input_speed_ratio"], result["zarr_input_bytes"] / 1e6,
                                       result["raw_input_bytes"] / 1e6),
              "- the same with Zarr masks (Zarr in, Zarr mask against raw in, Zarr mask): **%.2fx**; bricks are "
              "the input's chunks there, each decoded in place" % result["zarr_input_speed_ratio_zarr_masks"],
              "- NetCDF-4 mask (deflate=1, chunks = bricks, collective) / raw mask time: **%.2fx**, %.0fx smaller"
              % (result["netcdf4_mask_time_ratio"],
                 sizes["raw in, raw mask"] / sizes["raw in, NetCDF-4 mask (deflate=1)"])]
    with open(os.path.join(args.out, "zarr_bench.md"), "w") as f:
        f.write("\n".join(lines) + "\n")
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        fig, (a, b) = plt.subplots(1, 2, figsize=(11, 4))
        names = list(jobs)
        a.bar(range(len(names)), [best[k] for k in names], color=["tab:gray", "tab:blue", "tab:orange", "tab:purple", "tab:green"])
        a.set_xticks(range(len(names)), [k.replace(", ", ",\n").replace(" (", "\n(") for k in names], fontsize=8)
        a.set_ylabel("seconds (best of %d), %d ranks" % (args.repeat, args.ranks))
        a.set_title("segment %d^3 f32 shells" % args.size)
        b.bar([0, 1, 2], [sizes["raw in, raw mask"] / 1e6, sizes["raw in, Zarr mask"] / 1e6,
                          sizes["raw in, NetCDF-4 mask (deflate=1)"] / 1e6], color=["tab:gray", "tab:blue", "tab:green"])
        b.set_xticks([0, 1, 2], ["raw mask", "Zarr mask\n(blosc-lz4)", "NetCDF-4 mask\n(deflate=1)"])
        b.set_yscale("log")
        b.set_ylabel("MB on disk")
        b.set_title("mask size: %.0fx smaller" % result["zarr_mask_size_ratio"])
        fig.tight_layout()
        fig.savefig(os.path.join(args.out, "zarr_bench.png"), dpi=90)
    except ImportError:
        log("matplotlib missing: no plot")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
