# SPDX-License-Identifier: MIT
"""The fault matrix (docs/reliability.md): every backend meets every kind of
fault (read EIO, write EIO, write ENOSPC, close/fsync EIO, short reads, a
slow rank) at least once, on 1-4 ranks.

Faults come from VOLSEG_FAULTS where volseg makes the call itself (posix,
mmap, mmap-advise, ranged-mmap, ranged-uring, twophase) and from the
LD_PRELOAD shim (tests/faults/volseg_fault_shim.c, VOLSEG_SHIM_FAULTS) below
the libraries (mpiio, pnetcdf, netcdf4). Those run on volseg's default MPI-IO,
ROMIO (volseg::prefer_checked_mpi_io): Open MPI's own default, OMPIO, drops
the errors (test_ompio_drops_errors). The shim's watchdog is loaded into
every run, so a hang ends with status 99 instead of a stuck test.

For an error: the job ends within BOUND_S, mpirun's status is non-zero,
stderr holds exactly one 'volseg: error:' line naming the call, the file and
the error (and the rank when not every rank failed), the input is unchanged,
and nothing is left beside the output but hidden files of --resume
(volseg-partial, volseg-journal). For a short read or a slow rank: the mask
equals the fault-free one byte for byte. Rows marked 'hang' are hangs inside
the libraries (HDF5, PnetCDF, ROMIO) that volseg cannot end: the watchdog
must end them with status 99 within the bound.

Each row prints a line of the table in docs/reliability.md."""
import hashlib
import os
import re
import subprocess
import sys
import tempfile
import time
import unittest

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import e2e_util as e  # noqa: E402

try:
    import netCDF4
except ImportError:  # Debian: python3-netcdf4
    netCDF4 = None

SHIM = os.environ.get("VOLSEG_FAULT_SHIM", "")
LO, HI = "2", "5"
BOUND_S = 30  # a job must end this soon after a fault
WATCHDOG_S = 8  # the shim's: no I/O call for this long ends the job (a run takes about 1 s)
EIO, ENOSPC = "Input/output error", "No space left on device"
ROMIO = {"OMPI_MCA_io": "romio321"}
INPUTS = {"raw": ("in.nhdr", ["in.nhdr", "in.raw"]), "cdf5": ("in.nc", ["in.nc"]), "nc4": ("in4.nc", ["in4.nc"])}
KEEP = re.compile(r"^\..*volseg-(partial|journal)")  # what --resume may leave on purpose


class Case:
    """One run. expect: 'error' (line: the regex after 'volseg: error: ',
    {d} the folder; rank: the failing rank named, or None), 'mask' (the
    mask is right) or 'hang' (a library hang the watchdog ends)."""

    def __init__(self, backend, ranks, faults, expect, line=None, rank=None, shim=False, source="raw",
                 output="raw", extra=(), env=None):
        self.backend, self.ranks, self.faults, self.expect = backend, ranks, faults, expect
        self.line, self.rank, self.shim, self.source, self.output = line, rank, shim, source, output
        self.extra, self.env = list(extra), dict(env or {})

    def name(self):
        label = self.backend + ("" if self.source == "raw" else " (%s)" % self.source)
        return "%s np%d %s" % (label, self.ranks, self.faults)


