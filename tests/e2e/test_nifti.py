# SPDX-License-Identifier: MIT
"""NIfTI-1 and NIfTI-2 with nibabel (Debian's python3-nibabel) on the other
side. Files nibabel writes (.nii and .hdr/.img pairs, every integer and
float type, both byte orders, scl_slope/scl_inter, sform and qform) are read
by every raw backend on 1 and 3 ranks and thresholded as numpy does; the
Colin27 MRI of Debian's mricron-data as it is shipped (gunzipped); bad
headers get one line naming the field and leave nothing behind."""
import gzip
import os
import shutil
import struct
import sys
import tempfile
import unittest
import zlib

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import e2e_util as e  # noqa: E402

try:
    import nibabel as nib
except ImportError:  # pragma: no cover - install-deps.sh installs it
    nib = None

SHAPE_XYZ = (31, 29, 23)  # nibabel's order: x fastest in the file
COLIN27 = "/usr/share/mricron/templates/ch2.nii.gz"


@unittest.skipIf(nib is None, "missing python3-nibabel")
class NiftiInput(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        e.require_binary()
        cls.tmp = tempfile.TemporaryDirectory(prefix="volseg-e2e-nifti-")

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
        return np.fromfile(self.path("mask%d.raw" % ranks), dtype=np.uint8)

    def expected(self, values_xyz, lo, hi):
        """volseg's mask of nibabel's array: [z][y][x], x fastest."""
        zyx = np.asarray(values_xyz).transpose(2, 1, 0)
        return ((zyx >= lo) & (zyx <= hi)).astype(np.uint8).ravel()

    def test_every_type_version_and_byte_order(self):
        rng = np.random.default_rng(3)
        affine = np.diag([0.5, 0.75, 2.0, 1.0])
        affine[:3, 3] = [-12.5, 30.0, 7.0]
        cases = [("<f4", 0.2, 0.6), (">f8", 0.2, 0.6), ("<i2", -500, 700), (">u2", 100, 30000),
                 ("|u1", 40, 200), ("|i1", -50, 20), ("<i4", -5000, 9000), ("<u4", 10, 70000),
                 ("<i8", -4000, 4000), ("<f4", 2.0, 3.0)]  # the last: no voxel in range
        # Every raw backend in turn beside mmap on 1 rank (each run is a launch).
        others = [(3, "posix"), (3, "mpiio"), (2, "twophase"), (2, "ranged-mmap")]
        for version, image in ((1, nib.Nifti1Image), (2, nib.Nifti2Image)):
            for k, (dtype, lo, hi) in enumerate(cases):
                with self.subTest(version=version, dtype=dtype, lo=lo):
                    dt = np.dtype(dtype)
                    if dt.kind == "f":
                        values = rng.random(SHAPE_XYZ).astype(dt)
                    else:
                        info = np.iinfo(dt)
                        values = rng.integers(max(info.min, -10000), min(info.max, 80000), SHAPE_XYZ).astype(dt)
                    header = (nib.Nifti1Header if version == 1 else nib.Nifti2Header)(endianness=dt.byteorder
                                                                                        if dt.byteorder in "<>" else "<")
                    img = image(values, affine, header)
                    img.set_data_dtype(dt)
                    name = self.path("v%d-%s.nii" % (version, dt.str.replace("<", "le").replace(">", "be")
                                                     .replace("|", "")))
                    img.to_filename(name)
                    for ranks, backend in ((1, "mmap"), others[(k + version) % len(others)]):
                        got = self.segment(name, lo, hi, ranks, "--backend", backend)
                        np.testing.assert_array_equal(got, self.expected(values, lo, hi),
                                                      "%s on %d ranks" % (backend, ranks))
                    info = e.run(["info", name], ranks=1)
                    e.check_ok(self, info)
                    for text in ("dims (z,y,x):  23 29 31", "spacing (x,y,z): 0.5 0.75 2",
                                 "origin (x,y,z):  -12.5 30 7", "nifti_version: %d" % version,
                                 "nifti_affine_from: sform", "%s-endian" % ("big" if dt.byteorder == ">" else "little")):
                        self.assertIn(text, info.stdout)

    def test_scaled_values_are_compared(self):
        # value = stored * 0.5 - 10, as NetCDF's scale_factor and add_offset:
        # --lo/--hi are in those units.
        stored = np.arange(np.prod(SHAPE_XYZ), dtype=np.int16).reshape(SHAPE_XYZ) % 1000
        img = nib.Nifti1Image(stored, np.eye(4))
        img.header.set_slope_inter(0.5, -10.0)
        img.set_data_dtype(np.int16)
        img.to_filename(self.path("scaled.nii"))
        self.assertEqual(nib.load(self.path("scaled.nii")).dataobj.slope, 0.5)
        values = stored * 0.5 - 10.0
        for ranks in (1, 3):
            np.testing.assert_array_equal(self.segment(self.path("scaled.nii"), 100.25, 300, ranks),
                                          self.expected(values, 100.25, 300))
        info = e.run(["info", self.path("scaled.nii")], ranks=1)
        self.assertIn("packed:        value = stored * 0.5 + -10", info.stdout)

    def test_qform_and_a_header_image_pair(self):
        values = np.random.default_rng(4).random(SHAPE_XYZ).astype(np.float32)
        img = nib.Nifti1Pair(values, None)
        affine = np.diag([1.5, 1.5, 3.0, 1.0])
        affine[:3, 3] = [1.0, -2.0, 3.0]
        img.set_qform(affine, code=1)
        img.set_sform(None, code=0)
        img.to_filename(self.path("pair.hdr"))
        self.assertTrue(os.path.exists(self.path("pair.img")))
        got = self.segment(self.path("pair.hdr"), 0.1, 0.3, 2)
        np.testing.assert_array_equal(got, self.expected(values, 0.1, 0.3))
        info = e.run(["info", self.path("pair.hdr")], ranks=1)
        for text in ("spacing (x,y,z): 1.5 1.5 3", "origin (x,y,z):  1 -2 3", "nifti_affine_from: qform"):
            self.assertIn(text, info.stdout)

    @unittest.skipUnless(os.path.exists(COLIN27), "missing mricron-data (the Colin27 MRI)")
    def test_colin27_as_shipped(self):
        img = nib.load(COLIN27)
        values = np.asarray(img.get_fdata(dtype=np.float64))
        lo, hi = 60, 110  # a tissue range of the T1 image
        for ranks in (1, 2):  # the .nii.gz as Debian ships it
            np.testing.assert_array_equal(self.segment(COLIN27, lo, hi, ranks), self.expected(values, lo, hi))
        with gzip.open(COLIN27) as src, open(self.path("ch2.nii"), "wb") as dst:
            shutil.copyfileobj(src, dst)
        for ranks in (1, 2):  # and uncompressed
            np.testing.assert_array_equal(self.segment(self.path("ch2.nii"), lo, hi, ranks),
                                          self.expected(values, lo, hi))
        info = e.run(["info", self.path("ch2.nii")], ranks=1)
        e.check_ok(self, info)
        zooms = img.header.get_zooms()[:3]
        self.assertIn("spacing (x,y,z): %g %g %g" % tuple(float(z) for z in zooms), info.stdout)

    def test_nifti_masks_keep_the_input_geometry(self):
        values = np.random.default_rng(6).random(SHAPE_XYZ).astype(np.float32)
        # A rotated, flipped affine (an oblique scan), as sform and qform.
        angle = 0.3
        rot = np.array([[np.cos(angle), -np.sin(angle), 0], [np.sin(angle), np.cos(angle), 0], [0, 0, -1]])
        affine = np.eye(4)
        affine[:3, :3] = rot @ np.diag([0.8, 0.9, 1.5])
        affine[:3, 3] = [-40.0, 12.5, 60.0]
        img = nib.Nifti1Image(values, affine)
        img.set_qform(affine, code=1)
        img.to_filename(self.path("oblique.nii"))
        expected = self.expected(values, 0.3, 0.6)
        for ranks, backend in ((1, "mmap"), (3, "posix"), (2, "mpiio"), (2, "twophase")):
            with self.subTest(ranks=ranks, backend=backend):
                out = self.path("mask-%s.nii" % backend)
                proc = e.run(["segment", self.path("oblique.nii"), "--lo", "0.3", "--hi", "0.6", "--out", out,
                              "--backend", backend, "--quiet"], ranks=ranks)
                e.check_ok(self, proc)
                mask = nib.load(out)
                self.assertEqual(mask.header.get_data_dtype(), np.uint8)
                data = np.asarray(mask.dataobj)
                self.assertEqual(data.shape, SHAPE_XYZ)
                np.testing.assert_array_equal(data.transpose(2, 1, 0).ravel(), expected)
                np.testing.assert_allclose(mask.affine, affine, atol=1e-4)
                np.testing.assert_allclose(mask.get_qform(), affine, atol=1e-4)
                self.assertEqual(int(mask.header["sform_code"]), 1)
                self.assertEqual(int(mask.header["intent_code"]), 1002)  # NIFTI_INTENT_LABEL
                self.assertEqual([n for n in os.listdir(self.tmp.name) if "volseg-tmp" in n], [])
        # From NRRD: spacing and origin become the affine.
        proc = e.run(["generate", self.path("g.nhdr"), "--dims", "8,9,10", "--field", "shells", "--quiet"], ranks=1)
        e.check_ok(self, proc)
        with open(self.path("g.nhdr")) as f:
            lines = [l for l in f.read().splitlines() if not l.startswith(("spacings:", "axis mins:"))]
        lines.insert(3, "spacings: 0.5 2 3")
        lines.insert(4, "axis mins: -1 5 7.5")
        with open(self.path("g.nhdr"), "w") as f:
            f.write("\n".join(lines) + "\n")
        proc = e.run(["segment", self.path("g.nhdr"), "--lo", "0", "--hi", "1e9", "--out", self.path("g-mask.nii"),
                      "--quiet"], ranks=2)
        e.check_ok(self, proc)
        mask = nib.load(self.path("g-mask.nii"))
        self.assertEqual(mask.shape, (10, 9, 8))
        expected_affine = np.diag([0.5, 2.0, 3.0, 1.0])
        expected_affine[:3, 3] = [-1, 5, 7.5]
        np.testing.assert_allclose(mask.affine, expected_affine)

    def test_bad_headers(self):
        values = np.zeros(SHAPE_XYZ, np.float32)
        good = self.path("good.nii")
        nib.Nifti1Image(values, np.eye(4)).to_filename(good)
        with open(good, "rb") as f:
            data = bytearray(f.read())

        def variant(name, edit):
            d = bytearray(data)
            edit(d)
            with open(self.path(name), "wb") as f:
                f.write(d)
            return self.path(name)

        cases = {
            "2d.nii": (lambda d: struct.pack_into("<h", d, 40, 2), r"a 2D image; volseg reads 3D volumes"),
            "4d.nii": (lambda d: struct.pack_into("<hhhhh", d, 40, 4, 31, 29, 23, 2),
                       r"a 4D image of 2 along dim\[4\]"),
            "offset.nii": (lambda d: struct.pack_into("<f", d, 108, 100.0), r"vox_offset 100 is inside the 348-byte header"),
            "type.nii": (lambda d: struct.pack_into("<h", d, 70, 32), r"datatype complex64 is not one volseg reads"),
            "dim.nii": (lambda d: struct.pack_into("<h", d, 44, -3), r"dim\[2\] -3 is not positive"),
            "short.nii": (lambda d: d.__delitem__(slice(len(d) - 1000, None)),
                          r"dim\[1\.\.3\] 31 x 29 x 23 of f32 need 82708 bytes from vox_offset 352, more than the file "
                          r"holds \(82060 bytes\)"),
            "pixdim.nii": (lambda d: struct.pack_into("<f", d, 80, float("inf")), r"pixdim\[1\] is not finite"),
        }
        for name, (edit, message) in cases.items():
            with self.subTest(name=name):
                path = variant(name, edit)
                out = self.path("bad-" + name + ".nhdr")
                proc = e.run(["segment", path, "--lo", "0", "--hi", "1", "--out", out, "--quiet"], ranks=2)
                self.assertEqual(proc.returncode, 1, proc.stderr)
                lines = [l for l in proc.stderr.splitlines() if l.strip()]
                self.assertEqual(len(lines), 1, proc.stderr)
                self.assertRegex(lines[0], r"^volseg: error: .*" + message)
                self.assertFalse(os.path.exists(out))

    def test_gzip_compressed_nifti(self):
        values = np.random.default_rng(8).integers(-1000, 1000, SHAPE_XYZ).astype(np.int16)
        affine = np.diag([0.9, 0.9, 1.1, 1.0])
        img = nib.Nifti1Image(values, affine)
        img.header.set_slope_inter(0.25, 5.0)
        img.set_data_dtype(np.int16)
        img.to_filename(self.path("c.nii.gz"))  # nibabel gzips by the name
        with open(self.path("c.nii.gz"), "rb") as f:
            self.assertEqual(f.read(2), b"\x1f\x8b")
        scaled = values * 0.25 + 5.0
        for ranks in (1, 3):
            np.testing.assert_array_equal(self.segment(self.path("c.nii.gz"), -20.0, 100.5, ranks),
                                          self.expected(scaled, -20.0, 100.5))
        info = e.run(["info", self.path("c.nii.gz")], ranks=1)
        e.check_ok(self, info)
        self.assertIn("(nifti-gz, read by gzip)", info.stdout)
        # Bad streams: one line naming the file, nothing written.
        with open(self.path("c.nii.gz"), "rb") as f:
            data = bytearray(f.read())
        corrupt = bytearray(data)
        for i in range(len(corrupt) // 2, len(corrupt) // 2 + 64):
            corrupt[i] ^= 0x5A
        cases = {"corrupt.nii.gz": (corrupt, r"corrupt gzip stream"),
                 "short.nii.gz": (data[: len(data) * 2 // 3], r"gzip stream ends|corrupt gzip stream"),
                 "plain.nii.gz": (gzip.compress(b"NRRD0004\n" + b"x" * 600), r"not NIfTI")}
        for name, (content, message) in cases.items():
            with self.subTest(name=name):
                with open(self.path(name), "wb") as f:
                    f.write(content)
                out = self.path("bad-" + name + ".nhdr")
                proc = e.run(["segment", self.path(name), "--lo", "0", "--hi", "1", "--out", out, "--quiet"], ranks=2)
                self.assertEqual(proc.returncode, 1, proc.stderr)
                lines = [l for l in proc.stderr.splitlines() if l.startswith("volseg:")]
                self.assertEqual(len(lines), 1, proc.stderr)
                self.assertRegex(lines[0], message)
                self.assertFalse(os.path.exists(out))

    def test_gzip_compressed_outputs(self):
        """.nii.gz masks and labels: each brick a gzip member, compressed in parallel and placed in file order;
        nibabel and Python's gzip read them as one stream; the affine is the input's."""
        values = np.random.default_rng(9).random(SHAPE_XYZ).astype(np.float32)
        affine = np.diag([0.7, 0.8, 1.9, 1.0])
        affine[:3, 3] = [4.0, -3.0, 2.0]
        nib.Nifti1Image(values, affine).to_filename(self.path("in.nii"))
        expected = self.expected(values, 0.2, 0.7)
        for ranks, brick, assign in ((1, None, "block"), (3, "2,29,31", "cyclic"), (2, "1,7,31", "random")):
            with self.subTest(ranks=ranks, brick=brick):
                out = self.path("m%d.nii.gz" % ranks)
                proc = e.run(["segment", self.path("in.nii"), "--lo", "0.2", "--hi", "0.7", "--out", out, "--quiet",
                              "--assign", assign, *(["--brick", brick] if brick else [])], ranks=ranks)
                e.check_ok(self, proc)
                with open(out, "rb") as f:
                    raw = f.read()
                self.assertEqual(raw[:2], b"\x1f\x8b")
                self.assertEqual(len(gzip.decompress(raw)), 352 + values.size)
                mask = nib.load(out)
                np.testing.assert_array_equal(np.asarray(mask.dataobj).transpose(2, 1, 0).ravel(), expected)
                np.testing.assert_allclose(mask.affine, affine, atol=1e-5)
                # volseg reads its own
                np.testing.assert_array_equal(self.segment(out, 1, 1, 2), expected)
        out = self.path("labels.nii.gz")
        e.check_ok(self, e.run(["label", self.path("m3.nii.gz"), "--mask-input", "--out", out, "--quiet"], ranks=2))
        labels = np.asarray(nib.load(out).dataobj).transpose(2, 1, 0).ravel()
        np.testing.assert_array_equal(labels > 0, expected.astype(bool))
        # Bricks that are not whole rows, and --resume: one line before the job, nothing written.
        for extra, message in ((["--brick", "2,10,31"], "whole rows"), (["--resume"], "not .nii.gz")):
            proc = e.run(["segment", self.path("in.nii"), "--lo", "0", "--hi", "1", "--out", self.path("x.nii.gz"),
                          "--quiet", *extra], ranks=2)
            e.assert_clean_failure(self, proc, message)
            self.assertEqual([n for n in os.listdir(self.tmp.name) if n.startswith(("x.", ".x."))], [])


def nifti1_header(nx, ny, nz):
    """A little-endian NIfTI-1 header of u8 voxels at vox_offset 352."""
    h = bytearray(352)
    struct.pack_into("<i", h, 0, 348)
    struct.pack_into("<8h", h, 40, 3, nx, ny, nz, 1, 1, 1, 1)
    struct.pack_into("<hh", h, 70, 2, 8)  # datatype u8, bitpix
    struct.pack_into("<8f", h, 76, 1, 1, 1, 1, 1, 1, 1, 1)
    struct.pack_into("<f", h, 108, 352.0)
    h[344:348] = b"n+1\0"
    return bytes(h)


def nifti2_header(nx, ny, nz):
    """A little-endian NIfTI-2 header of u8 voxels at vox_offset 544."""
    h = bytearray(544)
    struct.pack_into("<i", h, 0, 540)
    h[4:12] = b"n+2\0\r\n\x1a\n"
    struct.pack_into("<hh", h, 12, 2, 8)
    struct.pack_into("<8q", h, 16, 3, nx, ny, nz, 1, 1, 1, 1)
    struct.pack_into("<8d", h, 104, 1, 1, 1, 1, 1, 1, 1, 1)
    struct.pack_into("<q", h, 168, 544)
    return bytes(h)


def write_gzip_bomb(path, head, zeros_mib):
    """One gzip member of head and then zeros_mib MiB of zeros, deflated at
    1032:1 (a gzip bomb: 1 GiB in about 1 MiB). Every MiB of zeros ends in a
    full flush, so its compressed bytes are the same each time: deflated
    once, written zeros_mib times, and the file is never held whole."""
    zeros = bytes(1 << 20)
    deflate = zlib.compressobj(9, zlib.DEFLATED, -15)
    start = deflate.compress(head) + deflate.flush(zlib.Z_FULL_FLUSH)
    block = deflate.compress(zeros) + deflate.flush(zlib.Z_FULL_FLUSH)
    crc = zlib.crc32(head)
    with open(path, "wb") as f:
        f.write(b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x02\x03" + start)
        for _ in range(zeros_mib):
            f.write(block)
            crc = zlib.crc32(zeros, crc)
        f.write(deflate.flush(zlib.Z_FINISH))
        f.write(struct.pack("<II", crc, (len(head) + (zeros_mib << 20)) & 0xFFFFFFFF))


class NiftiLyingHeaders(unittest.TestCase):
    """Headers that claim what their files cannot hold: one line naming the
    file and the field from 'volseg info' and 'volseg segment', on 1 and 3
    ranks, in at most 256 MiB, nothing written (e2e.check_lying_header)."""

    @classmethod
    def setUpClass(cls):
        e.require_binary()
        cls.tmp = tempfile.TemporaryDirectory(prefix="volseg-e2e-nifti-lying-")
        # 1 GiB of zeros behind each header, in about 1 MiB of gzip.
        cls.bombs = {}
        for name, head in (("small", nifti1_header(8, 8, 8)), ("huge", nifti1_header(32767, 32767, 32767)),
                           ("past", nifti1_header(64, 64, 64))):
            cls.bombs[name] = os.path.join(cls.tmp.name, name + ".nii.gz")
            write_gzip_bomb(cls.bombs[name], head, 1024)

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def check(self, path, pattern, commands=("info", "segment"), extra=()):
        out = os.path.join(os.path.dirname(path), "out.nhdr")
        argv = {"info": ["info", path], "segment": ["segment", path, "--lo", "0", "--hi", "1", "--out", out, *extra]}
        for command in commands:
            with self.subTest(command=command):
                e.check_lying_header(self, argv[command], pattern)

    def test_dims_past_a_400_byte_file(self):
        path = os.path.join(self.tmp.name, "dims1.nii")
        with open(path, "wb") as f:
            f.write(nifti1_header(32767, 32767, 32767) + bytes(48))
        self.check(path, r"dims1\.nii: NIfTI-1 header: dim\[1\.\.3\] 32767 x 32767 x 32767 of u8 need 35181150961663 "
                         r"bytes from vox_offset 352, more than the file holds \(400 bytes\)$")
        path = os.path.join(self.tmp.name, "dims2.nii")
        with open(path, "wb") as f:
            f.write(nifti2_header(1 << 31, 1 << 31, 1 << 31) + bytes(56))
        self.check(path, r"dims2\.nii: NIfTI-2 header: dim\[1\.\.3\] 2147483648 x 2147483648 x 2147483648 of u8 need "
                         r"9\.9e27 bytes from vox_offset 544, more than the file holds \(600 bytes\)$")

    def test_gzip_bomb_behind_small_dims(self):
        self.assertLess(os.path.getsize(self.bombs["small"]), 2 << 20)
        self.check(self.bombs["small"], r"small\.nii\.gz: its \d+ bytes of gzip data are far more than dim\[1\.\.3\] "
                                        r"8 x 8 x 8 of u8 from vox_offset 352 \(864 bytes\) can take")

    def test_gzip_bomb_behind_huge_dims(self):
        self.check(self.bombs["huge"], r"huge\.nii\.gz: dim\[1\.\.3\] 32767 x 32767 x 32767 of u8 need 35181150961663 "
                                       r"bytes from vox_offset 352, more than its \d+ bytes of gzip data can hold "
                                       r"\(deflate expands at most 1032:1\)")

    def test_gzip_stream_past_the_voxels(self):
        """256 KiB of voxels, which 1 MiB of gzip may well hold: the header
        is described (its voxels are there), and a job refuses the stream
        when it goes on past them, having decoded one buffer more."""
        info = e.run(["info", self.bombs["past"]], ranks=1)
        e.check_ok(self, info)
        self.check(self.bombs["past"], r"past\.nii\.gz: the gzip stream goes on past the 262496 bytes that its "
                                       r"header's vox_offset and dim\[1\.\.3\] describe", commands=("segment",),
                   extra=["--quiet"])  # the job has started: no progress line beside the error


if __name__ == "__main__":
    e.main(verbosity=2)
