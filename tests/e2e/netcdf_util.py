# SPDX-License-Identifier: MIT
"""Shared helpers of test_netcdf.py, test_netcdf_tools.py and
test_netcdf_bad_input.py: volseg's NetCDF input and output, checked by the
NetCDF tools of Debian.

- Outputs: ncvalidator, 'ncdump -k', 'ncdump -h', 'h5dump -H' accept the
  masks volseg writes (CDF-2, CDF-5, NetCDF-4; 1 and 3 ranks), and python's
  netCDF4 reads the mask numpy computes from the input.
- Inputs made by other tools: nccopy (CDF-5; NetCDF-4 chunked + deflated)
  and ncgen from CDL written here (a record variable, several variables,
  packed data, fill/missing/valid attributes, byte/uint/int64/uint64).
- Cross-format: one field as raw, CDF-2, CDF-5 and NetCDF-4, segmented on 1-4
  ranks by every reader: the masks are byte-identical.
- Bad NetCDF/HDF5 input: one 'volseg: error:' line, non-zero exit, no file
  left behind (hidden temporaries included), on 1 and 2 ranks.

The expected masks come from netCDF4 (auto mask and scale off) and numpy,
following the NetCDF User Guide: _FillValue or the type's default fill (none
for byte types), missing_value, valid_min/valid_max/valid_range in stored
units; scale_factor/add_offset unpack, and thresholds are in unpacked units."""
import math
import os
import re
import shutil
import subprocess
import sys
import tempfile
import unittest

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import e2e_util as e  # noqa: E402

try:
    import netCDF4
except ImportError:  # Debian: python3-netcdf4
    netCDF4 = None
try:
    import h5py
except ImportError:  # Debian: python3-h5py
    h5py = None

DIMS = (17, 19, 23)  # z, y, x of generated volumes
CDL_DIMS = (4, 5, 6)  # z, y, x of the CDL files
KINDS = {"cdf2": "64-bit offset", "cdf5": ("cdf5", "64-bit data"), "netcdf4": "netCDF-4"}
NCGEN_KIND = {"cdf2": ["-k", "64-bit-offset"], "cdf5": ["-5"], "netcdf4": ["-k", "nc4"]}
TOOLS = ("ncdump", "ncgen", "nccopy", "ncvalidator", "h5dump")


def require_tools(test):
    if netCDF4 is None:
        test.skipTest("missing python3-netcdf4")
    missing = [tool for tool in TOOLS if shutil.which(tool) is None]
    if missing:
        test.skipTest("missing NetCDF tools: " + " ".join(missing))


def tool(test, argv, cwd=None, ok=True):
    """Runs a NetCDF/HDF5 tool; returns the CompletedProcess (text)."""
    proc = subprocess.run([str(a) for a in argv], capture_output=True, text=True, cwd=cwd, timeout=120)
    if ok:
        test.assertEqual(proc.returncode, 0, "%s failed:\n%s%s" % (" ".join(proc.args), proc.stdout, proc.stderr))
    return proc


def read_var(path, name, time=None):
    """(stored values as numpy, {attribute: value}) of a variable, read by
    netCDF4 without masking or unpacking."""
    with netCDF4.Dataset(path) as ds:
        ds.set_auto_maskandscale(False)
        var = ds.variables[name]
        values = np.array(var[time] if time is not None else var[:])
        attrs = {key: var.getncattr(key) for key in var.ncattrs()}
    return values, attrs


def first(value):
    return np.asarray(value).ravel()[0]


def at_least(values, t):
    """values >= t, exactly (integers against a double threshold too)."""
    if values.dtype.kind == "f":
        return values.astype(np.float64) >= t
    if t == -math.inf:
        return np.ones(values.shape, bool)
    if t == math.inf:
        return np.zeros(values.shape, bool)
    c, info = math.ceil(t), np.iinfo(values.dtype)
    if c <= info.min:
        return np.ones(values.shape, bool)
    if c > info.max:
        return np.zeros(values.shape, bool)
    return values >= values.dtype.type(c)


def at_most(values, t):
    if values.dtype.kind == "f":
        return values.astype(np.float64) <= t
    if t == math.inf:
        return np.ones(values.shape, bool)
    if t == -math.inf:
        return np.zeros(values.shape, bool)
    f, info = math.floor(t), np.iinfo(values.dtype)
    if f >= info.max:
        return np.ones(values.shape, bool)
    if f < info.min:
        return np.zeros(values.shape, bool)
    return values <= values.dtype.type(f)


