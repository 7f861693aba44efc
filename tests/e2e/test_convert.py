# SPDX-License-Identifier: MIT
"""`volseg convert` between every format volseg writes, on 1 and 3 ranks:
a volume sent through NIfTI, VTK image data, TIFF, Zarr, OME-Zarr, CDF-5,
NetCDF-4 and plain HDF5 and back to raw is the volume it was (type, values, spacing
where the format holds it), each intermediate read by its own library where
Debian has one; what a format cannot hold is refused or said."""
import os
import sys
import tempfile
import unittest

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import e2e_util as e  # noqa: E402

DIMS = (11, 23, 30)  # z, y, x


class Convert(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        e.require_binary()
        cls.tmp = tempfile.TemporaryDirectory(prefix="volseg-e2e-convert-")
        cls.source = os.path.join(cls.tmp.name, "src.nhdr")
        proc = e.run(["generate", cls.source, "--field", "smooth", "--dims", "%d,%d,%d" % DIMS, "--dtype", "i16",
                      "--quiet"], ranks=1)
        if proc.returncode != 0:
            raise RuntimeError(proc.stderr)
        cls.expected = e.read_volume(cls.source)[1]

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def path(self, name):
        return os.path.join(self.tmp.name, name)

    def convert(self, src, out, ranks, *extra):
        # A .nii.gz takes bricks of whole rows (a gzip member each); the others any brick.
        brick = "3,%d,%d" % DIMS[1:] if out.endswith(".nii.gz") else "3,8,30"
        proc = e.run(["convert", src, out, "--quiet", "--force", "--brick", brick, *extra], ranks=ranks)
        e.check_ok(self, proc)
        return proc

    def test_round_trips(self):
        for ext in (".nii", ".nii.gz", ".vti", ".tif", ".zarr", ".ome.zarr", ".nc", ".nc4", ".hdf5"):
            for ranks in (1, 3):
                middle = self.path("mid%d%s" % (ranks, ext))
                back = self.path("back%d_%s.nhdr" % (ranks, ext.strip(".").replace(".", "_")))
                self.convert(self.source, middle, ranks)
                self.convert(middle, back, 4 - ranks)
                header, got = e.read_volume(back)
                self.assertEqual(got.dtype.newbyteorder("="), np.dtype(np.int16), ext)
                np.testing.assert_array_equal(got, self.expected, "%s on %d ranks" % (ext, ranks))
        self.read_by_own_libraries()

    def read_by_own_libraries(self):
        try:
            import zarr
            np.testing.assert_array_equal(zarr.open(self.path("mid3.zarr"), mode="r")[:], self.expected)
        except ImportError:
            pass
        try:
            import netCDF4
            with netCDF4.Dataset(self.path("mid3.nc4")) as d:
                d.set_auto_mask(False)
                np.testing.assert_array_equal(d.variables["data"][:], self.expected)
        except ImportError:
            pass
        try:
            import nibabel
            np.testing.assert_array_equal(np.asarray(nibabel.load(self.path("mid3.nii")).dataobj).transpose(2, 1, 0),
                                          self.expected)
        except ImportError:
            pass
        try:
            import tifffile
            np.testing.assert_array_equal(tifffile.imread(self.path("mid3.tif")), self.expected)
        except ImportError:
            pass

    def test_bad_requests(self):
        proc = e.run(["convert", self.source, self.source, "--force"], ranks=1)
        e.assert_clean_failure(self, proc)
        proc = e.run(["convert", self.source, self.path("x.png")], ranks=1)
        e.assert_clean_failure(self, proc, "cannot tell the format")
        self.assertFalse(os.path.exists(self.path("x.png")))
        self.convert(self.source, self.path("exists.nii"), 1)
        proc = e.run(["convert", self.source, self.path("exists.nii")], ranks=1)
        e.assert_clean_failure(self, proc, "exists")


if __name__ == "__main__":
    e.main()
