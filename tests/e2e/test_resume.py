# SPDX-License-Identifier: MIT
"""segment --resume (docs/reliability.md): a job stopped by its scheduler
(SIGUSR1, exit 75), killed (kill -9 of one rank) or failed by an injected
fault leaves a hidden partial mask and its journal, nothing at the output's
name; a rerun with --resume, on another rank count and with another backend,
redoes only the unfinished bricks and writes the same bytes as an
uninterrupted run (raw), or the same data and attributes but history (CDF-5).
A journal of another job is refused by name, a torn record only costs its
brick, and NetCDF-4 is refused with its reason."""
import os
import re
import signal
import struct
import subprocess
import sys
import tempfile
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import e2e_util as e  # noqa: E402

LO, HI = "2", "5"
BRICK = "1,48,40"  # 64 bricks of the 64x48x40 volume: more per rank than a rank's masks in flight
BRICKS = 64
RECORD = 8 * (8 + 256)  # bytes of a journal record (core/driver/src/journal.cpp)


def journal_path(out):
    d, name = os.path.split(out)
    return os.path.join(d, "." + name + ".volseg-journal")


def partial_path(data):
    d, name = os.path.split(data)
    return os.path.join(d, "." + name + ".volseg-partial")


def journal_slots(path):
    """Offsets of the written (non-zero) record slots; none while the job is
    still writing the header (a busy machine can catch it half-way)."""
    with open(path, "rb") as f:
        data = f.read()
    if b"\n" not in data:
        return []
    fields = data.split(b"\n", 1)[0].split()
    if len(fields) < 3 or not fields[2].isdigit():
        return []
    size = int(fields[2])
    slots = []
    for b in range(BRICKS):
        at = size + b * RECORD
        if any(data[at:at + RECORD]):
            slots.append(at)
    return slots


