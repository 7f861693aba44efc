# SPDX-License-Identifier: MIT
"""'volseg label' with several fields per object in one pass.

--values FILE[:VAR] (repeatable) and --values-expr [NAME=]EXPR (repeatable)
each add a field's min, mean, max, sum and value-weighted centroid to every
object's row. The table is checked against numpy over scipy's labels of the
same mask, field by field, on 1 and 3 ranks with bricks smaller than the
objects (every measure adds across parts and ranks), in the CSV and in the
JSON report. Bad fields are refused with one line and nothing written."""
import csv
import json
import os
import shutil
import sys
import tempfile
import unittest

import numpy as np
from scipy import ndimage

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import e2e_util as e  # noqa: E402
from test_label import write_nrrd  # noqa: E402
from test_label_passes import reference  # noqa: E402

MEASURES = ("min", "mean", "max", "sum", "centroid_z", "centroid_y", "centroid_x")


def field_measures(values, labels, count):
    """Per object (id 1..count): min, mean, max, sum and the value-weighted centroid z, y, x, in float64."""
    index = np.arange(1, count + 1)
    v = values.astype(np.float64)
    sums = ndimage.sum(v, labels, index)
    z, y, x = np.indices(values.shape)
    out = {"min": ndimage.minimum(v, labels, index), "max": ndimage.maximum(v, labels, index),
           "mean": ndimage.mean(v, labels, index), "sum": sums,
           # what rounding in a sum and a mean is relative to
           "scale": ndimage.sum(np.abs(v), labels, index), "mean_scale": ndimage.mean(np.abs(v), labels, index)}
    for axis, a in zip("zyx", (z, y, x)):
        out["centroid_" + axis] = ndimage.sum(v * a, labels, index) / sums
    return out


