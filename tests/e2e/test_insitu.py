# SPDX-License-Identifier: MIT
"""The in-situ hook against the batch path: volseg-sim dumps the field of
every in-situ step; `volseg segment` of each dump must give the same mask as
the hook wrote in situ (raw: the same bytes; NetCDF: the same decoded
variables and attributes, history aside) and the same statistics, on 1-4
ranks, with 1 and 2 ghost layers, for every writer format. The Catalyst
Python scripts' outputs are read back by ParaView (pvpython) and compared
with the dumps. Bad input gets one clear line.

Runs under one Xvfb (the Catalyst scripts render)."""
import csv
import json
import os
import re
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

SIM = os.environ.get("VOLSEG_SIM", "")
PVPYTHON = os.environ.get("PVPYTHON", "/usr/bin/pvpython")
SCRIPTS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "app", "insitu", "scripts")
DIMS = "23,19,17"  # z, y, x: no rank count divides it evenly
LO, HI = "0.05", "1"
EXTENSIONS = {"raw": ".nhdr", "cdf2": ".nc", "cdf5": ".nc", "netcdf4": ".nc4"}


def sim(args, ranks, cwd, timeout=300):
    argv = [e.MPIEXEC] + e.MPI_QUIET + ["-np", str(ranks), "--bind-to", "none", SIM] + [str(a) for a in args]
    return subprocess.run(argv, cwd=cwd, capture_output=True, text=True, timeout=timeout)


def netcdf_contents(path):
    """Every variable's decoded values and every attribute, history aside."""
    with netCDF4.Dataset(path) as ds:
        contents = {"global": {k: str(ds.getncattr(k)) for k in ds.ncattrs() if k != "history"},
                    "dims": {name: len(d) for name, d in ds.dimensions.items()}, "format": ds.data_model}
        for name, var in ds.variables.items():
            attrs = {k: str(var.getncattr(k)) for k in var.ncattrs() if k != "history"}
            contents[name] = (np.array(var[:]), attrs, var.dtype.str)
    return contents


class Base(unittest.TestCase):
    """A temporary folder per class, and volseg-sim (and volseg) at hand."""
    prefix = "volseg-e2e-insitu-"

    @classmethod
    def setUpClass(cls):
        e.require_binary()
        if not SIM or not os.access(SIM, os.X_OK):
            raise unittest.SkipTest("set VOLSEG_SIM to the volseg-sim binary")
        cls.tmp = tempfile.TemporaryDirectory(prefix=cls.prefix)
        cls.dir = cls.tmp.name

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()