def cases():
    own = []  # faults by VOLSEG_FAULTS
    add = own.append
    # posix: pread/pwrite per run.
    add(Case("posix", 1, "read:eio@1", "error", r"read {d}/in.raw: " + EIO))
    add(Case("posix", 2, "write:eio@1,rank=1", "error", r"write {d}/o.raw: " + EIO, rank=1))
    add(Case("posix", 3, "write:enospc@1,rank=2", "error", r"write {d}/o.raw: " + ENOSPC, rank=2))
    add(Case("posix", 4, "close:eio", "error", r"close {d}/o.raw: " + EIO))
    add(Case("posix", 2, "read:short", "mask"))
    add(Case("posix", 3, "write:slow,ms=300,rank=1", "mask"))
    # mmap: the populate of a window is its read; populate=0 meets a real SIGBUS.
    add(Case("mmap", 2, "read:eio@2,rank=1", "error",
             r"read {d}/in.raw: %s \(populating the mapped window\)" % EIO, rank=1))
    add(Case("mmap", 3, "read:eio@1,rank=2", "error",
             r"read {d}/in.raw: %s \(SIGBUS on the mapped page at byte \d+\)" % EIO, rank=2,
             extra=["--hint", "populate=0"]))
    add(Case("mmap", 4, "write:eio@1,rank=3", "error", r"write {d}/o.raw: " + EIO, rank=3))
    add(Case("mmap", 1, "write:enospc@2", "error", r"write {d}/o.raw: " + ENOSPC))
    add(Case("mmap", 2, "fsync:eio,rank=0", "error", r"fdatasync {d}/o.raw: " + EIO, rank=0,
             extra=["--hint", "fsync=1"]))
    add(Case("mmap", 3, "read:short", "mask"))
    add(Case("mmap", 4, "read:slow,ms=200,rank=2", "mask"))
    add(Case("mmap-advise", 3, "read:eio@1,rank=0", "error",
             r"read {d}/in.raw: %s \(populating the mapped window\)" % EIO, rank=0))
    add(Case("mmap-advise", 1, "write:eio@1", "error", r"write {d}/o.raw: " + EIO))
    add(Case("mmap-advise", 2, "write:enospc@1,rank=1", "error", r"write {d}/o.raw: " + ENOSPC, rank=1))
    add(Case("mmap-advise", 4, "close:eio,rank=2", "error", r"close {d}/o.raw: " + EIO, rank=2))
    add(Case("mmap-advise", 2, "read:short", "mask"))
    add(Case("mmap-advise", 3, "write:slow,ms=300,rank=0", "mask"))
    # ranged-mmap: a block's hand-out is its read; ranged-uring: each completion.
    add(Case("ranged-mmap", 2, "read:eio@1,rank=1", "error",
             r"read {d}/in.raw: %s \(populating the mapped window\)" % EIO, rank=1))
    add(Case("ranged-mmap", 3, "write:eio@1,rank=2", "error", r"write {d}/o.raw: " + EIO, rank=2))
    add(Case("ranged-mmap", 4, "write:enospc@1,rank=0", "error", r"write {d}/o.raw: " + ENOSPC, rank=0))
    add(Case("ranged-mmap", 1, "close:eio", "error", r"close {d}/in.raw: " + EIO))  # the range's, first
    add(Case("ranged-mmap", 2, "read:short", "mask"))
    add(Case("ranged-mmap", 4, "read:slow,ms=200,rank=3", "mask"))
    add(Case("ranged-uring", 4, "read:eio@1,rank=2", "error",
             r"read {d}/in.raw: %s \(io_uring, at byte \d+\)" % EIO, rank=2))
    add(Case("ranged-uring", 1, "write:eio@1", "error", r"write {d}/o.raw: " + EIO))
    add(Case("ranged-uring", 2, "write:enospc@1,rank=1", "error", r"write {d}/o.raw: " + ENOSPC, rank=1))
    add(Case("ranged-uring", 3, "fsync:eio", "error", r"fdatasync {d}/o.raw: " + EIO, extra=["--hint", "fsync=1"]))
    add(Case("ranged-uring", 3, "read:short", "mask"))
    add(Case("ranged-uring", 2, "read:slow,ms=200,rank=1", "mask"))
    # twophase: the aggregators' pread/pwrite, raw and CDF-5.
    add(Case("twophase", 2, "read:eio@1,rank=1", "error", r"read {d}/in.raw: " + EIO, rank=1))
    add(Case("twophase", 3, "write:eio@1,rank=2", "error", r"write {d}/o.raw: " + EIO, rank=2))
    add(Case("twophase", 4, "write:enospc@1,rank=3", "error", r"write {d}/o.raw: " + ENOSPC, rank=3))
    add(Case("twophase", 1, "close:eio", "error", r"close {d}/o.raw: " + EIO))
    add(Case("twophase", 2, "read:short", "mask"))
    add(Case("twophase", 4, "write:slow,ms=300,rank=2", "mask"))
    cdf = dict(source="cdf5", output="cdf5")
    add(Case("twophase", 3, "read:eio@1,rank=1", "error", r"read {d}/in.nc: " + EIO, rank=1, **cdf))
    add(Case("twophase", 2, "write:eio@1,rank=1", "error", r"write {d}/o.nc: " + EIO, rank=1, **cdf))
    add(Case("twophase", 4, "write:enospc@1,rank=2", "error", r"write {d}/o.nc: " + ENOSPC, rank=2, **cdf))
    add(Case("twophase", 3, "fsync:eio,rank=1", "error", r"fdatasync {d}/o.nc: " + EIO, rank=1,
             extra=["--hint", "fsync=1"], **cdf))
    add(Case("twophase", 1, "read:short", "mask", **cdf))
    add(Case("twophase", 2, "read:slow,ms=200,rank=0", "mask", **cdf))

    lib = []  # faults by the shim, inside the libraries (ROMIO)
    add = lib.append
    mpi_io_error = "MPI_ERR_IO: input/output error"  # ROMIO keeps the class, not the errno
    add(Case("mpiio", 2, "read:eio,rank=1,path={d}/in.raw", "error",
             r"MPI_File_read_all {d}/in.raw: " + mpi_io_error, rank=1))
    add(Case("mpiio", 3, "write:eio,rank=1,path={d}/.o.raw", "error",
             r"MPI_File_write_all {d}/o.raw: " + mpi_io_error, rank=1))
    add(Case("mpiio", 4, "write:enospc,rank=2,path={d}/.o.raw", "error",
             r"MPI_File_write_all {d}/o.raw: " + mpi_io_error, rank=2))
    # Open MPI's MPI_File_close returns success after a failed close(2); volseg's own close reports it.
    add(Case("mpiio", 1, "close:eio,path={d}/.o.raw", "error", r"close {d}/o.raw: " + EIO))
    add(Case("mpiio", 3, "read:short,path={d}/in.raw", "mask"))
    add(Case("mpiio", 2, "read:slow,ms=200,rank=1,path={d}/in.raw", "mask"))
    nc = dict(source="cdf5", output="cdf5")
    add(Case("pnetcdf", 2, "read:eio,rank=1,path={d}/in.nc", "error",
             r"read {d}/in.nc: Unknown error occurs in reading file", rank=1, **nc))
    add(Case("pnetcdf", 3, "write:eio,rank=1,path={d}/.o.nc.volseg-partial", "error",
             r"write {d}/o.nc: Unknown error occurs in writing file", rank=1, **nc))
    add(Case("pnetcdf", 4, "write:enospc,rank=0,path={d}/.o.nc.volseg-partial", "error",
             r"write the header of {d}/o.nc: Unknown error occurs in writing file", rank=0, **nc))
    # PnetCDF's own sync at close (fsync=1), and the journal's flush of each round's data before its record.
    add(Case("pnetcdf", 3, "fsync:eio,path={d}/.o.nc.volseg-partial", "error",
             r"fsync {d}/o.nc: Unknown error in file operation", extra=["--hint", "fsync=1", "--no-journal-sync"],
             **nc))
    add(Case("pnetcdf", 2, "fsync:eio,rank=1,path={d}/.o.nc.volseg-partial", "error",
             r"fdatasync {d}/\.o\.nc\.volseg-partial: " + EIO, rank=1, **nc))
    add(Case("pnetcdf", 1, "read:short@4,path={d}/in.nc", "mask", **nc))  # after the three reads of the open (see docs)
    add(Case("pnetcdf", 4, "write:slow,ms=300,rank=3,path={d}/.o.nc.volseg-partial", "mask", **nc))
    add(Case("pnetcdf", 2, "close:eio,path={d}/.o.nc.volseg-partial", "hang", **nc))  # ROMIO's create: ADIOI_GEN_OpenColl
    nc4 = dict(source="nc4", output="nc4")
    add(Case("netcdf4", 2, "read:eio,rank=1,path={d}/in4.nc", "error",
             r"open {d}/in4.nc: NetCDF: HDF error", rank=1, **nc4))
    add(Case("netcdf4", 1, "write:eio@3,path={d}/.o.nc", "error", r"write {d}/o.nc: NetCDF: HDF error", **nc4))
    add(Case("netcdf4", 3, "fsync:eio,path={d}/.o.nc", "error",
             r"write the header of {d}/o.nc: NetCDF: HDF error", extra=["--hint", "fsync=1"], **nc4))
    add(Case("netcdf4", 4, "read:short,path={d}/in4.nc", "mask", **nc4))
    add(Case("netcdf4", 1, "write:slow,ms=200,path={d}/.o.nc", "mask", **nc4))
    add(Case("netcdf4", 3, "write:eio,rank=1,path={d}/.o.nc", "hang", **nc4))  # HDF5's flush at enddef
    add(Case("netcdf4", 2, "write:enospc@5,rank=1,path={d}/.o.nc", "hang", **nc4))  # H5Dwrite
    for case in lib:  # on volseg's default MPI-IO: no OMPI_MCA_io set
        case.shim = True
    return own + lib


