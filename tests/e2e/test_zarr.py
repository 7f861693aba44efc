# SPDX-License-Identifier: MIT
"""Zarr v2 with zarr-python (Debian's python3-zarr) on the other side.
Inputs it writes, read by volseg: segment and label against numpy and scipy,
on 1 and 3 ranks, with every compressor, both byte orders, both chunk-key
separators, chunks that do not divide the volume, missing chunks (all
fill_value), and bad stores: one line naming the problem or the chunk,
nothing written. Masks and labels volseg writes, read back by zarr-python."""
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

try:
    import numcodecs
    import zarr
except ImportError:  # pragma: no cover - install-deps.sh installs both
    zarr = None

SHAPE = (23, 29, 31)  # no chunk shape below divides it


def compressors():
    Blosc = numcodecs.Blosc
    return {
        "blosc-lz4-shuffle": Blosc("lz4", 5, Blosc.SHUFFLE),
        "blosc-lz4hc-noshuffle": Blosc("lz4hc", 3, Blosc.NOSHUFFLE),
        "blosc-zstd-bitshuffle": Blosc("zstd", 3, Blosc.BITSHUFFLE),
        "blosc-zlib": Blosc("zlib", 4, Blosc.SHUFFLE),
        "blosc-blosclz": Blosc("blosclz", 5, Blosc.SHUFFLE),
        "zlib": numcodecs.Zlib(3),
        "gzip": numcodecs.GZip(6),
        "zstd": numcodecs.Zstd(2),
        "none": None,
    }


