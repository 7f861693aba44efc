#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""The NIfTI, VTK, TIFF and HDF5 readers against the raw reader on the same bytes
(`volseg segment`, whole `mpirun` process, files warm in the page cache,
best of --repeat, the runs interleaved: the machines are shared and noisy).

  uncompressed: NIfTI (.nii), raw-appended VTK image data (.vti), TIFF as
                volseg writes it (one strip a page) and as tifffile writes it
                (64 rows a strip), HDF5 contiguous (h5py): speed ratio to the
                raw NRRD volume (bar: >= 0.8x at 2 ranks);
  compressed:   TIFF deflate (tifffile), .nii.gz, .vti zlib (VTK) and HDF5
                deflate (h5py), on a smaller volume: decompressed MB/s per
                rank, beside zlib's own inflate speed on one core of this
                machine (the same field, deflate level 6, 1 MiB pieces).

Writes docs/results/formats_bench.{md,json,png}.

  /usr/bin/python3 bench/formats_bench.py [--size 768] [--compressed-size 384] [--ranks 2] [--repeat 3] [--dir DIR]
"""
import argparse
import gzip
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import zlib

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests", "e2e"))
import e2e_util as e  # noqa: E402
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_util import MPI_ENV, warm  # noqa: E402

LO, HI = 0.25, 0.5


def log(*args):
    print(*args, file=sys.stderr, flush=True)


def run(cmd):
    start = time.perf_counter()
    proc = subprocess.run(cmd, env=dict(os.environ, **MPI_ENV), text=True, capture_output=True)
    if proc.returncode != 0:
        sys.exit("formats_bench: %s failed:\n%s" % (" ".join(cmd), proc.stderr))
    return time.perf_counter() - start


def write_inputs(v, work, name, size, compressed):
    """The raw NRRD volume and its copies; returns {label: path}."""
    raw = os.path.join(work, name + ".nhdr")
    if not os.path.exists(raw):
        log("generating %s (%d^3 f32, smooth)" % (raw, size))
        run(["mpirun", "-np", "2", v, "generate", raw, "--field", "smooth", "--dims", str(size), "--quiet"])
    values = e.read_volume(raw)[1]
    files = {"raw (NRRD)": raw}
    out = lambda ext: os.path.join(work, name + ext)  # noqa: E731
    import h5py
    import tifffile
    if not compressed:
        for label, ext in (("NIfTI .nii", ".nii"), ("VTK .vti, raw appended", ".vti"),
                           ("TIFF, a strip a page (volseg)", ".tif")):
            if not os.path.exists(out(ext)):
                run([v, "convert", raw, out(ext), "--quiet"])
            files[label] = out(ext)
        if not os.path.exists(out("_strips.tif")):
            tifffile.imwrite(out("_strips.tif"), values, rowsperstrip=64)
        files["TIFF, 64 rows a strip (tifffile)"] = out("_strips.tif")
        if not os.path.exists(out(".h5")):
            with h5py.File(out(".h5"), "w") as f:
                d = f.create_dataset("density", shape=values.shape, dtype=values.dtype)
                for z in range(0, values.shape[0], 64):
                    d[z:z + 64] = values[z:z + 64]
        files["HDF5 contiguous (h5py)"] = out(".h5")
        return files
    if not os.path.exists(out("_deflate.tif")):
        tifffile.imwrite(out("_deflate.tif"), values, compression="zlib", rowsperstrip=64)
    files["TIFF deflate (tifffile)"] = out("_deflate.tif")
    if not os.path.exists(out(".nii.gz")):
        if not os.path.exists(out(".nii")):
            run([v, "convert", raw, out(".nii"), "--quiet"])
        with open(out(".nii"), "rb") as src, gzip.open(out(".nii.gz"), "wb", compresslevel=6) as dst:
            shutil.copyfileobj(src, dst, 1 << 24)
    files[".nii.gz"] = out(".nii.gz")
    try:
        sys.path.insert(0, os.path.join(ROOT, "tests", "e2e"))
        from test_vti import write_vti
        if not os.path.exists(out("_zlib.vti")):
            write_vti(out("_zlib.vti"), values, compressed=True)
        files[".vti zlib (VTK)"] = out("_zlib.vti")
    except Exception as error:  # noqa: BLE001 - VTK's Python is optional here
        log("no compressed .vti: %s" % error)
    if not os.path.exists(out("_deflate.h5")):
        with h5py.File(out("_deflate.h5"), "w") as f:
            chunks = tuple(min(c, n) for c, n in zip((32, 64, 64), values.shape))
            f.create_dataset("density", data=values, chunks=chunks, compression="gzip", compression_opts=6)
    files["HDF5 deflate (h5py)"] = out("_deflate.h5")
    return files


def size_on_disk(path):
    """A file's bytes; a NRRD header's with its data file's."""
    if path.endswith(".nhdr"):
        return os.path.getsize(e.parse_nhdr(path)["data"])
    return os.path.getsize(path)


def zlib_speed(values):
    """zlib's own inflate, one core: MB/s of decompressed output."""
    data = values.tobytes()[: 64 << 20]
    pieces = [zlib.compress(data[i:i + (1 << 20)], 6) for i in range(0, len(data), 1 << 20)]
    best = float("inf")
    for _ in range(3):
        start = time.perf_counter()
        for p in pieces:
            zlib.decompress(p)
        best = min(best, time.perf_counter() - start)
    return len(data) / best / 1e6


