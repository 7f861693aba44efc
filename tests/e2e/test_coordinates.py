#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""CF coordinates as a user meets them: NetCDF files written by
netCDF4-python (classic and netCDF-4) whose axes have coordinate variables,
one of them uneven and positive down as ocean depths are.

- `volseg info` prints each axis's coordinates; uniform ones give spacing
  and origin.
- Masks and labels keep the input's coordinate variables (values, units,
  positive), read back with netCDF4-python.
- `volseg render` (full build) draws a voxel at depth index k at -depth[k]:
  a mask of one depth level, drawn alone, has its drawn bounds around that
  coordinate (the render report's drawn_bounds); --scale stretches them; a
  decreasing latitude axis is drawn in its coordinates; and reversed axes
  draw the same image on 1 and 2 ranks.
- Debian's levitus_climatology.cdf (ferret-datasets), where installed."""
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
    import zarr
except ImportError:  # pragma: no cover
    zarr = None

DEPTHS = np.array([0, 10, 20, 30, 50, 75, 100, 150, 200, 300, 400, 600], dtype=np.float64)
LATS = np.arange(20, dtype=np.float64) * 2.0 - 19.0     # -19 .. 19, step 2
LONS = np.arange(24, dtype=np.float64) * 1.5 + 100.25   # 100.25 .. 134.75, step 1.5
LEVITUS = "/usr/share/ferret-vis/data/levitus_climatology.cdf"


def write_ocean(path, fmt, lats=LATS, field=None):
    """TEMP(depth, lat, lon): by default the depth index (so lo=hi=k is one level)."""
    with netCDF4.Dataset(path, "w", format=fmt) as d:
        d.createDimension("depth", len(DEPTHS))
        d.createDimension("lat", len(lats))
        d.createDimension("lon", len(LONS))
        v = d.createVariable("depth", "f8", ("depth",))
        v[:] = DEPTHS
        v.units = "m"
        v.positive = "down"
        v = d.createVariable("lat", "f8", ("lat",))
        v[:] = lats
        v.units = "degrees_north"
        v = d.createVariable("lon", "f8", ("lon",))
        v[:] = LONS
        v.units = "degrees_east"
        t = d.createVariable("TEMP", "f4", ("depth", "lat", "lon"))
        t.units = "degC"
        if field is None:
            field = np.broadcast_to(np.arange(len(DEPTHS), dtype=np.float32)[:, None, None],
                                    (len(DEPTHS), len(lats), len(LONS)))
        t[:] = field


def write_xarray_zarr(path):
    """The layout xarray's to_zarr writes: a group of the variable and its
    coordinate arrays, each naming its dimensions in _ARRAY_DIMENSIONS."""
    group = zarr.open_group(path, mode="w")
    field = np.broadcast_to(np.arange(len(DEPTHS), dtype=np.float32)[:, None, None],
                            (len(DEPTHS), len(LATS), len(LONS)))
    t = group.create_dataset("TEMP", data=np.ascontiguousarray(field), chunks=(4, 8, 8))
    t.attrs.update({"_ARRAY_DIMENSIONS": ["depth", "lat", "lon"], "units": "degC"})
    for name, values, attrs in (("depth", DEPTHS, {"units": "m", "positive": "down"}),
                                ("lat", LATS, {"units": "degrees_north"}), ("lon", LONS, {"units": "degrees_east"})):
        a = group.create_dataset(name, data=values, chunks=(5,))
        a.attrs.update(dict(attrs, _ARRAY_DIMENSIONS=[name]))


def report(path):
    with open(path) as f:
        return json.load(f)


@unittest.skipIf(netCDF4 is None, "missing python3-netcdf4")
class Coordinates(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        e.require_binary()
        cls.tmp = tempfile.TemporaryDirectory(prefix="volseg-coordinates-")
        cls.dir = cls.tmp.name
        cls.files = {}
        for fmt, name in (("NETCDF3_CLASSIC", "classic.nc"), ("NETCDF4", "nc4.nc")):
            path = os.path.join(cls.dir, name)
            write_ocean(path, fmt)
            cls.files[fmt] = path

    def test_info_prints_the_coordinates(self):
        for fmt, path in self.files.items():
            with self.subTest(fmt):
                proc = e.run(["info", path], ranks=1, mpi=False)
                e.check_ok(self, proc)
                out = proc.stdout
                self.assertRegex(out, r"z coordinate:\s+depth = 0 \.\. 600 m \(12 values, uneven, positive down\)")
                self.assertRegex(out, r"y coordinate:\s+lat = -19 \.\. 19 degrees_north \(20 values, uniform, step 2\)")
                self.assertRegex(out, r"x coordinate:\s+lon = 100\.25 \.\. 134\.75 degrees_east")
                # uniform axes: spacing and origin; the uneven one keeps index spacing
                self.assertRegex(out, r"spacing \(x,y,z\): 1\.5 2 1\n")
                self.assertRegex(out, r"origin \(x,y,z\):\s+100\.25 -19 0\n")

    def test_masks_and_labels_keep_the_coordinate_variables(self):
        for fmt, path in self.files.items():
            for ranks in (1, 3):
                with self.subTest(fmt=fmt, ranks=ranks):
                    mask = os.path.join(self.dir, "mask-%s-%d.nc" % (fmt, ranks))
                    labels = os.path.join(self.dir, "labels-%s-%d.nc" % (fmt, ranks))
                    e.check_ok(self, e.run(["segment", path, "--lo", "2", "--hi", "4", "--out", mask, "--force",
                                            "--quiet"], ranks=ranks))
                    e.check_ok(self, e.run(["label", path, "--lo", "2", "--hi", "4", "--out", labels, "--force",
                                            "--quiet"], ranks=ranks))
                    for out, name in ((mask, "mask"), (labels, "labels")):
                        with netCDF4.Dataset(out) as d:
                            self.assertEqual(d[name].dimensions, ("depth", "lat", "lon"))
                            np.testing.assert_array_equal(d["depth"][:], DEPTHS)
                            np.testing.assert_array_equal(d["lat"][:], LATS)
                            np.testing.assert_array_equal(d["lon"][:], LONS)
                            self.assertEqual(d["depth"].positive, "down")
                            self.assertEqual(d["depth"].units, "m")
                            self.assertEqual(d["lon"].units, "degrees_east")
                            values = np.asarray(d[name][:])
                        expected = np.zeros(values.shape, bool)
                        expected[2:5] = True
                        np.testing.assert_array_equal(values != 0, expected)

    def test_convert_to_netcdf_keeps_spacing_and_origin_as_coordinates(self):
        raw = os.path.join(self.dir, "placed.raw")
        np.arange(4 * 5 * 6, dtype=np.float32).reshape(4, 5, 6).tofile(raw)
        header = os.path.join(self.dir, "placed.nhdr")
        with open(header, "w") as f:
            f.write("NRRD0004\ntype: float\ndimension: 3\nsizes: 6 5 4\nspacings: 0.5 2 4\n"
                    "axis mins: 10 20 30\nendian: little\nencoding: raw\ndata file: placed.raw\n\n")
        out = os.path.join(self.dir, "placed.nc")
        e.check_ok(self, e.run(["convert", header, out, "--force", "--quiet"], ranks=2))
        with netCDF4.Dataset(out) as d:
            np.testing.assert_allclose(d["x"][:], 10 + 0.5 * np.arange(6))
            np.testing.assert_allclose(d["y"][:], 20 + 2 * np.arange(5))
            np.testing.assert_allclose(d["z"][:], 30 + 4 * np.arange(4))
        proc = e.run(["info", out], ranks=1, mpi=False)
        e.check_ok(self, proc)
        self.assertRegex(proc.stdout, r"spacing \(x,y,z\): 0\.5 2 4\n")
        self.assertRegex(proc.stdout, r"origin \(x,y,z\):\s+10 20 30\n")

    def test_a_regular_float32_axis_is_uniform(self):
        """Longitudes 350.0, 350.1, ... stored as float32 are off their grid
        by float32's rounding, far more than 1e-6 of a step: still uniform."""
        path = os.path.join(self.dir, "float32-lon.nc")
        with netCDF4.Dataset(path, "w") as d:
            for name, n in (("z", 3), ("y", 4), ("lon", 40)):
                d.createDimension(name, n)
            v = d.createVariable("lon", "f4", ("lon",))
            v[:] = (350 + 0.1 * np.arange(40)).astype(np.float32)
            d.createVariable("T", "f4", ("z", "y", "lon"))[:] = np.zeros((3, 4, 40), np.float32)
        proc = e.run(["info", path], ranks=1, mpi=False)
        e.check_ok(self, proc)
        self.assertRegex(proc.stdout, r"x coordinate:\s+lon = 350 \.\. 353\.9 \(40 values, uniform, step 0\.(1|09999\d*)\)")
        self.assertRegex(proc.stdout, r"spacing \(x,y,z\): 0\.(1|09999\d*) 1 1\n")

    @unittest.skipIf(zarr is None, "missing python3-zarr")
    def test_zarr_written_as_xarray_writes_it(self):
        store = os.path.join(self.dir, "ocean.zarr")
        write_xarray_zarr(store)
        proc = e.run(["info", store + "/TEMP"], ranks=1, mpi=False)
        e.check_ok(self, proc)
        self.assertRegex(proc.stdout, r"z coordinate:\s+depth = 0 \.\. 600 m \(12 values, uneven, positive down\)")
        self.assertRegex(proc.stdout, r"y coordinate:\s+lat = -19 \.\. 19 degrees_north \(20 values, uniform, step 2\)")
        self.assertRegex(proc.stdout, r"origin \(x,y,z\):\s+100\.25 -19 0\n")
        self.assertRegex(proc.stdout, r"units: degC")
        if e.WITH_PARAVIEW:
            mask = os.path.join(self.dir, "zarr-level4.nc")
            e.check_ok(self, e.run(["segment", store + "/TEMP", "--lo", "4", "--hi", "4", "--out", mask, "--force",
                                    "--quiet"], ranks=2))
            rep = self.render([store + "/TEMP", "--mode", "mask", "--mask", mask], os.path.join(self.dir, "zarr.png"))
            z0, z1 = rep["drawn_bounds"][4:]
            self.assertTrue(z0 < -DEPTHS[4] < z1, (z0, z1))

    def test_levitus(self):
        if not os.path.exists(LEVITUS):
            self.skipTest("missing ferret-datasets (levitus_climatology.cdf)")
        proc = e.run(["info", LEVITUS, "--var", "TEMP"], ranks=1, mpi=False)
        e.check_ok(self, proc)
        self.assertRegex(proc.stdout, r"z coordinate:\s+ZAXLEVITR = 0 \.\. 5000 METERS \(20 values, uneven, positive down\)")
        mask = os.path.join(self.dir, "warm.nc")
        e.check_ok(self, e.run(["segment", LEVITUS, "--var", "TEMP", "--lo", "20", "--hi", "40", "--out", mask,
                                "--force", "--quiet"], ranks=2))
        with netCDF4.Dataset(LEVITUS) as source, netCDF4.Dataset(mask) as d:
            np.testing.assert_array_equal(d["ZAXLEVITR"][:], source["ZAXLEVITR"][:])
            self.assertEqual(d["ZAXLEVITR"].positive, "down")
            temp = source["TEMP"][:]
            expected = ~np.ma.getmaskarray(temp) & (temp.filled(0) >= 20) & (temp.filled(0) <= 40)
            np.testing.assert_array_equal(np.asarray(d["mask"][:]) != 0, expected)

    # -- rendering (full build) --

    def mask_of(self, path, lo, hi):
        """Segments path into a NetCDF mask, which keeps its coordinates."""
        out = "%s-mask-%g-%g.nc" % (path[:-3], lo, hi)
        e.check_ok(self, e.run(["segment", path, "--lo", str(lo), "--hi", str(hi), "--out", out, "--force", "--quiet"],
                               ranks=1, mpi=False))
        return out

    def render(self, args, out, ranks=1):
        argv = ["render"] + args + ["--out", out, "--size", "320x240", "--report", out + ".json", "--force",
                                    "--quiet"]
        e.check_ok(self, e.run(argv, ranks=ranks, timeout=300))
        return report(out + ".json")

    @unittest.skipUnless(e.WITH_PARAVIEW, "a build without ParaView does not render")
    def test_a_depth_level_is_drawn_at_its_depth(self):
        path = self.files["NETCDF4"]
        for k in (1, 4, 8, 10):
            with self.subTest(k=k):
                rep = self.render([path, "--mode", "mask", "--mask", self.mask_of(path, k, k), "--no-annotations"],
                                  os.path.join(self.dir, "level%d.png" % k))
                x0, x1, y0, y1, z0, z1 = rep["drawn_bounds"]
                # drawn reversed: depth d at z = -d; the level's cell reaches half way to its neighbours
                upper = -(DEPTHS[k - 1] + DEPTHS[k]) / 2
                lower = -(DEPTHS[k] + DEPTHS[k + 1]) / 2
                step = 10  # the resampled grid's step (the smallest)
                self.assertLessEqual(z0, -DEPTHS[k])
                self.assertGreaterEqual(z1, -DEPTHS[k])
                self.assertAlmostEqual(z1, upper, delta=step)
                self.assertAlmostEqual(z0, lower, delta=step)
                # lat and lon in degrees: the whole extent, closed between the
                # edge voxels and the next cell out
                self.assertTrue(LONS[0] - 1.5 < x0 < LONS[0] and LONS[-1] < x1 < LONS[-1] + 1.5, (x0, x1))
                self.assertTrue(LATS[0] - 2 < y0 < LATS[0] and LATS[-1] < y1 < LATS[-1] + 2, (y0, y1))
                self.assertEqual(rep["bounds"][:4], [LONS[0], LONS[-1], LATS[0], LATS[-1]])
                self.assertEqual(rep["bounds"][4:], [-600, 0])
        # the same with a pyramid beside the input (its levels are index space:
        # not used) and a mask without coordinate variables (raw), drawn on the
        # field's grid
        e.check_ok(self, e.run(["pyramid", path, "--quiet"], ranks=2))
        raw = os.path.join(self.dir, "level4.nhdr")
        e.check_ok(self, e.run(["segment", path, "--lo", "4", "--hi", "4", "--out", raw, "--force", "--quiet"],
                               ranks=1, mpi=False))
        rep = self.render([path, "--mode", "mask", "--mask", raw, "--no-annotations"],
                          os.path.join(self.dir, "level4-raw.png"), ranks=2)
        z0, z1 = rep["drawn_bounds"][4:]
        self.assertAlmostEqual(z1, -(DEPTHS[3] + DEPTHS[4]) / 2, delta=10)
        self.assertAlmostEqual(z0, -(DEPTHS[4] + DEPTHS[5]) / 2, delta=10)
        # --scale Z,Y,X stretches the drawing: depth x 0.05
        rep = self.render([path, "--mode", "mask", "--mask", self.mask_of(path, 4, 4), "--scale", "0.05,1,1"],
                          os.path.join(self.dir, "scaled.png"))
        self.assertAlmostEqual(rep["bounds"][4], -30, delta=1e-9)
        self.assertGreaterEqual(rep["drawn_bounds"][5], -DEPTHS[4] * 0.05)
        self.assertLessEqual(rep["drawn_bounds"][4], -DEPTHS[4] * 0.05)

    @unittest.skipUnless(e.WITH_PARAVIEW, "a build without ParaView does not render")
    def test_a_decreasing_axis_is_drawn_in_its_coordinates(self):
        path = os.path.join(self.dir, "north-first.nc")
        lats = LATS[::-1].copy()
        field = np.zeros((len(DEPTHS), len(lats), len(LONS)), np.float32)
        field[:, :3, :] = 1  # the first three rows: the northernmost latitudes
        write_ocean(path, "NETCDF4", lats=lats, field=field)
        # a decreasing axis keeps index spacing and origin in the volume's
        # description (voxel k at origin + k * spacing holds for increasing
        # axes only); its coordinate places it
        proc = e.run(["info", path], ranks=1, mpi=False)
        e.check_ok(self, proc)
        self.assertRegex(proc.stdout, r"y coordinate:\s+lat = 19 \.\. -19 degrees_north \(20 values, uniform, step -2\)")
        self.assertRegex(proc.stdout, r"spacing \(x,y,z\): 1\.5 1 1\n")
        self.assertRegex(proc.stdout, r"origin \(x,y,z\):\s+100\.25 0 0\n")
        rep = self.render([path, "--mode", "mask", "--mask", self.mask_of(path, 1, 1)],
                          os.path.join(self.dir, "north.png"))
        y0, y1 = rep["drawn_bounds"][2:4]
        # the northernmost rows, wherever they lie in the file: from between
        # lats[2] and lats[3] up to the closing cap beyond lats[0]
        self.assertTrue(lats[0] < y1 < lats[0] + 2, y1)
        self.assertTrue(lats[3] < y0 < lats[2], y0)
        self.assertEqual(rep["bounds"][2:4], [LATS[0], LATS[-1]])

    @unittest.skipUnless(e.WITH_PARAVIEW, "a build without ParaView does not render")
    def test_reversed_axes_draw_the_same_on_every_rank_count(self):
        path = self.files["NETCDF4"]
        field = os.path.join(self.dir, "field.nc")
        rng = np.random.default_rng(5)
        smooth = np.cumsum(np.cumsum(rng.random((len(DEPTHS), len(LATS), len(LONS))), axis=1), axis=2).astype(np.float32)
        write_ocean(field, "NETCDF4", field=smooth / smooth.max() * 10)
        images = {}
        for ranks in (1, 2):
            out = os.path.join(self.dir, "reversed-%d.png" % ranks)
            self.render([field, "--mode", "volume,mask", "--mask", self.mask_of(field, 5, 10), "--scale", "0.05,1,1",
                         "--camera", "30,30"], out, ranks=ranks)
            import matplotlib.image as mpimg
            images[ranks] = (mpimg.imread(out)[..., :3] * 255).round()
        difference = np.abs(images[1] - images[2]).max(axis=2)
        self.assertLessEqual(difference.mean(), 3.0)
        self.assertLessEqual(float((difference > 24).mean()), 0.02)
        self.assertGreater(float((images[1].max(axis=2) > 40).mean()), 0.05)
        del path


if __name__ == "__main__":
    e.main()
