# SPDX-License-Identifier: MIT
"""The segmentation operators (docs/operators.md) against the libraries that
define them: hysteresis against scipy.ndimage.label of the low mask filtered
by its seeds, --open/--close against scikit-image's binary_opening and
binary_closing with ball(R), --fill-holes against scipy's binary_fill_holes,
Otsu, multi-Otsu and percentiles against scikit-image and numpy on the same
histogram. Every job runs on 1 and 3 ranks with bricks smaller than the
objects (and odd, so objects cross every kind of brick face), and must give
the reference voxel for voxel."""
import os
import re
import shutil
import sys
import tempfile
import unittest

import csv

import numpy as np
from scipy import ndimage
from skimage import filters, measure, morphology

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import e2e_util as e  # noqa: E402
from test_label import RANK_OF, scipy_label, write_nrrd  # noqa: E402

BRICK = "13,12,14"  # z,y,x: odd, smaller than the objects
RANKS = (1, 3)


def smooth_field(shape, seed, sigma=2.5):
    rng = np.random.default_rng(seed)
    field = ndimage.gaussian_filter(rng.normal(size=shape), sigma)
    field = (field - field.min()) / (field.max() - field.min())
    return field.astype(np.float32)


def hysteresis(values, lo, hi, seed_lo, seed_hi, connectivity):
    low = (values >= lo) & (values <= hi)
    labels, count = scipy_label(low, connectivity)
    seeded = np.unique(labels[(values >= seed_lo) & (values <= seed_hi) & low])
    return np.isin(labels, seeded[seeded > 0])


