#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""ParaView reads what volseg writes: pvpython opens generated volumes (f32
in both byte orders, and an i16 big-endian one) and their masks with its
NRRD reader; dimensions, spacing, scalar ranges and every value must match
what numpy reads from the same files."""
import json
import os
import subprocess
import sys
import tempfile
import unittest

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import e2e_util as e  # noqa: E402

PVPYTHON = os.environ.get("PVPYTHON", "/usr/bin/pvpython")
DIMS = (37, 41, 53)  # z, y, x

# Runs inside pvpython: argv = output folder, then headers. For each header,
# one JSON line on stdout and the values (x fastest) in OUT/<n>.npy.
PV_SCRIPT = r'''
import json, os, sys
import numpy
from paraview.simple import OpenDataFile, servermanager
from vtkmodules.util.numpy_support import vtk_to_numpy
out = sys.argv[1]
for n, path in enumerate(sys.argv[2:]):
    reader = OpenDataFile(path)
    if reader is None:
        print(json.dumps({"path": path, "error": "no reader"}))
        continue
    reader.UpdatePipeline()
    data = servermanager.Fetch(reader)
    arrays = data.GetPointData()
    array = arrays.GetArray(0)
    values = vtk_to_numpy(array)
    numpy.save(os.path.join(out, "%d.npy" % n), values)
    print(json.dumps({"path": path, "reader": reader.GetXMLName(), "class": data.GetClassName(),
                      "dims": list(data.GetDimensions()), "spacing": list(data.GetSpacing()),
                      "arrays": arrays.GetNumberOfArrays(), "type": array.GetDataTypeAsString(),
                      "components": array.GetNumberOfComponents(), "tuples": array.GetNumberOfTuples(),
                      "range": list(array.GetRange())}), flush=True)
'''


@unittest.skipUnless(os.access(PVPYTHON, os.X_OK), "missing pvpython at " + PVPYTHON)
class ParaViewReads(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        e.require_binary()
        cls.tmp = tempfile.TemporaryDirectory(prefix="volseg-e2e-paraview-")
        d = cls.tmp.name
        helper = unittest.TestCase()
        # (input header, mask header, lo, hi)
        cls.cases = []
        for field, dtype, endian, lo, hi in (("smooth", "f32", "little", 0.25, 0.5),
                                             ("smooth", "f32", "big", 0.25, 0.5),
                                             ("shells", "i16", "big", 1, 2)):
            name = "%s-%s-%s" % (field, dtype, endian)
            volume = os.path.join(d, name + ".nhdr")
            mask = os.path.join(d, name + "-mask.nhdr")
            e.generate(helper, volume, field, DIMS, dtype, endian)
            e.check_ok(helper, e.run(["segment", volume, "--lo", lo, "--hi", hi, "--out", mask,
                                      "--backend", "posix", "--brick", "5,13,53", "--quiet"]))
            cls.cases.append((volume, mask, lo, hi))
        cls.results, cls.how = cls.run_pvpython([p for case in cls.cases for p in case[:2]])
        print("\nParaView: ran '%s'" % cls.how, file=sys.stderr)

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    @classmethod
    def run_pvpython(cls, headers):
        """Runs the script without a display first, then under xvfb-run -a."""
        script = os.path.join(cls.tmp.name, "read.py")
        with open(script, "w") as f:
            f.write(PV_SCRIPT)
        out = os.path.join(cls.tmp.name, "pv")
        os.mkdir(out)
        env = dict(os.environ)
        env.pop("DISPLAY", None)
        attempts = [[PVPYTHON, script], e.xvfb_run() + [PVPYTHON, script]]
        failures = []
        for argv in attempts:
            proc = subprocess.run(argv + [out] + headers, capture_output=True, text=True, timeout=300, env=env)
            lines = [json.loads(l) for l in proc.stdout.splitlines() if l.startswith("{")]
            if proc.returncode == 0 and len(lines) == len(headers):
                results = {}
                for n, line in enumerate(lines):
                    line["values"] = np.load(os.path.join(out, "%d.npy" % n))
                    results[line["path"]] = line
                return results, " ".join(argv[:-1])
            failures.append("%s: rc %d\n%s\n%s" % (" ".join(argv), proc.returncode, proc.stdout, proc.stderr))
        raise AssertionError("pvpython failed:\n" + "\n".join(failures))

    def check_common(self, result):
        self.assertNotIn("error", result)
        self.assertEqual(result["class"], "vtkImageData")
        self.assertEqual(result["dims"], list(reversed(DIMS)))  # VTK lists x, y, z
        self.assertEqual(result["spacing"], [1.0, 1.0, 1.0])
        self.assertEqual(result["arrays"], 1)
        self.assertEqual(result["components"], 1)
        self.assertEqual(result["tuples"], int(np.prod(DIMS)))

    def test_inputs(self):
        for volume, _, _, _ in self.cases:
            with self.subTest(volume=os.path.basename(volume), how=self.how):
                result = self.results[volume]
                self.check_common(result)
                _, values = e.read_volume(volume)
                self.assertEqual(result["type"], {"f": "float", "i": "short"}[values.dtype.kind])
                v = values.astype(np.float64)
                self.assertEqual(result["range"], [v.min(), v.max()])
                np.testing.assert_array_equal(result["values"].reshape(DIMS), values)

    def test_masks(self):
        for volume, mask, lo, hi in self.cases:
            with self.subTest(mask=os.path.basename(mask), how=self.how):
                result = self.results[mask]
                self.check_common(result)
                self.assertEqual(result["type"], "unsigned char")
                self.assertEqual(result["range"], [0.0, 1.0])
                _, values = e.read_volume(volume)
                v = values.astype(np.float64)
                expected = ((v >= lo) & (v <= hi)).astype(np.uint8)
                np.testing.assert_array_equal(result["values"].reshape(DIMS), expected)


if __name__ == "__main__":
    e.main()
