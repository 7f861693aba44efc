#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""volseg against an independent implementation in numpy.

Volumes come from 'volseg generate' (every field, dtype and byte order, odd
dims); the test reads them with its own NRRD parser and numpy, recomputes the
shells and noise fields from their formulas, and checks that 'volseg segment'
on 2 ranks (every backend, several brick shapes and assignments) writes the
mask numpy computes in float64, with the statistics numpy computes."""
import json
import math
import os
import sys
import tempfile
import unittest

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import e2e_util as e  # noqa: E402

DIMS = (37, 41, 53)  # z, y, x
ENDIANS = ("little", "big")
FIELDS = ("shells", "smooth", "noise")
BACKENDS = ("posix", "mmap", "mmap-advise")
# Default (one brick), partial rows, whole planes, whole rows.
BRICKS = (None, "7,13,17", "5,41,53", "9,6,53")
ASSIGNS = ("block", "cyclic", "random")
SHELL_WIDTH = 3


def is_float(kind):
    return np.dtype(kind).kind == "f"


def unit_scale(kind):
    """What generate multiplies the [0, 1] fields by."""
    return 1.0 if is_float(kind) else float(min(np.iinfo(kind).max, 65535))


def default_range(field, kind):
    """Thresholds exactly representable in every dtype."""
    if field == "shells":
        return 1.0, 2.0
    if is_float(kind):
        return 0.25, 0.5
    s = unit_scale(kind)
    return float(round(0.25 * s)), float(round(0.5 * s))


def expected_shells(shape, width, kind):
    """k = isqrt(dz^2 + dy^2 + dx^2) // (2 width) in doubled coordinates,
    clamped to the dtype's maximum; isqrt by math.isqrt, exactly."""
    nz, ny, nx = shape
    dz, dy, dx = np.ogrid[0:nz, 0:ny, 0:nx]
    d2 = (2 * dz - (nz - 1)) ** 2 + (2 * dy - (ny - 1)) ** 2 + (2 * dx - (nx - 1)) ** 2
    unique, inverse = np.unique(d2, return_inverse=True)
    roots = np.array([math.isqrt(int(n)) for n in unique], dtype=np.int64)
    k = (roots[inverse] // (2 * width)).reshape(shape)
    if not is_float(kind):
        k = np.minimum(k, np.iinfo(kind).max)
    return k.astype(np.float64)


def splitmix64(x):
    with np.errstate(over="ignore"):
        x = x + np.uint64(0x9E3779B97F4A7C15)
        x = (x ^ (x >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        x = (x ^ (x >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        return x ^ (x >> np.uint64(31))


def expected_noise(shape, seed, kind):
    """u = (splitmix64(index ^ seed * C) >> 11) * 2^-53, for float dtypes."""
    index = np.arange(int(np.prod(shape)), dtype=np.uint64).reshape(shape)
    with np.errstate(over="ignore"):
        salt = np.uint64((seed * 0x632BE59BD9B4E019) % (1 << 64))
    u = (splitmix64(index ^ salt) >> np.uint64(11)).astype(np.float64) * 2.0 ** -53
    return u.astype(kind).astype(np.float64)


class NumpyCompare(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        e.require_binary()
        cls.tmp = tempfile.TemporaryDirectory(prefix="volseg-e2e-numpy-")
        cls.dir = cls.tmp.name
        cls.volumes = []  # (field, dtype, endian, header path)
        helper = unittest.TestCase()
        for dtype in e.DTYPES:
            for endian in ENDIANS:
                for field in FIELDS:
                    path = os.path.join(cls.dir, "%s-%s-%s.nhdr" % (field, dtype, endian))
                    extra = ["--shell-width", str(SHELL_WIDTH)] if field == "shells" else []
                    e.generate(helper, path, field, DIMS, dtype, endian, extra=extra)
                    cls.volumes.append((field, dtype, endian, path))
        cls.runs = 0

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def volume(self, field, dtype, endian):
        return os.path.join(self.dir, "%s-%s-%s.nhdr" % (field, dtype, endian))

    def segment(self, path, lo, hi, backend="mmap-advise", brick=None, assign="block", ranks=2):
        """Runs volseg segment; returns (mask array (z,y,x) of uint8, report)."""
        type(self).runs += 1
        out = os.path.join(self.dir, "mask-%d.nhdr" % self.runs)
        report = os.path.join(self.dir, "report-%d.json" % self.runs)
        args = ["segment", path, "--lo=%r" % lo, "--hi=%r" % hi, "--out", out, "--report", report,
                "--backend", backend, "--assign", assign, "--seed", "7", "--quiet"]
        if brick:
            args += ["--brick", brick]
        e.check_ok(self, e.run(args, ranks=ranks))
        header, mask = e.read_volume(out)
        self.assertEqual(header["dtype"].kind + str(header["dtype"].itemsize), "u1")
        with open(report) as f:
            stats = json.load(f)["stats"]
        os.remove(header["data"])
        os.remove(out)
        return mask, stats

    def check(self, values, lo, hi, mask, stats, valid=None):
        """mask == (valid & lo <= v <= hi) and the report's stats, in float64."""
        v = values.astype(np.float64)
        if valid is None:
            valid = ~np.isnan(v)
        expected = (valid & (v >= lo) & (v <= hi)).astype(np.uint8)
        self.assertEqual(mask.shape, values.shape)
        wrong = np.argwhere(mask != expected)
        self.assertEqual(len(wrong), 0, "%d voxels differ, first (z,y,x)=%s value %r lo %r hi %r mask %d"
                         % (len(wrong), wrong[:1].tolist(), v[tuple(wrong[0])] if len(wrong) else None,
                            lo, hi, mask[tuple(wrong[0])] if len(wrong) else -1))
        self.assertEqual(stats["voxels"], values.size)
        self.assertEqual(stats["valid"], int(valid.sum()))
        self.assertEqual(stats["in_range"], int(expected.sum()))
        if valid.any():
            self.assertEqual(stats["min"], float(v[valid].min()))
            self.assertEqual(stats["max"], float(v[valid].max()))

    def test_generated_headers(self):
        """The header says what was asked for, and the data file has its size."""
        for field, dtype, endian, path in self.volumes:
            with self.subTest(field=field, dtype=dtype, endian=endian):
                header, values = e.read_volume(path)
                self.assertEqual(header["shape"], DIMS)
                self.assertEqual(header["endian"], endian)
                self.assertEqual(header["dtype"], np.dtype(e.DTYPES[dtype]).newbyteorder(
                    "<" if endian == "little" else ">"))
                self.assertEqual(header["keyvalues"].get("field"), field)
                self.assertTrue(np.isfinite(values.astype(np.float64)).all())

    def test_shells_formula(self):
        for field, dtype, endian, path in self.volumes:
            if field != "shells":
                continue
            with self.subTest(dtype=dtype, endian=endian):
                _, values = e.read_volume(path)
                expected = expected_shells(DIMS, SHELL_WIDTH, e.DTYPES[dtype])
                np.testing.assert_array_equal(values.astype(np.float64), expected)

    def test_shells_clamped_thin_volumes(self):
        """Long thin volumes (fewer planes than ranks) whose outer shells pass
        the dtype's maximum: stored values saturate, and a range reaching the
        maximum takes them all."""
        for dims, dtype, endian, lo, hi in (((3, 5, 601), "u8", "big", 250, 255),
                                            ((1, 2, 65601), "i16", "little", 32767, 32767)):
            path = os.path.join(self.dir, "thin-%s.nhdr" % dtype)
            e.generate(self, path, "shells", dims, dtype, endian, extra=["--shell-width", "1"])
            _, values = e.read_volume(path)
            expected = expected_shells(dims, 1, e.DTYPES[dtype])
            top = np.iinfo(e.DTYPES[dtype]).max
            with self.subTest(dtype=dtype, dims=dims):
                np.testing.assert_array_equal(values.astype(np.float64), expected)
                self.assertEqual(int(values.max()), top)
                for backend, brick in (("posix", None), ("mmap", "1,1,999")):
                    mask, stats = self.segment(path, lo, hi, backend, brick, "cyclic")
                    self.check(values, lo, hi, mask, stats)
                    self.assertGreater(stats["in_range"], 0)

    def test_noise_formula(self):
        for field, dtype, endian, path in self.volumes:
            if field != "noise" or not is_float(e.DTYPES[dtype]):
                continue
            with self.subTest(dtype=dtype, endian=endian):
                _, values = e.read_volume(path)
                np.testing.assert_array_equal(values.astype(np.float64),
                                              expected_noise(DIMS, 1, e.DTYPES[dtype]))

    def test_unit_fields_in_range(self):
        for field, dtype, endian, path in self.volumes:
            if field == "shells":
                continue
            with self.subTest(field=field, dtype=dtype, endian=endian):
                _, values = e.read_volume(path)
                v = values.astype(np.float64)
                s = unit_scale(e.DTYPES[dtype])
                self.assertGreaterEqual(v.min(), 0.0)
                self.assertLessEqual(v.max(), s)
                self.assertGreater(v.max() - v.min(), 0.5 * s)  # not constant

    def test_segment_every_volume(self):
        """Every field x dtype x byte order; backends rotate so that each
        (dtype, byte order) meets all three, bricks and assignments too."""
        for i, (field, dtype, endian, path) in enumerate(self.volumes):
            backend = BACKENDS[i % 3]
            brick = BRICKS[(i // 3) % len(BRICKS)]
            assign = ASSIGNS[(i // 2) % len(ASSIGNS)]
            lo, hi = default_range(field, e.DTYPES[dtype])
            with self.subTest(field=field, dtype=dtype, endian=endian, backend=backend, brick=brick,
                              assign=assign):
                _, values = e.read_volume(path)
                mask, stats = self.segment(path, lo, hi, backend, brick, assign)
                self.check(values, lo, hi, mask, stats)
                self.assertGreater(stats["in_range"], 0)
                self.assertLess(stats["in_range"], values.size)

    def test_thresholds_between_values(self):
        """Thresholds that no value of the dtype equals: fractional, below
        the type's range, above it, infinite."""
        for n, dtype in enumerate(e.DTYPES):
            kind = e.DTYPES[dtype]
            s = unit_scale(kind)
            if is_float(kind):
                ranges = [(0.1, 0.7), (-math.inf, 0.3), (0.6, 1e300), (2.0, 3.0)]
            else:
                ranges = [(math.floor(0.3 * s) + 0.5, math.floor(0.6 * s) + 0.5), (-1e300, 0.3 * s + 0.25),
                          (-3.5, -0.5), (0.7 * s, math.inf)]
            endian = ENDIANS[n % 2]
            path = self.volume("smooth", dtype, endian)
            _, values = e.read_volume(path)
            for m, (lo, hi) in enumerate(ranges):
                backend = BACKENDS[(n + m) % 3]
                with self.subTest(dtype=dtype, endian=endian, lo=lo, hi=hi, backend=backend):
                    mask, stats = self.segment(path, lo, hi, backend, brick="5,7,53")
                    self.check(values, lo, hi, mask, stats)

    def test_single_value_range(self):
        """lo == hi == a value that occurs: exactly its voxels."""
        for n, dtype in enumerate(e.DTYPES):
            endian = ENDIANS[n % 2]
            path = self.volume("noise", dtype, endian)
            _, values = e.read_volume(path)
            value = float(values[20, 11, 31])
            with self.subTest(dtype=dtype, endian=endian, value=value):
                mask, stats = self.segment(path, value, value, BACKENDS[n % 3])
                self.check(values, value, value, mask, stats)
                self.assertGreaterEqual(stats["in_range"], 1)

    def test_fill_value_excluded(self):
        """A _FillValue:= key added by hand: voxels equal to it are neither
        valid nor in the mask, whatever the range."""
        cases = [("smooth", "f32", "little", None), ("smooth", "f32", "big", None),
                 ("smooth", "f64", "big", None), ("shells", "i16", "big", 1.0), ("shells", "u8", "little", 2.0)]
        for n, (field, dtype, endian, fill) in enumerate(cases):
            source = self.volume(field, dtype, endian)
            _, values = e.read_volume(source)
            lo, hi = default_range(field, e.DTYPES[dtype])
            v = values.astype(np.float64)
            if fill is None:  # a value inside the range that occurs
                fill = float(v[(v >= lo) & (v <= hi)][100])
            path = os.path.join(self.dir, "fill-%d.nhdr" % n)
            e.add_keyvalue(source, path, "_FillValue:=%r" % fill)
            backend = BACKENDS[n % 3]
            with self.subTest(field=field, dtype=dtype, endian=endian, fill=fill, backend=backend):
                mask, stats = self.segment(path, lo, hi, backend, brick="4,41,53")
                valid = v != fill
                self.assertLess(int(valid.sum()), values.size)
                self.check(values, lo, hi, mask, stats, valid)

    def test_valid_range_excluded(self):
        source = self.volume("smooth", "f32", "big")
        _, values = e.read_volume(source)
        path = os.path.join(self.dir, "valid-range.nhdr")
        e.add_keyvalue(source, path, "valid_range:=0.3 0.9")
        v = values.astype(np.float64)
        for backend in BACKENDS:
            with self.subTest(backend=backend):
                mask, stats = self.segment(path, 0.25, 0.5, backend)
                self.check(values, 0.25, 0.5, mask, stats, (v >= 0.3) & (v <= 0.9))

    def test_nan_voxels_outside(self):
        """NaNs written by hand into a f32 raw file: never in the mask, not
        valid, not the min or max, even with an infinite range."""
        for endian in ENDIANS:
            source = self.volume("smooth", "f32", endian)
            header, values = e.read_volume(source)
            values = values.copy()
            spots = [(0, 0, 0), (36, 40, 52), (18, 20, 26), (5, 17, 3), (30, 2, 50)]
            for spot in spots:
                values[spot] = np.nan
            data = os.path.join(self.dir, "nan-%s.raw" % endian)
            values.tofile(data)  # keeps the file's byte order (values has it)
            path = os.path.join(self.dir, "nan-%s.nhdr" % endian)
            e.add_keyvalue(source, path, None, data_file=os.path.basename(data))
            _, reread = e.read_volume(path)
            self.assertEqual(int(np.isnan(reread).sum()), len(spots))
            for n, backend in enumerate(BACKENDS):
                lo, hi = ((0.0, 1.0), (-math.inf, math.inf))[n % 2]
                with self.subTest(endian=endian, backend=backend, lo=lo, hi=hi):
                    mask, stats = self.segment(path, lo, hi, backend, brick="7,13,17")
                    self.check(reread, lo, hi, mask, stats)
                    for spot in spots:
                        self.assertEqual(mask[spot], 0)

    def test_direct_mask_writes(self):
        """Bricks of whole planes whose mask planes are whole pages (64 x 64
        bytes) are written with O_DIRECT: the same mask as numpy's and as
        buffered writes (--out-hint direct_write=0) on every backend, both
        byte orders and 1-3 ranks; and, where the file system takes O_DIRECT,
        none of its pages in the page cache after the job (mincore), while the
        buffered mask's are."""
        dims = (45, 64, 64)
        for endian in ENDIANS:
            path = os.path.join(self.dir, "direct-%s.nhdr" % endian)
            e.generate(self, path, "smooth", dims, "f32", endian)
            _, values = e.read_volume(path)
            for n, backend in enumerate(BACKENDS + ("ranged-uring",)):
                ranks = 1 + n % 3
                masks = {}
                for direct in (1, 0):
                    out = os.path.join(self.dir, "direct-mask-%d.nhdr" % direct)
                    report = os.path.join(self.dir, "direct-report-%d.json" % direct)
                    with self.subTest(endian=endian, backend=backend, direct=direct, ranks=ranks):
                        e.check_ok(self, e.run(["segment", path, "--lo", "0.25", "--hi", "0.5", "--out", out,
                                                "--report", report, "--backend", backend, "--brick", "4,64,64",
                                                "--out-hint", "direct_write=%d" % direct, "--quiet", "--force"],
                                               ranks=ranks))
                        resident = resident_fraction(e.parse_nhdr(out)["data"])  # before reading it
                        _, mask = e.read_volume(out)
                        with open(report) as f:
                            self.check(values, 0.25, 0.5, mask, json.load(f)["stats"])
                        masks[direct] = (mask, resident)
                with self.subTest(endian=endian, backend=backend):
                    np.testing.assert_array_equal(masks[1][0], masks[0][0])
                    if direct_io_works(self.dir):
                        self.assertEqual(masks[1][1], 0.0, "direct writes left the mask in the page cache")
                        self.assertGreater(masks[0][1], 0.0, "buffered writes left nothing in the page cache")


def direct_io_works(folder):
    """Whether the file system under folder takes O_DIRECT (tmpfs does not)."""
    probe = os.path.join(folder, "direct-probe")
    try:
        fd = os.open(probe, os.O_CREAT | os.O_WRONLY | os.O_DIRECT, 0o644)
    except OSError:
        return False
    os.close(fd)
    os.remove(probe)
    return True


def resident_fraction(path):
    """Share of the file's pages in the page cache (mmap + mincore)."""
    import ctypes
    import mmap
    libc = ctypes.CDLL(None, use_errno=True)
    libc.mmap.restype = ctypes.c_void_p
    libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_long]
    libc.mincore.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_void_p]
    libc.munmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
    size = os.path.getsize(path)
    pages = (size + mmap.PAGESIZE - 1) // mmap.PAGESIZE
    fd = os.open(path, os.O_RDONLY)
    try:
        address = libc.mmap(None, size, mmap.PROT_READ, mmap.MAP_SHARED, fd, 0)
        if address in (None, ctypes.c_void_p(-1).value):
            raise OSError(ctypes.get_errno(), "mmap " + path)
        vec = (ctypes.c_ubyte * pages)()
        rc = libc.mincore(address, size, vec)
        libc.munmap(address, size)
        if rc != 0:
            raise OSError(ctypes.get_errno(), "mincore " + path)
        return sum(v & 1 for v in vec) / pages
    finally:
        os.close(fd)


if __name__ == "__main__":
    e.main()