def measure(v, files, ranks, repeat, work, extra_for):
    """Best whole-process seconds, every run's, and the best job seconds (the report's: no start-up)."""
    times = {label: [] for label in files}
    jobs = {label: [] for label in files}
    mask, report = os.path.join(work, "mask.nhdr"), os.path.join(work, "report.json")
    for r in range(repeat):
        for label, path in files.items():
            warm(path)
            t = run(["mpirun", "-np", str(ranks), v, "segment", path, "--lo", str(LO), "--hi", str(HI), "--out", mask,
                     "--quiet", "--force", "--report", report, *extra_for(path)])
            with open(report) as f:
                jobs[label].append(json.load(f)["seconds"])
            times[label].append(t)
            log("repeat %d: %-34s %.2f s (job %.2f s)" % (r + 1, label, t, jobs[label][-1]))
    return {label: min(ts) for label, ts in times.items()}, times, {label: min(ts) for label, ts in jobs.items()}


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--volseg", default=os.path.join(ROOT, "build", "app", "cli", "volseg"))
    parser.add_argument("--size", type=int, default=768)
    parser.add_argument("--compressed-size", type=int, default=384)
    parser.add_argument("--ranks", type=int, default=2)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--dir", default=None)
    parser.add_argument("--out", default=os.path.join(ROOT, "docs", "results"))
    args = parser.parse_args()
    work = args.dir or tempfile.mkdtemp(prefix="volseg-formats-bench-", dir="/dev/shm")
    os.makedirs(work, exist_ok=True)
    v = args.volseg
    extra_for = lambda path: ["--var", "density"] if path.endswith(".h5") else []  # noqa: E731
    plain = write_inputs(v, work, "v", args.size, compressed=False)
    packed = write_inputs(v, work, "c", args.compressed_size, compressed=True)
    best, times, _ = measure(v, plain, args.ranks, args.repeat, work, extra_for)
    cbest, ctimes, cjob = measure(v, packed, args.ranks, args.repeat, work, extra_for)
    raw_bytes = args.size ** 3 * 4
    craw_bytes = args.compressed_size ** 3 * 4
    inflate = zlib_speed(e.read_volume(packed["raw (NRRD)"])[1])
    result = {
        "command": "bench/formats_bench.py --size %d --compressed-size %d --ranks %d --repeat %d"
                   % (args.size, args.compressed_size, args.ranks, args.repeat),
        "uncompressed_best_s": best, "uncompressed_times_s": times,
        "speed_vs_raw": {k: best["raw (NRRD)"] / t for k, t in best.items()},
        "compressed_best_s": cbest, "compressed_times_s": ctimes,
        "compressed_job_s": cjob,
        "compressed_mb_per_s_per_rank": {k: craw_bytes / t / 1e6 / args.ranks for k, t in cjob.items()},
        "compressed_bytes": {k: size_on_disk(p) for k, p in packed.items()},
        "zlib_inflate_mb_per_s_one_core": inflate,
    }
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, "formats_bench.json"), "w") as f:
        json.dump(result, f, indent=1)
    lines = ["# The readers against the raw reader: `volseg segment`", "",
             "`%s` on this machine (%d cores; files warm in tmpfs; whole `mpirun` process, best of %d; smooth f32 "
             "field, threshold [%g, %g])." % (result["command"], os.cpu_count(), args.repeat, LO, HI), "",
             "Uncompressed, %d^3 f32 (%.0f MB), %d ranks:" % (args.size, raw_bytes / 1e6, args.ranks), "",
             "| input | best s | speed / raw | bar >= 0.8x |", "|---|---|---|---|"]
    for label in plain:
        ratio = result["speed_vs_raw"][label]
        lines.append("| %s | %.2f | %.2fx | %s |" % (label, best[label], ratio,
                                                      "" if label.startswith("raw") else
                                                      ("met" if ratio >= 0.8 else "MISSED")))
    lines += ["", "Compressed, %d^3 f32 (%.0f MB decompressed), %d ranks; zlib's own inflate on one core here: "
              "**%.0f MB/s**:" % (args.compressed_size, craw_bytes / 1e6, args.ranks, inflate), "",
              "| input | on disk | best s, process | best s, job | decompressed MB/s a rank (job) | / zlib's |",
              "|---|---|---|---|---|---|"]
    for label in packed:
        rate = result["compressed_mb_per_s_per_rank"][label]
        lines.append("| %s | %.0f MB | %.2f | %.2f | %.0f | %.2fx |" % (
            label, result["compressed_bytes"][label] / 1e6, cbest[label], cjob[label], rate, rate / inflate))
    with open(os.path.join(args.out, "formats_bench.md"), "w") as f:
        f.write("\n".join(lines) + "\n")
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        fig, (a, b) = plt.subplots(1, 2, figsize=(12, 4.5))
        names = list(plain)
        a.barh(range(len(names)), [result["speed_vs_raw"][k] for k in names], color="tab:blue")
        a.axvline(0.8, color="k", linestyle="--", linewidth=1, label="bar 0.8x")
        a.set_yticks(range(len(names)), names, fontsize=8)
        a.invert_yaxis()
        a.set_xlabel("speed / raw NRRD reader (%d ranks, best of %d)" % (args.ranks, args.repeat))
        a.set_title("uncompressed, %d^3 f32" % args.size)
        a.legend()
        names = list(packed)
        b.barh(range(len(names)), [result["compressed_mb_per_s_per_rank"][k] for k in names], color="tab:orange")
        b.axvline(inflate, color="k", linestyle="--", linewidth=1, label="zlib inflate, one core")
        b.set_yticks(range(len(names)), names, fontsize=8)
        b.invert_yaxis()
        b.set_xlabel("decompressed MB/s per rank")
        b.set_title("compressed, %d^3 f32" % args.compressed_size)
        b.legend()
        fig.tight_layout()
        fig.savefig(os.path.join(args.out, "formats_bench.png"), dpi=90)
    except ImportError:
        log("matplotlib missing: no plot")
    print("\n".join(lines))
    if not args.dir:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