class InSituLabels(Base):
    """--label: the objects the hook counts across the ranks' blocks (a 3D
    decomposition on 4 ranks, a slab one on 2) equal 'volseg label' of the
    step's dump, itself checked against scipy in test_label.py."""

    def test_label_counts_match_batch(self):
        most = 0
        for ranks, connectivity in ((1, 26), (2, 6), (4, 26), (4, 18)):
            with self.subTest(ranks=ranks, connectivity=connectivity):
                work = os.path.join(self.dir, "label_np%d_c%d" % (ranks, connectivity))
                os.makedirs(work)
                proc = sim(["--dims", DIMS, "--steps", 4, "--ghost", 1, "--quiet", "--dump", "dumps/v_%04d.nhdr",
                            "--dump-format", "raw", "--insitu", "--lo", "0.0001", "--hi", "0.001", "--every", 2,
                            "--label", "--connectivity", connectivity, "--stats", "stats.csv"], ranks, work)
                self.assertEqual(proc.returncode, 0, proc.stderr)
                with open(os.path.join(work, "stats.csv")) as f:
                    rows = list(csv.DictReader(f))
                self.assertEqual([r["step"] for r in rows], ["2", "4"])
                for row in rows:
                    step = int(row["step"])
                    report = "label_%04d.json" % step
                    batch = e.run(["label", "dumps/v_%04d.nhdr" % step, "--lo", "0.0001", "--hi", "0.001", "--out",
                                   "labels_%04d.nhdr" % step, "--connectivity", connectivity, "--report", report,
                                   "--quiet"], ranks=ranks, cwd=work)
                    e.check_ok(self, batch)
                    with open(os.path.join(work, report)) as f:
                        want = json.load(f)
                    self.assertGreater(want["objects"], 0)
                    most = max(most, want["objects"])
                    self.assertEqual(int(row["objects"]), want["objects"], "step %d" % step)
                    self.assertEqual(int(row["largest"]), max(o["voxels"] for o in want["table"]), "step %d" % step)
                with open(os.path.join(work, "stats.json")) as f:
                    steps = json.load(f)["steps"]
                self.assertEqual([s["labels"]["objects"] for s in steps], [int(r["objects"]) for r in rows])
        self.assertGreater(most, 10, "masks of few objects test little")  # 6-connected: 18 and 32

    def test_label_periodic_matches_batch(self):
        """--label --periodic: the hook's objects across its ranks' blocks, wrapping around the axes
        named, equal 'volseg label --periodic' of the step's dump (whose wrapping is checked against a
        torus reference in test_label_passes.py). 'volseg-sim --periodic' is a periodic domain whose seed
        sits on the grid's corner: its objects cross every face, and are one only with --periodic zyx;
        the field is the same on any number of ranks."""
        split = 0  # steps whose objects the faces split without --periodic
        for ranks, connectivity, axes, domain in ((1, 26, "x", []), (4, 6, "z,y,x", []), (2, 18, "y", []),
                                                  (3, 26, "zyx", ["--periodic"]), (1, 6, "z,y,x", ["--periodic"])):
            with self.subTest(ranks=ranks, connectivity=connectivity, axes=axes, domain=domain):
                work = os.path.join(self.dir, "periodic_np%d_c%d%s" % (ranks, connectivity, "_p" if domain else ""))
                os.makedirs(work)
                proc = sim(["--dims", DIMS, "--steps", 4, "--ghost", 1, "--quiet", *domain, "--dump",
                            "dumps/v_%04d.nhdr", "--dump-format", "raw", "--insitu", "--lo", "0.0001", "--hi", "0.001",
                            "--every", 2, "--label", "--connectivity", connectivity, "--periodic", axes, "--stats",
                            "stats.csv"], ranks, work)
                self.assertEqual(proc.returncode, 0, proc.stderr)
                with open(os.path.join(work, "stats.csv")) as f:
                    rows = list(csv.DictReader(f))
                for row in rows:
                    step = int(row["step"])
                    batch = e.run(["label", "dumps/v_%04d.nhdr" % step, "--lo", "0.0001", "--hi", "0.001", "--out",
                                   "l.nhdr", "--connectivity", connectivity, "--periodic", axes, "--force",
                                   "--progress", "none"], ranks=ranks, cwd=work)
                    e.check_ok(self, batch)
                    self.assertIn("periodic along %s" % axes.replace("zyx", "z,y,x"), batch.stdout)
                    self.assertEqual(int(row["objects"]), int(re.search(r"(\d+) objects", batch.stdout).group(1)))
                    if domain:
                        plain = e.run(["label", "dumps/v_%04d.nhdr" % step, "--lo", "0.0001", "--hi", "0.001",
                                       "--out", "p.nhdr", "--connectivity", connectivity, "--force", "--progress",
                                       "none"], ranks=1, cwd=work)
                        e.check_ok(self, plain)
                        objects = int(re.search(r"(\d+) objects", plain.stdout).group(1))
                        self.assertGreaterEqual(objects, int(row["objects"]))
                        split += objects > int(row["objects"])
                with open(os.path.join(work, "stats.json")) as f:
                    self.assertEqual(json.load(f)["steps"][-1]["labels"]["periodic"], ",".join(axes.replace(",", "")))
        self.assertGreater(split, 0, "the periodic domain's objects cross its faces")
        one = os.path.join(self.dir, "periodic_np1_c6_p", "dumps", "v_0004.raw")
        three = os.path.join(self.dir, "periodic_np3_c26_p", "dumps", "v_0004.raw")
        with open(one, "rb") as a, open(three, "rb") as b:
            self.assertEqual(a.read(), b.read(), "a periodic domain's field on 1 and 3 ranks")
        proc = sim(["--steps", 1, "--quiet", "--insitu", "--lo", "0", "--hi", "1", "--label", "--periodic", "q"], 1,
                   self.dir)
        self.assertNotEqual(proc.returncode, 0)
        self.assertIn("'q' is not an axis (z, y or x)", proc.stderr)

    def test_label_needs_a_range(self):
        proc = sim(["--steps", 1, "--quiet", "--insitu", "--image", "i_%d.png", "--label"], 1, self.dir)
        self.assertNotEqual(proc.returncode, 0)
        self.assertIn("--label needs the threshold range", proc.stderr)


