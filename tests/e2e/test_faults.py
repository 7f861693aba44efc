# SPDX-License-Identifier: MIT
"""Injected I/O faults (VOLSEG_FAULTS, docs/reliability.md) in `volseg
segment` with the raw posix backend, on 1-4 ranks: an error ends the job on
every rank within a bound, with one line naming the call, the file, the errno
and (when not every rank failed) the rank; nothing at the output path looks
complete, and the temporary is either gone or, when bricks were done, kept
with its journal for --resume (which then gives the right mask); the input
is never modified. Faults that
are not errors (short reads and writes, a slow rank) give the right mask.
--force keeps the old output whole when any rename of the commit fails."""
import hashlib
import os
import re
import subprocess
import sys
import tempfile
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import e2e_util as e  # noqa: E402

LO, HI = "2", "5"
BOUND_S = 30  # a job must end this soon after a fault


def md5(path):
    with open(path, "rb") as f:
        return hashlib.md5(f.read()).hexdigest()


class Faults(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        e.require_binary()
        cls.tmp = tempfile.TemporaryDirectory(prefix="volseg-e2e-faults-")
        cls.dir = cls.tmp.name
        # Eight bricks (--brick 8,48,40), so every rank of 1-4 reads and writes at least two.
        proc = e.run(["generate", os.path.join(cls.dir, "in.nhdr"), "--field", "shells", "--dims", "64,48,40",
                      "--dtype", "f32", "--quiet"])
        if proc.returncode != 0:
            raise RuntimeError("volseg generate failed:\n" + proc.stderr)
        cls.input_md5 = md5(os.path.join(cls.dir, "in.raw"))
        proc = cls.segment(cls, "ref.nhdr", ranks=2)
        if proc.returncode != 0:
            raise RuntimeError("volseg segment failed:\n" + proc.stderr)

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def segment(self, out, ranks, faults=None, extra=(), lo=LO):
        env = dict(os.environ)
        if faults:
            env["VOLSEG_FAULTS"] = faults
        argv = [e.MPIEXEC] + e.MPI_QUIET + ["-x", "VOLSEG_FAULTS", "-np", str(ranks), e.VOLSEG, "segment", "in.nhdr",
                                           "--lo", lo, "--hi", HI, "--out", out, "--backend", "posix",
                                           "--brick", "8,48,40", "--progress", "none", *extra]
        if not faults:
            argv.remove("-x")
            argv.remove("VOLSEG_FAULTS")
        start = time.time()
        proc = subprocess.run(argv, cwd=self.dir, capture_output=True, text=True, timeout=120, env=env)
        proc.seconds = time.time() - start
        return proc

    def leftovers(self, stem):
        return [f for f in os.listdir(self.dir) if stem in f]

    def test_errors_end_the_job_with_one_line_and_leave_nothing(self):
        cases = [("read:eio@1", "read", "in.raw", "Input/output error"),
                 ("write:eio@1", "write", "o.raw", "Input/output error"),
                 ("write:enospc@2", "write", "o.raw", "No space left on device"),
                 ("close:eio", "close", "o.raw", "Input/output error"),
                 ("rename:eio@1", "rename to", "o.raw", "Input/output error")]
        for ranks in (1, 2, 3, 4):
            for spec, call, path, errno_text in cases:
                # Reads and writes fail on the last rank only; every rank
                # closes (all fail); rank 0 alone renames.
                targeted = not spec.startswith(("close", "rename"))
                faults = spec + (",rank=%d" % (ranks - 1) if targeted else "")
                failing = ranks - 1 if targeted else 0 if spec.startswith("rename") else None
                with self.subTest(ranks=ranks, faults=faults):
                    proc = self.segment("o.nhdr", ranks, faults)
                    self.assertNotEqual(proc.returncode, 0, proc.stderr)
                    self.assertLess(proc.seconds, BOUND_S)
                    lines = [line for line in proc.stderr.splitlines() if line.strip()]
                    self.assertEqual(len(lines), 1, proc.stderr)
                    pattern = r"^volseg: error: %s \S*%s: %s" % (re.escape(call), re.escape(path), errno_text)
                    if ranks > 1 and failing is not None:
                        pattern += r" \(on rank %d\)" % failing
                    kept = r" \((\d) of 8 bricks done and kept in \.o\.raw\.volseg-partial: rerun with --resume to finish\)"
                    self.assertRegex(lines[0], pattern + "(" + kept + ")?$")
                    self.assertEqual(md5(os.path.join(self.dir, "in.raw")), self.input_md5)
                    # Nothing at the output's names; the bricks that were
                    # done are kept for --resume, or nothing is.
                    if re.search(kept, lines[0]):
                        self.assertEqual(sorted(self.leftovers("o.")), [".o.nhdr.volseg-journal", ".o.raw.volseg-partial"])
                        resumed = self.segment("o.nhdr", ranks, extra=["--resume"])
                        self.assertEqual(resumed.returncode, 0, resumed.stderr)
                        self.assertEqual(md5(os.path.join(self.dir, "o.raw")), md5(os.path.join(self.dir, "ref.raw")))
                        for f in ("o.nhdr", "o.raw"):
                            os.unlink(os.path.join(self.dir, f))
                    self.assertEqual(self.leftovers("o."), [], "an output or a temporary was left")

    def test_a_rank_that_stops_moving_ends_the_job_with_the_phase_named(self):
        """A read on rank 1 that takes 60 s stands for a library hung in a
        call: with --timeout 2 (and with VOLSEG_TIMEOUT=2) the job ends in
        seconds, status non-zero, with a line naming the rank and its phase;
        the mask is not committed."""
        for extra, env_timeout in ((["--timeout", "2"], None), ([], "2")):
            with self.subTest(extra=extra, env_timeout=env_timeout):
                for name in self.leftovers("hung."):  # a failed subtest's
                    os.unlink(os.path.join(self.dir, name))
                if env_timeout:
                    os.environ["VOLSEG_TIMEOUT"] = env_timeout
                try:
                    argv_extra = list(extra)
                    proc = self.segment("hung.nhdr", 2, "read:slow,ms=60000,rank=1", extra=argv_extra)
                finally:
                    os.environ.pop("VOLSEG_TIMEOUT", None)
                self.assertNotEqual(proc.returncode, 0, proc.stderr)
                self.assertLess(proc.seconds, 30)
                self.assertRegex(proc.stderr, r"volseg: error: rank 1: nothing moved for 2 s in segment, the bricks "
                                              r"\(--timeout 2\); ending the job")
                # Rank 0, done with its bricks, waits for rank 1's: it allows
                # rank 1 a grace period to speak first, and is not named.
                self.assertNotIn("rank 0: nothing moved", proc.stderr)
                # Left as after a kill -9: nothing at the output's names; the
                # resumable mask's partial file and journal, for --resume or --force.
                self.assertFalse(os.path.exists(os.path.join(self.dir, "hung.nhdr")))
                self.assertFalse(os.path.exists(os.path.join(self.dir, "hung.raw")))
                for name in self.leftovers("hung."):
                    self.assertIn(name, (".hung.nhdr.volseg-journal", ".hung.raw.volseg-partial"))
                    os.unlink(os.path.join(self.dir, name))

    def test_short_io_and_a_slow_rank_give_the_right_mask(self):
        want = md5(os.path.join(self.dir, "ref.raw"))
        for ranks, faults in ((1, "read:short;write:short"), (3, "read:short,rank=1;write:short,rank=2"),
                              (2, "write:slow,ms=300,rank=1;read:slow,ms=100,rank=0")):
            with self.subTest(ranks=ranks, faults=faults):
                proc = self.segment("s.nhdr", ranks, faults, ["--force"])
                self.assertEqual(proc.returncode, 0, proc.stderr)
                self.assertEqual(md5(os.path.join(self.dir, "s.raw")), want)

    def test_force_keeps_the_old_output_when_the_commit_fails(self):
        # The commit renames: old header aside (1), old data aside (2), new
        # data in place (3), new header in place (4). A failure at any of
        # them must leave the old output as it was, and nothing else.
        old = self.segment("old.nhdr", 2, lo="3")  # a different mask than ref
        self.assertEqual(old.returncode, 0, old.stderr)
        before = {f: md5(os.path.join(self.dir, f)) for f in ("old.nhdr", "old.raw")}
        for k in (1, 2, 3, 4):
            with self.subTest(rename=k):
                proc = self.segment("old.nhdr", 2, "rename:eio@%d" % k, ["--force"])
                self.assertEqual(proc.returncode, 1, proc.stderr)
                self.assertEqual({f: md5(os.path.join(self.dir, f)) for f in before}, before)
                # The new mask's bricks stay in the partial file for --resume.
                self.assertEqual(sorted(self.leftovers("old.")),
                                 [".old.nhdr.volseg-journal", ".old.raw.volseg-partial", "old.nhdr", "old.raw"])
                self.assertIn("8 of 8 bricks done and kept in .old.raw.volseg-partial", proc.stderr)
        proc = self.segment("old.nhdr", 2, extra=["--force"])  # and without a fault, it is replaced
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertEqual(md5(os.path.join(self.dir, "old.raw")), md5(os.path.join(self.dir, "ref.raw")))

    def test_a_refusal_on_one_aggregator_reaches_every_rank(self):
        """The two-phase engine's piece limit, met by the one aggregator only
        (cb_nodes=1): it used to leave the other ranks in MPI_Alltoallv. Each
        rank sends its bricks of a call (8 / ranks <= 4 pieces); rank 0
        receives all 8."""
        for ranks in (2, 3, 4):
            with self.subTest(ranks=ranks):
                argv = [e.MPIEXEC] + e.MPI_QUIET + ["-np", str(ranks), e.VOLSEG, "segment", "in.nhdr", "--lo", LO,
                                                   "--hi", HI, "--out", "tp.nhdr", "--backend", "twophase", "--hint",
                                                   "cb_nodes=1", "--hint", "cb_read=enable", "--hint", "max_pieces=4",
                                                   "--brick", "8,48,40", "--progress", "none", "--force"]
                proc = subprocess.run(argv, cwd=self.dir, capture_output=True, text=True, timeout=BOUND_S * 2)
                self.assertEqual(proc.returncode, 1, proc.stderr)
                lines = [line for line in proc.stderr.splitlines() if line.strip()]
                self.assertEqual(len(lines), 1, proc.stderr)
                self.assertRegex(lines[0], r"^volseg: error: twophase: more than 4 pieces for one aggregator in one "
                                           r"call; split the call \(on rank 0\)$")
                self.assertEqual(self.leftovers("tp."), [])

    def test_a_bad_fault_specification_is_one_line(self):
        proc = self.segment("b.nhdr", 2, "write:explode@1")
        self.assertEqual(proc.returncode, 1, proc.stderr)
        lines = [line for line in proc.stderr.splitlines() if line.strip()]
        self.assertEqual(len(lines), 1, proc.stderr)
        self.assertRegex(lines[0], r"^volseg: error: VOLSEG_FAULTS: unknown fault 'explode'")


if __name__ == "__main__":
    e.main(verbosity=2)