class Operators(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        e.require_binary()
        cls.tmp = tempfile.mkdtemp(prefix="volseg-operators-")
        cls.values = smooth_field((40, 44, 48), 7)
        cls.input = os.path.join(cls.tmp, "field.nhdr")
        write_nrrd(cls.input, cls.values)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def path(self, name):
        return os.path.join(self.tmp, name)

    def segment(self, args, ranks, name="mask.nhdr", source=None):
        out = self.path(name)
        proc = e.run(["segment", source or self.input, "--out", out, "--brick", BRICK, "--force",
                      "--progress", "none", *args], ranks=ranks)
        e.check_ok(self, proc)
        for leftover in os.listdir(self.tmp):
            self.assertNotIn("volseg-spill", leftover, "a temporary volume was left behind")
        return e.read_volume(out)[1].astype(bool), proc

    def label(self, args, ranks, name="labels.nhdr", source=None):
        out = self.path(name)
        proc = e.run(["label", source or self.input, "--out", out, "--brick", BRICK, "--force", "--progress", "none", *args],
                     ranks=ranks)
        e.check_ok(self, proc)
        return e.read_volume(out)[1].astype(np.int64), proc

    def assert_same(self, got, want, what):
        differ = np.count_nonzero(got != want)
        self.assertEqual(differ, 0, "%s: %d of %d voxels differ (volseg %d, reference %d in the mask)"
                         % (what, differ, want.size, np.count_nonzero(got), np.count_nonzero(want)))

    def test_hysteresis_equals_scipy_labels_filtered_by_seeds(self):
        for connectivity in (6, 26):
            want = hysteresis(self.values, 0.55, 1.0, 0.75, 1.0, connectivity)
            # the reference must keep some components and drop others, or it tests nothing
            low = (self.values >= 0.55)
            self.assertGreater(np.count_nonzero(low), np.count_nonzero(want))
            self.assertGreater(np.count_nonzero(want), 0)
            for ranks in RANKS:
                got, _ = self.segment(["--lo", "0.55", "--hi", "1", "--seed-lo", "0.75", "--seed-hi", "1",
                                       "--connectivity", str(connectivity)], ranks)
                self.assert_same(got, want, "hysteresis %d-connected, %d ranks" % (connectivity, ranks))
                labels, _ = self.label(["--lo", "0.55", "--hi", "1", "--seed-lo", "0.75", "--seed-hi", "1",
                                        "--connectivity", str(connectivity)], ranks)
                want_labels, _ = scipy_label(want, connectivity)
                self.assert_same(labels, want_labels, "label with hysteresis, %d ranks" % ranks)

    def test_open_and_close_equal_scikit_image_with_a_ball(self):
        mask = (self.values >= 0.5) & (self.values <= 0.8)
        cases = [(["--open", "2"], morphology.binary_opening(mask, morphology.ball(2))),
                 (["--close", "3"], morphology.binary_closing(mask, morphology.ball(3))),
                 (["--open", "1", "--close", "2"],
                  morphology.binary_closing(morphology.binary_opening(mask, morphology.ball(1)),
                                            morphology.ball(2)))]
        for args, want in cases:
            self.assertNotEqual(np.count_nonzero(want != mask), 0, "the operator changes nothing here")
            for ranks in RANKS:
                got, _ = self.segment(["--lo", "0.5", "--hi", "0.8", *args], ranks)
                self.assert_same(got, want, "%s on %d ranks" % (" ".join(args), ranks))

    def test_a_block_on_the_volume_faces_survives_opening(self):
        # scikit-image's border rule: erosion sees foreground outside the
        # volume, so an object filling a corner keeps its faces (scipy's
        # default, background outside, would eat them).
        block = np.zeros((30, 31, 32), np.float32)
        block[:12, :10, :15] = 1
        path = self.path("block.nhdr")
        write_nrrd(path, block)
        want = morphology.binary_opening(block > 0, morphology.ball(2))
        self.assertTrue(want[0, 0, 0] and want[11, 0, 0])
        for ranks in RANKS:
            got, _ = self.segment(["--lo", "1", "--hi", "1", "--open", "2"], ranks, source=path)
            self.assert_same(got, want, "opening of a corner block on %d ranks" % ranks)

    def test_fill_holes_equals_scipy_with_a_hole_across_ranks(self):
        volume = np.zeros((40, 44, 48), np.float32)
        z, y, x = np.indices(volume.shape)
        r = np.sqrt((z - 20.0) ** 2 + (y - 22.0) ** 2 + (x - 24.0) ** 2)
        volume[(r >= 9) & (r <= 12)] = 1  # a shell: its inside spans bricks and ranks
        volume[3:8, 3:8, 3:8] = 1
        volume[4:7, 4:7, 4:7] = 0  # a small hole
        volume[0:5, 30:36, 30:36] = 1
        volume[0:3, 32:34, 32:34] = 0  # open to the volume's face: not a hole
        volume = np.maximum(volume, (self.values > 0.85).astype(np.float32))
        path = self.path("holes.nhdr")
        write_nrrd(path, volume)
        want = ndimage.binary_fill_holes(volume > 0)
        self.assertGreater(np.count_nonzero(want) - np.count_nonzero(volume), 27)
        for ranks in RANKS:
            got, _ = self.segment(["--lo", "1", "--hi", "1", "--fill-holes"], ranks, source=path)
            self.assert_same(got, want, "filled holes on %d ranks" % ranks)

    def test_random_masks(self):
        """Noise: many small objects and holes on every brick face."""
        rng = np.random.default_rng(9)
        noise = rng.random((36, 40, 44)).astype(np.float32)
        path = self.path("noise.nhdr")
        write_nrrd(path, noise)
        mask = noise >= 0.45
        cases = [
            (["--lo", "0.45", "--hi", "1", "--seed-lo", "0.97", "--seed-hi", "1", "--connectivity", "6"],
             hysteresis(noise, 0.45, 1.0, 0.97, 1.0, 6)),
            (["--lo", "0.45", "--hi", "1", "--open", "1"], morphology.binary_opening(mask, morphology.ball(1))),
            (["--lo", "0.45", "--hi", "1", "--close", "1"], morphology.binary_closing(mask, morphology.ball(1))),
            (["--lo", "0.45", "--hi", "1", "--fill-holes"], ndimage.binary_fill_holes(mask)),
        ]
        for args, want in cases:
            self.assertNotEqual(np.count_nonzero(want != mask), 0, "%s changes nothing here" % args)
            for ranks in RANKS:
                got, _ = self.segment(args, ranks, source=path)
                self.assert_same(got, want, "%s on noise, %d ranks" % (" ".join(args), ranks))

    def test_every_operator_in_order_then_min_voxels(self):
        lo, hi, seeds = 0.45, 0.9, (0.7, 1.0)
        mask = hysteresis(self.values, lo, hi, *seeds, 26)
        mask = morphology.binary_opening(mask, morphology.ball(1))
        mask = morphology.binary_closing(mask, morphology.ball(2))
        mask = ndimage.binary_fill_holes(mask)
        want_labels, count = scipy_label(mask, 26)
        sizes = np.bincount(want_labels.ravel())
        keep = np.flatnonzero(sizes >= 20)
        keep = keep[keep > 0]
        renumber = np.zeros(count + 1, np.int64)
        renumber[keep] = np.arange(1, len(keep) + 1)
        want = renumber[want_labels]
        args = ["--lo", str(lo), "--hi", str(hi), "--seed-lo", str(seeds[0]), "--seed-hi", str(seeds[1]),
                "--open", "1", "--close", "2", "--fill-holes"]
        for ranks in RANKS:
            got, _ = self.segment(args, ranks)
            self.assert_same(got, mask, "segment with every operator, %d ranks" % ranks)
            labels, _ = self.label([*args, "--min-voxels", "20"], ranks)
            self.assert_same(labels, want, "label with every operator, %d ranks" % ranks)

    def chosen(self, proc, option):
        found = re.search(r"%s \S+ = (\S+) \(from the histogram of (\d+) bins over \[(\S+), (\S+)\]\)"
                          % re.escape(option), proc.stdout)
        self.assertIsNotNone(found, proc.stdout)
        return float(found.group(1)), int(found.group(2))

    def test_otsu_multiotsu_and_percentiles_equal_scikit_image_and_numpy(self):
        v = self.values.astype(np.float64)
        lo, hi = v.min(), v.max()
        counts, edges = np.histogram(v, bins=1024, range=(lo, hi))
        centres = (edges[:-1] + edges[1:]) / 2
        width = edges[1] - edges[0]
        otsu = filters.threshold_otsu(hist=(counts, centres))
        multi = filters.threshold_multiotsu(hist=(counts, centres), classes=3)
        for ranks in RANKS:
            got, proc = self.segment(["--lo", "otsu", "--hi", "1"], ranks)
            value, bins = self.chosen(proc, "--lo")
            self.assertEqual(bins, 1024)
            self.assertLessEqual(abs(value - otsu), width, "otsu %r, scikit-image %r" % (value, otsu))
            self.assert_same(got, self.values >= value, "the mask of --lo otsu")
        _, proc = self.segment(["--lo", "multiotsu:3:2", "--hi", "1"], 3)
        value, _ = self.chosen(proc, "--lo")
        self.assertLessEqual(abs(value - multi[1]), width, "multi-Otsu %r, scikit-image %r" % (value, multi))
        _, proc = self.segment(["--lo", "0", "--hi", "multiotsu:3:1"], 1)
        value, _ = self.chosen(proc, "--hi")
        self.assertLessEqual(abs(value - multi[0]), width, "multi-Otsu %r, scikit-image %r" % (value, multi))
        _, proc = self.segment(["--lo", "p90", "--hi", "p99.5"], 3)
        self.assertLessEqual(abs(self.chosen(proc, "--lo")[0] - np.percentile(v, 90)), width)
        self.assertLessEqual(abs(self.chosen(proc, "--hi")[0] - np.percentile(v, 99.5)), width)

    def test_otsu_of_integers_is_exact(self):
        image = np.clip(self.values * 200 + 20, 0, 255).astype(np.uint8)
        path = self.path("bytes.nhdr")
        write_nrrd(path, image)
        want = filters.threshold_otsu(image)  # integer bins: exact
        got, proc = self.segment(["--lo", "otsu", "--hi", "255"], 3, source=path)
        self.assertEqual(self.chosen(proc, "--lo")[0], want + 1)
        self.assert_same(got, image > want, "--lo otsu of u8 data")
        labels, proc = self.label(["--lo", "otsu", "--hi", "255"], 1, source=path)
        self.assert_same(labels > 0, image > want, "label --lo otsu of u8 data")

    def test_bad_input_gets_one_line_and_no_output(self):
        constant = self.path("constant.nhdr")
        write_nrrd(constant, np.full((20, 20, 20), 3, np.float32))
        labels = self.path("objects.nhdr")
        write_nrrd(labels, np.arange(8000, dtype=np.uint16).reshape(20, 20, 20) % 3)
        cases = [
            (["segment", self.input, "--lo", "0.5", "--hi", "1", "--open", "-1"], "radius"),
            (["segment", self.input, "--lo", "0.5", "--hi", "1", "--open", "1.5"], "whole number"),
            (["segment", self.input, "--lo", "0.5", "--hi", "1", "--close", "40"], "radius"),
            (["segment", self.input, "--lo", "0.5", "--hi", "1", "--open", "3", "--close", "2", "--brick", "8"],
             "ghost limit"),
            (["segment", constant, "--lo", "otsu", "--hi", "5"], "one value"),
            (["label", self.input, "--lo", "multiotsu:3:5", "--hi", "1"], "index"),
            (["segment", self.input, "--lo", "otsux", "--hi", "1"], "not a number"),
            (["segment", self.input, "--lo", "0.5", "--hi", "1", "--seed-lo", "0.9"], "both"),
            (["label", labels, "--mask-input", "--fill-holes"], "not a 0/1 mask"),
            (["segment", self.input, "--lo", "0.5", "--hi", "1", "--open", "1", "--resume"], "not resumable"),
        ]
        for args, words in cases:
            out = self.path("refused.nhdr")
            proc = e.run([*args, "--out", out, "--progress", "none"], ranks=2)
            self.assertNotEqual(proc.returncode, 0, " ".join(args))
            lines = [line for line in proc.stderr.splitlines() if line.strip()]
            self.assertEqual(len(lines), 1, "%s: %s" % (" ".join(args), proc.stderr))
            self.assertIn(words, lines[0])
            self.assertFalse(os.path.exists(out), "%s left %s" % (" ".join(args), out))
            self.assertEqual([f for f in os.listdir(self.tmp) if "refused" in f or "spill" in f], [])

    def test_seeds_outside_the_band_are_allowed_and_reported(self):
        report = self.path("report.json")
        got, proc = self.segment(["--lo", "0.5", "--hi", "0.7", "--seed-lo", "0.9", "--seed-hi", "1",
                                  "--report", report], 1)
        self.assertEqual(np.count_nonzero(got), 0)  # no low voxel is a seed
        self.assertIn("outside", proc.stdout)
        import json
        with open(report) as f:
            operators = json.load(f)["operators"]
        self.assertEqual(operators["seed"], [0.9, 1.0])
        self.assertTrue(operators["seeds_outside_band"])


class Shape(unittest.TestCase):
    """label --stats' shape columns against skimage.measure.regionprops and
    a numpy count of exposed voxel faces, on 1 and 3 ranks with bricks
    smaller than the objects."""

    @classmethod
    def setUpClass(cls):
        e.require_binary()
        cls.tmp = tempfile.mkdtemp(prefix="volseg-shape-")

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def check(self, mask, spacing, connectivity, name):
        path = os.path.join(self.tmp, name + ".nhdr")
        write_nrrd(path, mask.astype(np.uint8), spacing=spacing)
        labels, count = scipy_label(mask, connectivity)
        self.assertGreater(count, 3)
        props = measure.regionprops(labels)
        n = np.bincount(labels.ravel(), minlength=count + 1)[1:].astype(np.float64)
        # Exposed faces per axis: a voxel's face whose neighbour is background or outside.
        padded = np.pad(labels, 1)
        faces = []
        for axis in range(3):
            exposed = np.zeros(count + 1)
            for step in (1, -1):
                neighbour = np.roll(padded, step, axis=axis)[1:-1, 1:-1, 1:-1]
                exposed += np.bincount(labels[neighbour == 0].ravel(), minlength=count + 1)
            faces.append(exposed[1:])
        sx, sy, sz = spacing
        area = faces[0] * sy * sx + faces[1] * sz * sx + faces[2] * sz * sy
        volume = n * sx * sy * sz
        for ranks in RANKS:
            table = os.path.join(self.tmp, name + "-%d.csv" % ranks)
            proc = e.run(["label", path, "--mask-input", "--out", os.path.join(self.tmp, name + "-labels.nhdr"),
                          "--stats", table, "--connectivity", str(connectivity), "--brick", BRICK, "--force",
                          "--progress", "none"], ranks=ranks)
            e.check_ok(self, proc)
            with open(table) as f:
                rows = list(csv.DictReader(f))
            self.assertEqual(len(rows), count)
            for row, prop, a, v in zip(rows, props, area, volume):
                what = "%s, object %s on %d ranks" % (name, row["id"], ranks)
                self.assertEqual(int(row["voxels"]), prop.area)
                self.assertAlmostEqual(float(row["surface_area"]), a, delta=1e-9 * a, msg=what)
                self.assertAlmostEqual(float(row["equivalent_diameter"]), prop.equivalent_diameter_area,
                                       delta=1e-9 * prop.equivalent_diameter_area, msg=what)
                eig = prop.inertia_tensor_eigvals
                scale = max(eig[0], 1e-12)
                for k in range(3):
                    self.assertAlmostEqual(float(row["inertia_%d" % (k + 1)]), eig[k], delta=1e-6 * scale, msg=what)
                # regionprops' axis_major_length and axis_minor_length, with
                # rounding below zero clipped (scikit-image 0.19 raises a
                # math domain error there, for lines of voxels).
                major = np.sqrt(max(0.0, 10 * (eig[0] + eig[1] - eig[2])))
                minor = np.sqrt(max(0.0, 10 * (-eig[0] + eig[1] + eig[2])))
                if -eig[0] + eig[1] + eig[2] > 1e-9 * scale:
                    self.assertAlmostEqual(minor, prop.axis_minor_length, delta=1e-9 * minor)
                    self.assertAlmostEqual(major, prop.axis_major_length, delta=1e-9 * major)
                for column, want in (("major_axis_length", major), ("minor_axis_length", minor)):
                    self.assertAlmostEqual(float(row[column]), want, delta=1e-6 * max(want, 1.0), msg=what)
                sphericity = np.pi ** (1 / 3) * (6 * v) ** (2 / 3) / a
                self.assertAlmostEqual(float(row["sphericity"]), sphericity, delta=1e-9 * sphericity, msg=what)

    def test_shape_of_smooth_objects_with_spacing(self):
        values = smooth_field((40, 44, 48), 3)
        self.check((values >= 0.55) & (values <= 0.8), (0.5, 1.0, 2.0), 26, "smooth")

    def test_shape_of_a_random_mask(self):
        rng = np.random.default_rng(4)
        self.check(rng.random((30, 33, 35)) < 0.3, (1.0, 1.0, 1.0), 6, "random")


if __name__ == "__main__":
    unittest.main()