def valid_voxels(values, attrs):
    """The NUG's valid data: not NaN, not _FillValue (or the default fill,
    except for byte types), not missing_value, inside valid_min/valid_max or
    valid_range; all compared in the stored type."""
    kind = values.dtype
    valid = ~np.isnan(values) if kind.kind == "f" else np.ones(values.shape, bool)
    fill = attrs.get("_FillValue")
    if fill is None and kind.itemsize > 1:
        fill = netCDF4.default_fillvals[kind.str[1:]]
    for excluded in (fill, attrs.get("missing_value")):
        if excluded is not None:
            valid &= values != np.array(first(excluded)).astype(kind)
    low, high = attrs.get("valid_min"), attrs.get("valid_max")
    if "valid_range" in attrs:
        low, high = np.asarray(attrs["valid_range"]).ravel()[:2]
    if low is not None:
        valid &= values >= np.array(first(low)).astype(kind)
    if high is not None:
        valid &= values <= np.array(first(high)).astype(kind)
    return valid


def expected_mask(values, attrs, lo, hi):
    """u8 mask: valid and lo <= value <= hi, value unpacked (float64) when
    the variable has scale_factor/add_offset, else compared exactly."""
    valid = valid_voxels(values, attrs)
    if "scale_factor" in attrs or "add_offset" in attrs:
        scale = float(first(attrs.get("scale_factor", 1.0)))
        offset = float(first(attrs.get("add_offset", 0.0)))
        unpacked = values.astype(np.float64) * scale + offset
        inside = (unpacked >= lo) & (unpacked <= hi)
    else:
        inside = at_least(values, lo) & at_most(values, hi)
    return (valid & inside).astype(np.uint8)


def cdl_data(values, fill=None):
    """CDL data text of an array (C order); '_' where fill is True."""
    kind = values.dtype
    words = []
    for n, x in enumerate(values.ravel()):
        if fill is not None and fill.ravel()[n]:
            words.append("_")
        elif kind.kind == "f":
            if np.isnan(x):
                words.append("NaNf" if kind.itemsize == 4 else "NaN")
            else:
                words.append(repr(float(x)))
        else:
            words.append(str(int(x)))
    return ", ".join(words)


class Base(unittest.TestCase):
    prefix = "volseg-e2e-netcdf-"

    @classmethod
    def setUpClass(cls):
        e.require_binary()
        cls.tmp = tempfile.TemporaryDirectory(prefix=cls.prefix)
        cls.dir = cls.tmp.name
        cls.runs = 0

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def setUp(self):
        require_tools(self)

    def path(self, name):
        return os.path.join(self.dir, name)

    def volseg(self, args, ranks=2):
        proc = e.run([str(a) for a in args] + ["--quiet"], ranks=ranks, mpi=ranks > 1, cwd=self.dir)
        e.check_ok(self, proc)
        return proc

    def generate(self, name, fmt, field="smooth", dtype="f32", var=None, dims=DIMS, ranks=2):
        path = self.path(name)
        args = ["generate", path, "--format", fmt, "--field", field, "--dims", ",".join(map(str, dims)),
                "--dtype", dtype]
        if var:
            args += ["--var", var]
        self.volseg(args, ranks)
        return path

    def ncgen(self, name, text, kind):
        """Writes NAME.cdl and builds NAME-KIND.nc from it with ncgen -b."""
        cdl = self.path(name + ".cdl")
        with open(cdl, "w") as f:
            f.write(text)
        out = self.path("%s-%s.nc" % (name, kind))
        tool(self, ["ncgen", "-b", *NCGEN_KIND[kind], "-o", out, cdl])
        return out

    def segment(self, path, lo, hi, var=None, time=None, ranks=2, out_ext=".nc", extra=()):
        """Runs volseg segment into a fresh output; returns its path."""
        type(self).runs += 1
        out = self.path("mask-%d%s" % (self.runs, out_ext))
        args = ["segment", path, "--lo=%r" % float(lo), "--hi=%r" % float(hi), "--out", out, *extra]
        if var:
            args += ["--var", var]
        if time is not None:
            args += ["--time", str(time)]
        self.volseg(args, ranks)
        return out

    def read_mask(self, out):
        """The mask as u8 (z, y, x): an .nhdr by numpy, else by netCDF4."""
        if out.endswith(".nhdr"):
            header, mask = e.read_volume(out)
            self.assertEqual(header["dtype"].str[1:], "u1")
            return mask
        values, attrs = read_var(out, "mask")
        self.assertIn(values.dtype, (np.dtype("u1"), np.dtype("i1")))
        self.assertTrue(np.isin(values, (0, 1)).all(), "mask values other than 0 and 1")
        return values.view(np.uint8)

    def check_mask(self, out, values, attrs, lo, hi, nonempty=True):
        mask = self.read_mask(out)
        expected = expected_mask(values, attrs, lo, hi)
        self.assertEqual(mask.shape, values.shape)
        wrong = np.argwhere(mask != expected)
        self.assertEqual(len(wrong), 0, "%s: %d voxels differ, first (z,y,x)=%s value %r mask %d expected %d"
                         % (out, len(wrong), wrong[:1].tolist(), values[tuple(wrong[0])] if len(wrong) else None,
                            mask[tuple(wrong[0])] if len(wrong) else -1,
                            expected[tuple(wrong[0])] if len(wrong) else -1))
        if nonempty:
            self.assertGreater(int(expected.sum()), 0, "a test range that selects nothing")
        return mask
