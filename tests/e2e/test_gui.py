#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""volseg-gui run unattended from the command line, as a batch user would:
the scripted session (--lo --hi --segment --screenshot --quit) writes the
same mask as 'volseg segment', on NetCDF input too; bad input and a missing
X display get one clear line and a non-zero exit. Run under xvfb-run."""
import os
import subprocess
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(__file__))
import e2e_util as u  # noqa: E402

GUI = os.environ.get("VOLSEG_GUI", "")


def gui(args, ranks=2, env=None, timeout=300):
    argv = [u.MPIEXEC] + u.MPI_QUIET + ["-np", str(ranks), "--bind-to", "none", GUI] + [str(a) for a in args]
    return subprocess.run(argv, capture_output=True, text=True, timeout=timeout, env=env)


def raw_bytes(header):
    return open(os.path.splitext(header)[0] + ".raw", "rb").read()


class ScriptedGui(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.TemporaryDirectory()
        cls.vol = os.path.join(cls.dir.name, "v.nhdr")
        proc = u.run(["generate", cls.vol, "--field", "shells", "--dims", "36,40,44", "--dtype", "f32", "--quiet"])
        assert proc.returncode == 0, proc.stderr

    def test_scripted_session_writes_the_batch_mask(self):
        d = self.dir.name
        for ranks in (1, 2):
            gmask, bmask = os.path.join(d, "g%d.nhdr" % ranks), os.path.join(d, "b%d.nhdr" % ranks)
            shot, window = os.path.join(d, "s%d.png" % ranks), os.path.join(d, "w%d.png" % ranks)
            proc = gui([self.vol, "--lo", 2, "--hi", 5, "--segment", "--out", gmask, "--screenshot", shot,
                        "--window-shot", window, "--size", "300x200", "--quit"], ranks=ranks)
            self.assertEqual(proc.returncode, 0, proc.stderr)
            u.check_ok(self, u.run(["segment", self.vol, "--lo", 2, "--hi", 5, "--out", bmask, "--quiet"], ranks=ranks))
            self.assertEqual(raw_bytes(gmask), raw_bytes(bmask))
            for png in (shot, window):
                with open(png, "rb") as f:
                    self.assertEqual(f.read(8), b"\x89PNG\r\n\x1a\n")
            # The 3D view's size is what --size asked for (PNG IHDR).
            with open(shot, "rb") as f:
                header = f.read(24)
            self.assertEqual((int.from_bytes(header[16:20], "big"), int.from_bytes(header[20:24], "big")), (300, 200))

    def test_zarr_input_and_mask(self):
        # A Zarr array opened, the mask written as an OME-Zarr label image, as the batch job writes it.
        import numpy as np
        try:
            import zarr
        except ImportError:
            self.skipTest("missing python3-zarr")
        d = self.dir.name
        store = os.path.join(d, "v.zarr")
        u.check_ok(self, u.run(["generate", store, "--field", "shells", "--dims", "36,40,44", "--quiet"], ranks=1))
        gmask, bmask = os.path.join(d, "g.ome.zarr"), os.path.join(d, "b.ome.zarr")
        proc = gui([store, "--lo", 2, "--hi", 5, "--segment", "--out", gmask, "--quit"], ranks=2)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        u.check_ok(self, u.run(["segment", store, "--lo", 2, "--hi", 5, "--out", bmask, "--quiet"], ranks=2))
        got, want = zarr.open_group(gmask, mode="r")["0"][:], zarr.open_group(bmask, mode="r")["0"][:]
        self.assertGreater(int(want.sum()), 0)
        np.testing.assert_array_equal(got, want)

    def test_netcdf_input_with_variable(self):
        d = self.dir.name
        nc = os.path.join(d, "v.nc")
        u.check_ok(self, u.run(["generate", nc, "--field", "shells", "--dims", "24,28,32", "--dtype", "f32",
                                "--format", "cdf5", "--quiet"]))
        gmask, bmask = os.path.join(d, "gn.nc"), os.path.join(d, "bn.nc")
        proc = gui([nc, "--lo", 1, "--hi", 4, "--segment", "--out", gmask, "--quit"])
        self.assertEqual(proc.returncode, 0, proc.stderr)
        u.check_ok(self, u.run(["segment", nc, "--lo", 1, "--hi", 4, "--out", bmask, "--quiet"]))
        import netCDF4  # Debian's
        with netCDF4.Dataset(gmask) as a, netCDF4.Dataset(bmask) as b:
            va = [v for v in a.variables.values() if v.ndim == 3][0][:]
            vb = [v for v in b.variables.values() if v.ndim == 3][0][:]
            self.assertTrue((va == vb).all())
            self.assertGreater(int(va.sum()), 0)

    def test_bad_input_one_line(self):
        d = self.dir.name
        cases = [
            ([os.path.join(d, "missing.nhdr"), "--quit"], "missing.nhdr"),
            ([self.vol, "--lo", 5, "--quit"], "--lo and --hi go together"),
            ([self.vol, "--size", "big", "--quit"], "--size"),
            ([self.vol, "--lo", 1, "--hi", 2, "--segment", "--out", self.vol, "--quit"], "v.nhdr"),
        ]
        for args, needle in cases:
            proc = gui(args)
            self.assertNotEqual(proc.returncode, 0, args)
            errors = [line for line in proc.stderr.splitlines() if line.startswith("volseg-gui: ")]
            self.assertEqual(len(errors), 1, proc.stderr)
            self.assertIn(needle, errors[0])

    def test_no_display_one_line(self):
        env = dict(os.environ)
        env.pop("DISPLAY", None)
        proc = gui([self.vol, "--quit"], env=env)
        self.assertNotEqual(proc.returncode, 0)
        errors = [line for line in proc.stderr.splitlines() if line.startswith("volseg-gui: error:")]
        self.assertEqual(len(errors), 1, proc.stderr)
        self.assertIn("display", errors[0].lower())


if __name__ == "__main__":
    if not GUI or not os.access(GUI, os.X_OK):
        sys.exit("e2e: set VOLSEG_GUI to the volseg-gui binary")
    u.require_binary()
    u.main(verbosity=2)
