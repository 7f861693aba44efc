# SPDX-License-Identifier: MIT
"""segment and pyramid on 16 ranks (oversubscribed) with thousands of tiny
bricks, against 1 rank: the same bytes. The suite's
VOLSEG_MPI_MESSAGE_BYTES=4096 makes every message that grows with the data
move in pieces. (label's scale case is in test_label.py.)"""
import os
import shutil
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import e2e_util as e  # noqa: E402

DIMS = (96, 100, 104)  # z, y, x


def data_bytes(header):
    with open(e.parse_nhdr(header)["data"], "rb") as f:
        return f.read()


class Scale(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        e.require_binary()
        cls.dir = tempfile.mkdtemp(prefix="volseg-e2e-scale-")
        cls.source = os.path.join(cls.dir, "shells.nhdr")
        e.generate(unittest.TestCase(), cls.source, "shells", DIMS, "f32", "little")

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.dir, ignore_errors=True)

    def path(self, name):
        return os.path.join(self.dir, name)

    def run_ok(self, args, ranks):
        proc = e.run(args + ["--quiet"], ranks=ranks, mpi=True, timeout=300)
        e.check_ok(self, proc)

    def test_segment_on_16_ranks_with_thousands_of_bricks(self):
        """8x10x10 bricks: 12 x 10 x 11 (rounded up) = 1,320; 4x10x10: 2,640;
        every assignment, and a collective backend (rounds every rank joins)."""
        reference = self.path("mask-1.nhdr")
        self.run_ok(["segment", self.source, "--lo", "0.3", "--hi", "0.6", "--out", reference, "--force"], 1)
        want = data_bytes(reference)
        for case, (brick, assign, backend) in enumerate((("8,10,10", "block", "posix"),
                                                          ("4,10,10", "random", "mmap"),
                                                          ("4,10,10", "cyclic", "mpiio"))):
            with self.subTest(brick=brick, assign=assign, backend=backend):
                out = self.path("mask-16-%d.nhdr" % case)
                self.run_ok(["segment", self.source, "--lo", "0.3", "--hi", "0.6", "--out", out, "--force",
                             "--brick", brick, "--assign", assign, "--backend", backend, "--seed", str(case)], 16)
                self.assertTrue(data_bytes(out) == want, "16 ranks: the mask differs from 1 rank's")

    def test_pyramid_on_16_ranks_with_2028_bricks(self):
        """8^3 bricks: 12 x 13 x 13 = 2,028 at level 0, each rank writing its
        own bricks' records and histograms into the shared files."""
        one, many = self.path("one.pyramid"), self.path("many.pyramid")
        self.run_ok(["pyramid", self.source, "--pyramid-dir", one, "--brick", "8", "--force"], 1)
        self.run_ok(["pyramid", self.source, "--pyramid-dir", many, "--brick", "8", "--force"], 16)
        names = sorted(n for n in os.listdir(one) if n != "index.json")
        self.assertEqual(names, sorted(n for n in os.listdir(many) if n != "index.json"))
        self.assertIn("bricks.bin", names)
        self.assertIn("histograms.u32", names)
        for name in names:
            with open(os.path.join(one, name), "rb") as a, open(os.path.join(many, name), "rb") as b:
                self.assertTrue(a.read() == b.read(), "%s differs between 1 and 16 ranks" % name)


if __name__ == "__main__":
    e.main()
