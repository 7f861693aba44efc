# SPDX-License-Identifier: MIT
"""'volseg distance' against scipy.ndimage.distance_transform_edt.

Each mask is transformed on 1, 2 and 3 ranks within a small --memory, so
the slabs and groups of planes are smaller than the objects, with unit and
anisotropic spacing, with and without --black-border (scipy's answer for it:
the mask padded by a plane of background on every face). f64 must equal
scipy's within 1 ulp (ties between equally near voxels may round the sum of
squares differently), f32 scipy's value cast to f32 likewise; and every
rank count must write the same bytes."""
import os
import sys
import tempfile
import unittest

import numpy as np
from scipy import ndimage

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import e2e_util as e  # noqa: E402
from test_label import write_nrrd  # noqa: E402


def scipy_distance(mask, spacing, black_border):
    if black_border:
        return ndimage.distance_transform_edt(np.pad(mask, 1), sampling=spacing)[1:-1, 1:-1, 1:-1]
    return ndimage.distance_transform_edt(mask, sampling=spacing)


def balls(shape, count, seed, radii=(3, 9)):
    rng = np.random.default_rng(seed)
    z, y, x = np.indices(shape)
    mask = np.zeros(shape, np.uint8)
    for _ in range(count):
        c = rng.random(3) * np.array(shape)
        r = rng.uniform(*radii)
        mask |= ((z - c[0]) ** 2 + (y - c[1]) ** 2 + (x - c[2]) ** 2 <= r * r).astype(np.uint8)
    return mask


