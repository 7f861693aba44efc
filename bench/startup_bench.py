#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Start-up cost of volseg's commands (the bar: `volseg --help` within
0.1 s, `mpirun -np 2 volseg segment` of a tiny volume within 0.2 s), against
`mpirun -np 2 /bin/true` and `/bin/true` measured in the same run, the runs
interleaved so that a busy machine slows every command alike. With
--baseline, another volseg binary (an older build) is timed beside it.

  /usr/bin/python3 bench/startup_bench.py [--volseg build/app/cli/volseg] [--baseline OLD/volseg] [--repeat 15]
"""
import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ENV = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
           OMPI_MCA_rmaps_base_oversubscribe="1", OMPI_MCA_btl_vader_single_copy_mechanism="none")


def timed(argv):
    start = time.perf_counter()
    proc = subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=ENV)
    elapsed = time.perf_counter() - start
    if proc.returncode != 0:
        sys.exit("startup_bench: %s failed (%d): %s" % (" ".join(argv), proc.returncode, proc.stderr.decode()))
    return elapsed


def ldd_count(binary):
    out = subprocess.run(["ldd", binary], capture_output=True, text=True).stdout
    return len([line for line in out.splitlines() if "=>" in line or line.strip().startswith("/")])


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--volseg", default=os.path.join(ROOT, "build", "app", "cli", "volseg"))
    ap.add_argument("--baseline", help="another volseg to time beside it (an older build)")
    ap.add_argument("--repeat", type=int, default=15)
    args = ap.parse_args()
    work = tempfile.mkdtemp(prefix="volseg-startup-")
    volume = os.path.join(work, "tiny.nhdr")
    subprocess.run([args.volseg, "generate", volume, "--dims", "16", "--quiet"], check=True, env=ENV)
    binaries = {"volseg": args.volseg}
    if args.baseline:
        binaries["baseline"] = args.baseline
    # The floor of any MPI program: MPI_Init and MPI_Finalize alone, under mpirun.
    floor = os.path.join(work, "mpi_init_only")
    with open(floor + ".c", "w") as f:
        f.write("#include <mpi.h>\nint main(int c, char** v) { MPI_Init(&c, &v); MPI_Finalize(); return 0; }\n")
    subprocess.run(["mpicc", "-O2", floor + ".c", "-o", floor], check=True)
    cases = {"/bin/true": ["/bin/true"], "mpirun -np 2 /bin/true": ["mpirun", "-np", "2", "/bin/true"],
             "mpirun -np 2 MPI_Init+MPI_Finalize": ["mpirun", "-np", "2", floor]}
    for name, binary in binaries.items():
        cases[name + " --help"] = [binary, "--help"]
        cases[name + " backends"] = [binary, "backends"]
        cases["mpirun -np 2 " + name + " segment"] = [
            "mpirun", "-np", "2", binary, "segment", volume, "--lo", "4", "--hi", "7", "--out",
            os.path.join(work, name + "-mask.nhdr"), "--force", "--quiet"]
    times = {case: [] for case in cases}
    for _ in range(args.repeat):  # interleaved: each round times every case once
        for case, argv in cases.items():
            times[case].append(timed(argv))
    reference = min(times["mpirun -np 2 /bin/true"])
    print("%-40s %8s %8s %10s" % ("command", "best s", "median s", "best / mpirun -np 2 /bin/true"))
    for case, values in times.items():
        print("%-40s %8.3f %8.3f %10.2f" % (case, min(values), statistics.median(values), min(values) / reference))
    for name, binary in binaries.items():
        print("%s: %d shared libraries (ldd %s)" % (name, ldd_count(binary), binary))
    subprocess.run(["rm", "-rf", work])


if __name__ == "__main__":
    main()
