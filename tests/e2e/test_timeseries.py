#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Time series as a user runs them: --time all | A:B[:S] over NetCDF-4 and
CDF-5 files with a time dimension, written by netCDF4-python, on 1 and 3
ranks. Masks per step (one file per step, or records of one NetCDF file)
equal numpy's; labels per step equal scipy's (first-voxel order); the
track table equals the overlaps of scipy's labels of consecutive steps, and
its per-step summary what those overlaps say; --resume does only the steps
left; bad ranges and --track without --time get one line."""
import csv
import json
import os
import re
import shutil
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
    import numcodecs
    import zarr
except ImportError:  # pragma: no cover
    zarr = None
try:
    from scipy import ndimage
except ImportError:  # pragma: no cover
    ndimage = None

STEPS, SHAPE = 4, (10, 14, 18)
LO, HI = 0.15, 10.0


@unittest.skipIf(netCDF4 is None or ndimage is None, "missing python3-netcdf4 or python3-scipy")

def mp4_video(path):
    """The video track of an MP4 file, read from its boxes (ISO/IEC 14496-12):
    the sample entry's codec and size, and the sample count of stsz."""
    with open(path, "rb") as f:
        data = f.read()
    assert data[4:8] == b"ftyp", "not an MP4 file"
    stsd = data.find(b"stsd")
    entry = stsd + 4 + 8  # version/flags, entry count
    codec = data[entry + 4:entry + 8]
    # A visual sample entry: 6 reserved, 2 index, 16 predefined/reserved, then width, height.
    width = int.from_bytes(data[entry + 8 + 24:entry + 8 + 26], "big")
    height = int.from_bytes(data[entry + 8 + 26:entry + 8 + 28], "big")
    stsz = data.find(b"stsz")
    samples = int.from_bytes(data[stsz + 12:stsz + 16], "big")  # after version/flags and sample size
    return {"codec": codec, "samples": samples, "width": width, "height": height}