class Distance(unittest.TestCase):
    def setUp(self):
        e.require_binary()
        self.tmp = tempfile.TemporaryDirectory()
        self.dir = self.tmp.name

    def tearDown(self):
        self.tmp.cleanup()

    def path(self, name):
        return os.path.join(self.dir, name)

    def transform(self, source, out, ranks, *extra):
        proc = e.run(["distance", source, "--out", out, "--force", "--quiet", *extra], ranks=ranks)
        e.check_ok(self, proc)
        return e.read_volume(out)[1]

    def assert_within_ulp(self, got, expected, what):
        expected = expected.astype(got.dtype)
        ulps = np.abs(got.astype(np.float64) - expected.astype(np.float64)) / np.spacing(expected)
        self.assertLessEqual(float(ulps.max()), 1.0, "%s: %d voxels differ by more than an ulp"
                             % (what, int((ulps > 1).sum())))

    def check_mask(self, mask, name):
        source = self.path(name + ".nhdr")
        write_nrrd(source, mask)
        for spacing in ((1.0, 1.0, 1.0), (2.5, 1.0, 0.7)):
            for black_border in (False, True):
                expected = scipy_distance(mask, spacing, black_border)
                options = ["--mask-input", "--spacing", ",".join(repr(s) for s in spacing)]
                options += ["--black-border"] if black_border else []
                first = None
                for ranks in (1, 2, 3):
                    for kind in ("f64", "f32"):
                        out = self.path("d_%s_%d.nhdr" % (kind, ranks))
                        # Slabs of a few rows, groups of a few planes.
                        got = self.transform(source, out, ranks, *options, "--type", kind, "--slab-rows", "4",
                                             "--plane-group", "3")
                        what = "%s spacing %s black border %s, %d ranks, %s" % (name, spacing, black_border,
                                                                                ranks, kind)
                        self.assert_within_ulp(got, expected, what)
                        if kind == "f64":
                            if first is None:
                                first = got.tobytes()
                            self.assertEqual(got.tobytes(), first, what + ": bytes differ from 1 rank's")

    def test_balls_and_random_masks_equal_scipy(self):
        self.check_mask(balls((40, 37, 45), 14, 2), "balls")
        rng = np.random.default_rng(5)
        self.check_mask((rng.random((19, 33, 41)) < 0.6).astype(np.uint8), "random")

    def test_the_slabs_are_smaller_than_the_objects(self):
        # One ball filling most of a tall volume: every slab and group of
        # planes cuts it, and the nearest background is many slabs away.
        shape = (96, 64, 64)
        z, y, x = np.indices(shape)
        mask = ((z - 48) ** 2 / 44.0 ** 2 + (y - 32) ** 2 / 30.0 ** 2 + (x - 31) ** 2 / 29.0 ** 2 <= 1).astype(np.uint8)
        source = self.path("ellipsoid.nhdr")
        write_nrrd(source, mask)
        expected = scipy_distance(mask, (1.0, 1.0, 1.0), False)
        for ranks in (1, 3):
            proc = e.run(["distance", source, "--mask-input", "--out", self.path("d.nhdr"), "--force",
                          "--type", "f64", "--slab-rows", "5", "--plane-group", "7"], ranks=ranks)
            e.check_ok(self, proc)
            self.assertRegex(proc.stdout, r"slabs of 64x5x96, planes in groups of 7")
            self.assert_within_ulp(e.read_volume(self.path("d.nhdr"))[1], expected, "ellipsoid, %d ranks" % ranks)

    def test_threshold_input_and_the_volume_spacing(self):
        # A scalar volume thresholded on the fly, its spacing from the header.
        rng = np.random.default_rng(9)
        values = rng.normal(size=(30, 31, 32)).astype(np.float32)
        values = ndimage.gaussian_filter(values, 2).astype(np.float32)
        source = self.path("values.nhdr")
        write_nrrd(source, values, spacing=(0.5, 0.8, 1.5))  # x, y, z
        lo, hi = -0.05, 1.0
        mask = ((values >= lo) & (values <= hi)).astype(np.uint8)
        expected = scipy_distance(mask, (1.5, 0.8, 0.5), False)
        got = self.transform(source, self.path("d.nhdr"), 2, "--lo", str(lo), "--hi", str(hi), "--type", "f64")
        self.assert_within_ulp(got, expected, "thresholded, header spacing")
        self.assertFalse(any(name.startswith(".") for name in os.listdir(self.dir)),
                         "a temporary file was left: %s" % os.listdir(self.dir))

    def test_netcdf_output_and_nonzero_mask(self):
        # Foreground is nonzero: a labels volume is a mask too.
        mask = balls((24, 26, 28), 6, 4).astype(np.uint16) * 7
        source = self.path("labels.nhdr")
        write_nrrd(source, mask)
        proc = e.run(["distance", source, "--mask-input", "--out", self.path("d.nc"), "--quiet"], ranks=2)
        e.check_ok(self, proc)
        try:
            import netCDF4
        except ImportError:
            self.skipTest("missing netCDF4 (python3-netcdf4)")
        with netCDF4.Dataset(self.path("d.nc")) as ds:
            got = np.asarray(ds.variables["distance"][:])
        self.assert_within_ulp(got, scipy_distance(mask != 0, (1.0, 1.0, 1.0), False), "NetCDF output")

    def test_bad_input(self):
        source = self.path("m.nhdr")
        write_nrrd(source, balls((8, 9, 10), 2, 1))
        out = self.path("d.nhdr")
        for args, pattern in ((["--spacing", "1,0,1"], "--spacing"), (["--spacing", "1,-2,1"], "--spacing"),
                              (["--spacing", "1,x,1"], "--spacing"), (["--spacing", "1,1"], "--spacing"),
                              (["--type", "u8"], "--type")):
            proc = e.run(["distance", source, "--mask-input", "--out", out, *args], ranks=1)
            e.assert_clean_failure(self, proc, pattern)
            self.assertFalse(os.path.exists(out), args)
        e.check_ok(self, e.run(["distance", source, "--mask-input", "--out", out, "--quiet"], ranks=1))
        proc = e.run(["distance", source, "--mask-input", "--out", out], ranks=1)
        e.assert_clean_failure(self, proc, "exists")


if __name__ == "__main__":
    e.main()