class Resume(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        e.require_binary()
        cls.tmp = tempfile.TemporaryDirectory(prefix="volseg-e2e-resume-")
        cls.dir = cls.tmp.name
        proc = e.run(["generate", "in.nhdr", "--field", "shells", "--dims", "64,48,40", "--dtype", "f32", "--quiet"],
                     cwd=cls.dir)
        if proc.returncode != 0:
            raise RuntimeError(proc.stderr)
        for out in ("ref.nhdr", "ref.nc"):
            proc = cls().segment(out, 2)
            if proc.returncode != 0:
                raise RuntimeError(proc.stderr)
        with open(os.path.join(cls.dir, "ref.raw"), "rb") as f:
            cls.reference = f.read()

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def path(self, name):
        return os.path.join(self.dir, name)

    def argv(self, out, ranks, extra=(), faults=None):
        env = ["-x", "VOLSEG_FAULTS"] if faults else []
        return [e.MPIEXEC] + e.MPI_QUIET + env + ["-np", str(ranks), e.VOLSEG, "segment", "in.nhdr", "--lo", LO,
                                                  "--hi", HI, "--out", out, "--brick", BRICK, "--progress", "none",
                                                  *extra]

    def segment(self, out, ranks, extra=(), faults=None, timeout=120):
        env = dict(os.environ)
        if faults:
            env["VOLSEG_FAULTS"] = faults
        return subprocess.run(self.argv(out, ranks, extra, faults), cwd=self.dir, env=env, capture_output=True,
                              text=True, timeout=timeout)

    def start_slow(self, out, ranks, extra=(), faults="write:slow,ms=300"):
        """A job whose mask writes (or what faults says) take 300 ms each;
        returns once it has journaled a brick."""
        env = dict(os.environ, VOLSEG_FAULTS=faults)
        proc = subprocess.Popen(self.argv(out, ranks, extra, faults=True), cwd=self.dir, env=env,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        journal = self.path(journal_path(out))
        deadline = time.time() + 60
        while time.time() < deadline:
            if os.path.exists(journal) and journal_slots(journal):
                return proc
            if proc.poll() is not None:
                self.fail("the job ended before it journaled a brick:\n" + proc.stderr.read())
            time.sleep(0.02)
        proc.kill()
        self.fail("no brick journaled within 60 s")

    def stop_with_signal(self, out, ranks, extra=("--backend", "posix"), faults="write:slow,ms=300"):
        """A slowed job stopped by SIGUSR1 once it has journaled a brick
        (mpirun forwards the signal to every rank); returns (status, stderr)."""
        proc = self.start_slow(out, ranks, extra, faults)
        proc.send_signal(signal.SIGUSR1)
        _, stderr = proc.communicate(timeout=60)
        return proc.returncode, stderr

    def assert_left_partial(self, out, data):
        """Nothing at the output's names; the partial file and a journal
        with some but not all bricks. Returns the journaled count."""
        for name in (out, data):
            self.assertFalse(os.path.exists(self.path(name)), name + " exists after an unfinished job")
        self.assertTrue(os.path.exists(self.path(partial_path(data))))
        done = len(journal_slots(self.path(journal_path(out))))
        self.assertGreater(done, 0)
        self.assertLess(done, BRICKS, "the job was not stopped mid-way: the test proves nothing")
        leftovers = [n for n in os.listdir(self.dir) if "volseg-tmp" in n]
        self.assertEqual(leftovers, [])
        return done

    def resume(self, out, ranks, done, extra=()):
        proc = self.segment(out, ranks, ("--resume",) + tuple(extra))
        e.check_ok(self, proc)
        self.assertIn("resumed: %d of %d bricks" % (done, BRICKS), proc.stdout)
        self.assertFalse(os.path.exists(self.path(journal_path(out))), "the journal outlived the job")
        return proc

    def assert_same_raw(self, data):
        with open(self.path(data), "rb") as f:
            self.assertEqual(f.read(), self.reference, data + " differs from the uninterrupted run's mask")

    def test_scheduler_signal_then_resume_on_other_rank_counts(self):
        for first, second in ((2, 3), (3, 1)):
            with self.subTest(first=first, second=second):
                out = "sig%d.nhdr" % first
                status, stderr = self.stop_with_signal(out, first)
                self.assertEqual(status, 75, stderr)
                lines = [l for l in stderr.splitlines() if l.startswith("volseg:")]
                self.assertEqual(len(lines), 1, stderr)
                self.assertRegex(lines[0], r"^volseg: interrupted by SIGUSR1 \(\d+ of 64 bricks done and kept in "
                                           r".*\.sig%d\.raw\.volseg-partial: rerun with --resume to finish\)" % first)
                done = self.assert_left_partial(out, "sig%d.raw" % first)
                self.resume(out, second, done)
                self.assert_same_raw("sig%d.raw" % first)
                with open(self.path(out)) as a, open(self.path("ref.nhdr")) as b:
                    self.assertEqual(a.read().replace("sig%d" % first, "ref"), b.read())

    def test_killed_rank_then_resume(self):
        out = "kill.nhdr"
        proc = self.start_slow(out, 2, ("--backend", "posix"))
        ranks = subprocess.run(["pgrep", "-P", str(proc.pid)], capture_output=True, text=True).stdout.split()
        self.assertTrue(ranks, "no rank processes under mpirun")
        os.kill(int(ranks[-1]), signal.SIGKILL)
        proc.communicate(timeout=60)
        self.assertNotEqual(proc.returncode, 0)
        done = self.assert_left_partial(out, "kill.raw")
        # The next run without --resume neither discards nor overwrites the work.
        proc = self.segment(out, 2)
        self.assertEqual(proc.returncode, 1)
        self.assertRegex(proc.stderr, r"volseg: error: kill\.nhdr: an unfinished job left .*\.kill\.raw\.volseg-partial "
                                      r"\(\d+ of 64 bricks done\): use --resume to finish it, or --force to start over")
        self.resume(out, 1, done, ("--backend", "mmap"))
        self.assert_same_raw("kill.raw")

    def test_fault_then_resume(self):
        out = "fault.nhdr"
        proc = self.segment(out, 2, ("--backend", "posix"), faults="write:eio@3,rank=1")
        self.assertEqual(proc.returncode, 1, proc.stderr)
        self.assertRegex(proc.stderr.strip(), r"^volseg: error: write fault\.raw: Input/output error \(on rank 1\) "
                                              r"\(\d+ of 64 bricks done and kept in .*: rerun with --resume to finish\)$")
        done = self.assert_left_partial(out, "fault.raw")
        self.resume(out, 4, done)
        self.assert_same_raw("fault.raw")

    def test_collective_cdf5_signal_then_resume(self):
        import netCDF4  # Debian's python3-netcdf4
        out = "c.nc"
        # Collective rounds of one brick each (the two-phase engine writes),
        # each read slowed, so the signal lands between rounds.
        status, stderr = self.stop_with_signal(out, 2, ("--backend", "posix", "--out-backend", "twophase",
                                                        "--batch-bytes", "1"), faults="read:slow,ms=300")
        self.assertEqual(status, 75, stderr)
        done = self.assert_left_partial(out, out)
        self.resume(out, 3, done, ("--backend", "mpiio", "--out-backend", "pnetcdf"))
        with netCDF4.Dataset(self.path(out)) as a, netCDF4.Dataset(self.path("ref.nc")) as b:
            self.assertEqual(a.data_model, b.data_model)
            va, vb = a.variables["mask"], b.variables["mask"]
            self.assertEqual(va[:].tobytes(), vb[:].tobytes())
            skip = {"history"}
            self.assertEqual({k: str(va.getncattr(k)) for k in va.ncattrs() if k not in skip},
                             {k: str(vb.getncattr(k)) for k in vb.ncattrs() if k not in skip})
            self.assertEqual({k: str(a.getncattr(k)) for k in a.ncattrs() if k not in skip},
                             {k: str(b.getncattr(k)) for k in b.ncattrs() if k not in skip})

    def store_files(self, store):
        """Every file of a Zarr store (relative name: bytes), .zattrs with the
        store's own name in its history replaced."""
        files = {}
        root = self.path(store)
        for d, _, names in os.walk(root):
            for n in names:
                rel = os.path.relpath(os.path.join(d, n), root)
                with open(os.path.join(d, n), "rb") as f:
                    files[rel] = f.read().replace(store.encode(), b"STORE")
        return files

    def test_zarr_signal_then_resume(self):
        import numpy as np
        import zarr  # Debian's python3-zarr
        for fmt, store in (("zarr", "z.zarr"), ("ome-zarr", "z.ome.zarr")):
            with self.subTest(format=fmt):
                extra = ("--backend", "posix", "--format", fmt)
                ref = os.path.join("ref", store)  # the same name: OME-Zarr names the image by it
                os.makedirs(self.path("ref"), exist_ok=True)
                e.check_ok(self, self.segment(ref, 2, extra))
                status, stderr = self.stop_with_signal(store, 2, extra)
                self.assertEqual(status, 75, stderr)
                self.assertRegex(stderr, r"volseg: interrupted by SIGUSR1 \(\d+ of 64 bricks done and kept in "
                                         r".*\.%s\.volseg-partial: rerun with --resume to finish\)" % re.escape(store))
                self.assertTrue(os.path.isdir(self.path(partial_path(store))))
                done = self.assert_left_partial(store, store)
                # A chunk the stopped job wrote but did not journal is written again.
                self.resume(store, 3, done, extra)
                self.assertFalse(os.path.exists(self.path(partial_path(store))))
                self.assertEqual(self.store_files(store), self.store_files(ref))
                array = zarr.open(self.path(store) + ("/0" if fmt == "ome-zarr" else ""), mode="r")
                reference = np.frombuffer(self.reference, dtype=np.uint8).reshape(array.shape)
                self.assertTrue(np.array_equal(array[:], reference))

    def test_journal_of_another_job_is_refused(self):
        out = "other.nhdr"
        self.stop_with_signal(out, 2)
        done = self.assert_left_partial(out, "other.raw")
        for flag, value, message in (("--lo", "3", r"its lo is 2, this job's is 3"),
                                     ("--brick", "16,48,40", r"its bricks is 64, this job's is 4")):
            argv = self.argv(out, 2, ("--resume",))
            argv[argv.index(flag) + 1] = value
            proc = subprocess.run(argv, cwd=self.dir, capture_output=True, text=True, timeout=120)
            self.assertEqual(proc.returncode, 1, proc.stderr)
            self.assertRegex(proc.stderr, r"^volseg: error: other\.nhdr: the partial output .* is another job's \("
                             + message + r"\): resume with that job's input, thresholds and brick shape, or use "
                             r"--force to start over\n$")
        # A rewritten input (a new modification time) is another input.
        os.utime(self.path("in.raw"))
        proc = self.segment(out, 2, ("--resume",))
        self.assertEqual(proc.returncode, 1, proc.stderr)
        self.assertIn("its input_files is", proc.stderr)
        self.assertEqual(len(journal_slots(self.path(journal_path(out)))), done, "a refusal changed the journal")
        # --resume --force: resume when the journal is this job's, else start over.
        proc = self.segment(out, 2, ("--resume", "--force"))
        e.check_ok(self, proc)
        self.assertNotIn("resumed:", proc.stdout)
        self.assert_same_raw("other.raw")

    def test_torn_record_costs_only_its_brick(self):
        out = "torn.nhdr"
        self.stop_with_signal(out, 2)
        done = self.assert_left_partial(out, "torn.raw")
        journal = self.path(journal_path(out))
        slot = journal_slots(journal)[0]
        with open(journal, "r+b") as f:  # a record half written: its second half is still zero
            f.seek(slot + RECORD // 2)
            f.write(bytes(RECORD // 2))
        self.resume(out, 2, done - 1)
        self.assert_same_raw("torn.raw")

    def test_resume_without_partial_starts_a_job(self):
        proc = self.segment("fresh.nhdr", 2, ("--resume",))
        e.check_ok(self, proc)
        self.assertNotIn("resumed:", proc.stdout)
        self.assert_same_raw("fresh.raw")
        # and a finished mask is not redone: it exists
        proc = self.segment("fresh.nhdr", 2, ("--resume",))
        self.assertEqual(proc.returncode, 1)
        self.assertIn("fresh.nhdr exists (use --force to replace it)", proc.stderr)

    def test_batch_script_passes_the_signal_on(self):
        """scripts/cluster/segment-resume.sbatch without Slurm: SIGUSR1 to the
        batch shell (as --signal=B:USR1 sends it) reaches every rank through
        mpirun; the script exits 75; a second run of it finishes the mask."""
        script = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "scripts", "cluster",
                              "segment-resume.sbatch")
        env = dict(os.environ, VOLSEG=e.VOLSEG, VOLSEG_FAULTS="write:slow,ms=300",
                   VOLSEG_LAUNCHER=" ".join([e.MPIEXEC] + e.MPI_QUIET + ["-x", "VOLSEG_FAULTS", "-np", "2"]))
        env.pop("SLURM_JOB_ID", None)
        args = ["bash", script, "in.nhdr", LO, HI, "batch.nhdr", "--brick", BRICK, "--progress", "none"]
        proc = subprocess.Popen(args, cwd=self.dir, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        journal = self.path(journal_path("batch.nhdr"))
        deadline = time.time() + 60
        while not (os.path.exists(journal) and journal_slots(journal)):
            self.assertIsNone(proc.poll(), "the job ended before it journaled a brick")
            self.assertLess(time.time(), deadline)
            time.sleep(0.02)
        proc.send_signal(signal.SIGUSR1)
        _, stderr = proc.communicate(timeout=60)
        self.assertEqual(proc.returncode, 75, stderr)
        done = self.assert_left_partial("batch.nhdr", "batch.raw")
        env.pop("VOLSEG_FAULTS")
        env["VOLSEG_LAUNCHER"] = " ".join([e.MPIEXEC] + e.MPI_QUIET + ["-np", "3"])
        proc = subprocess.run(args, cwd=self.dir, env=env, capture_output=True, text=True, timeout=120)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertIn("resumed: %d of %d bricks" % (done, BRICKS), proc.stdout)
        self.assert_same_raw("batch.raw")

    def test_half_a_pair_is_reclaimed(self):
        """A journal without its partial file (a job that died between its
        commit and removing its journal), or a partial file without a
        journal, is an earlier job's leftover: the next run removes it."""
        for lost in ("partial", "journal"):
            with self.subTest(lost=lost):
                out = "half%s.nhdr" % lost
                self.stop_with_signal(out, 2)
                self.assert_left_partial(out, "half%s.raw" % lost)
                os.remove(self.path(partial_path("half%s.raw" % lost) if lost == "partial" else journal_path(out)))
                proc = self.segment(out, 3)
                e.check_ok(self, proc)
                self.assertNotIn("resumed:", proc.stdout)
                self.assert_same_raw("half%s.raw" % lost)
                self.assertEqual([n for n in os.listdir(self.dir) if "half" in n and n.startswith(".")], [])

    def test_netcdf4_is_refused_with_its_reason(self):
        for name, fmt in (("n4.nc", "netcdf4"), ("n4.hdf5", "hdf5")):
            proc = self.segment(name, 2, ("--format", fmt, "--resume"))
            self.assertEqual(proc.returncode, 1)
            self.assertEqual(proc.stderr.strip(), "volseg: error: --resume works for raw, CDF and Zarr masks, not "
                             "NetCDF-4 or HDF5: an HDF5 file that HDF5 1.10 left when its writer was killed is often "
                             "unreadable, so none is kept to resume")
            self.assertEqual([n for n in os.listdir(self.dir) if n.startswith("n4") or ".n4" in n], [])


if __name__ == "__main__":
    e.main(verbosity=2)
