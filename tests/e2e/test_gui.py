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


def entered_by_others(path):
    """Whether users other than its owner can reach path: every folder above it lets others in."""
    here = os.path.abspath(path)
    while os.path.dirname(here) != here:
        here = os.path.dirname(here)
        if not os.stat(here).st_mode & 0o001:
            return False
    return True


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

    def test_pyramids_are_found_again_and_kept_in_the_cache_beside_read_only_files(self):
        # A variable and step of a NetCDF file keep their pyramid beside it:
        # the second open finds it instead of building it again. A file in a
        # folder the user cannot write (a shared dataset) gets its pyramid in
        # the user's cache, $XDG_CACHE_HOME/volseg/pyramids; before, it could
        # not be opened at all.
        import shutil
        try:
            import netCDF4
            import numpy as np
        except ImportError:
            self.skipTest("missing python3-netcdf4")
        base = tempfile.mkdtemp(prefix="volseg-gui-pyramids-")  # another user (nobody) must reach it
        self.addCleanup(shutil.rmtree, base, True)
        os.chmod(base, 0o755)
        nc = os.path.join(base, "two.nc")
        with netCDF4.Dataset(nc, "w") as f:
            for dim, n in (("time", 2), ("z", 12), ("y", 14), ("x", 16)):
                f.createDimension(dim, n)
            for name in ("u", "v"):
                f.createVariable(name, "f4", ("time", "z", "y", "x"))[:] = np.random.default_rng(1).random((2, 12, 14, 16))
        pyramid = os.path.join(base, "two-u-1.pyramid", "index.json")
        proc = gui([nc, "--var", "u", "--time", 1, "--quit"], ranks=1)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        built = os.stat(pyramid).st_mtime_ns
        proc = gui([nc, "--var", "u", "--time", 1, "--quit"], ranks=1)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertEqual(os.stat(pyramid).st_mtime_ns, built, "the pyramid was built again")

        shared, cache = os.path.join(base, "shared"), os.path.join(base, "cache")
        os.mkdir(shared)
        os.mkdir(cache)
        os.chmod(cache, 0o777)
        shutil.copy(nc, shared)
        os.chmod(os.path.join(shared, "two.nc"), 0o644)
        os.chmod(shared, 0o555)
        try:
            args = [os.path.join(shared, "two.nc"), "--var", "v", "--time", 0, "--quit"]
            if os.geteuid() == 0:  # root writes anywhere: run as nobody, on an X server that lets it in
                if not shutil.which("setpriv") or not shutil.which("xvfb-run"):
                    self.skipTest("root without setpriv or xvfb-run: cannot run as another user")
                if not entered_by_others(GUI):
                    self.skipTest("the build is in a folder other users cannot enter (%s): the read-only case "
                                  "needs another user" % os.path.dirname(GUI))
                argv = u.xvfb_run("-ac -screen 0 1280x1024x24") + ["setpriv", "--reuid=nobody",
                        "--regid=nogroup", "--clear-groups", "env", "HOME=" + cache, "XDG_CACHE_HOME=" + cache,
                        "XAUTHORITY=/dev/null", GUI] + [str(a) for a in args]
                proc = subprocess.run(argv, capture_output=True, text=True, timeout=300)
            else:
                proc = gui(args, ranks=1, env=dict(os.environ, XDG_CACHE_HOME=cache))
            self.assertEqual(proc.returncode, 0, proc.stderr)
            self.assertEqual(os.listdir(shared), ["two.nc"])
            kept = os.listdir(os.path.join(cache, "volseg", "pyramids"))
            self.assertEqual(len(kept), 1, kept)
            self.assertRegex(kept[0], r"^two-[0-9a-f]{16}-v-0\.pyramid$")
        finally:
            os.chmod(shared, 0o755)

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
