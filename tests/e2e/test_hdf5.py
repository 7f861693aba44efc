# SPDX-License-Identifier: MIT
"""HDF5 files that netCDF did not write, with h5py (Debian's python3-h5py)
on the other side: datasets in groups named by their path (`--var
/sim/density`), contiguous and chunked with deflate, shuffle and fletcher32,
every volseg type, a 4D dataset with --time, spacing from element_size_um,
and HDF5's fill semantics (a value equal to netCDF's default fill is data);
read by the netcdf4 backend (parallel netCDF-C over parallel HDF5) on 1 and
3 ranks and compared with numpy. Several datasets without --var, and a 2D
one, get one line. Masks written as plain HDF5 (--format hdf5) are read back
by h5py."""
import json
import os
import struct
import sys
import tempfile
import unittest

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import e2e_util as e  # noqa: E402

try:
    import h5py
except ImportError:  # pragma: no cover - install-deps.sh installs it
    h5py = None

SHAPE = (23, 29, 31)


@unittest.skipIf(h5py is None, "missing python3-h5py")
class Hdf5(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        e.require_binary()
        cls.tmp = tempfile.TemporaryDirectory(prefix="volseg-e2e-hdf5-")

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def path(self, name):
        return os.path.join(self.tmp.name, name)

    def segment(self, source, lo, hi, ranks, *extra):
        out = self.path("mask%d.nhdr" % ranks)
        proc = e.run(["segment", source, "--lo", repr(lo), "--hi", repr(hi), "--out", out, "--quiet", "--force",
                      *extra], ranks=ranks, timeout=120)
        e.check_ok(self, proc)
        return np.fromfile(self.path("mask%d.raw" % ranks), dtype=np.uint8).reshape(SHAPE)

    def test_datasets_in_groups_layouts_and_types(self):
        rng = np.random.default_rng(12)
        layouts = {"contiguous": {}, "chunked-gzip-shuffle": {"chunks": (8, 8, 8), "compression": "gzip", "shuffle": True},
                   "chunked-fletcher32": {"chunks": (5, 29, 31), "fletcher32": True}}
        cases = [("<f4", 0.2, 0.6), (">f8", 0.2, 0.6), ("<i2", -100, 300), ("<u2", 10, 900), ("|u1", 20, 90),
                 ("<i4", -500, 500), ("<u4", 10, 60000), ("<i8", -3000, 3000)]
        with h5py.File(self.path("run.h5"), "w") as f:
            for k, (dtype, lo, hi) in enumerate(cases):
                dt = np.dtype(dtype)
                values = rng.random(SHAPE).astype(dt) if dt.kind == "f" else \
                    rng.integers(max(np.iinfo(dt).min, -5000), min(np.iinfo(dt).max, 60000), SHAPE).astype(dt)
                name = list(layouts)[k % len(layouts)]
                f.create_dataset("sim/step%d/%s" % (k, name), data=values, **layouts[name])
        with h5py.File(self.path("run.h5"), "r") as f:
            for k, (dtype, lo, hi) in enumerate(cases):
                name = "sim/step%d/%s" % (k, list(layouts)[k % len(layouts)])
                values = f[name][...]
                expected = ((values >= lo) & (values <= hi)).astype(np.uint8)
                for ranks in (1, 3):
                    with self.subTest(dataset=name, ranks=ranks):
                        got = self.segment(self.path("run.h5"), lo, hi, ranks, "--var", "/" + name)
                        np.testing.assert_array_equal(got, expected)
        info = e.run(["info", self.path("run.h5")], ranks=1)
        e.check_ok(self, info)
        self.assertIn("sim/step0/contiguous(", info.stdout)
        self.assertIn("sim/step7/chunked-gzip-shuffle(", info.stdout)
        # Several datasets and no --var: one line naming them.
        proc = e.run(["segment", self.path("run.h5"), "--lo", "0", "--hi", "1", "--out", self.path("x.nhdr")], ranks=2)
        self.assertEqual(proc.returncode, 1)
        self.assertRegex(proc.stderr, r"sim/step0/contiguous")
        self.assertFalse(os.path.exists(self.path("x.nhdr")))

    def test_contiguous_datasets_read_at_their_offset(self):
        """Contiguous datasets are read by pread at their file offset (big-endian too, a 4D step, in a group),
        equal to numpy and to what netCDF-C reads (pread=0)."""
        rng = np.random.default_rng(8)
        values = rng.integers(-1000, 1000, (3,) + SHAPE).astype(">i4")
        with h5py.File(self.path("contiguous.h5"), "w") as f:
            f.create_dataset("g/series", data=values)
            f.create_dataset("g/one", data=values[2].astype("<f8"))
        for var, time, expected in (("/g/one", [], values[2]), ("/g/series", ["--time", "1"], values[1])):
            want = ((expected >= -100) & (expected <= 400)).astype(np.uint8)
            report = self.path("report.json")
            for ranks in (1, 3):
                got = self.segment(self.path("contiguous.h5"), -100, 400, ranks, "--var", var, *time,
                                   "--report", report)
                np.testing.assert_array_equal(got, want, "%s on %d ranks" % (var, ranks))
                with open(report) as f:
                    self.assertIn("by pread", json.load(f)["implementation"])
            got = self.segment(self.path("contiguous.h5"), -100, 400, 2, "--var", var, *time, "--in-hint", "pread=0")
            np.testing.assert_array_equal(got, want, "%s through netCDF-C" % var)

    def test_plain_hdf5_masks_h5py_reads(self):
        """--format hdf5 / NAME.hdf5: one dataset, the thresholds and spacing as attributes, written by parallel
        HDF5 on 1 and 3 ranks, collectively and independently, contiguous and chunked with deflate."""
        rng = np.random.default_rng(4)
        values = rng.random(SHAPE).astype("<f4")
        with h5py.File(self.path("in.h5"), "w") as f:
            f.create_dataset("field", data=values).attrs["element_size_um"] = [2.0, 0.5, 0.25]
        expected = ((values >= 0.3) & (values <= 0.7)).astype(np.uint8)
        cases = [(1, "mask_a.hdf5", []), (3, "mask_b.hdf5", ["--out-hint", "access=independent"]),
                 (3, "mask_c.h5", ["--format", "hdf5", "--out-hint", "chunks=brick", "--out-hint", "deflate=4",
                                   "--out-hint", "dataset=/seg/mask"])]
        for ranks, name, extra in cases:
            out = self.path(name)
            proc = e.run(["segment", self.path("in.h5"), "--lo", "0.3", "--hi", "0.7", "--out", out, "--quiet",
                          "--brick", "5,10,31", *extra], ranks=ranks)
            e.check_ok(self, proc)
            with h5py.File(out, "r") as f:
                grouped = "dataset=/seg/mask" in extra
                dataset = f["seg/mask"] if grouped else f["mask"]
                self.assertNotIn("_NCProperties", f.attrs)
                np.testing.assert_array_equal(dataset[...], expected, name)
                self.assertEqual(dataset.attrs["threshold_lo"], "0.29999999999999999")
                self.assertIn("segment", dataset.attrs["history"])
                np.testing.assert_allclose(dataset.attrs["spacing"], [2.0, 0.5, 0.25])
                if "deflate=4" in extra:
                    self.assertEqual(dataset.compression, "gzip")
                    self.assertEqual(dataset.chunks, (5, 10, 31))
            # and volseg reads it back, spacing and all
            again = self.segment(out, 1, 1, 2, *(["--var", "/seg/mask"] if grouped else []))
            np.testing.assert_array_equal(again, expected)
        proc = e.run(["segment", self.path("in.h5"), "--lo", "0.3", "--hi", "0.7", "--out", self.path("mask_a.hdf5"),
                      "--quiet"], ranks=2)
        e.assert_clean_failure(self, proc, "exists")
        proc = e.run(["segment", self.path("in.h5"), "--lo", "0.3", "--hi", "0.7", "--out", self.path("bad.hdf5"),
                      "--quiet", "--out-hint", "deflate=3"], ranks=2)
        e.assert_clean_failure(self, proc, "deflate needs chunked storage")
        self.assertFalse(os.path.exists(self.path("bad.hdf5")))

    def test_fill_spacing_time_and_2d(self):
        values = np.zeros((3,) + SHAPE, np.float32)
        values[1] = np.random.default_rng(13).random(SHAPE)
        values[1, :4] = 9.969209968386869e36  # netCDF's default float fill: data in an HDF5 file
        with h5py.File(self.path("t.h5"), "w") as f:
            d = f.create_dataset("field", data=values, chunks=(1, 8, 29, 31), compression="gzip")
            d.attrs["element_size_um"] = [2.0, 0.5, 0.25]  # z, y, x
            f.create_dataset("image", data=np.zeros((40, 50), np.uint8))
        expected = ((values[1] >= 0.5) & (values[1] <= 1e37)).astype(np.uint8)
        for ranks in (1, 3):
            np.testing.assert_array_equal(self.segment(self.path("t.h5"), 0.5, 1e37, ranks, "--var", "field",
                                                       "--time", "1"), expected)
        info = e.run(["info", self.path("t.h5"), "--var", "field", "--time", "1"], ranks=1)
        e.check_ok(self, info)
        self.assertIn("spacing (x,y,z): 0.25 0.5 2", info.stdout)
        self.assertNotIn("_FillValue", info.stdout)
        proc = e.run(["segment", self.path("t.h5"), "--var", "image", "--lo", "0", "--hi", "1", "--out",
                      self.path("y.nhdr")], ranks=1)
        self.assertEqual(proc.returncode, 1)
        lines = [l for l in proc.stderr.splitlines() if l.startswith("volseg:")]
        self.assertEqual(len(lines), 1, proc.stderr)
        self.assertIn("image", lines[0])


@unittest.skipIf(h5py is None, "missing python3-h5py")
class Hdf5LyingChunks(unittest.TestCase):
    """Chunk shapes that HDF5 would hold whole in memory: refused by info and
    segment before the first read, in one line naming the file, the dataset
    and the chunk; a legitimate extendible dataset still reads."""

    def setUp(self):
        e.require_binary()
        self.tmp = tempfile.TemporaryDirectory(prefix="volseg-e2e-hdf5-chunks-")

    def tearDown(self):
        self.tmp.cleanup()

    def path(self, name):
        return os.path.join(self.tmp.name, name)

    def check_lying(self, source, pattern):
        out = self.path("never.nhdr")
        e.check_lying_header(self, ["info", source], pattern)
        e.check_lying_header(self, ["segment", source, "--lo", "0", "--hi", "1", "--out", out], pattern)

    def test_chunk_larger_than_a_fixed_dataset(self):
        # h5py writes a chunk of 64 inside maxshape 64; the dataspace's
        # maximum dimensions are then rewritten to the dataset's 4, as HDF5
        # itself would never create it.
        source = self.path("fixed-chunk.h5")
        with h5py.File(source, "w") as f:
            f.create_dataset("v", shape=(4, 4, 4), maxshape=(64, 64, 64), chunks=(64, 64, 64), dtype="f4")
            f["v"][...] = 1
        with open(source, "rb") as f:
            data = bytearray(f.read())
        dims = struct.pack("<6Q", 4, 4, 4, 64, 64, 64)  # the dataspace message: dimensions, then maxima
        at = data.find(dims)
        self.assertTrue(at >= 0 and data.find(dims, at + 1) < 0, "one dataspace message")
        data[at:at + 48] = struct.pack("<6Q", 4, 4, 4, 4, 4, 4)
        with open(source, "wb") as f:
            f.write(data)
        self.check_lying(source, r"fixed-chunk\.h5: variable v: chunk 64 x 64 x 64 is larger than the dataset "
                                 r"\(4 x 4 x 4 at most\) along a fixed dimension")

    def test_chunk_over_the_memory_budget(self):
        source = self.path("big-chunk.h5")
        with h5py.File(source, "w") as f:  # 2 GiB a chunk (HDF5 allows up to 4), no chunk written
            f.create_dataset("v", shape=(4, 4, 4), maxshape=(None, None, None), chunks=(512, 1024, 1024), dtype="f4")
        self.check_lying(source, r"big-chunk\.h5: variable v: chunk 512 x 1024 x 1024 of f32 is 2147483648 bytes "
                                 r"\(2048 MiB\), more than the memory budget for one piece .*--memory")

    def test_extendible_dataset_with_chunks_past_its_size_reads(self):
        source = self.path("grows.h5")
        values = np.arange(64, dtype="f4").reshape(4, 4, 4)
        with h5py.File(source, "w") as f:
            f.create_dataset("v", data=values, maxshape=(64, 64, None), chunks=(64, 64, 64))
        out = self.path("grows.nhdr")
        for ranks in (1, 3):
            e.check_ok(self, e.run(["segment", source, "--lo", "10", "--hi", "40", "--out", out, "--quiet",
                                    "--force"], ranks=ranks))
            got = np.fromfile(self.path("grows.raw"), dtype=np.uint8).reshape(4, 4, 4)
            np.testing.assert_array_equal(got, ((values >= 10) & (values <= 40)).astype(np.uint8))


if __name__ == "__main__":
    e.main(verbosity=2)