class LabelFields(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        e.require_binary()
        cls.dir = tempfile.mkdtemp(prefix="volseg-e2e-label-fields-")
        rng = np.random.default_rng(31)
        shape = (14, 18, 22)
        cls.T = ndimage.gaussian_filter(rng.random(shape), 1.0).astype(np.float32)
        cls.u = (rng.random(shape) * 4 - 2).astype(np.float32)
        cls.v = (rng.random(shape) * 4 - 2).astype(np.float64)
        cls.lo = float(np.quantile(cls.T, 0.8))
        import netCDF4
        cls.nc = os.path.join(cls.dir, "ocean.nc")
        with netCDF4.Dataset(cls.nc, "w") as ds:
            for name, size in zip("zyx", shape):
                ds.createDimension(name, size)
            for name, a in (("T", cls.T), ("u", cls.u), ("v", cls.v)):
                ds.createVariable(name, a.dtype, ("z", "y", "x"))[:] = a

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.dir, ignore_errors=True)

    def setUp(self):
        self.work = tempfile.mkdtemp(dir=self.dir)

    def path(self, name):
        return os.path.join(self.work, name)

    def label(self, *args, ranks=1):
        proc = e.run(["label", *map(str, args), "--force", "--progress", "none"], ranks=ranks, timeout=300)
        e.check_ok(self, proc)
        return proc

    def assert_close(self, got, want, what, scale=1.0):
        """Equal to float32 rounding: of the value, or (sums, means, centroids) of the object's sum of |v|."""
        self.assertTrue(abs(got - want) <= 1e-6 * max(1.0, abs(want), scale), f"{what}: {got} != {want}")

    @staticmethod
    def scale_of(want, measure, k):
        """A sum's rounding is relative to the sum of |v|; a centroid's to that over |sum| times the extent."""
        if measure in ("sum", "mean"):
            return want["scale" if measure == "sum" else "mean_scale"][k]
        if measure.startswith("centroid"):
            return 32 * want["scale"][k] / max(abs(want["sum"][k]), 1e-12)
        return 1.0

    def test_fields_of_files_variables_and_expressions(self):
        """T and u by name, speed and an unnamed u + v computed from the input's variables: four fields, each
        against numpy, in the CSV and the report, on 1 and 3 ranks."""
        mask = (self.T >= self.lo) & (self.T <= 10)
        labels, count = reference(mask, 6)
        self.assertGreater(count, 5)
        u32, v32 = self.u.astype(np.float32), self.v.astype(np.float32)
        fields = {"T": self.T, "u": self.u,
                  # the expression reader evaluates in float32, as --expr does
                  "speed": np.sqrt(u32 * u32 + v32 * v32), "expr2": u32 + v32}
        want = {name: field_measures(values, labels, count) for name, values in fields.items()}
        for ranks in (1, 3):
            with self.subTest(ranks=ranks):
                table, report = self.path("t.csv"), self.path("r.json")
                self.label(self.nc, "--var", "T", "--lo", self.lo, "--hi", 10, "--connectivity", 6, "--out",
                           self.path("l.nc"), "--values", self.nc + ":T", "--values", self.nc + ":u", "--values-expr",
                           "speed=sqrt(u*u + v*v)", "--values-expr", "u + v", "--stats", table, "--report", report,
                           "--brick", "5,6,7", ranks=ranks)
                with open(table) as f:
                    reader = csv.DictReader(f)
                    rows = list(reader)
                for name in fields:
                    for m in MEASURES:
                        self.assertIn(f"{name}_{m}", reader.fieldnames)
                self.assertNotIn("value_min", reader.fieldnames)
                self.assertEqual(len(rows), count)
                with open(report) as f:
                    r = json.load(f)
                self.assertEqual([x["name"] for x in r["fields"]], list(fields))
                for k, row in enumerate(rows):
                    for name in fields:
                        for m in MEASURES:
                            self.assert_close(float(row[f"{name}_{m}"]), want[name][m][k], f"object {k + 1} {name}_{m}",
                                              self.scale_of(want[name], m, k))
                        j = r["table"][k]["fields"][name]
                        for m in ("min", "mean", "max", "sum"):
                            self.assert_close(j[m], want[name][m][k], f"report object {k + 1} {name} {m}",
                                              self.scale_of(want[name], m, k))
                        for a, axis in enumerate("zyx"):
                            self.assert_close(j["centroid_zyx"][a], want[name]["centroid_" + axis][k],
                                              f"report object {k + 1} {name} centroid",
                                              self.scale_of(want[name], "centroid_" + axis, k))

    def test_fields_of_several_files(self):
        """Two raw volumes as two fields, named by their files; the labels themselves do not change."""
        rng = np.random.default_rng(7)
        mask = ndimage.gaussian_filter(rng.random((12, 15, 17)), 1.0) > 0.52
        a = (rng.random(mask.shape) * 100).astype(np.uint16)
        b = (rng.random(mask.shape) - 0.5).astype(np.float32)
        write_nrrd(self.path("m.nhdr"), mask.astype(np.uint8))
        write_nrrd(self.path("temperature.nhdr"), a)
        write_nrrd(self.path("salinity.nhdr"), b)
        labels, count = reference(mask, 26)
        self.assertGreater(count, 2)
        self.label(self.path("m.nhdr"), "--mask-input", "--out", self.path("l.nhdr"), "--values",
                   self.path("temperature.nhdr"), "--values", self.path("salinity.nhdr"), "--stats",
                   self.path("t.csv"), "--brick", "4,5,6", ranks=2)
        with open(self.path("t.csv")) as f:
            rows = list(csv.DictReader(f))
        self.assertEqual(len(rows), count)
        for name, values in (("temperature", a), ("salinity", b)):
            want = field_measures(values, labels, count)
            for k, row in enumerate(rows):
                for m in MEASURES:
                    self.assert_close(float(row[f"{name}_{m}"]), want[m][k], f"object {k + 1} {name}_{m}",
                                      self.scale_of(want, m, k))

    def test_three_fields_past_a_storage_block(self):
        """Three fields on a mask of 200,000 objects on one rank, plain and --periodic: a part's three
        records straddle two of the table's 32 MiB blocks at object 174,763 (524,288 records a block);
        the rows about it hold each field's own values."""
        rng = np.random.default_rng(3)
        mask = rng.random((96, 160, 160)) < 0.15
        fields = [(rng.random(mask.shape) * 100).astype(np.float32), rng.integers(0, 1000, mask.shape, np.uint16),
                  rng.integers(-500, 500, mask.shape, np.int16)]
        write_nrrd(self.path("m.nhdr"), mask.astype(np.uint8))
        for k, values in enumerate(fields):
            write_nrrd(self.path("f%d.nhdr" % k), values)
        from test_label_passes import torus_reference
        for periodic in ([], ["--periodic", "zyx"]):
            with self.subTest(periodic=periodic):
                if periodic:
                    labels, count = torus_reference(mask, 6, (0, 1, 2))
                else:
                    labels, count = reference(mask, 6)
                self.assertGreater(count, 174770)
                self.label(self.path("m.nhdr"), "--mask-input", "--connectivity", 6, "--out", self.path("l.nhdr"),
                           *periodic, "--values", self.path("f0.nhdr"), "--values", self.path("f1.nhdr"), "--values",
                           self.path("f2.nhdr"), "--stats", self.path("t.csv"))
                with open(self.path("t.csv")) as f:
                    rows = list(csv.DictReader(f))
                self.assertEqual(len(rows), count)
                ids = np.arange(174755, 174775)  # 0-based rows about the straddle
                for k, values in enumerate(fields):
                    v = values.astype(np.float64)
                    lo = ndimage.minimum(v, labels, ids + 1)
                    hi = ndimage.maximum(v, labels, ids + 1)
                    total = ndimage.sum(v, labels, ids + 1)
                    for j, i in enumerate(ids):
                        row = rows[i]
                        self.assertEqual(float(row["f%d_min" % k]), lo[j], f"object {i + 1} field {k}")
                        self.assertEqual(float(row["f%d_max" % k]), hi[j], f"object {i + 1} field {k}")
                        self.assertAlmostEqual(float(row["f%d_sum" % k]), total[j], delta=1e-6 * max(1, abs(total[j])))

    def test_bad_fields_are_refused(self):
        """A field of another shape, two fields of one name, expressions over two files, --values-var with
        two files: one line each, nothing written."""
        write_nrrd(self.path("m.nhdr"), np.ones((4, 5, 6), np.uint8))
        write_nrrd(self.path("small.nhdr"), np.ones((4, 5, 5), np.float32))
        write_nrrd(self.path("a.nhdr"), np.ones((4, 5, 6), np.float32))
        base = ["label", self.path("m.nhdr"), "--mask-input", "--out", self.path("l.nhdr"), "--stats",
                self.path("t.csv")]
        cases = [
            (["--values", self.path("small.nhdr")], r"small\.nhdr.*6x5x4.*voxel for voxel"),
            (["--values", self.path("a.nhdr"), "--values", self.path("a.nhdr")], r"two fields are named a"),
            (["--values", self.nc, "--values", self.path("a.nhdr"), "--values-expr", "u"],
             r"--values-expr reads the variables of one file"),
            (["--values", self.nc, "--values", self.path("a.nhdr"), "--values-var", "T"],
             r"--values-var names the variable of one --values FILE"),
            (["--values-expr", "bad name=u"], r"field name|unknown|variable|expression"),
        ]
        for extra, pattern in cases:
            with self.subTest(extra=extra):
                before = e.digest(self.work)
                proc = e.run(base + extra, ranks=1, timeout=120)
                e.assert_clean_failure(self, proc, pattern)
                self.assertEqual(e.digest(self.work), before)


if __name__ == "__main__":
    unittest.main()
