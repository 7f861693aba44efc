#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""The cost of a derived field (the bar: a 3-variable expression
costs at most 2x the time of reading the three variables, warm).

Writes N^3 float32 variables u, v, w with netCDF4-python (CDF-5 and
NetCDF-4, with their fill values), then, the runs interleaved so that a
busy machine slows each alike, times on one rank:
  - `segment --var u` (and v, w): the report's read_s, one variable read;
  - `segment --expr 'sqrt(u*u + v*v + w*w)'`: read_s, the three variables
    read, decoded and the expression evaluated, brick by brick.
Prints the medians and the ratio expr / (u + v + w), and with --out writes
them as Markdown.

  /usr/bin/python3 bench/expression_bench.py [--n 256] [--repeat 7] [--out docs/results/expression_bench.md]
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ENV = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
           OMPI_MCA_rmaps_base_oversubscribe="1", OMPI_MCA_btl_vader_single_copy_mechanism="none")
EXPRESSION = "sqrt(u*u + v*v + w*w)"


def write_file(path, fmt, n):
    import netCDF4
    rng = np.random.default_rng(0)
    with netCDF4.Dataset(path, "w", format=fmt) as d:
        for dim in "zyx":
            d.createDimension(dim, n)
        for name in "uvw":
            var = d.createVariable(name, "f4", ("z", "y", "x"))
            for z in range(0, n, 32):  # a slab at a time: bounded memory for large n
                var[z:z + 32] = rng.standard_normal((min(32, n - z), n, n), dtype=np.float32)


def read_seconds(volseg, path, selection, scratch):
    report = os.path.join(scratch, "report.json")
    argv = [volseg, "segment", path, *selection, "--lo", "1", "--hi", "2", "--out", os.path.join(scratch, "mask.nhdr"),
            "--force", "--quiet", "--report", report]
    proc = subprocess.run(argv, capture_output=True, text=True, env=ENV)
    if proc.returncode != 0:
        sys.exit("expression_bench: %s failed: %s" % (" ".join(argv), proc.stderr.strip()))
    with open(report) as f:
        return json.load(f)["per_rank"][0]["read_s"]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--volseg", default=os.path.join(ROOT, "build", "app", "cli", "volseg"))
    ap.add_argument("--n", type=int, default=256)
    ap.add_argument("--repeat", type=int, default=7)
    ap.add_argument("--out", help="write the table here as Markdown")
    args = ap.parse_args()
    rows = []
    with tempfile.TemporaryDirectory(prefix="volseg-expression-bench-") as scratch:
        for fmt, name in (("NETCDF3_64BIT_DATA", "CDF-5"), ("NETCDF4", "NetCDF-4")):
            path = os.path.join(scratch, "uvw-%s.nc" % name)
            write_file(path, fmt, args.n)
            times = {key: [] for key in ("u", "v", "w", "expr")}
            read_seconds(args.volseg, path, ["--expr", EXPRESSION], scratch)  # warm the page cache
            for _ in range(args.repeat):
                for var in "uvw":
                    times[var].append(read_seconds(args.volseg, path, ["--var", var], scratch))
                times["expr"].append(read_seconds(args.volseg, path, ["--expr", EXPRESSION], scratch))
            median = {key: statistics.median(value) for key, value in times.items()}
            three = median["u"] + median["v"] + median["w"]
            rows.append((name, three, median["expr"], median["expr"] / three))
            os.unlink(path)
    lines = ["| file | read u + v + w (s) | --expr '%s' (s) | ratio (bar: <= 2) |" % EXPRESSION, "|---|---|---|---|"]
    for name, three, expr, ratio in rows:
        lines.append("| %s | %.3f | %.3f | %.2f |" % (name, three, expr, ratio))
    text = "\n".join(lines)
    print("%d^3 float32 per variable, 1 rank, median of %d warm runs (the report's read_s)" % (args.n, args.repeat))
    print(text)
    if args.out:
        with open(args.out, "w") as f:
            f.write("# Derived fields: the cost of an expression\n\n"
                    "`/usr/bin/python3 bench/expression_bench.py --out docs/results/expression_bench.md`: "
                    "%d^3 float32 variables, one rank, the median of %d warm runs of each (runs interleaved). "
                    "The expression's time is its reader's: the three variables read, decoded (fill values "
                    "to NaN) and evaluated by volseg's block program, a brick at a time.\n\n%s\n"
                    % (args.n, args.repeat, text))


if __name__ == "__main__":
    main()