class InSituEqualsBatch(Base):
    def run_case(self, ranks, ghost, fmt):
        name = "np%d_g%d_%s" % (ranks, ghost, fmt)
        work = os.path.join(self.dir, name)
        os.makedirs(work)
        ext = EXTENSIONS[fmt]
        proc = sim(["--dims", DIMS, "--steps", 6, "--ghost", ghost, "--quiet", "--dump", "dumps/v_%04d" + ext,
                    "--dump-format", fmt, "--insitu", "--lo", LO, "--hi", HI, "--every", 3,
                    "--out", "masks/mask_%04d" + ext, "--format", fmt, "--stats", "stats.csv"], ranks, work)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        with open(os.path.join(work, "stats.csv")) as f:
            rows = list(csv.DictReader(f))
        self.assertEqual([r["step"] for r in rows], ["3", "6"])
        for row in rows:
            step = int(row["step"])
            dump = "dumps/v_%04d%s" % (step, ext)
            batch = "batch_%04d%s" % (step, ext)
            seg = e.run(["segment", dump, "--lo", LO, "--hi", HI, "--out", batch, "--format", fmt,
                         "--report", "batch_%04d.json" % step, "--quiet"], ranks=ranks, cwd=work)
            e.check_ok(self, seg)
            insitu = os.path.join(work, row["mask"])
            self.assertEqual(row["mask"], "masks/mask_%04d%s" % (step, ext))
            if fmt == "raw":
                a, b = e.parse_nhdr(insitu), e.parse_nhdr(os.path.join(work, batch))
                with open(a["data"], "rb") as f1, open(b["data"], "rb") as f2:
                    self.assertEqual(f1.read(), f2.read(), "%s: mask bytes differ from batch" % name)
                for header in (a, b):
                    header["keyvalues"].pop("history")
                    header["fields"].pop("data file")
                self.assertEqual(a["keyvalues"], b["keyvalues"])
                self.assertEqual(a["fields"], b["fields"])
            else:
                got, want = netcdf_contents(insitu), netcdf_contents(os.path.join(work, batch))
                self.assertEqual(sorted(got), sorted(want))
                for key in want:
                    if isinstance(want[key], tuple):
                        np.testing.assert_array_equal(got[key][0], want[key][0], "%s: %s differs" % (name, key))
                        self.assertEqual(got[key][1:], want[key][1:], "%s: %s attributes" % (name, key))
                    else:
                        self.assertEqual(got[key], want[key], "%s: %s" % (name, key))
            with open(os.path.join(work, "batch_%04d.json" % step)) as f:
                stats = json.load(f)["stats"]
            for key in ("voxels", "valid", "in_range"):
                self.assertEqual(int(row[key]), stats[key], "%s step %d: %s" % (name, step, key))
            for key in ("min", "max"):
                self.assertAlmostEqual(float(row[key]), stats[key], places=6)
            self.assertGreater(int(row["in_range"]), 0, "a threshold that selects nothing tests little")
        # ParaView's index of NetCDF masks (its file-series format); raw masks have none.
        index = os.path.join(work, "masks", "masks%s.series" % ext)
        if fmt == "raw":
            self.assertFalse(os.path.exists(index))
        else:
            with open(index) as f:
                series = json.load(f)
            self.assertEqual([entry["name"] for entry in series["files"]], ["mask_0003" + ext, "mask_0006" + ext])
            self.assertEqual([entry["time"] for entry in series["files"]], [6.0, 12.0])  # dt = 2

    def test_zarr_masks_per_step(self):
        """--out masks/mask_%04d.zarr: a Zarr v2 mask per step, each rank writing its own block's chunks (a
        regular decomposition: blocks are one grid), equal to the batch mask of that step's dump."""
        try:
            import zarr
        except ImportError:
            self.skipTest("missing python3-zarr")
        for ranks in (1, 2, 4):
            with self.subTest(ranks=ranks):
                work = os.path.join(self.dir, "zarr_np%d" % ranks)
                os.makedirs(work)
                proc = sim(["--dims", "24,20,16", "--steps", 4, "--ghost", 1, "--quiet", "--dump", "dumps/v_%04d.nhdr",
                            "--dump-format", "raw", "--insitu", "--lo", LO, "--hi", HI, "--every", 2,
                            "--out", "masks/mask_%04d.zarr", "--format", "zarr", "--stats", "stats.csv"], ranks, work)
                self.assertEqual(proc.returncode, 0, proc.stderr)
                with open(os.path.join(work, "stats.csv")) as f:
                    rows = list(csv.DictReader(f))
                self.assertEqual([r["mask"] for r in rows], ["masks/mask_0002.zarr", "masks/mask_0004.zarr"])
                for row in rows:
                    step = int(row["step"])
                    batch = "batch_%04d.nhdr" % step
                    e.check_ok(self, e.run(["segment", "dumps/v_%04d.nhdr" % step, "--lo", LO, "--hi", HI, "--out",
                                            batch, "--quiet"], ranks=ranks, cwd=work))
                    want = np.fromfile(os.path.join(work, "batch_%04d.raw" % step), np.uint8).reshape(24, 20, 16)
                    got = zarr.open(os.path.join(work, row["mask"]), mode="r")
                    np.testing.assert_array_equal(got[:], want, "step %d on %d ranks" % (step, ranks))
                    self.assertEqual(int(row["in_range"]), int(want.sum()))

    def test_one_file_a_record_per_step(self):
        """--out without %d: one CDF-2/CDF-5 file, a record appended per step
        along an unlimited time; each record is the batch mask of that step."""
        if netCDF4 is None:
            self.skipTest("missing python3-netcdf4")
        for fmt, ranks in (("cdf5", 2), ("cdf2", 3)):
            with self.subTest(fmt=fmt, ranks=ranks):
                work = os.path.join(self.dir, "append_" + fmt)
                os.makedirs(work)
                proc = sim(["--dims", DIMS, "--steps", 6, "--ghost", 1, "--quiet", "--dump", "dumps/v_%04d.nc",
                            "--dump-format", fmt, "--insitu", "--lo", LO, "--hi", HI, "--every", 2,
                            "--out", "masks.nc", "--format", fmt, "--stats", "stats.csv"], ranks, work)
                self.assertEqual(proc.returncode, 0, proc.stderr)
                with open(os.path.join(work, "stats.csv")) as f:
                    rows = list(csv.DictReader(f))
                self.assertEqual([r["mask"] for r in rows], ["masks.nc[0]", "masks.nc[1]", "masks.nc[2]"])
                with netCDF4.Dataset(os.path.join(work, "masks.nc")) as ds:
                    ds.set_auto_maskandscale(False)
                    self.assertTrue(ds.dimensions["time"].isunlimited())
                    np.testing.assert_array_equal(np.array(ds.variables["time"][:]), [4.0, 8.0, 12.0])
                    records = np.array(ds.variables["mask"][:])
                    attrs = {k: str(ds.variables["mask"].getncattr(k)) for k in ds.variables["mask"].ncattrs()}
                for k, step in enumerate((2, 4, 6)):
                    batch = "batch_%d.nc" % step
                    e.check_ok(self, e.run(["segment", "dumps/v_%04d.nc" % step, "--lo", LO, "--hi", HI, "--out",
                                            batch, "--format", fmt, "--quiet"], ranks=ranks, cwd=work))
                    want = netcdf_contents(os.path.join(work, batch))
                    np.testing.assert_array_equal(records[k], want["mask"][0], "record %d" % k)
                    want_attrs = dict(want["mask"][1])
                    self.assertEqual({**attrs, "source_file": ""}, {**want_attrs, "source_file": ""})
                    if k == 0:  # the file names the dump of its first step
                        self.assertEqual(attrs["source_file"], want_attrs["source_file"])

    def test_every_format_ranks_and_ghosts(self):
        if netCDF4 is None:
            self.skipTest("missing python3-netcdf4")
        for fmt in ("raw", "cdf2", "cdf5", "netcdf4"):
            for ranks in (1, 2, 3, 4):
                for ghost in (1, 2):
                    with self.subTest(fmt=fmt, ranks=ranks, ghost=ghost):
                        self.run_case(ranks, ghost, fmt)


