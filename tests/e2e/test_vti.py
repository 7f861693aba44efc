# SPDX-License-Identifier: MIT
"""VTK XML image data (.vti) with VTK's own writer and reader (Debian's
python3-paraview) on the other side. Files vtkXMLImageDataWriter writes with
raw appended data (every scalar type, both byte orders, both header types,
an extent that does not start at 0, several arrays with one marked Scalars)
are read by the raw backends on 1-3 ranks and thresholded as numpy does;
.vti masks volseg writes are read back by vtkXMLImageDataReader, in place;
zlib-compressed files as ParaView saves them (base64 or raw blocks) are read
by the vti backend; uncompressed base64 and inline files, several pieces,
unmarked arrays and damaged blocks get one line naming what to change, and
leave nothing behind."""
import importlib.util
import os
import struct
import sys
import tempfile
import unittest

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import e2e_util as e  # noqa: E402

HAVE_VTK = importlib.util.find_spec("vtk") is not None  # python3-paraview comes with the ParaView build
vtk = numpy_to_vtk = vtk_to_numpy = None


def import_vtk():
    """VTK's Python modules (about 270 MiB), imported by the class that
    uses them and not before: the other classes, LyingHeaders among them,
    run without them."""
    global vtk, numpy_to_vtk, vtk_to_numpy
    import vtk as modules
    from vtkmodules.util import numpy_support
    vtk, numpy_to_vtk, vtk_to_numpy = modules, numpy_support.numpy_to_vtk, numpy_support.vtk_to_numpy

DIMS_XYZ = (31, 29, 23)


def write_vti(path, values_zyx, extent0=(0, 0, 0), spacing=(0.5, 0.75, 2.0), origin=(-3.0, 4.0, 10.0),
              big_endian=False, header64=False, compressed=False, encoded=False, mode="appended", extra=None,
              block_size=None, compressor="zlib"):
    img = vtk.vtkImageData()
    nz, ny, nx = values_zyx.shape
    img.SetExtent(extent0[0], extent0[0] + nx - 1, extent0[1], extent0[1] + ny - 1, extent0[2], extent0[2] + nz - 1)
    img.SetSpacing(*spacing)
    img.SetOrigin(*origin)
    arr = numpy_to_vtk(np.ascontiguousarray(values_zyx).ravel().copy())
    arr.SetName("values")
    img.GetPointData().SetScalars(arr)
    for name, data in (extra or {}).items():
        more = numpy_to_vtk(np.ascontiguousarray(data).ravel().copy())
        more.SetName(name)
        img.GetPointData().AddArray(more)
    w = vtk.vtkXMLImageDataWriter()
    w.SetInputData(img)
    w.SetFileName(path)
    {"appended": w.SetDataModeToAppended, "binary": w.SetDataModeToBinary, "ascii": w.SetDataModeToAscii}[mode]()
    if not encoded:
        w.EncodeAppendedDataOff()
    if not compressed:
        w.SetCompressorTypeToNone()
    elif compressor == "lz4":
        w.SetCompressorTypeToLZ4()
    elif compressor == "lzma":
        w.SetCompressorTypeToLZMA()
    if block_size:
        w.SetBlockSize(block_size)
    if big_endian:
        w.SetByteOrderToBigEndian()
    if header64:
        w.SetHeaderTypeToUInt64()
    assert w.Write() == 1


