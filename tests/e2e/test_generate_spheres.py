#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""'volseg generate --field spheres' against numpy: the volume is exactly the
union of the balls its NAME.spheres.csv lists (recomputed here voxel by
voxel), the same bytes on 1 and 2 ranks, the known answers of
datasets/include/volseg/datasets/generate.hpp (groups of 1, 2, 3, 4, ...
balls, each group one object clear of the others and of the faces; with
Debian's scipy), and bad input refused with one line and nothing written."""
import csv
import os
import sys
import tempfile
import unittest

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import e2e_util as e  # noqa: E402

try:
    from scipy import ndimage
except ImportError:  # the connectivity case is skipped, the rest still runs
    ndimage = None


def read_balls(path):
    """(header, [(z, y, x, radius)]) of a .spheres.csv, ids checked to run 1..N."""
    with open(path, newline="") as f:
        rows = list(csv.reader(f))
    balls = []
    for number, row in enumerate(rows[1:], start=1):
        assert int(row[0]) == number, "row %d has id %s" % (number, row[0])
        balls.append(tuple(int(v) for v in row[1:]))
    return rows[0], balls


def union_of_balls(shape, balls):
    z, y, x = np.indices(shape, dtype=np.int64)
    inside = np.zeros(shape, dtype=bool)
    for cz, cy, cx, r in balls:
        inside |= (z - cz) ** 2 + (y - cy) ** 2 + (x - cx) ** 2 <= r * r
    return inside


def group_count(count):
    """How many groups of 1, 2, 3, 4, 1, 2, ... balls count balls make."""
    groups = placed = 0
    while placed < count:
        placed += groups % 4 + 1
        groups += 1
    return groups


class Spheres(unittest.TestCase):
    def setUp(self):
        e.require_binary()
        self.tmp = tempfile.TemporaryDirectory(prefix="volseg-e2e-spheres-")
        self.addCleanup(self.tmp.cleanup)

    def path(self, name):
        return os.path.join(self.tmp.name, name)

    def generate(self, name, args, ranks=1):
        """Runs generate into NAME.nhdr; returns (volume, csv header, balls)."""
        out = self.path(name + ".nhdr")
        proc = e.run(["generate", out, "--field", "spheres", "--quiet", *args], ranks=ranks, mpi=ranks > 1)
        e.check_ok(self, proc)
        _, values = e.read_volume(out)
        header, balls = read_balls(self.path(name + ".spheres.csv"))
        return values, header, balls

    def check_union(self, values, header, balls, count, one):
        self.assertEqual(header, ["id", "z", "y", "x", "radius"])
        self.assertEqual(len(balls), count)
        self.assertTrue(np.isin(values, [0, one]).all(), "values other than 0 and %r" % one)
        expected = union_of_balls(values.shape, balls)
        differ = np.count_nonzero((values == one) ^ expected)
        self.assertEqual(differ, 0, "%d voxels differ from the union of the CSV's balls" % differ)
        # Every ball whole, one voxel clear of each face.
        for cz, cy, cx, r in balls:
            for c, n in zip((cz, cy, cx), values.shape):
                self.assertTrue(r + 1 <= c <= n - 2 - r, "ball at %r, radius %d, reaches a face" % ((cz, cy, cx), r))

    def test_u8_is_the_union_of_the_listed_balls(self):
        values, header, balls = self.generate("u8", ["--count", 40, "--seed", 3, "--dims", "96,96,96",
                                                     "--dtype", "u8"])
        self.check_union(values, header, balls, 40, 1)

    def test_f32_with_radii_given_on_two_ranks(self):
        values, header, balls = self.generate("f32", ["--count", 30, "--seed", 11, "--dims", "70,60,90",
                                                      "--dtype", "f32", "--radius", "3,9"], ranks=2)
        self.check_union(values, header, balls, 30, 1.0)
        self.assertTrue(all(3 <= r <= 9 for *_, r in balls))
        self.assertGreater(len({r for *_, r in balls}), 1, "radii not varied")

    def test_same_bytes_on_one_and_two_ranks(self):
        args = ["--count", 60, "--seed", 5, "--dims", "64,80,96", "--dtype", "u8"]
        self.generate("one", args, ranks=1)
        self.generate("two", args, ranks=2)
        for ext in (".raw", ".spheres.csv"):
            with open(self.path("one" + ext), "rb") as a, open(self.path("two" + ext), "rb") as b:
                self.assertEqual(a.read(), b.read(), ext + " differs between 1 and 2 ranks")

    @unittest.skipIf(ndimage is None, "missing scipy (python3-scipy)")
    def test_groups_are_the_objects(self):
        # Under 6- and 26-connectivity alike: each group one object, no two
        # groups touching.
        values, _, balls = self.generate("groups", ["--count", 50, "--seed", 2, "--dims", 96, "--dtype", "u8"])
        for rank in (1, 3):
            _, objects = ndimage.label(values != 0, structure=ndimage.generate_binary_structure(3, rank))
            self.assertEqual(objects, group_count(len(balls)), "connectivity rank %d" % rank)

    def test_bad_input(self):
        cases = [
            (["--count", 0], r"--count 0: "),
            (["--count", -3], r"--count -3: "),
            (["--radius", "0,5"], r"--radius 0,5: radii must be at least 1"),
            (["--radius", "-2"], r"--radius -2: radii must be at least 1"),
            (["--radius", "8,4"], r"--radius 8,4: MIN is larger than MAX"),
            (["--radius", "4,x"], r"--radius '4,x': expected MIN,MAX"),
            (["--radius", "40"], r"--radius 40,40: a ball of radius 40 does not fit in 64x64x64"),
            (["--count", 5000, "--radius", "4,8"], r"--count 5000: only \d+ balls of radius 4-8 fit in 64x64x64"),
            (["--count", 10 ** 9], r"--count 1000000000: even balls of radius 1"),
        ]
        for extra, pattern in cases:
            for ranks in (1, 2):
                with self.subTest(args=extra, ranks=ranks):
                    proc = e.run(["generate", self.path("bad.nhdr"), "--field", "spheres", "--dims", 64,
                                  "--dtype", "u8", "--quiet", *extra], ranks=ranks, mpi=ranks > 1)
                    e.assert_clean_failure(self, proc, pattern)
                    self.assertEqual(e.listing(self.tmp.name), set(), "files left by %s" % " ".join(proc.args))


if __name__ == "__main__":
    e.main(verbosity=2)
