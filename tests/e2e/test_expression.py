#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Derived fields as a user runs them: --expr and --where over the variables
of NetCDF-4 and CDF-5 files written by netCDF4-python (with fill values),
on 1 and 3 ranks. The masks equal numpy's evaluation of the same
expression (a voxel missing in any operand is outside); labels of a
condition equal scipy's labels of numpy's; convert writes the derived
field numpy computes; bad expressions get one line with the column."""
import json
import os
import sys
import tempfile
import unittest

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import e2e_util as e  # noqa: E402

try:
    import netCDF4
except ImportError:  # pragma: no cover
    netCDF4 = None
try:
    from scipy import ndimage
except ImportError:  # pragma: no cover
    ndimage = None

SHAPE = (20, 24, 28)
FILL = -999.0


@unittest.skipIf(netCDF4 is None, "missing python3-netcdf4")
class Expression(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        e.require_binary()
        cls.tmp = tempfile.TemporaryDirectory(prefix="volseg-expression-")
        cls.dir = cls.tmp.name
        rng = np.random.default_rng(7)
        cls.values = {}
        for name in "uvw":
            a = rng.normal(size=SHAPE).astype(np.float32)
            a[rng.random(SHAPE) < 0.02] = FILL  # missing voxels, different in each operand
            cls.values[name] = a
        cls.values["T"] = rng.uniform(0, 30, SHAPE)
        cls.values["S"] = rng.uniform(33, 36, SHAPE).astype(np.float32)
        cls.files = {}
        for fmt, name in (("NETCDF4", "ocean.nc4"), ("NETCDF3_64BIT_DATA", "ocean.nc")):
            path = os.path.join(cls.dir, name)
            with netCDF4.Dataset(path, "w", format=fmt) as d:
                for dim, n in zip("zyx", SHAPE):
                    d.createDimension(dim, n)
                for var, a in cls.values.items():
                    fill = FILL if var in "uvw" else None
                    v = d.createVariable(var, a.dtype, ("z", "y", "x"), fill_value=fill)
                    v.set_auto_mask(False)
                    v[:] = a
                d.createDimension("small", 3)
                d.createVariable("q", "f4", ("z", "y", "small"))[:] = np.zeros((SHAPE[0], SHAPE[1], 3), np.float32)
            cls.files[fmt] = path

    def missing(self, *names):
        m = np.zeros(SHAPE, bool)
        for n in names:
            m |= self.values[n] == FILL
        return m

    def read_mask(self, path, name="mask"):
        with netCDF4.Dataset(path) as d:
            return np.asarray(d[name][:]) != 0

    def test_speed_expression_masks_equal_numpy(self):
        u, v, w = (self.values[n].astype(np.float64) for n in "uvw")
        speed = np.sqrt(u * u + v * v + w * w)
        expected = (speed >= 1) & (speed <= 2) & ~self.missing("u", "v", "w")
        for fmt, path in self.files.items():
            for ranks in (1, 3):
                with self.subTest(fmt=fmt, ranks=ranks):
                    out = os.path.join(self.dir, "speed-%s-%d.nc" % (fmt, ranks))
                    e.check_ok(self, e.run(["segment", path, "--expr", "sqrt(u*u + v*v + w*w)", "--lo", "1", "--hi",
                                            "2", "--out", out, "--force", "--quiet"], ranks=ranks))
                    np.testing.assert_array_equal(self.read_mask(out), expected)

    def test_pieces_of_pread_operands_equal_numpy(self):
        # A contiguous NetCDF-4 variable is read by pread, a piece at a time
        # (512 KiB staged: 32 Ki voxels of three float32 operands and the
        # result), each evaluated at once: pieces of whole planes, and rows of
        # a plane larger than a piece, with the last piece short in each.
        rng = np.random.default_rng(5)
        for shape in ((70, 40, 50), (3, 190, 200)):
            with self.subTest(shape=shape):
                path = os.path.join(self.dir, "pieces-%d.nc4" % shape[0])
                values = {}
                with netCDF4.Dataset(path, "w", format="NETCDF4") as d:
                    for dim, n in zip("zyx", shape):
                        d.createDimension(dim, n)
                    for name in "uvw":
                        values[name] = rng.normal(size=shape).astype(np.float32)
                        v = d.createVariable(name, "f4", ("z", "y", "x"), contiguous=True)
                        v[:] = values[name]
                u, v, w = (values[n].astype(np.float64) for n in "uvw")
                speed = np.sqrt(u * u + v * v + w * w)
                for ranks in (1, 2):
                    out = os.path.join(self.dir, "pieces-%d-%d.nc" % (shape[0], ranks))
                    report = out + ".json"
                    e.check_ok(self, e.run(["segment", path, "--expr", "sqrt(u*u + v*v + w*w)", "--lo", "1", "--hi",
                                            "2", "--out", out, "--force", "--quiet", "--report", report], ranks=ranks))
                    np.testing.assert_array_equal(self.read_mask(out), (speed >= 1) & (speed <= 2))
                    with open(report) as f:
                        self.assertIn("by pread", json.load(f)["implementation"])

    def test_where_condition_masks_and_labels(self):
        T, S, u = self.values["T"], self.values["S"], self.values["u"]
        expected = (T > 10) & (S < 34.5) & (u > 0) & ~self.missing("u")
        path = self.files["NETCDF4"]
        for ranks in (1, 3):
            with self.subTest(ranks=ranks):
                out = os.path.join(self.dir, "where-%d.nc" % ranks)
                e.check_ok(self, e.run(["segment", path, "--where", "T > 10 && S < 34.5 && u > 0", "--lo", "1",
                                        "--hi", "1", "--out", out, "--force", "--quiet"], ranks=ranks))
                np.testing.assert_array_equal(self.read_mask(out), expected)
                if ndimage is None:
                    continue
                labels = os.path.join(self.dir, "where-labels-%d.nc" % ranks)
                e.check_ok(self, e.run(["label", path, "--where", "T > 10 && S < 34.5 && u > 0", "--lo", "1", "--hi",
                                        "1", "--connectivity", "6", "--out", labels, "--force", "--quiet"],
                                       ranks=ranks))
                reference, count = ndimage.label(expected)
                with netCDF4.Dataset(labels) as d:
                    np.testing.assert_array_equal(np.asarray(d["labels"][:]), reference)
                    self.assertEqual(int(d["labels"].objects), count)

    @unittest.skipIf(ndimage is None, "missing python3-scipy")
    def test_values_of_an_expression_per_object(self):
        """label --values FILE --values-expr: the table's min/mean/max of a
        derived field per object, against numpy over scipy's labels."""
        path = self.files["NETCDF4"]
        table = os.path.join(self.dir, "objects.csv")
        e.check_ok(self, e.run(["label", path, "--where", "T > 25", "--lo", "1", "--hi", "1", "--connectivity", "6",
                                "--values", path, "--values-expr", "sqrt(u*u + v*v)", "--stats", table,
                                "--out", os.path.join(self.dir, "objects.nc"), "--force", "--quiet"], ranks=3))
        labels, count = ndimage.label(self.values["T"] > 25)
        u, v = (self.values[n].astype(np.float64) for n in "uv")
        speed = np.where(self.missing("u", "v"), np.nan, np.sqrt(u * u + v * v))
        import csv
        rows = list(csv.DictReader(open(table)))
        self.assertEqual(len(rows), count)
        checked = 0
        for row in rows:
            values = speed[labels == int(row["id"])]
            if np.isnan(values).any():
                continue  # an object with a missing voxel: its statistics are NaN
            self.assertAlmostEqual(float(row["value_mean"]), values.mean(), places=5)
            self.assertAlmostEqual(float(row["value_min"]), values.min(), places=5)
            self.assertAlmostEqual(float(row["value_max"]), values.max(), places=5)
            checked += 1
        self.assertGreater(checked, 100)

    def test_convert_writes_the_derived_field(self):
        path = self.files["NETCDF3_64BIT_DATA"]
        out = os.path.join(self.dir, "derived.nc4")
        e.check_ok(self, e.run(["convert", path, out, "--expr", "max(u, v) - T / 10", "--force", "--quiet"], ranks=2))
        u, v, T = self.values["u"], self.values["v"], self.values["T"]
        expected = (np.maximum(u.astype(np.float64), v) - T / 10).astype(np.float32)
        missing = self.missing("u", "v")
        with netCDF4.Dataset(out) as d:
            got = np.ma.filled(d["expr"][:].astype(np.float32), np.nan)
        np.testing.assert_allclose(got[~missing], expected[~missing], rtol=1e-6)
        self.assertTrue(np.isnan(got[missing]).all())

    def test_operands_from_other_files(self):
        """--operand NAME=FILE[:VAR]: a run's difference from another run's
        file (CDF-5 against NetCDF-4, the variable renamed), and a raw NRRD
        volume (no variable) as a third operand; missing in any is missing."""
        rng = np.random.default_rng(11)
        other = rng.normal(size=SHAPE).astype(np.float32)
        other[rng.random(SHAPE) < 0.02] = FILL
        run2 = os.path.join(self.dir, "run2.nc")
        with netCDF4.Dataset(run2, "w", format="NETCDF3_64BIT_DATA") as d:
            for dim, n in zip("zyx", SHAPE):
                d.createDimension(dim, n)
            v = d.createVariable("u", "f4", ("z", "y", "x"), fill_value=FILL)
            v.set_auto_mask(False)
            v[:] = other
        weight = rng.uniform(0.5, 2, SHAPE).astype(np.float32)
        nrrd = os.path.join(self.dir, "weight.nhdr")
        weight.tofile(os.path.join(self.dir, "weight.raw"))
        with open(nrrd, "w") as f:
            f.write("NRRD0004\ntype: float\ndimension: 3\nsizes: %d %d %d\nendian: little\nencoding: raw\n"
                    "data file: weight.raw\n\n" % SHAPE[::-1])
        u = self.values["u"]
        diff = (u - other) * weight  # float32 operands: computed in float32, as numpy does
        expected = (diff >= 0.5) & (diff <= 3) & ~self.missing("u") & (other != FILL)
        for ranks in (1, 3):
            with self.subTest(ranks=ranks):
                out = os.path.join(self.dir, "diff-%d.nc" % ranks)
                e.check_ok(self, e.run(["segment", self.files["NETCDF4"], "--expr", "(u - b) * w", "--operand",
                                        "b=%s:u" % run2, "--operand", "w=%s" % nrrd, "--lo", "0.5", "--hi", "3",
                                        "--out", out, "--force", "--quiet"], ranks=ranks))
                np.testing.assert_array_equal(self.read_mask(out), expected)
        self.assertGreater(int(expected.sum()), 0)
        bad = [
            (["--expr", "u - b", "--operand", "b=%s:nope" % run2], r"--operand b=.*run2\.nc:nope: .*nope"),
            (["--expr", "u - b", "--operand", "c=%s" % nrrd], r"--operand c=.*: --expr 'u - b' has no variable c"),
            (["--expr", "u - b", "--operand", "b=%s" % os.path.join(self.dir, "absent.nc")], r"--operand b=.*absent"),
            (["--var", "u", "--operand", "b=%s" % nrrd], r"--operand names a variable of --expr or --where"),
        ]
        for args, pattern in bad:
            with self.subTest(args=args):
                out = os.path.join(self.dir, "bad-operand.nc")
                proc = e.run(["segment", self.files["NETCDF4"], "--lo", "0", "--hi", "1", "--out", out, "--quiet"]
                             + args, ranks=2)
                e.assert_clean_failure(self, proc, pattern)
                self.assertFalse(os.path.exists(out))

    def test_bad_expressions_get_one_line(self):
        path = self.files["NETCDF4"]
        cases = [
            (["--expr", "sqrt(u*u + x)"], r"unknown variable 'x' at column 12"),
            (["--expr", "sqrt(u*u +"], r"Unexpected end of expression .*\(column \d+\)"),
            (["--expr", "foo(u) + 1"], r"unknown function 'foo' at column 1"),
            (["--expr", "u + q"], r"[uq] has dims .* but [uq] has .*: operands must have one shape"),
            (["--expr", "u", "--var", "v"], r"--var and an expression"),
            (["--expr", "2 + 3"], r"names no variable"),
        ]
        for args, pattern in cases:
            with self.subTest(args=args):
                out = os.path.join(self.dir, "bad.nc")
                proc = e.run(["segment", path, "--lo", "0", "--hi", "1", "--out", out, "--quiet"] + args, ranks=2)
                e.assert_clean_failure(self, proc, pattern)
                self.assertFalse(os.path.exists(out))
        proc = e.run(["segment", path, "--expr", "u", "--where", "u > 0", "--lo", "0", "--hi", "1", "--out",
                      os.path.join(self.dir, "bad.nc"), "--quiet"], ranks=1, mpi=False)
        self.assertNotEqual(proc.returncode, 0)
        self.assertIn("excludes", proc.stderr)


if __name__ == "__main__":
    e.main()