# Runs inside pvpython: reads the .pvti extract of one step and prints the
# field and mask arrays' values (z, y, x order) as JSON lists.
READ_EXTRACT = r"""
import json, sys
from paraview.simple import OpenDataFile, servermanager
from vtkmodules.util.numpy_support import vtk_to_numpy
reader = OpenDataFile(sys.argv[1])
reader.UpdatePipeline()
data = servermanager.Fetch(reader)
dims = data.GetDimensions()
out = {"dims": [dims[2], dims[1], dims[0]]}
for name in ("field", "mask", "vtkGhostType"):
    array = data.GetPointData().GetArray(name)
    out[name] = None if array is None else vtk_to_numpy(array).tolist()
with open(sys.argv[2], "w") as f:
    json.dump(out, f)
"""


@unittest.skipUnless(e.WITH_PARAVIEW, "built without ParaView")
class CatalystScripts(Base):
    prefix = "volseg-e2e-catalyst-"

    def test_contour_and_extract_scripts(self):
        if netCDF4 is None:
            self.skipTest("missing python3-netcdf4")
        if not os.access(PVPYTHON, os.X_OK):
            self.skipTest("missing pvpython")
        work = os.path.join(self.dir, "scripts")
        os.makedirs(work)
        env = dict(os.environ, VOLSEG_EXTRACT_EVERY="2", VOLSEG_CATALYST_OUTPUT="catalyst", VOLSEG_CONTOUR="0.2")
        argv = [e.MPIEXEC] + e.MPI_QUIET + ["-np", "2", "--bind-to", "none", SIM, "--dims", DIMS, "--steps", 4,
                                           "--ghost", 1, "--quiet", "--dump", "dumps/v_%04d.nc", "--insitu",
                                           "--lo", LO, "--hi", HI, "--out", "masks/mask_%04d.nc", "--stats",
                                           "stats.csv", "--catalyst-script",
                                           os.path.join(SCRIPTS, "contour_screenshot.py"), "--catalyst-script",
                                           os.path.join(SCRIPTS, "extract_pvti.py")]
        proc = subprocess.run([str(a) for a in argv], cwd=work, capture_output=True, text=True, timeout=300, env=env)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertNotIn("script failed", proc.stderr)
        with open(os.path.join(work, "stats.csv")) as f:
            rows = list(csv.DictReader(f))
        self.assertEqual([int(r["script_errors"]) for r in rows], [0, 0, 0, 0])
        for step in (1, 2, 3, 4):
            png = os.path.join(work, "catalyst", "contour_%06d.png" % step)
            self.assertTrue(os.path.getsize(png) > 1000, png)
        # Every other step has an extract; it holds the dumped field and the
        # in-situ mask, over the whole grid.
        self.assertFalse(os.path.exists(os.path.join(work, "catalyst", "grid_000001.pvti")))
        for step in (2, 4):
            pvti = os.path.join(work, "catalyst", "grid_%06d.pvti" % step)
            out = os.path.join(work, "extract_%d.json" % step)
            read = self.pvpython(READ_EXTRACT, [pvti, out])
            self.assertEqual(read.returncode, 0, read.stderr)
            with open(out) as f:
                extract = json.load(f)
            shape = tuple(int(d) for d in DIMS.split(","))
            self.assertEqual(tuple(extract["dims"]), shape)
            with netCDF4.Dataset(os.path.join(work, "dumps", "v_%04d.nc" % step)) as ds:
                field = np.array(ds.variables["field"][:])
            with netCDF4.Dataset(os.path.join(work, "masks", "mask_%04d.nc" % step)) as ds:
                ds.set_auto_maskandscale(False)
                mask = np.array(ds.variables["mask"][:])
            np.testing.assert_array_equal(np.array(extract["field"], dtype=field.dtype).reshape(shape), field)
            np.testing.assert_array_equal(np.array(extract["mask"], dtype=np.uint8).reshape(shape), mask)

    def test_paraview_opens_the_mask_series(self):
        """ParaView opens both kinds of mask series as time series: a file per
        step through its .series index, and one file with a record per step."""
        if not os.access(PVPYTHON, os.X_OK):
            self.skipTest("missing pvpython")
        work = os.path.join(self.dir, "series")
        os.makedirs(work)
        for out in ("per_step/mask_%04d.nc", "one/masks.nc"):
            proc = sim(["--dims", DIMS, "--steps", 4, "--quiet", "--insitu", "--lo", LO, "--hi", HI, "--every", 2,
                        "--out", out], 2, work)
            self.assertEqual(proc.returncode, 0, proc.stderr)
        code = r"""
import json, sys
from paraview.simple import NetCDFReader
out = {}
for name in sys.argv[2:]:
    reader = NetCDFReader(FileName=[name])
    reader.Dimensions = '(z, y, x)'
    reader.UpdatePipeline(max(reader.TimestepValues))
    out[name] = [list(reader.TimestepValues), reader.GetDataInformation().GetNumberOfPoints()]
json.dump(out, open(sys.argv[1], "w"))
"""
        result = os.path.join(work, "series.json")
        series = [os.path.join(work, "per_step", "masks.nc.series"), os.path.join(work, "one", "masks.nc")]
        read = self.pvpython(code, [result] + series)
        self.assertEqual(read.returncode, 0, read.stderr)
        points = 1
        for d in DIMS.split(","):
            points *= int(d)
        with open(result) as f:
            opened = json.load(f)
        for name in series:
            self.assertEqual(opened[name], [[4.0, 8.0], points], name)

    def pvpython(self, code, args):
        script = os.path.join(self.dir, "read_extract.py")
        with open(script, "w") as f:
            f.write(code)
        return subprocess.run([PVPYTHON, script] + args, capture_output=True, text=True, timeout=300)

    def test_broken_script_is_reported_and_counted(self):
        work = os.path.join(self.dir, "broken")
        os.makedirs(work)
        broken = os.path.join(work, "broken.py")
        with open(broken, "w") as f:
            f.write("# script-version: 2.0\nfrom paraview.simple import *\n"
                    "producer = PVTrivialProducer(registrationName='input')\n"
                    "def catalyst_execute(info):\n    raise RuntimeError('broken on purpose')\n")
        proc = sim(["--dims", DIMS, "--steps", 2, "--quiet", "--insitu", "--lo", LO, "--hi", HI, "--stats",
                    "stats.csv", "--catalyst-script", broken], 2, work)
        # The simulation and volseg's own pipeline go on; the script's failure is said and counted.
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertIn("a Catalyst script failed: broken.py: RuntimeError: broken on purpose", proc.stderr)
        with open(os.path.join(work, "stats.csv")) as f:
            rows = list(csv.DictReader(f))
        self.assertEqual([int(r["script_errors"]) for r in rows], [1, 1])
        self.assertTrue(all(int(r["in_range"]) > 0 for r in rows))