class TimeSeries(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        e.require_binary()
        cls.tmp = tempfile.TemporaryDirectory(prefix="volseg-timeseries-")
        cls.dir = cls.tmp.name
        rng = np.random.default_rng(11)
        base = ndimage.gaussian_filter(rng.normal(size=SHAPE), 1.5) * 4
        # Blobs that drift one voxel a step along x, with noise: objects
        # continue, merge, split, are born and end.
        cls.u = np.stack([np.roll(base, t, axis=2) + 0.1 * rng.normal(size=SHAPE) for t in range(STEPS)]).astype(np.float32)
        cls.v = rng.normal(size=(STEPS,) + SHAPE).astype(np.float32)
        cls.files = {}
        for fmt, name in (("NETCDF4", "ts.nc4"), ("NETCDF3_64BIT_DATA", "ts.nc")):
            path = os.path.join(cls.dir, name)
            with netCDF4.Dataset(path, "w", format=fmt) as d:
                d.createDimension("time", None)
                for dim, n in zip("zyx", SHAPE):
                    d.createDimension(dim, n)
                time = d.createVariable("time", "f8", ("time",))
                time.units = "hours since 2000-01-01"
                time[:] = np.arange(STEPS) * 6.0
                d.createVariable("u", "f4", ("time", "z", "y", "x"))[:] = cls.u
                d.createVariable("v", "f4", ("time", "z", "y", "x"))[:] = cls.v
                d.createVariable("still", "f4", ("z", "y", "x"))[:] = cls.u[0]
            cls.files[fmt] = path

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def out(self, name):
        return os.path.join(self.dir, name)

    def expected_mask(self, t):
        return (self.u[t] >= LO) & (self.u[t] <= HI)

    def test_masks_of_every_step_equal_numpy(self):
        for fmt, path in self.files.items():
            for ranks in (1, 3):
                with self.subTest(fmt=fmt, ranks=ranks):
                    folder = self.out("masks-%s-%d" % (fmt, ranks))
                    os.mkdir(folder)
                    report = os.path.join(folder, "report.json")
                    e.check_ok(self, e.run(["segment", path, "--var", "u", "--time", "all", "--lo", str(LO), "--hi",
                                            str(HI), "--out", os.path.join(folder, "m_%02d.nhdr"), "--report", report,
                                            "--quiet"], ranks=ranks))
                    for t in range(STEPS):
                        mask = e.read_volume(os.path.join(folder, "m_%02d.nhdr" % t))[1]
                        np.testing.assert_array_equal(mask != 0, self.expected_mask(t))
                    with open(report) as f:
                        rows = json.load(f)
                    self.assertEqual(rows["steps"], list(range(STEPS)))
                    self.assertEqual([r["stats"]["in_range"] for r in rows["per_step"]],
                                     [int(self.expected_mask(t).sum()) for t in range(STEPS)])
                    # Before each step the next one's bytes went to the kernel as read-ahead:
                    # the CDF-5 record's, every rank its planes; a chunked NetCDF-4 variable
                    # (netCDF4-python chunks a record variable) has none the reader can name.
                    step_bytes = int(np.prod(SHAPE)) * 4 if fmt == "NETCDF3_64BIT_DATA" else 0
                    self.assertEqual([r["next_step_announced_bytes"] for r in rows["per_step"]],
                                     [step_bytes] * (STEPS - 1) + [0])

    def test_a_range_into_one_netcdf_file_keeps_the_time_dimension(self):
        # CDF-5 records by PnetCDF (.nc), and a NetCDF-4 record variable (.nc4).
        for name, model in (("series.nc", "NETCDF3_64BIT_DATA"), ("series.nc4", "NETCDF4")):
            with self.subTest(out=name):
                out = self.out(name)
                e.check_ok(self, e.run(["segment", self.files["NETCDF4"], "--var", "u", "--time", "1:4:2", "--lo",
                                        str(LO), "--hi", str(HI), "--out", out, "--quiet"], ranks=2))
                with netCDF4.Dataset(out) as d:
                    self.assertEqual(d.data_model, model)
                    self.assertTrue(d.dimensions["time"].isunlimited())
                    self.assertEqual(d["mask"].dimensions, ("time", "z", "y", "x"))
                    mask = np.asarray(d["mask"][:])
                    self.assertEqual(list(d["time"][:]), [6.0, 18.0])  # the input's times of steps 1 and 3
                    self.assertEqual(d["time"].units, "hours since 2000-01-01")
                self.assertEqual(mask.shape, (2,) + SHAPE)
                for k, t in enumerate((1, 3)):
                    np.testing.assert_array_equal(mask[k] != 0, self.expected_mask(t))
                self.assertEqual([n for n in os.listdir(self.dir) if "volseg-series" in n or "volseg-tmp" in n], [])

    @unittest.skipIf(zarr is None, "missing python3-zarr")
    def test_a_range_into_one_zarr_array_or_hdf5_file_keeps_the_time_dimension(self):
        # A 4D Zarr array (t, z, y, x), one step a chunk, read back by
        # zarr-python; OME-Zarr with a time axis first; .h5 is NetCDF-4 (HDF5).
        for name, ranks in (("series.zarr", 3), ("series.ome.zarr", 2), ("series.h5", 2)):
            with self.subTest(out=name):
                out = self.out(name)
                e.check_ok(self, e.run(["segment", self.files["NETCDF4"], "--var", "u", "--time", "1:4:2", "--lo",
                                        str(LO), "--hi", str(HI), "--out", out, "--brick", "8,8,8", "--quiet"],
                                       ranks=ranks))
                if name.endswith(".h5"):
                    with netCDF4.Dataset(out) as d:
                        self.assertEqual(d["mask"].dimensions, ("time", "z", "y", "x"))
                        mask = np.asarray(d["mask"][:])
                        self.assertEqual(list(d["time"][:]), [6.0, 18.0])
                else:
                    array = zarr.open(out + ("/0" if ".ome." in name else ""), "r")
                    self.assertEqual(array.chunks[0], 1)
                    mask = array[:]
                    attrs = zarr.open(out, "r").attrs.asdict()
                    if ".ome." in name:
                        axes = attrs["multiscales"][0]["axes"]
                        self.assertEqual([(a["name"], a["type"]) for a in axes],
                                         [("t", "time"), ("z", "space"), ("y", "space"), ("x", "space")])
                        attrs = array.attrs.asdict()
                    self.assertEqual(attrs["volseg"]["times"], [6.0, 18.0])
                    self.assertEqual(attrs["volseg"]["time_units"], "hours since 2000-01-01")
                self.assertEqual(mask.shape, (2,) + SHAPE)
                for k, t in enumerate((1, 3)):
                    np.testing.assert_array_equal(mask[k] != 0, self.expected_mask(t))
                self.assertEqual([n for n in os.listdir(self.dir) if "volseg-series" in n or "volseg-tmp" in n], [])
                # volseg reads the series back, a step at a time, with its times.
                info = e.run(["info", out, "--time", "1"], ranks=1)
                e.check_ok(self, info)
                self.assertRegex(info.stdout, r"time: +step 1 of 2 \(--time 0\.\.1\), 18 hours since 2000-01-01")
        # --force replaces a Zarr series; without it the old one stays.
        out = self.out("series.zarr")
        proc = e.run(["segment", self.files["NETCDF4"], "--var", "u", "--time", "0:1", "--lo", str(LO), "--hi",
                      str(HI), "--out", out, "--quiet"], ranks=1)
        e.assert_clean_failure(self, proc, r"exists")
        self.assertEqual(zarr.open(out, "r").shape[0], 2)
        e.check_ok(self, e.run(["segment", self.files["NETCDF4"], "--var", "u", "--time", "0:1", "--lo", str(LO),
                                "--hi", str(HI), "--out", out, "--quiet", "--force"], ranks=1))
        self.assertEqual(zarr.open(out, "r").shape, (1,) + SHAPE)

    @unittest.skipIf(zarr is None, "missing python3-zarr")
    def test_a_4d_zarr_array_as_xarray_writes_it_is_a_series(self):
        # A group as xarray writes a dataset: u(time, z, y, x) chunked two
        # steps at a time, its time a coordinate array with CF units.
        store = self.out("xr.zarr")
        group = zarr.open_group(store, "w")
        u = group.create_dataset("u", data=self.u, chunks=(2, 5, 7, 9), compressor=numcodecs.Zlib(1))
        u.attrs["_ARRAY_DIMENSIONS"] = ["time", "z", "y", "x"]
        time = group.create_dataset("time", data=np.arange(STEPS) * 6.0)
        time.attrs.update({"_ARRAY_DIMENSIONS": ["time"], "units": "hours since 2000-01-01"})
        folder = self.out("from-zarr")
        os.mkdir(folder)
        e.check_ok(self, e.run(["segment", store + "/u", "--time", "all", "--lo", str(LO), "--hi", str(HI), "--out",
                                os.path.join(folder, "m_%d.nhdr"), "--quiet"], ranks=2))
        for t in range(STEPS):
            mask = e.read_volume(os.path.join(folder, "m_%d.nhdr" % t))[1] != 0
            np.testing.assert_array_equal(mask, self.expected_mask(t))
        info = e.run(["info", store + "/u", "--time", "3"], ranks=1)
        e.check_ok(self, info)
        self.assertRegex(info.stdout, r"time: +step 3 of 4 \(--time 0\.\.3\), 18 hours since 2000-01-01")
        e.assert_clean_failure(self, e.run(["segment", store + "/u", "--lo", "0", "--hi", "1", "--out", self.out("no.nhdr")],
                                           ranks=1), r"has 4 steps along its first axis; choose one with --time")
        e.assert_clean_failure(self, e.run(["segment", store + "/u", "--time", "4", "--lo", "0", "--hi", "1", "--out",
                                            self.out("no.nhdr")], ranks=1), r"--time 4 is past the last step 3")
        flat = self.out("flat.zarr")
        zarr.open(flat, "w", shape=SHAPE, chunks=SHAPE, dtype="f4")[:] = self.u[0]
        e.assert_clean_failure(self, e.run(["segment", flat, "--time", "all", "--lo", "0", "--hi", "1", "--out",
                                            self.out("m_%d.nhdr")], ranks=1), r"3D, with no time steps")
        self.assertFalse(os.path.exists(self.out("no.nhdr")))

    def test_an_expression_over_every_step(self):
        folder = self.out("expr")
        os.mkdir(folder)
        e.check_ok(self, e.run(["segment", self.files["NETCDF3_64BIT_DATA"], "--expr", "sqrt(u*u + v*v)", "--time",
                                "all", "--lo", "1", "--hi", "2", "--out", os.path.join(folder, "s_%d.nhdr"), "--quiet"],
                               ranks=2))
        for t in range(STEPS):
            speed = np.sqrt(self.u[t].astype(np.float64) ** 2 + self.v[t].astype(np.float64) ** 2)
            mask = e.read_volume(os.path.join(folder, "s_%d.nhdr" % t))[1] != 0
            np.testing.assert_array_equal(mask, (speed >= 1) & (speed <= 2))

    def scipy_labels(self, t):
        labels, count = ndimage.label(self.expected_mask(t), structure=np.ones((3, 3, 3)))
        return labels, count

    def test_labels_per_step_and_the_track_equal_scipy(self):
        for ranks in (1, 3):
            with self.subTest(ranks=ranks):
                folder = self.out("labels-%d" % ranks)
                os.mkdir(folder)
                track = os.path.join(folder, "track.csv")
                e.check_ok(self, e.run(["label", self.files["NETCDF4"], "--var", "u", "--time", "all", "--lo", str(LO),
                                        "--hi", str(HI), "--out", os.path.join(folder, "l_%d.nc"), "--track", track,
                                        "--quiet"], ranks=ranks))
                labels = []
                for t in range(STEPS):
                    with netCDF4.Dataset(os.path.join(folder, "l_%d.nc" % t)) as d:
                        got = np.asarray(d["labels"][:])
                    want, _ = self.scipy_labels(t)
                    np.testing.assert_array_equal(got, want)  # restart at 1, first-voxel order
                    labels.append(want)
                # The overlaps of consecutive steps' labels, and what they make of the objects.
                want_rows, want_steps = [], []
                for t in range(STEPS):
                    count = int(labels[t].max())
                    sizes = np.bincount(labels[t].ravel())[1:]
                    row = {"step": t, "objects": count, "largest": int(sizes.max()) if count else 0,
                           "births": 0, "deaths": 0, "merges": 0, "splits": 0, "continuing": 0}
                    if t > 0:
                        a, b = labels[t - 1].ravel(), labels[t].ravel()
                        both = (a != 0) & (b != 0)
                        pairs, overlap = np.unique(np.stack([a[both], b[both]], axis=1), axis=0, return_counts=True)
                        want_rows += [[t - 1, int(i), int(j), int(n)] for (i, j), n in zip(pairs, overlap)]
                        succ = np.bincount(pairs[:, 0], minlength=int(labels[t - 1].max()) + 1)
                        pred = np.bincount(pairs[:, 1], minlength=count + 1)
                        row["deaths"] = int((succ[1:] == 0).sum())
                        row["births"] = int((pred[1:] == 0).sum())
                        row["splits"] = int((succ > 1).sum())
                        row["merges"] = int((pred > 1).sum())
                        row["continuing"] = int(sum(1 for i, j in pairs if succ[i] == 1 and pred[j] == 1))
                    want_steps.append(row)
                with open(track) as f:
                    rows = list(csv.reader(f))
                self.assertEqual(rows[0], ["t", "id", "next_id", "overlap_voxels"])
                self.assertEqual([[int(x) for x in r] for r in rows[1:]], want_rows)
                self.assertGreater(len(want_rows), 0)
                with open(os.path.join(folder, "track.steps.csv")) as f:
                    got_steps = [{k: int(v) for k, v in r.items()} for r in csv.DictReader(f)]
                self.assertEqual(got_steps, want_steps)
                self.assertTrue(any(r["continuing"] for r in want_steps))  # the data make the test bite
                png = os.path.join(folder, "track.png")
                with open(png, "rb") as f:
                    self.assertEqual(f.read(8), b"\x89PNG\r\n\x1a\n")

    def test_labels_of_a_range_in_one_file(self):
        """label --time all --out L.nc|.nc4|.zarr|.ome.zarr: one 4D output, a record per step, read back by
        netCDF4-python and zarr equal to the per-step files (and to scipy); --track reads its records."""
        per_step = self.out("labels-ref")
        os.makedirs(per_step, exist_ok=True)
        common = ["--var", "u", "--time", "all", "--lo", str(LO), "--hi", str(HI), "--quiet", "--force"]
        e.check_ok(self, e.run(["label", self.files["NETCDF4"], *common, "--out", os.path.join(per_step, "l_%d.nc"),
                                "--track", os.path.join(per_step, "t.csv")], ranks=2))
        with open(os.path.join(per_step, "t.csv")) as f:
            want_track = f.read()
        want = []
        for t in range(STEPS):
            with netCDF4.Dataset(os.path.join(per_step, "l_%d.nc" % t)) as d:
                want.append(np.asarray(d["labels"][:]))
            np.testing.assert_array_equal(want[-1], self.scipy_labels(t)[0])
        for name in ("one.nc", "one.nc4", "one.zarr", "one.ome.zarr"):
            if name.endswith(".zarr") and zarr is None:
                continue
            for ranks in (1, 3):
                with self.subTest(out=name, ranks=ranks):
                    out, track = self.out(name), self.out("one-%s.csv" % name)
                    proc = e.run(["label", self.files["NETCDF4"], *common, "--out", out, "--track", track],
                                 ranks=ranks)
                    e.check_ok(self, proc)
                    if name.endswith(".ome.zarr"):  # a label image with axes t, z, y, x
                        got = zarr.open(out + "/0", mode="r")[:]
                        axes = zarr.open(out, "r").attrs.asdict()["multiscales"][0]["axes"]
                        self.assertEqual([a["name"] for a in axes], ["t", "z", "y", "x"])
                    elif name.endswith(".zarr"):
                        got = zarr.open(out, mode="r")[:]
                    else:
                        with netCDF4.Dataset(out) as d:
                            got = np.asarray(d["labels"][:])
                            self.assertEqual(d["labels"].dimensions[0], "time")
                            np.testing.assert_array_equal(np.asarray(d["time"][:]), np.arange(STEPS) * 6.0)
                    self.assertEqual(got.shape, (STEPS,) + SHAPE)
                    for t in range(STEPS):
                        np.testing.assert_array_equal(got[t], want[t], "step %d" % t)
                    with open(track) as f:
                        self.assertEqual(f.read(), want_track)
        # A step's table that exists is refused without --force, as per step (the steps append with force).
        existing = self.out("t_1.csv")
        with open(existing, "w") as f:
            f.write("keep me\n")
        proc = e.run(["label", self.files["NETCDF4"], *[a for a in common if a != "--force"], "--out",
                      self.out("two.nc"), "--stats", self.out("t_%d.csv")], ranks=2)
        e.assert_clean_failure(self, proc, r"t_1\.csv")
        with open(existing) as f:
            self.assertEqual(f.read(), "keep me\n")
        self.assertFalse(os.path.exists(self.out("two.nc")))
        for name, pattern in (("bad.nhdr", r"%d in --out|keeps the time dimension"),
                              ("bad.precomputed", r"%d in --out|keeps the time dimension")):
            proc = e.run(["label", self.files["NETCDF4"], *common, "--out", self.out(name)], ranks=1)
            e.assert_clean_failure(self, proc, pattern)
            self.assertFalse(os.path.exists(self.out(name)))

    @unittest.skipUnless(e.WITH_PARAVIEW, "a build without ParaView does not render")
    def test_render_a_frame_per_step_with_one_colour_range_and_a_movie(self):
        folder = self.out("frames")
        os.mkdir(folder)
        movie = os.path.join(folder, "u.mp4")
        proc = e.run(["render", self.files["NETCDF4"], "--var", "u", "--time", "all", "--out",
                      os.path.join(folder, "f_%03d.png"), "--movie", movie, "--size", "321x240", "--lo", str(LO),
                      "--hi", str(HI), "--mode", "volume,mask"], ranks=2, timeout=300)
        e.check_ok(self, proc)
        frames = sorted(n for n in os.listdir(folder) if n.endswith(".png"))
        self.assertEqual(frames, ["f_%03d.png" % t for t in range(STEPS)])
        # One colour range, the series' own (not each step's).
        lo, hi = float(self.u.min()), float(self.u.max())
        match = re.search(r"colour range \[(\S+), (\S+)\] for all", proc.stdout)
        self.assertIsNotNone(match, proc.stdout)
        np.testing.assert_allclose([float(match.group(1)), float(match.group(2))], [lo, hi], rtol=1e-5)
        # H.264 in MP4: the sample table holds a sample per frame, the
        # sample description names avc1, the track is 320x240 (the odd
        # column left out).
        self.assertEqual(mp4_video(movie), {"codec": b"avc1", "samples": STEPS, "width": 320, "height": 240})
        self.assertEqual([n for n in os.listdir(folder) if n.startswith(".")], [])
        # The same frames into AVI (MPEG-4 Part 2): its main header counts them.
        avi = os.path.join(folder, "u.avi")
        proc = e.run(["render", self.files["NETCDF4"], "--var", "u", "--time", "0:2", "--out",
                      os.path.join(folder, "g_%03d.png"), "--movie", avi, "--size", "160x120"], ranks=1, timeout=300)
        e.check_ok(self, proc)
        with open(avi, "rb") as f:
            data = f.read()
        self.assertEqual((data[:4], data[8:12]), (b"RIFF", b"AVI "))
        at = data.find(b"avih")
        self.assertEqual(int.from_bytes(data[at + 8 + 16:at + 8 + 20], "little"), 2)
        # Another container: refused before anything is drawn.
        proc = e.run(["render", self.files["NETCDF4"], "--var", "u", "--time", "all", "--out",
                      os.path.join(folder, "h_%03d.png"), "--movie", os.path.join(folder, "u.gif")], ranks=1)
        e.assert_clean_failure(self, proc, r"--movie .*u\.gif: name it NAME\.mp4")
        self.assertFalse(any(n.startswith("h_") for n in os.listdir(folder)))

    def test_a_pyramid_per_step(self):
        folder = self.out("pyramids")
        os.mkdir(folder)
        e.check_ok(self, e.run(["pyramid", self.files["NETCDF4"], "--var", "u", "--time", "1:4:2", "--pyramid-dir",
                                os.path.join(folder, "u_%d.pyramid"), "--brick", "8", "--quiet"], ranks=2))
        self.assertEqual(sorted(os.listdir(folder)), ["u_1.pyramid", "u_3.pyramid"])
        for t in (1, 3):
            with open(os.path.join(folder, "u_%d.pyramid" % t, "index.json")) as f:
                index = json.load(f)
            self.assertEqual(index["source"]["hints"], ["var=u", "time=%d" % t])
            self.assertAlmostEqual(index["histogram"]["lo"], float(self.u[t].min()), places=5)
            self.assertAlmostEqual(index["histogram"]["hi"], float(self.u[t].max()), places=5)
        proc = e.run(["pyramid", self.files["NETCDF4"], "--var", "u", "--time", "all", "--pyramid-dir",
                      os.path.join(folder, "one.pyramid"), "--quiet"], ranks=2)
        e.assert_clean_failure(self, proc, r"%d in --pyramid-dir")

    def test_resume_does_only_the_steps_left(self):
        folder = self.out("resume")
        os.mkdir(folder)
        args = ["segment", self.files["NETCDF4"], "--var", "u", "--time", "all", "--lo", str(LO), "--hi", str(HI),
                "--out", os.path.join(folder, "m_%d.nhdr"), "--quiet"]
        e.check_ok(self, e.run(args, ranks=2))
        before = {n: os.path.getmtime(os.path.join(folder, n)) for n in os.listdir(folder)}
        for name in ("m_2.nhdr", "m_2.raw"):
            os.unlink(os.path.join(folder, name))
        report = os.path.join(folder, "report.json")
        e.check_ok(self, e.run(args + ["--resume", "--report", report], ranks=2))
        with open(report) as f:
            rows = json.load(f)
        self.assertEqual(rows["steps"], [2])
        self.assertEqual(rows["steps_resumed"], 3)
        for name, mtime in before.items():
            if not name.startswith("m_2"):
                self.assertEqual(os.path.getmtime(os.path.join(folder, name)), mtime, name)
        mask = e.read_volume(os.path.join(folder, "m_2.nhdr"))[1] != 0
        np.testing.assert_array_equal(mask, self.expected_mask(2))

    def test_bad_ranges_get_one_line_and_write_nothing(self):
        path = self.files["NETCDF4"]
        folder = self.out("bad")
        os.mkdir(folder)
        masks = os.path.join(folder, "m_%d.nhdr")
        cases = [
            (["segment", "--var", "u", "--time", "0:9", "--out", masks], r"past the file's 4 steps"),
            (["segment", "--var", "u", "--time", "5:", "--out", masks], r"first step 5 is past the last step 3"),
            (["segment", "--var", "u", "--time", "3:1", "--out", masks], r"names no step"),
            (["segment", "--var", "u", "--time", "0:4:0", "--out", masks], r"stride S must be 1 or more"),
            (["segment", "--var", "u", "--time", "x", "--out", masks], r"'x' is not a whole number"),
            (["segment", "--var", "still", "--time", "all", "--out", masks], r"3D, with no time steps"),
            (["segment", "--var", "u", "--time", "all", "--out", os.path.join(folder, "one.nhdr")], r"%d in --out"),
            (["label", "--var", "u", "--time", "1", "--out", os.path.join(folder, "l.nc"), "--track",
              os.path.join(folder, "t.csv")], r"--track links the objects of several steps"),
            (["info", "--var", "u", "--time", "all"], r"takes one step"),
        ]
        for args, pattern in cases:
            with self.subTest(args=args):
                extra = ["--lo", str(LO), "--hi", str(HI), "--quiet"] if args[0] in ("segment", "label") else []
                proc = e.run([args[0], path] + args[1:] + extra, ranks=2)
                e.assert_clean_failure(self, proc, pattern)
                self.assertEqual(os.listdir(folder), [])


if __name__ == "__main__":
    e.main()