def md5(path):
    with open(path, "rb") as f:
        return hashlib.md5(f.read()).hexdigest()


class FaultMatrix(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        e.require_binary()
        if not SHIM or not os.path.exists(SHIM):
            raise RuntimeError("set VOLSEG_FAULT_SHIM to the built volseg_fault_shim.so (got %r)" % SHIM)
        if netCDF4 is None:
            raise RuntimeError("python3-netcdf4 is needed to read the NetCDF masks")
        cls.tmp = tempfile.TemporaryDirectory(prefix="volseg-e2e-matrix-")
        cls.dir = cls.tmp.name
        # Eight bricks (--brick 8,48,40): every rank of 1-4 has two or more.
        for name, fmt in (("in.nhdr", "raw"), ("in.nc", "cdf5"), ("in4.nc", "netcdf4")):
            proc = e.run(["generate", os.path.join(cls.dir, name), "--format", fmt, "--field", "shells",
                          "--dims", "64,48,40", "--dtype", "f32", "--quiet"])
            if proc.returncode != 0:
                raise RuntimeError("volseg generate failed:\n" + proc.stderr)
        cls.inputs = {f: md5(os.path.join(cls.dir, f)) for _, files in INPUTS.values() for f in files}
        proc = cls.segment(cls, Case("posix", 2, "", "mask"), out="ref.nhdr")
        if proc.returncode != 0:
            raise RuntimeError("volseg segment failed:\n" + proc.stderr)
        with open(os.path.join(cls.dir, "ref.raw"), "rb") as f:
            cls.reference = f.read()
        cls.table = []

    @classmethod
    def tearDownClass(cls):
        print("\n| fault | backend | ranks | exit | seconds | error line | output | input intact |")
        print("|---|---|---|---|---|---|---|---|")
        for row in cls.table:
            print(row)
        cls.tmp.cleanup()

    def segment(self, case, out=None):
        source = INPUTS[case.source][0]
        out = out or ("o.nhdr" if case.output == "raw" else "o.nc")
        faults = case.faults.replace("{d}", self.dir)
        # -x NAME=VALUE: the ranks' environment only, never mpirun's own.
        ranks_env = {"VOLSEG_FAULTS": "" if case.shim else faults, "VOLSEG_SHIM_FAULTS": faults if case.shim else "",
                     "VOLSEG_SHIM_WATCHDOG_S": str(WATCHDOG_S), "LD_PRELOAD": SHIM,
                     "ASAN_OPTIONS": os.environ.get("ASAN_OPTIONS", "") + ":verify_asan_link_order=0", **case.env}
        argv = [e.MPIEXEC] + e.MPI_QUIET + ["--bind-to", "none"]
        for name, value in ranks_env.items():
            argv += ["-x", "%s=%s" % (name, value)]
        argv += ["-np", str(case.ranks), e.VOLSEG, "segment", os.path.join(self.dir, source), "--lo", LO, "--hi", HI,
                 "--out", os.path.join(self.dir, out), "--backend", case.backend, "--brick", "8,48,40",
                 "--progress", "none", *case.extra]
        env = {k: v for k, v in os.environ.items() if not k.startswith(("VOLSEG_FAULTS", "VOLSEG_SHIM", "OMPI_MCA_io"))}
        start = time.time()
        proc = subprocess.run(argv, cwd=self.dir, capture_output=True, text=True, timeout=BOUND_S * 4, env=env)
        proc.seconds = time.time() - start
        return proc

    def mask(self, case):
        if case.output == "raw":
            with open(os.path.join(self.dir, "o.raw"), "rb") as f:
                return f.read()
        with netCDF4.Dataset(os.path.join(self.dir, "o.nc")) as dataset:
            variable = dataset.variables["mask"]
            variable.set_auto_maskandscale(False)
            return np.ascontiguousarray(variable[:]).astype(np.uint8).tobytes()

    def outputs(self):
        return sorted(f for f in os.listdir(self.dir) if f.startswith(("o.", ".o.")))

    def remove_outputs(self):
        for f in self.outputs():
            os.remove(os.path.join(self.dir, f))

    def check(self, case):
        proc = self.segment(case)
        lines = [line for line in proc.stderr.splitlines() if line.startswith("volseg: error:")]
        intact = all(md5(os.path.join(self.dir, f)) == digest for f, digest in self.inputs.items())
        left = self.outputs()
        try:
            self.assertTrue(intact, "the input changed")
            if case.expect == "mask":
                self.assertEqual(proc.returncode, 0, proc.stderr)
                self.assertEqual(lines, [])
                self.assertEqual(self.mask(case), self.reference, "the mask differs from the fault-free one")
                finals = ["o.nhdr", "o.raw"] if case.output == "raw" else ["o.nc"]
                self.assertEqual(left, finals, "a temporary was left beside the output")
                state = "the mask, right"
            elif case.expect == "error":
                self.assertNotEqual(proc.returncode, 0, proc.stderr)
                self.assertLess(proc.seconds, BOUND_S)
                self.assertEqual(len(lines), 1, proc.stderr)
                pattern = "^volseg: error: " + case.line.replace("{d}", re.escape(self.dir))
                if case.rank is not None and case.ranks > 1:
                    pattern += r" \(on rank %d\)" % case.rank
                # The bricks done before the error are kept for --resume, and the line says so.
                kept = r" \(\d+ of 8 bricks done and kept in \S+\.volseg-partial: rerun with --resume to finish\)"
                self.assertRegex(lines[0], pattern + "(" + kept + ")?$")
                self.assertEqual([f for f in left if not KEEP.match(f)], [], "an output or a temporary was left")
                self.assertEqual(bool(re.search(kept, lines[0])), bool(left), "kept files and the line disagree")
                state = "nothing" if not left else "only --resume's files"
            else:  # a hang inside a library: the watchdog ends it
                self.assertEqual(proc.returncode, 99, proc.stderr)
                self.assertLess(proc.seconds, BOUND_S)
                self.assertIn("volseg_fault_shim: rank", proc.stderr)
                finals = [f for f in left if not f.startswith(".")]
                self.assertEqual(finals, [], "an output has its final name after an aborted job")
                state = "its temporary (aborted)" if left else "nothing"
        finally:
            self.remove_outputs()
        line = lines[0].replace(self.dir + "/", "") if lines else (
            "(none: watchdog, MPI_Abort 99)" if case.expect == "hang" else "(none)")
        labels = ([] if case.source == "raw" else [{"cdf5": "CDF-5", "nc4": "NetCDF-4"}[case.source]]) + (
            ["ROMIO, volseg's default"] if case.shim else [])
        source = " (%s)" % ", ".join(labels) if labels else ""
        fault = case.faults.replace("{d}/", "") + (" " + " ".join(a for a in case.extra if a != "--hint") if case.extra else "")
        self.table.append("| `%s` | %s%s | %d | %d | %.1f | %s | %s | %s |" % (
            fault, case.backend, source, case.ranks, proc.returncode, proc.seconds, line.replace("|", "\\|"), state,
            "yes" if intact else "NO"))

    def test_every_backend_meets_every_fault(self):
        all_cases = cases()
        # The promise of the matrix: each backend meets each kind at least once, on 1-4 ranks.
        kinds = {"read:eio", "write:eio", "write:enospc", "close|fsync", "read:short", "slow"}
        for backend in {(c.backend, c.source) for c in all_cases}:
            met = set()
            for c in all_cases:
                if (c.backend, c.source) != backend:
                    continue
                for kind in kinds:
                    if re.match("(%s)" % kind, c.faults) or (kind == "slow" and ":slow" in c.faults):
                        met.add(kind)
            self.assertEqual(met, kinds, backend)
        self.assertEqual({c.ranks for c in all_cases}, {1, 2, 3, 4})
        for case in all_cases:
            with self.subTest(case=case.name()):
                self.check(case)

    def run_job(self, args, ranks, faults="", shim=False):
        """Runs `volseg ARGS` under the faults, as segment() does."""
        faults = faults.replace("{d}", self.dir)
        ranks_env = {"VOLSEG_FAULTS": "" if shim else faults, "VOLSEG_SHIM_FAULTS": faults if shim else "",
                     "VOLSEG_SHIM_WATCHDOG_S": str(WATCHDOG_S), "LD_PRELOAD": SHIM,
                     "ASAN_OPTIONS": os.environ.get("ASAN_OPTIONS", "") + ":verify_asan_link_order=0"}
        argv = [e.MPIEXEC] + e.MPI_QUIET + ["--bind-to", "none"]
        for name, value in ranks_env.items():
            argv += ["-x", "%s=%s" % (name, value)]
        argv += ["-np", str(ranks), e.VOLSEG, *args, "--progress", "none"]
        env = {k: v for k, v in os.environ.items() if not k.startswith(("VOLSEG_FAULTS", "VOLSEG_SHIM", "OMPI_MCA_io"))}
        start = time.time()
        proc = subprocess.run(argv, cwd=self.dir, capture_output=True, text=True, timeout=BOUND_S * 4, env=env)
        proc.seconds = time.time() - start
        return proc

    def test_label_and_pyramid_meet_faults(self):
        """label's two passes (the second reads the bricks it did not keep)
        and merge, and the pyramid's pass and tables,
        under the same faults: an error ends every rank with one line (naming
        the rank when one failed) and leaves no output; a short read or a slow
        rank gives the fault-free result byte for byte."""
        source = os.path.join(self.dir, "in.nhdr")

        def label(backend):
            return ["label", source, "--lo", LO, "--hi", HI, "--out", os.path.join(self.dir, "o.nhdr"),
                    "--backend", backend, "--brick", "8,48,40"]

        def label_reread(backend):  # no brick kept from pass 1: pass 2 reads the input again
            return label(backend) + ["--cache", "0"]

        def pyramid(backend):
            return ["pyramid", source, "--pyramid-dir", os.path.join(self.dir, "o.pyramid"), "--brick", "8",
                    "--backend", backend]

        def result(job):
            if job in (label, label_reread):
                with open(os.path.join(self.dir, "o.raw"), "rb") as f:
                    return f.read()
            folder = os.path.join(self.dir, "o.pyramid")
            return {n: md5(os.path.join(folder, n)) for n in sorted(os.listdir(folder)) if n != "index.json"}

        def clean():
            import shutil
            shutil.rmtree(os.path.join(self.dir, "o.pyramid"), ignore_errors=True)
            self.remove_outputs()

        references = {}
        for job in (label, pyramid):
            proc = self.run_job(job("posix"), 2)
            self.assertEqual(proc.returncode, 0, proc.stderr)
            references[job] = result(job)
            clean()
        mpi_io_error = "MPI_ERR_IO: input/output error"
        rows = [  # job, backend, ranks, faults, expect (a regex of the line, or "same"), failing rank, shim
            (label, "posix", 2, "read:eio@3,rank=1", r"read \S*in\.raw: " + EIO, 1, False),  # pass 1
            # Pass 2 (4 bricks a rank): it reads only bricks it did not keep.
            (label_reread, "posix", 2, "read:eio@6,rank=1", r"read \S*in\.raw: " + EIO, 1, False),
            (label, "posix", 3, "write:eio@1,rank=2", r"write \S*o\.raw: " + EIO, 2, False),
            (label, "mmap", 4, "write:enospc@1,rank=0", r"write \S*o\.raw: " + ENOSPC, 0, False),
            (label, "posix", 1, "close:eio", r"close \S*: " + EIO, None, False),
            (label, "posix", 3, "read:short", "same", None, False),
            (label, "mmap", 2, "write:slow,ms=300,rank=1", "same", None, False),
            (label, "mpiio", 2, "read:eio,rank=1,path={d}/in.raw", r"MPI_File_read_all \S*in\.raw: " + mpi_io_error,
             1, True),
            (pyramid, "posix", 2, "read:eio@2,rank=1", r"read \S*in\.raw: " + EIO, 1, False),
            (pyramid, "posix", 3, "write:eio@1,rank=2", r"write \S*: " + EIO, 2, False),
            (pyramid, "posix", 4, "write:enospc@2,rank=0", r"write \S*: " + ENOSPC, 0, False),
            (pyramid, "posix", 1, "close:eio", r"close \S*: " + EIO, None, False),
            (pyramid, "posix", 2, "read:short", "same", None, False),
            # One read held 2 s (each read slowed would keep the others past the shim watchdog's 8 s).
            (pyramid, "posix", 3, "read:slow@5,ms=2000,rank=2", "same", None, False),
        ]
        for job, backend, ranks, faults, expect, rank, shim in rows:
            with self.subTest(job=job.__name__, backend=backend, ranks=ranks, faults=faults):
                try:
                    proc = self.run_job(job(backend), ranks, faults, shim)
                    lines = [line for line in proc.stderr.splitlines() if line.startswith("volseg: error:")]
                    if expect == "same":
                        self.assertEqual(proc.returncode, 0, proc.stderr)
                        self.assertEqual(result(job), references[job], "the result differs from the fault-free one")
                        continue
                    self.assertNotEqual(proc.returncode, 0, proc.stderr)
                    self.assertLess(proc.seconds, BOUND_S)
                    self.assertEqual(len(lines), 1, proc.stderr)
                    pattern = "^volseg: error: " + expect
                    if rank is not None and ranks > 1:
                        pattern += r".* \(on rank %d\)$" % rank
                    self.assertRegex(lines[0], pattern)
                    self.assertEqual(self.outputs(), [], "an output or a temporary was left")
                    self.assertFalse(os.path.exists(os.path.join(self.dir, "o.pyramid")), "a partial pyramid was left")
                finally:
                    clean()

    @unittest.expectedFailure
    def test_ompio_drops_errors(self):
        """Open MPI 4.1's OMPIO (its default MPI-IO) prints a failed pwrite
        and returns success, from collective calls through a file view too:
        the job ends with status 0 and a wrong output. Expected to fail until
        OMPIO reports the error."""
        for backend, source, out in (("mpiio", "raw", "{d}/.o.raw"), ("pnetcdf", "cdf5", "{d}/.o.nc"),
                                     ("netcdf4", "nc4", "{d}/.o.nc")):
            case = Case(backend, 2, "write:eio,rank=1,path=" + out, "error", shim=True, source=source, output=source,
                        env={"OMPI_MCA_io": "ompio"})
            proc = self.segment(case)
            self.remove_outputs()
            self.assertNotEqual(proc.returncode, 0, backend)


if __name__ == "__main__":
    e.main(verbosity=2)