class BadInput(Base):
    prefix = "volseg-e2e-insitu-bad-"

    def one_line(self, proc, pattern):
        lines = [line for line in proc.stderr.splitlines() if line.strip()]
        self.assertEqual(len(lines), 1, proc.stderr)
        self.assertRegex(lines[0], pattern)

    def test_unknown_option(self):
        proc = sim(["--steps", 2, "--insitu", "--lo", 0, "--hi", 1, "--stats", "s.csv", "--colour", "red"], 2, self.dir)
        self.assertEqual(proc.returncode, 2)
        self.one_line(proc, r"^volseg-sim: unknown in-situ option '--colour'")

    @unittest.skipUnless(e.WITH_PARAVIEW, "built without ParaView")
    def test_missing_script_continue_and_stop(self):
        args = ["--dims", DIMS, "--steps", 2, "--quiet"]
        hook = ["--insitu", "--lo", LO, "--hi", HI, "--out", "m_%d.nhdr", "--catalyst-script", "missing.py"]
        proc = sim(args + hook, 2, self.dir)
        self.assertEqual(proc.returncode, 3, proc.stderr)  # finished without the hook, and says so
        self.one_line(proc, r"^volseg-sim: in situ not started: Catalyst script missing.py: no such file "
                            r"\(the simulation went on without it\)$")
        proc = sim(args + ["--insitu-errors", "stop"] + hook, 2, self.dir)
        self.assertEqual(proc.returncode, 1, proc.stderr)
        self.assertFalse([f for f in os.listdir(self.dir) if f.startswith("m_")])

    @unittest.skipUnless(e.WITH_PARAVIEW, "built without ParaView")
    def test_a_dead_display_refuses_rendering_not_the_simulation(self):
        # (No DISPLAY at all draws on a private Xvfb: test_headless.py.)
        env = dict(os.environ, DISPLAY=":89")
        argv = [e.MPIEXEC] + e.MPI_QUIET + ["-np", "2", SIM, "--dims", DIMS, "--steps", 2, "--quiet", "--insitu",
                                           "--lo", LO, "--hi", HI, "--image", "img_%d.png"]
        proc = subprocess.run([str(a) for a in argv], cwd=self.dir, capture_output=True, text=True, timeout=120,
                              env=env)
        self.assertEqual(proc.returncode, 3, proc.stderr)
        self.one_line(proc, r"^volseg-sim: in situ not started: .*display")

    @unittest.skipIf(e.WITH_PARAVIEW, "built with ParaView")
    def test_without_paraview_images_and_scripts_are_refused(self):
        args = ["--dims", DIMS, "--steps", 2, "--quiet", "--insitu-errors", "stop", "--insitu", "--lo", LO, "--hi", HI]
        for option in (["--image", "img_%d.png"], ["--catalyst-script", "contour.py"]):
            with self.subTest(option=option[0]):
                proc = sim(args + option, 2, self.dir)
                self.assertEqual(proc.returncode, 1, proc.stderr)
                self.one_line(proc, r"^volseg-sim: .*in-situ option %s: this volseg_insitu was built without "
                                    r"ParaView \(VOLSEG_WITH_PARAVIEW=OFF\)$" % option[0])
                self.assertFalse([f for f in os.listdir(self.dir) if f.startswith("img_")])

    def test_existing_mask_is_not_replaced_without_force(self):
        work = os.path.join(self.dir, "existing")
        os.makedirs(work)
        with open(os.path.join(work, "m_2.nhdr"), "w") as f:
            f.write("precious")
        proc = sim(["--dims", DIMS, "--steps", 2, "--quiet", "--insitu", "--lo", LO, "--hi", HI,
                    "--out", "m_%d.nhdr"], 2, work)
        self.assertEqual(proc.returncode, 3, proc.stderr)
        self.one_line(proc, r"^volseg-sim: in situ stopped at step 2: .*m_2.nhdr.*exists")
        with open(os.path.join(work, "m_2.nhdr")) as f:
            self.assertEqual(f.read(), "precious")


if __name__ == "__main__":
    e.main(verbosity=2)
