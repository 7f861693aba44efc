# SPDX-License-Identifier: MIT
"""TIFF with tifffile (Debian's python3-tifffile) and libtiff's own tiffcp on
the other side. Stacks tifffile writes (uncompressed, deflate with a
predictor, tiles, BigTIFF big-endian, many strips, ImageJ spacing and
hyperstacks, six sample types), files tiffcp recompresses (LZW, PackBits)
and folders of one-page slices are read on 1 and 3 ranks, equal to numpy
through `volseg convert`, and thresholded as numpy does; TIFF masks, labels
and conversions are read back by tifffile; bad files get one line and leave
nothing behind."""
import os
import shutil
import struct
import subprocess
import sys
import tempfile
import unittest

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import e2e_util as e  # noqa: E402

try:
    import tifffile
except ImportError:  # pragma: no cover - install-deps.sh installs it
    tifffile = None

SHAPE = (13, 37, 53)  # z, y, x


@unittest.skipIf(tifffile is None, "missing python3-tifffile")
class Tiff(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        e.require_binary()
        cls.tmp = tempfile.TemporaryDirectory(prefix="volseg-e2e-tiff-")
        rng = np.random.default_rng(11)
        cls.u16 = (rng.random(SHAPE) * 60000).astype(np.uint16)

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def path(self, name):
        return os.path.join(self.tmp.name, name)

    def volume(self, source, ranks, *extra):
        """What volseg reads from source: converted to raw NRRD, as numpy."""
        out = self.path("copy%d.nhdr" % ranks)
        proc = e.run(["convert", source, out, "--quiet", "--force", "--brick", "4,10,20", *extra], ranks=ranks)
        e.check_ok(self, proc)
        return e.read_volume(out)[1]

    def assert_reads(self, source, expected, *extra):
        for ranks in (1, 3):
            got = self.volume(source, ranks, *extra)
            self.assertEqual(got.dtype.newbyteorder("="), expected.dtype.newbyteorder("="), source)
            np.testing.assert_array_equal(got, expected, "%s on %d ranks" % (source, ranks))

    def test_layouts_and_compressions_tifffile_writes(self):
        a = self.u16
        cases = {
            "plain.tif": {},
            "deflate.tif": {"compression": "zlib", "predictor": True},
            "tiles.tif": {"tile": (16, 32), "compression": "zlib"},
            "bigtiff_be.tif": {"bigtiff": True, "byteorder": ">"},
            "strips.tif": {"rowsperstrip": 5},
        }
        for name, options in cases.items():
            tifffile.imwrite(self.path(name), a, **options)
            self.assert_reads(self.path(name), a)

    def test_compressions_libtiff_writes(self):
        if not shutil.which("tiffcp"):
            self.skipTest("missing tiffcp (libtiff-tools)")
        tifffile.imwrite(self.path("src.tif"), self.u16)
        for name, args in {"lzw.tif": ["-c", "lzw:2"], "packbits_be.tif": ["-B", "-c", "packbits"],
                           "lzw_tiles.tif": ["-c", "lzw", "-t", "-w", "16", "-l", "16"]}.items():
            subprocess.run(["tiffcp", *args, self.path("src.tif"), self.path(name)], check=True)
            self.assert_reads(self.path(name), self.u16)

    def test_sample_types(self):
        rng = np.random.default_rng(5)
        for dtype in (np.uint8, np.int8, np.int16, np.uint32, np.int32, np.float32, np.float64, np.uint64):
            if np.dtype(dtype).kind == "f":
                a = rng.standard_normal(SHAPE).astype(dtype)
            else:
                info = np.iinfo(dtype)
                a = rng.integers(max(info.min, -10**6), min(info.max, 10**6), SHAPE, dtype=dtype, endpoint=True)
            name = self.path("t_%s.tif" % np.dtype(dtype).name)
            tifffile.imwrite(name, a, compression="zlib")
            got = self.volume(name, 2)
            np.testing.assert_array_equal(got, a, name)

    def test_folder_of_slices_in_natural_order_and_glob(self):
        folder = self.path("slices")
        os.makedirs(folder, exist_ok=True)
        for z in range(SHAPE[0]):  # z_9 before z_10: natural, not byte order
            tifffile.imwrite(os.path.join(folder, "z_%d.tif" % z), self.u16[z])
        tifffile.imwrite(os.path.join(folder, "preview.tiff"), self.u16[0])
        with open(os.path.join(folder, "notes.txt"), "w") as f:
            f.write("not a slice\n")
        self.assert_reads(folder, self.u16, "--glob", "z_*.tif")
        # Without --glob every .tif/.tiff is a slice: the preview too.
        proc = e.run(["info", folder])
        e.check_ok(self, proc)
        self.assertIn("dims (z,y,x):  %d %d %d" % (SHAPE[0] + 1, SHAPE[1], SHAPE[2]), proc.stdout)

    def test_imagej_spacing_hyperstack_and_contiguous_planes(self):
        name = self.path("ij.tif")
        tifffile.imwrite(name, self.u16, imagej=True, resolution=(1 / 0.5, 1 / 0.25),
                         metadata={"spacing": 2.0, "unit": "um", "axes": "ZYX"})
        proc = e.run(["info", name])
        e.check_ok(self, proc)
        self.assertIn("spacing (x,y,z): 0.5 0.25 2", proc.stdout)
        self.assertIn("units_xyz: um", proc.stdout)
        # Frames of a hyperstack (T, Z, Y, X): --time names one.
        frames = np.stack([self.u16, self.u16[::-1]])
        tifffile.imwrite(self.path("tzyx.tif"), frames, imagej=True, metadata={"axes": "TZYX"})
        self.assert_reads(self.path("tzyx.tif"), self.u16[::-1], "--time", "1")
        # info describes the first frame and says how many there are; a job
        # without --time is refused, and --time all runs one per frame.
        proc = e.run(["info", self.path("tzyx.tif")], ranks=1)
        e.check_ok(self, proc)
        self.assertRegex(proc.stdout, r"time: +step 0 of 2 \(--time 0\.\.1\)")
        proc = e.run(["segment", self.path("tzyx.tif"), "--lo", "0", "--hi", "1", "--out", self.path("t.nhdr")], ranks=1)
        e.assert_clean_failure(self, proc, "hyperstack of 2 frames .*--time")
        lo, hi = np.percentile(self.u16, [30, 60])
        e.check_ok(self, e.run(["segment", self.path("tzyx.tif"), "--time", "all", "--lo", str(lo), "--hi", str(hi),
                                "--out", self.path("frame_%d.nhdr"), "--quiet"], ranks=2))
        for t, frame in enumerate(frames):
            mask = e.read_volume(self.path("frame_%d.nhdr" % t))[1] != 0
            np.testing.assert_array_equal(mask, (frame >= lo) & (frame <= hi))
        # ImageJ's own stacks past 4 GiB: one directory, the planes one after another.
        self.assertEqual(write_imagej_contiguous(self.path("contiguous.tif"), self.u16), 1)
        self.assert_reads(self.path("contiguous.tif"), self.u16)

    def test_segment_into_a_tiff_mask_tifffile_reads(self):
        src = self.path("seg_in.tif")
        tifffile.imwrite(src, self.u16, imagej=True, resolution=(1 / 0.5, 1 / 0.25),
                         metadata={"spacing": 2.0, "axes": "ZYX"})
        lo, hi = 20000, 40000
        expected = ((self.u16 >= lo) & (self.u16 <= hi)).astype(np.uint8)
        for ranks in (1, 3):
            out = self.path("mask%d.tif" % ranks)
            proc = e.run(["segment", src, "--lo", str(lo), "--hi", str(hi), "--out", out, "--quiet", "--brick",
                          "3,20,53"], ranks=ranks)
            e.check_ok(self, proc)
            with tifffile.TiffFile(out) as t:
                self.assertEqual(len(t.pages), SHAPE[0])
                self.assertTrue(t.is_imagej)
                self.assertAlmostEqual(float(t.imagej_metadata["spacing"]), 2.0)
                np.testing.assert_array_equal(t.asarray(), expected)
        # labels as u32 pages; a converted float volume as float pages
        out = self.path("labels.tif")
        e.check_ok(self, e.run(["label", self.path("mask3.tif"), "--mask-input", "--connectivity", "6", "--out", out,
                                "--quiet"], ranks=2))
        labels = tifffile.imread(out)
        self.assertEqual(labels.dtype, np.uint32)
        self.assertEqual(labels.shape, SHAPE)
        np.testing.assert_array_equal(labels > 0, expected.astype(bool))
        f = np.random.default_rng(2).standard_normal(SHAPE).astype(">f8")
        tifffile.imwrite(self.path("f64.tif"), f, byteorder=">")
        e.check_ok(self, e.run(["convert", self.path("f64.tif"), self.path("f64_copy.tif"), "--quiet"], ranks=3))
        np.testing.assert_array_equal(tifffile.imread(self.path("f64_copy.tif")), f)

    def test_bad_files_one_line_no_output(self):
        a = self.u16
        tifffile.imwrite(self.path("whole.tif"), a)
        with open(self.path("whole.tif"), "rb") as f:
            data = f.read()
        with open(self.path("truncated.tif"), "wb") as f:
            f.write(data[: len(data) * 2 // 3])
        with tifffile.TiffWriter(self.path("sizes.tif")) as w:
            w.write(a[0])
            w.write(a[1, :, :40])
        tifffile.imwrite(self.path("rgb.tif"), np.zeros((4, 10, 10, 3), np.uint8), photometric="rgb")
        with open(self.path("garbage.tif"), "wb") as f:
            f.write(b"II*\x00" + b"\xff" * 64)
        cases = {"truncated.tif": "truncated", "sizes.tif": "pages of a volume are alike",
                 "rgb.tif": "3 samples a pixel", "garbage.tif": "garbage.tif"}
        for name, pattern in cases.items():
            out = self.path("bad_" + name)
            proc = e.run(["segment", self.path(name), "--lo", "1", "--hi", "2", "--out", out, "--quiet"], ranks=1)
            e.assert_clean_failure(self, proc, pattern)
            self.assertFalse(os.path.exists(out), name)
        proc = e.run(["info", self.path("whole.tif"), "--glob", "*.tif"], ranks=1)
        e.assert_clean_failure(self, proc, "not a folder of slices")
        tifffile.imwrite(self.path("czyx.tif"), np.zeros((3, 2, 8, 8), np.uint16), imagej=True,
                         metadata={"axes": "ZCYX"})
        e.assert_clean_failure(self, e.run(["info", self.path("czyx.tif")], ranks=1), "2 channels")
        folder = self.path("mixed")
        os.makedirs(folder, exist_ok=True)
        tifffile.imwrite(os.path.join(folder, "a.tif"), a[0])
        tifffile.imwrite(os.path.join(folder, "b.tif"), a[:2])
        e.assert_clean_failure(self, e.run(["info", folder], ranks=2), "several pages in a folder of slices")
        e.assert_clean_failure(self, e.run(["info", folder, "--glob", "*.png"], ranks=1), "without TIFF slices")


@unittest.skipIf(tifffile is None, "missing python3-tifffile")
class LyingHeaders(unittest.TestCase):
    """Pages whose directories claim what their bytes cannot hold: `info`
    and `segment` refuse them at once, on 1 and 3 ranks, in one line naming
    the file and the field, within 256 MiB of RSS (e2e_util.check_lying_header)."""

    @classmethod
    def setUpClass(cls):
        e.require_binary()
        cls.tmp = tempfile.TemporaryDirectory(prefix="volseg-e2e-tiff-lies-")

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def path(self, name):
        return os.path.join(self.tmp.name, name)

    def refused(self, name, pattern):
        path = self.path(name)
        e.check_lying_header(self, ["info", path], pattern)
        e.check_lying_header(self, ["segment", path, "--lo", "0", "--hi", "1", "--out", self.path("m.nhdr")],
                             pattern)

    def test_tile_wider_than_the_image(self):
        # The input libFuzzer found (tests/fuzz/corpus/fuzz_tiff/oom-tile-wider-than-the-image):
        # tiles of 704643088 x 16 for a 7 x 6 image made volseg allocate 11 GB.
        tifffile.imwrite(self.path("wide.tif"), np.arange(42, dtype=np.uint8).reshape(6, 7), tile=(16, 16),
                         compression="zlib")
        patch_tags(self.path("wide.tif"), {322: 704643088})
        self.refused("wide.tif", r"wide\.tif page 0: tile 704643088 x 16 is wider than the image \(7 pixels\)")
        tifffile.imwrite(self.path("tall.tif"), np.zeros((2, 6, 7), np.uint16), tile=(16, 16), photometric="minisblack")
        patch_tags(self.path("tall.tif"), {323: 1 << 20})
        self.refused("tall.tif", r"tall\.tif page 0: tile 16 x 1048576 is taller than the image \(6 rows\)")

    def test_strip_past_the_memory_budget(self):
        # One deflated strip of 100000 x 100000 pixels: 9.3 GiB decoded at once.
        tifffile.imwrite(self.path("strip.tif"), np.zeros((6, 7), np.uint8), compression="zlib",
                         rowsperstrip=6)
        patch_tags(self.path("strip.tif"), {256: 100000, 257: 100000, 278: 100000})
        self.refused("strip.tif", r"strip\.tif page 0: strip of 100000 rows of 100000 pixels of u8 is 10000000000 "
                                  r"bytes \(9537 MiB\), more than the memory budget for one piece \(1024 MiB, "
                                  r"the default; --memory SIZE allows more\)")

    def test_memory_option_moves_the_budget(self):
        # A legitimate 2 MiB strip: refused under --memory 1M, read under the default.
        volume = np.arange(2 * 1024 * 1024, dtype=np.uint8).reshape(1, 1024, 2048)
        tifffile.imwrite(self.path("big_strip.tif"), volume, compression="zlib", rowsperstrip=1024)
        out = self.path("big_strip_mask.nhdr")
        proc = e.run(["segment", self.path("big_strip.tif"), "--lo", "0", "--hi", "9", "--out", out, "--quiet",
                      "--memory", "1M"], ranks=1)
        e.assert_clean_failure(self, proc, r"strip of 1024 rows of 2048 pixels of u8 is 2097152 bytes \(2 MiB\), "
                                           r"more than the memory budget for one piece \(1 MiB, --memory")
        self.assertFalse(os.path.exists(out))
        e.check_ok(self, e.run(["segment", self.path("big_strip.tif"), "--lo", "0", "--hi", "9", "--out", out,
                                "--quiet"], ranks=1))
        env_proc = subprocess.run(e.command(["info", self.path("big_strip.tif")], ranks=1, mpi=False),
                                  capture_output=True, text=True, env=dict(os.environ, VOLSEG_MEMORY="512K"))
        e.assert_clean_failure(self, env_proc, r"\(1 MiB, VOLSEG_MEMORY")

    def test_bigtiff_claiming_2_to_the_40_pages(self):
        tifffile.imwrite(self.path("pages.tif"), np.zeros((1, 8, 8), np.uint16), bigtiff=True,
                         description="ImageJ=1.53t\nimages=%d\nslices=%d\n" % (1 << 40, 1 << 40), metadata=None)
        self.refused("pages.tif", r"pages\.tif: an ImageJ stack of 1099511627776 planes")

    def test_page_chain_that_loops(self):
        tifffile.imwrite(self.path("loop.tif"), np.zeros((3, 8, 8), np.uint16), bigtiff=True, metadata=None,
                         photometric="minisblack")
        with tifffile.TiffFile(self.path("loop.tif")) as t:
            offsets = [page.offset for page in t.pages]
        with open(self.path("loop.tif"), "r+b") as f:
            # The third page's "next" points back at the first.
            f.seek(offsets[2])
            count = struct.unpack("<Q", f.read(8))[0]
            f.seek(offsets[2] + 8 + 20 * count)
            f.write(struct.pack("<Q", offsets[0]))
        self.refused("loop.tif", r"loop\.tif: cannot read the page after the one at byte \d+ \(.*loops back\)")


def patch_tags(path, values):
    """Rewrites the values of tags of a classic little-endian TIFF's first
    page in place (as LONG where a tag held a SHORT)."""
    with open(path, "r+b") as f:
        data = bytearray(f.read())
        at = struct.unpack("<I", data[4:8])[0]
        count = struct.unpack("<H", data[at:at + 2])[0]
        for i in range(count):
            entry = at + 2 + 12 * i
            tag = struct.unpack("<H", data[entry:entry + 2])[0]
            if tag in values:
                data[entry + 2:entry + 4] = struct.pack("<H", 4)
                data[entry + 8:entry + 12] = struct.pack("<I", values[tag])
        f.seek(0)
        f.write(data)


def write_imagej_contiguous(path, volume):
    """A classic TIFF as ImageJ writes stacks past 4 GiB: one page directory
    whose description says images=N, then the N planes uncompressed and
    contiguous. Returns the number of directories tifffile finds."""
    nz, ny, nx = volume.shape
    description = ("ImageJ=1.53t\nimages=%d\nslices=%d\nloop=false\n" % (nz, nz)).encode() + b"\0"
    entries = [(256, 4, 1, nx), (257, 4, 1, ny), (258, 3, 1, 16), (259, 3, 1, 1), (262, 3, 1, 1),
               (270, 2, len(description), None), (273, 4, 1, None), (277, 3, 1, 1), (278, 4, 1, ny),
               (279, 4, 1, ny * nx * 2)]
    ifd_at = 8
    ifd_size = 2 + 12 * len(entries) + 4
    description_at = ifd_at + ifd_size
    data_at = description_at + len(description) + (len(description) % 2)
    out = bytearray(b"II*\x00" + struct.pack("<I", ifd_at))
    out += struct.pack("<H", len(entries))
    for tag, kind, count, value in entries:
        if tag == 270:
            value = description_at
        if tag == 273:
            value = data_at
        out += struct.pack("<HHI", tag, kind, count)
        out += struct.pack("<HH", value, 0) if kind == 3 else struct.pack("<I", value)
    out += struct.pack("<I", 0)
    out += description + b"\0" * (len(description) % 2)
    assert len(out) == data_at
    out += volume.astype("<u2").tobytes()
    with open(path, "wb") as f:
        f.write(out)
    with tifffile.TiffFile(path) as t:
        return len(t.pages)


if __name__ == "__main__":
    e.main()