@unittest.skipIf(zarr is None, "missing python3-zarr")
class ZarrInput(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        e.require_binary()
        cls.dir = tempfile.mkdtemp(prefix="volseg-e2e-zarr-")

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.dir, ignore_errors=True)

    def setUp(self):
        self.work = tempfile.mkdtemp(dir=self.dir)

    def path(self, name):
        return os.path.join(self.work, name)

    def store(self, name, array, chunks, compressor, dtype=None, separator=".", fill_value=0):
        z = zarr.open(self.path(name), mode="w", shape=array.shape, chunks=chunks, dtype=dtype or array.dtype,
                      compressor=compressor, dimension_separator=separator, fill_value=fill_value)
        z[:] = array
        return self.path(name)

    def segment(self, source, lo, hi, ranks, *extra):
        out = self.path("mask%d.nhdr" % ranks)
        proc = e.run(["segment", source, "--lo", repr(lo), "--hi", repr(hi), "--out", out, "--quiet", "--force",
                      *extra], ranks=ranks, timeout=120)
        e.check_ok(self, proc)
        return np.fromfile(self.path("mask%d.raw" % ranks), dtype=np.uint8).reshape(SHAPE)

    def test_every_compressor_dtype_and_separator(self):
        rng = np.random.default_rng(5)
        values = {
            "<f4": rng.random(SHAPE, dtype=np.float32),
            ">f8": rng.random(SHAPE),
            "<u2": rng.integers(1, 60000, SHAPE).astype(np.uint16),
            ">i2": rng.integers(-3000, 3000, SHAPE).astype(np.int16),
            "|u1": rng.integers(1, 255, SHAPE).astype(np.uint8),
            ">i4": rng.integers(-10 ** 6, 10 ** 6, SHAPE).astype(np.int32),
        }
        ranges = {"<f4": (0.2, 0.6), ">f8": (0.1, 0.3), "<u2": (1000, 30000), ">i2": (-100, 900),
                  "|u1": (40, 90), ">i4": (0, 10 ** 5)}
        cases = list(compressors().items())
        for i, (codec, compressor) in enumerate(cases):
            dtype = list(values)[i % len(values)]
            chunks = [(7, 8, 9), (10, 29, 13), (23, 5, 31)][i % 3]
            separator = "/" if i % 2 else "."
            with self.subTest(codec=codec, dtype=dtype, chunks=chunks, separator=separator):
                array = values[dtype]
                source = self.store("%s.zarr" % codec, array.astype(dtype), chunks, compressor, dtype=dtype,
                                    separator=separator)
                lo, hi = ranges[dtype]
                # fill_value 0: voxels equal to it are missing, never in the mask (as NetCDF's _FillValue)
                expected = ((array >= lo) & (array <= hi) & (array != 0)).astype(np.uint8)
                for ranks in (1, 3):
                    got = self.segment(source, lo, hi, ranks)
                    np.testing.assert_array_equal(got, expected, "%s on %d ranks" % (codec, ranks))

    def test_missing_chunks_are_fill_and_not_in_the_mask(self):
        z = zarr.open(self.path("sparse.zarr"), mode="w", shape=SHAPE, chunks=(8, 8, 8), dtype="<i2", fill_value=7,
                      compressor=numcodecs.Zstd(1), write_empty_chunks=False)
        block = np.arange(8 * 8 * 8, dtype=np.int16).reshape(8, 8, 8) % 13
        z[8:16, 0:8, 8:16] = block
        self.assertLess(len([n for n in os.listdir(self.path("sparse.zarr")) if not n.startswith(".")]), 2)
        expected = np.zeros(SHAPE, np.uint8)
        expected[8:16, 0:8, 8:16] = (block >= 5) & (block <= 9) & (block != 7)
        for ranks in (1, 3):
            np.testing.assert_array_equal(self.segment(self.path("sparse.zarr"), 5, 9, ranks), expected)
        # --in-hint fill=data: 7 is a value, in the block and in the missing chunks (all 7).
        expected_data = np.ones(SHAPE, np.uint8)
        expected_data[8:16, 0:8, 8:16] = (block >= 5) & (block <= 9)
        np.testing.assert_array_equal(self.segment(self.path("sparse.zarr"), 5, 9, 2, "--in-hint", "fill=data"),
                                      expected_data)
        bad = e.run(["segment", self.path("sparse.zarr"), "--lo", "0", "--hi", "1", "--out", self.path("b.nhdr"),
                     "--in-hint", "fill=maybe"], ranks=1)
        self.assertEqual(bad.returncode, 1)
        self.assertIn("hint fill=maybe is neither missing", bad.stderr)
        self.assertFalse(os.path.exists(self.path("b.nhdr")))
        info = e.run(["info", self.path("sparse.zarr")], ranks=1)
        e.check_ok(self, info)
        for text in ("zarr_chunks: 8,8,8", "zarr_compressor: zstd", "_FillValue:    7", "dims (z,y,x):  23 29 31"):
            self.assertIn(text, info.stdout)

    def test_label_a_zarr_mask(self):
        rng = np.random.default_rng(11)
        mask = (rng.random(SHAPE) < 0.3).astype(np.uint8)
        source = self.store("m.zarr", mask, (6, 10, 16), numcodecs.Blosc("lz4", 5, numcodecs.Blosc.BITSHUFFLE),
                            fill_value=None)
        expected, count = ndimage.label(mask, structure=ndimage.generate_binary_structure(3, 3))
        for ranks in (1, 3):
            out = self.path("l%d.nhdr" % ranks)
            proc = e.run(["label", source, "--mask-input", "--out", out, "--quiet", "--force", "--brick", "5,29,31"],
                         ranks=ranks, timeout=120)
            e.check_ok(self, proc)
            got = np.fromfile(self.path("l%d.raw" % ranks), dtype=np.uint32).reshape(SHAPE)
            np.testing.assert_array_equal(got, expected)

    def test_masks_and_labels_written_as_zarr(self):
        """Outputs read back by zarr-python: every writer compressor, chunks = the bricks on 1-4 ranks, chunks
        that divide the bricks, "/" keys, all-background chunks left out, --force, and misaligned chunks refused."""
        rng = np.random.default_rng(8)
        array = rng.random(SHAPE, dtype=np.float32)
        array[:12] = 0.9  # a slab with no foreground: its chunks are all fill and not written
        source = self.store("in.zarr", array, (8, 8, 8), numcodecs.Zstd(1))
        expected = ((array >= 0.2) & (array <= 0.5)).astype(np.uint8)
        spellings = {"blosc-lz4": ("blosc", "lz4"), "blosc-zstd": ("blosc", "zstd"), "blosc-lz4hc": ("blosc", "lz4hc"),
                     "blosc-zlib": ("blosc", "zlib"), "blosc-blosclz": ("blosc", "blosclz"), "zlib": ("zlib", None),
                     "gzip": ("gzip", None), "zstd": ("zstd", None), "none": (None, None)}
        for i, (name, (codec, cname)) in enumerate(spellings.items()):
            ranks = 1 + i % 4
            hints = ["--hint", "compressor=" + name]
            if i % 3 == 1:
                hints += ["--hint", "chunks=3,29,31"]
            if i % 2:
                hints += ["--hint", "dimension_separator=/"]
            with self.subTest(compressor=name, ranks=ranks, hints=hints):
                out = self.path("%s.zarr" % name)
                proc = e.run(["segment", source, "--lo", "0.2", "--hi", "0.5", "--out", out, "--brick", "6,29,31",
                              "--quiet", *hints], ranks=ranks, timeout=120)
                e.check_ok(self, proc)
                z = zarr.open(out, mode="r")
                np.testing.assert_array_equal(z[:], expected)
                self.assertEqual(z.dtype, np.uint8)
                self.assertEqual(z.fill_value, 0)
                self.assertEqual(z.chunks, (3, 29, 31) if i % 3 == 1 else (6, 29, 31))
                self.assertEqual(z.compressor.codec_id if z.compressor else None, codec)
                if cname:
                    self.assertEqual(z.compressor.cname, cname)
                    self.assertEqual(z.compressor.shuffle, numcodecs.Blosc.BITSHUFFLE)  # u8 default
                self.assertEqual(json.load(open(os.path.join(out, ".zarray")))["dimension_separator"],
                                 "/" if i % 2 else ".")
                self.assertFalse(os.path.exists(os.path.join(out, "0/0/0" if i % 2 else "0.0.0")),
                                 "an all-background chunk was written")
                self.assertEqual([n for n in os.listdir(self.work) if "volseg-tmp" in n], [])
        # Labels, u32, 26-connected, back through zarr-python; --force replaces, its absence refuses.
        out = self.path("labels.zarr")
        for force in (False, True):
            proc = e.run(["label", self.path("blosc-lz4.zarr"), "--mask-input", "--out", out, "--brick", "6,29,31",
                          "--quiet"] + (["--force"] if force else []), ranks=3, timeout=120)
            e.check_ok(self, proc)
        labels, count = ndimage.label(expected, structure=ndimage.generate_binary_structure(3, 3))
        z = zarr.open(out, mode="r")
        self.assertEqual(z.dtype, np.uint32)
        np.testing.assert_array_equal(z[:], labels)
        self.assertEqual(z.attrs["volseg"]["objects"], str(count))
        self.assert_refused_job(["label", self.path("blosc-lz4.zarr"), "--mask-input", "--out", out], r"exists")
        # A chunk shared by two ranks' bricks is refused before anything is written.
        self.assert_refused_job(["segment", source, "--lo", "0", "--hi", "1", "--out", self.path("x.zarr"), "--brick",
                                 "6,29,31", "--hint", "chunks=4,29,31"], r"chunks 4,29,31 do not divide the job's "
                                r"bricks 6,29,31", ranks=2)
        self.assert_refused_job(["segment", source, "--lo", "0", "--hi", "1", "--out", self.path("x.zarr"), "--hint",
                                 "compressor=lzma"], r"compressor=lzma is none of")

    def test_compressed_netcdf4_masks_in_parallel(self):
        """The other compressed mask: NetCDF-4 with deflate (and HDF5's shuffle, on by default), chunked as the
        bricks, written collectively on 1-3 ranks; read back by netCDF4-python (h5py's view: the filters)."""
        try:
            import netCDF4
        except ImportError:
            self.skipTest("missing python3-netcdf4")
        array = np.random.default_rng(6).random(SHAPE, dtype=np.float32)
        source = self.store("in.zarr", array, (8, 8, 8), numcodecs.Zstd(1))
        expected = ((array >= 0.2) & (array <= 0.5)).astype(np.uint8)
        for ranks, shuffle in ((1, "1"), (2, "0"), (3, "1")):
            with self.subTest(ranks=ranks, shuffle=shuffle):
                out = self.path("m%d.nc4" % ranks)
                e.check_ok(self, e.run(["segment", source, "--lo", "0.2", "--hi", "0.5", "--out", out, "--quiet",
                                        "--brick", "6,29,31", "--out-hint", "deflate=4", "--out-hint",
                                        "shuffle=" + shuffle, "--out-hint", "chunks=brick"], ranks=ranks))
                with netCDF4.Dataset(out) as nc:
                    var = [v for v in nc.variables.values() if v.ndim == 3][0]
                    filters = var.filters()
                    self.assertTrue(filters["zlib"])
                    self.assertEqual(filters["complevel"], 4)
                    self.assertEqual(filters["shuffle"], shuffle == "1")
                    self.assertEqual(var.chunking(), [6, 29, 31])
                    np.testing.assert_array_equal(np.asarray(var[:]), expected)

    def test_ome_zarr_label_images(self):
        """--out NAME.ome.zarr: an OME-Zarr 0.4 image group (multiscales, one dataset "0" placed by the NRRD's
        spacing and origin) that is a label image, checked field by field; read back by volseg and zarr-python."""
        rng = np.random.default_rng(4)
        array = rng.random(SHAPE, dtype=np.float32)
        raw = self.path("in.raw")
        array.astype("<f4").tofile(raw)
        with open(self.path("in.nhdr"), "w") as f:
            f.write("NRRD0004\ntype: float\ndimension: 3\nsizes: %d %d %d\nendian: little\nencoding: raw\n"
                    "space dimension: 3\nspace origin: (10,20,30)\n"
                    "space directions: (0.5,0,0) (0,0.75,0) (0,0,2)\ndata file: in.raw\n\n" % SHAPE[::-1])
        expected = ((array >= 0.3) & (array <= 0.6)).astype(np.uint8)
        out = self.path("mask.ome.zarr")
        e.check_ok(self, e.run(["segment", self.path("in.nhdr"), "--lo", "0.3", "--hi", "0.6", "--out", out,
                                "--quiet", "--brick", "8,29,31"], ranks=2))
        self.assertEqual(json.load(open(os.path.join(out, ".zgroup"))), {"zarr_format": 2})
        attrs = json.load(open(os.path.join(out, ".zattrs")))
        self.assertEqual(len(attrs["multiscales"]), 1)
        m = attrs["multiscales"][0]
        self.assertEqual(m["version"], "0.4")
        self.assertEqual(m["axes"], [{"name": a, "type": "space"} for a in "zyx"])
        # Levels down to one chunk (8,29,31): 23 -> 12 -> 6 (docs/viewers.md), each dataset k halved k times.
        self.assertEqual([d["path"] for d in m["datasets"]], ["0", "1", "2"])
        self.assertEqual(m["type"], "mode")
        self.assertEqual(m["datasets"][0]["coordinateTransformations"],
                         [{"type": "scale", "scale": [2.0, 0.75, 0.5]},
                          {"type": "translation", "translation": [30.0, 20.0, 10.0]}])
        self.assertEqual(attrs["image-label"]["version"], "0.4")
        self.assertEqual(attrs["image-label"]["colors"][0]["label-value"], 1)
        group = zarr.open_group(out, mode="r")
        np.testing.assert_array_equal(group["0"][:], expected)
        # volseg reads the image (its first dataset) back, in its own coordinates.
        info = e.run(["info", out], ranks=1)
        e.check_ok(self, info)
        self.assertIn("ome-zarr", info.stdout)
        self.assertIn("spacing (x,y,z): 0.5 0.75 2", info.stdout)
        labels = self.path("labels.ome.zarr")
        e.check_ok(self, e.run(["label", out, "--mask-input", "--out", labels, "--quiet", "--connectivity", "6",
                                "--brick", "8,29,31"], ranks=3))
        want, count = ndimage.label(expected)
        lattrs = json.load(open(os.path.join(labels, ".zattrs")))
        self.assertEqual(lattrs["image-label"]["version"], "0.4")
        self.assertEqual([p["label-value"] for p in lattrs["image-label"]["properties"]], list(range(1, count + 1)))
        self.assertEqual(lattrs["multiscales"][0]["datasets"][0]["coordinateTransformations"][0]["scale"],
                         [2.0, 0.75, 0.5])
        got = zarr.open_group(labels, mode="r")["0"]
        self.assertEqual(got.dtype, np.uint32)
        np.testing.assert_array_equal(got[:], want)

    def test_pyramid_levels_in_an_ome_zarr_image(self):
        """volseg pyramid on an OME-Zarr image adds its levels as datasets 1, 2, ... (each a Zarr array), listed in
        multiscales with their scale and translation, as well as writing its own .pyramid folder."""
        image = self.path("field.ome.zarr")
        e.check_ok(self, e.run(["generate", image, "--field", "smooth", "--dims", "32,48,64", "--quiet"], ranks=1))
        mask = self.path("mask.ome.zarr")
        e.check_ok(self, e.run(["segment", image, "--lo", "0.3", "--hi", "0.7", "--out", mask, "--brick", "16",
                                "--quiet"], ranks=2))
        # Written with their levels (mean, mode: a 0/1 mask's max), which
        # pyramid keeps; --force replaces them with its own (mean, max).
        for store, reduce, force in ((image, "mean", []), (mask, "max", []), (mask, "max", ["--force"])):
            with self.subTest(store=os.path.basename(store), force=force):
                e.check_ok(self, e.run(["pyramid", store, "--brick", "16", "--quiet", *force], ranks=2))
                group = zarr.open_group(store, mode="r")
                m = group.attrs["multiscales"][0]
                self.assertEqual(m["type"], reduce if force or reduce == "mean" else "mode")
                paths = [d["path"] for d in m["datasets"]]
                self.assertGreaterEqual(len(paths), 3)
                self.assertEqual(paths, [str(k) for k in range(len(paths))])
                base = group["0"][:].astype(np.float64)
                for k in range(1, len(paths)):
                    f = 2 ** k
                    t = m["datasets"][k]["coordinateTransformations"]
                    self.assertEqual(t[0], {"type": "scale", "scale": [float(f)] * 3})
                    self.assertEqual(t[1], {"type": "translation", "translation": [0.5 * (f - 1)] * 3})
                    z, y, x = (d // f for d in base.shape)
                    blocks = base.reshape(z, f, y, f, x, f)
                    want = blocks.max(axis=(1, 3, 5)) if reduce == "max" else blocks.mean(axis=(1, 3, 5))
                    got = group[str(k)][:]
                    self.assertEqual(got.shape, want.shape)
                    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6, err_msg="level %d" % k)

    def assert_refused_job(self, args, pattern, ranks=1):
        before = e.digest(self.work)
        proc = e.run(args + ["--quiet"], ranks=ranks)
        e.assert_clean_failure(self, proc, pattern)
        self.assertEqual(e.digest(self.work), before, "files changed by a failed run")
        self.assertEqual([n for n in os.listdir(self.work) if "volseg-tmp" in n], [])

    def assert_refused(self, source, pattern, ranks=1):
        before = e.digest(self.work)
        out = self.path("never.nhdr")
        proc = e.run(["segment", source, "--lo", "0", "--hi", "1", "--out", out, "--quiet"], ranks=ranks)
        e.assert_clean_failure(self, proc, pattern)
        self.assertEqual(e.digest(self.work), before, "files changed by a failed run")

    def test_bad_stores(self):
        array = np.random.default_rng(2).random(SHAPE, dtype=np.float32)
        good = self.store("good.zarr", array, (8, 8, 8), numcodecs.Zlib(1))
        meta = json.load(open(os.path.join(good, ".zarray")))

        def variant(name, change=None, text=None):
            path = self.path(name)
            shutil.copytree(good, path)
            with open(os.path.join(path, ".zarray"), "w") as f:
                if text is not None:
                    f.write(text)
                else:
                    m = json.loads(json.dumps(meta))
                    change(m)
                    json.dump(m, f)
            return path

        cases = [
            (variant("notjson.zarr", text="{\"zarr_format\": 2, \"shape\": ["), r"\.zarray: not JSON"),
            (variant("filters.zarr", lambda m: m.update(filters=[{"id": "delta", "dtype": "<f4"}])),
             r"filters \(\"delta\"\) are not read"),
            (variant("lzma.zarr", lambda m: m.update(compressor={"id": "lzma"})), r"compressor \"lzma\" is not one"),
            (variant("v3.zarr", lambda m: m.update(zarr_format=3)), r"zarr_format 3"),
            (variant("fortran.zarr", lambda m: m.update(order="F")), r"order \"F\""),
            (variant("2d.zarr", lambda m: m.update(shape=[23, 29])), r"\"shape\" must list 3 dimensions"),
            (variant("dtype.zarr", lambda m: m.update(dtype="<c8")), r"dtype \"<c8\" is not one volseg reads"),
        ]
        truncated = self.path("truncated.zarr")
        shutil.copytree(good, truncated)
        with open(os.path.join(truncated, "1.2.3"), "r+b") as f:
            f.truncate(os.path.getsize(os.path.join(truncated, "1.2.3")) // 2)
        cases.append((truncated, r"chunk 1\.2\.3: zlib failed to decompress"))
        garbage = self.path("garbage.zarr")
        shutil.copytree(good, garbage)
        with open(os.path.join(garbage, "2.0.1"), "wb") as f:
            f.write(b"not a zlib stream at all")
        cases.append((garbage, r"chunk 2\.0\.1: zlib failed"))
        wrong = self.path("wrong.zarr")
        shutil.copytree(good, wrong)
        import zlib
        with open(os.path.join(wrong, "0.0.0"), "wb") as f:
            f.write(zlib.compress(b"\0" * 100))
        cases.append((wrong, r"chunk 0\.0\.0: decodes to 100 bytes, not the chunk's 2048"))
        group = self.path("group.zarr")
        zarr.open_group(group, mode="w").create_dataset("a", shape=SHAPE, dtype="<f4")
        cases.append((group, r"a Zarr group, not an array"))
        for source, pattern in cases:
            for ranks in (1, 2):
                with self.subTest(source=os.path.basename(source), ranks=ranks):
                    self.assert_refused(source, pattern, ranks)

    # Headers that claim what volseg must not take on trust: each refused,
    # by info and by segment, in one line naming the file and the field,
    # before anything is allocated for the claim.
    def lying_array(self, name, chunks, compressor, chunk_file=None, shape=(8, 8, 8), dtype="|u1"):
        path = self.path(name)
        os.makedirs(path)
        meta = {"zarr_format": 2, "shape": list(shape), "chunks": list(chunks), "dtype": dtype, "order": "C",
                "compressor": compressor, "fill_value": 0, "filters": None}
        with open(os.path.join(path, ".zarray"), "w") as f:
            json.dump(meta, f)
        if chunk_file is not None:
            with open(os.path.join(path, "0.0.0"), "wb") as f:
                f.write(chunk_file)
        return path

    def check_lying(self, source, pattern):
        out = os.path.join(os.path.dirname(source), "never.nhdr")
        e.check_lying_header(self, ["info", source], pattern)
        e.check_lying_header(self, ["segment", source, "--lo", "0", "--hi", "1", "--out", out], pattern)

    def test_chunk_larger_than_the_memory_budget(self):
        source = self.lying_array("huge-chunk.zarr", (1 << 30, 1 << 30, 1), None)
        self.check_lying(source, r"huge-chunk\.zarr/\.zarray: chunk 1073741824 x 1073741824 x 1 of u1 is "
                                 r"\d+ bytes .*more than the memory budget for one piece .*--memory")

    def test_blosc_header_declaring_another_size(self):
        chunk = bytearray(numcodecs.Blosc("lz4", 5, numcodecs.Blosc.SHUFFLE).encode(np.ones(512, np.uint8)))
        chunk[4:8] = (1 << 31).to_bytes(4, "little")  # nbytes: 2 GiB decoded, says the header
        blosc = {"id": "blosc", "cname": "lz4", "clevel": 5, "shuffle": 1, "blocksize": 0}
        source = self.lying_array("blosc-nbytes.zarr", (8, 8, 8), blosc, bytes(chunk))
        self.check_lying(source, r"blosc-nbytes\.zarr: chunk 0\.0\.0: blosc header declares nbytes 2147483648, "
                                 r"not the chunk's 512 bytes")

    def test_zstd_frame_declaring_another_size(self):
        chunk = numcodecs.Zstd(1).encode(np.zeros(64 << 20, np.uint8))  # a frame of 64 MiB, a few KiB stored
        source = self.lying_array("zstd-size.zarr", (8, 8, 8), {"id": "zstd", "level": 1}, chunk)
        self.check_lying(source, r"zstd-size\.zarr: chunk 0\.0\.0: zstd frame declares a content size of "
                                 r"67108864 bytes, not the chunk's 512")

    def test_zlib_stream_decoding_past_the_chunk(self):
        import zlib
        packer = zlib.compressobj(9)
        zeros = bytes(1 << 20)
        chunk = b"".join(packer.compress(zeros) for _ in range(16)) + packer.flush()  # 16 MiB decoded
        source = self.lying_array("zlib-long.zarr", (8, 8, 8), {"id": "zlib", "level": 1}, chunk)
        self.check_lying(source, r"zlib-long\.zarr: chunk 0\.0\.0: zlib stream decodes to more than the "
                                 r"chunk's 512 bytes")

    def test_chunk_file_larger_than_any_chunk(self):
        source = self.lying_array("sparse-file.zarr", (8, 8, 8), {"id": "zlib", "level": 1})
        with open(os.path.join(source, "0.0.0"), "wb") as f:
            f.truncate(64 << 30)  # a sparse file: 64 GiB that no chunk of 512 bytes compresses to
        self.check_lying(source, r"sparse-file\.zarr/0\.0\.0: 68719476736 bytes, more than a chunk can be "
                                 r"stored in")

    def test_memory_option_allows_a_larger_chunk(self):
        shape = (16, 1024, 1024)  # one chunk of 16 MiB, not stored: all fill
        source = self.lying_array("one-chunk.zarr", shape, None, shape=shape)
        refused = e.run(["info", source, "--memory", "8M"], ranks=1)
        e.assert_clean_failure(self, refused, r"one-chunk\.zarr/\.zarray: chunk 16 x 1024 x 1024 of u1 is 16777216 "
                                              r"bytes \(16 MiB\), more than the memory budget .*--memory")
        e.check_ok(self, e.run(["info", source], ranks=1))
        out = self.path("one-chunk.nhdr")
        e.check_ok(self, e.run(["segment", source, "--lo", "0", "--hi", "0", "--out", out, "--quiet",
                                "--memory", "64M"], ranks=1))
        self.assertEqual(os.path.getsize(self.path("one-chunk.raw")), 16 << 20)


if __name__ == "__main__":
    e.main(verbosity=2)