@unittest.skipIf(not HAVE_VTK, "missing VTK's Python modules (python3-paraview)")
class Vti(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        e.require_binary()
        import_vtk()
        cls.tmp = tempfile.TemporaryDirectory(prefix="volseg-e2e-vti-")

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

    def test_types_byte_orders_and_extents(self):
        rng = np.random.default_rng(9)
        shape = DIMS_XYZ[::-1]
        cases = [(np.float32, 0.2, 0.6, {}), (np.float64, 0.2, 0.6, {"big_endian": True}),
                 (np.int16, -100, 300, {"header64": True}), (np.uint8, 20, 90, {"extent0": (2, 5, 7)}),
                 (np.uint16, 100, 9000, {"big_endian": True, "header64": True}), (np.int32, -500, 500, {}),
                 (np.int8, -20, 20, {}), (np.uint32, 5, 50000, {}), (np.int64, -3000, 3000, {}),
                 (np.uint64, 10, 900, {})]
        backends = [(1, "mmap"), (3, "posix"), (2, "mpiio"), (2, "twophase")]
        for k, (dtype, lo, hi, options) in enumerate(cases):
            with self.subTest(dtype=np.dtype(dtype).name, **{o: str(v) for o, v in options.items()}):
                if np.dtype(dtype).kind == "f":
                    values = rng.random(shape).astype(dtype)
                else:
                    info = np.iinfo(dtype)
                    values = rng.integers(max(info.min, -5000), min(info.max, 60000), shape).astype(dtype)
                name = self.path("in-%d.vti" % k)
                write_vti(name, values, **options)
                expected = ((values >= lo) & (values <= hi)).astype(np.uint8).ravel()
                ranks, backend = backends[k % len(backends)]
                np.testing.assert_array_equal(self.segment(name, lo, hi, ranks, "--backend", backend), expected)
                info = e.run(["info", name], ranks=1)
                e.check_ok(self, info)
                x0, y0, z0 = options.get("extent0", (0, 0, 0))
                self.assertIn("dims (z,y,x):  23 29 31", info.stdout)
                self.assertIn("spacing (x,y,z): 0.5 0.75 2", info.stdout)
                self.assertIn("origin (x,y,z):  %g %g %g" % (-3.0 + 0.5 * x0, 4.0 + 0.75 * y0, 10.0 + 2.0 * z0),
                              info.stdout)

    def test_scalars_among_several_arrays_and_masks_vtk_reads(self):
        rng = np.random.default_rng(10)
        shape = DIMS_XYZ[::-1]
        values = rng.random(shape).astype(np.float32)
        write_vti(self.path("two.vti"), values, extra={"other": (values * 100).astype(np.int16)})
        expected = ((values >= 0.3) & (values <= 0.7)).astype(np.uint8)
        for ranks, backend in ((1, "mmap"), (3, "posix"), (2, "mpiio"), (2, "twophase")):
            with self.subTest(ranks=ranks, backend=backend):
                out = self.path("mask-%s.vti" % backend)
                proc = e.run(["segment", self.path("two.vti"), "--lo", "0.3", "--hi", "0.7", "--out", out,
                              "--backend", backend, "--quiet"], ranks=ranks)
                e.check_ok(self, proc)
                reader = vtk.vtkXMLImageDataReader()
                reader.SetFileName(out)
                reader.Update()
                img = reader.GetOutput()
                self.assertEqual(img.GetDimensions(), DIMS_XYZ)
                np.testing.assert_allclose(img.GetSpacing(), (0.5, 0.75, 2.0))
                np.testing.assert_allclose(img.GetOrigin(), (-3.0, 4.0, 10.0))
                scalars = img.GetPointData().GetScalars()
                self.assertEqual(scalars.GetName(), "mask")
                self.assertEqual(scalars.GetDataType(), vtk.VTK_UNSIGNED_CHAR)
                np.testing.assert_array_equal(vtk_to_numpy(scalars), expected.ravel())
                self.assertEqual([n for n in os.listdir(self.tmp.name) if "volseg-tmp" in n], [])
        # volseg reads its own .vti masks too.
        again = self.segment(self.path("mask-mmap.vti"), 1, 1, 2)
        np.testing.assert_array_equal(again, expected.ravel())
        # --var picks another array, raw through every raw backend, compressed through the vti backend.
        other = (values * 100).astype(np.int16)
        want = ((other >= 20) & (other <= 60)).astype(np.uint8).ravel()
        write_vti(self.path("two-z.vti"), values, extra={"other": other}, compressed=True, encoded=True)
        for name, ranks, backend in (("two.vti", 1, "mmap"), ("two.vti", 3, "posix"), ("two.vti", 2, "mpiio"),
                                     ("two.vti", 2, "twophase"), ("two.vti", 2, "ranged-uring"),
                                     ("two-z.vti", 3, "auto")):
            with self.subTest(name=name, backend=backend, var="other"):
                got = self.segment(self.path(name), 20, 60, ranks, "--var", "other", "--backend", backend)
                np.testing.assert_array_equal(got, want)
        proc = e.run(["segment", self.path("two.vti"), "--var", "nope", "--lo", "0", "--hi", "1", "--out",
                      self.path("nope.nhdr"), "--quiet"], ranks=2)
        e.assert_clean_failure(self, proc, r"--var nope: .* has no such point data array \(it has values, other\)")

    def test_zlib_compressed_files_as_paraview_saves_them(self):
        # vtkXMLImageDataWriter's and ParaView's default: zlib blocks, base64; and raw-encoded blocks.
        rng = np.random.default_rng(11)
        shape = DIMS_XYZ[::-1]
        cases = [(np.float32, {"compressed": True, "encoded": True}),
                 (np.int16, {"compressed": True, "header64": True, "block_size": 4096}),
                 (np.float64, {"compressed": True, "encoded": True, "big_endian": True, "block_size": 1000}),
                 (np.uint8, {"compressed": True, "encoded": True, "header64": True, "extent0": (1, 2, 3)}),
                 (np.uint16, {"compressed": True, "compressor": "lz4", "block_size": 3000}),
                 (np.float32, {"compressed": True, "compressor": "lz4", "encoded": True, "big_endian": True}),
                 (np.int32, {"compressed": True, "compressor": "lzma", "header64": True}),
                 (np.float64, {"compressed": True, "compressor": "lzma", "encoded": True, "block_size": 5000})]
        for k, (dtype, options) in enumerate(cases):
            with self.subTest(dtype=np.dtype(dtype).name, **{o: str(v) for o, v in options.items()}):
                values = (rng.random(shape) * 200).astype(dtype)
                name = self.path("z-%d.vti" % k)
                write_vti(name, values, **options)
                expected = ((values >= 30) & (values <= 120)).astype(np.uint8).ravel()
                for ranks in (1, 3):
                    np.testing.assert_array_equal(self.segment(name, 30, 120, ranks), expected)
                info = e.run(["info", name], ranks=1)
                e.check_ok(self, info)
                self.assertIn("(vti-compressed, read by vti)", info.stdout)
        # A damaged block: one line naming it.
        with open(self.path("z-0.vti"), "rb") as f:
            data = bytearray(f.read())
        start = data.index(b"_", data.index(b"<AppendedData")) + 1
        for i in range(start + 200, start + 260):
            data[i] = ord("A")
        with open(self.path("z-bad.vti"), "wb") as f:
            f.write(data)
        proc = e.run(["segment", self.path("z-bad.vti"), "--lo", "0", "--hi", "1", "--out", self.path("zb.nhdr"),
                      "--quiet"], ranks=2)
        self.assertEqual(proc.returncode, 1)
        lines = [l for l in proc.stderr.splitlines() if l.startswith("volseg:")]
        self.assertEqual(len(lines), 1, proc.stderr)
        self.assertRegex(lines[0], r"block \d+ does not decompress")
        self.assertFalse(os.path.exists(self.path("zb.nhdr")))

    def test_refused_files(self):
        values = np.zeros(DIMS_XYZ[::-1], np.float32)
        write_vti(self.path("base64.vti"), values, encoded=True)
        write_vti(self.path("inline.vti"), values, mode="binary")
        write_vti(self.path("unmarked.vti"), values, extra={"b": values})
        with open(self.path("unmarked.vti"), "rb") as f:
            data = f.read().replace(b'Scalars="values"', b'Scalars="nothing"', 1)
        with open(self.path("unmarked.vti"), "wb") as f:
            f.write(data)
        write_vti(self.path("short.vti"), values)
        with open(self.path("short.vti"), "rb") as f:
            data = f.read()
        with open(self.path("short.vti"), "wb") as f:
            f.write(data[: len(data) // 2])
        cases = {"base64.vti": r"uncompressed base64 appended data",
                 "inline.vti": r"format binary; volseg reads appended raw data",
                 "unmarked.vti": r"several point data arrays \(values, b\) and none marked Scalars: name one with --var",
                 "short.vti": r"WholeExtent \"0 30 0 28 0 22\" of f32 need 82708 bytes from byte \d+ \(offset 0\), "
                              r"more than the file holds"}
        for name, message in cases.items():
            with self.subTest(name=name):
                out = self.path("bad-" + name + ".nhdr")
                proc = e.run(["segment", self.path(name), "--lo", "0", "--hi", "1", "--out", out, "--quiet"], ranks=2)
                self.assertEqual(proc.returncode, 1, proc.stderr)
                lines = [l for l in proc.stderr.splitlines() if l.startswith("volseg:")]
                self.assertEqual(len(lines), 1, proc.stderr)
                self.assertRegex(lines[0], message)
                self.assertFalse(os.path.exists(out))


def vti_header(extent, compressor=""):
    """The XML of a .vti file with one UInt8 point data array "v", appended
    raw, UInt64 block headers, up to the appended data's "_"."""
    compressed = ' compressor="%s"' % compressor if compressor else ""
    return ('<?xml version="1.0"?>\n<VTKFile type="ImageData" version="1.0" byte_order="LittleEndian" '
            'header_type="UInt64"%s>\n<ImageData WholeExtent="%s" Origin="0 0 0" Spacing="1 1 1">\n'
            '<Piece Extent="%s"><PointData Scalars="v">\n'
            '<DataArray type="UInt8" Name="v" format="appended" offset="0"/>\n</PointData></Piece>\n'
            '</ImageData>\n<AppendedData encoding="raw">\n_' % (compressed, extent, extent)).encode()


class LyingHeaders(unittest.TestCase):
    """An extent of 2^20 cubed with 10 bytes of data, raw and
    zlib-compressed: one line naming the file and the field from 'volseg
    info' and 'volseg segment', on 1 and 3 ranks, in at most 256 MiB,
    nothing written (e2e.check_lying_header). Needs no VTK."""

    EXTENT = "0 1048575 0 1048575 0 1048575"

    @classmethod
    def setUpClass(cls):
        e.require_binary()
        cls.tmp = tempfile.TemporaryDirectory(prefix="volseg-e2e-vti-lying-")

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def check(self, name, content, pattern):
        path = os.path.join(self.tmp.name, name)
        with open(path, "wb") as f:
            f.write(content)
        out = os.path.join(self.tmp.name, "out.nhdr")
        for argv in (["info", path], ["segment", path, "--lo", "0", "--hi", "1", "--out", out]):
            with self.subTest(command=argv[0]):
                e.check_lying_header(self, argv, pattern)

    def test_raw_extent_past_ten_bytes(self):
        # The array's byte count says what the extent needs; the file holds 10 bytes of it.
        content = vti_header(self.EXTENT) + struct.pack("<Q", 1 << 60) + b"0123456789"
        self.check("raw.vti", content,
                   r"raw\.vti: VTK image data, array v: WholeExtent \"%s\" of u8 need 1\.2e18 bytes from byte \d+ "
                   r"\(offset 0\), more than the file holds \(%d bytes\)$" % (self.EXTENT, len(content)))

    def test_zlib_block_count_past_ten_bytes(self):
        # 2^60 bytes in 2^45 blocks of 32 KiB: a block header of 256 TiB.
        content = (vti_header(self.EXTENT, "vtkZLibDataCompressor") + struct.pack("<QQQ", 1 << 45, 32768, 32768) +
                   b"0123456789")
        self.check("blocks.vti", content,
                   r"blocks\.vti: VTK image data, array v: a block header of 35184372088832 blocks needs "
                   r"281474976710680 bytes from byte \d+, more than the file holds \(%d bytes\)$" % len(content))

    def test_zlib_block_larger_than_the_budget(self):
        # One block of 2 GiB: its size against the memory budget, which --memory raises.
        content = (vti_header("0 2047 0 1023 0 1023", "vtkZLibDataCompressor") +
                   struct.pack("<QQQQ", 1, 1 << 31, 0, 10) + b"0123456789")
        self.check("block.vti", content,
                   r"block\.vti: zlib block of array \"v\" is 2147483648 bytes \(2048 MiB\), more than the memory "
                   r"budget for one piece \(1024 MiB, the default; --memory SIZE allows more\)$")


if __name__ == "__main__":
    e.main(verbosity=2)
