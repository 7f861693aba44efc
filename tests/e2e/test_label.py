# SPDX-License-Identifier: MIT
"""'volseg label' against scipy.ndimage.label (Debian's python3-scipy).

scipy numbers objects in the order a raster scan (x fastest) meets them,
which is volseg's promise too, so label volumes are compared voxel for voxel,
not up to renumbering; the object tables are recomputed here with numpy and
compared row by row. Each case runs on 1 to 4 ranks, with several brick
shapes and every assignment, and must give the same bytes every time."""
import csv
import gzip
import json
import os
import shutil
import struct
import sys
import tempfile
import unittest

import numpy as np
from scipy import ndimage

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import e2e_util as e  # noqa: E402

try:
    import netCDF4
except ImportError:  # the NetCDF cases are skipped, the rest still runs
    netCDF4 = None

RANK_OF = {6: 1, 18: 2, 26: 3}  # scipy's generate_binary_structure(3, rank)
NUMPY_NRRD = {"u1": "uint8", "u2": "uint16", "f4": "float", "i2": "short", "i4": "int"}
COLIN27 = "/usr/share/mricron/templates/ch2.nii.gz"


def write_nrrd(path, array, spacing=(1.0, 1.0, 1.0), origin=(0.0, 0.0, 0.0)):
    """A detached raw NRRD of a (z, y, x) array; spacing and origin x, y, z."""
    raw = os.path.splitext(path)[0] + ".raw"
    array = np.ascontiguousarray(array)
    array.astype(array.dtype.newbyteorder("<")).tofile(raw)
    z, y, x = array.shape
    with open(path, "w") as f:
        f.write("NRRD0004\ntype: %s\ndimension: 3\nsizes: %d %d %d\nendian: little\nencoding: raw\n"
                "space dimension: 3\nspace origin: (%r,%r,%r)\n"
                "space directions: (%r,0,0) (0,%r,0) (0,0,%r)\ndata file: %s\n\n"
                % (NUMPY_NRRD[array.dtype.str[1:]], x, y, z, *origin, *spacing, os.path.basename(raw)))


def scipy_label(mask, connectivity):
    return ndimage.label(mask, structure=ndimage.generate_binary_structure(3, RANK_OF[connectivity]))


def expected_table(labels, count, spacing=(1.0, 1.0, 1.0), origin=(0.0, 0.0, 0.0), values=None):
    """Rows as volseg writes them, from scipy's labels: exact integer sums,
    the same floating-point steps for centroid and position."""
    flat = labels.ravel()
    voxels = np.bincount(flat, minlength=count + 1)[1:]
    z, y, x = np.indices(labels.shape, dtype=np.int64)
    sums = [np.bincount(flat, weights=a.ravel(), minlength=count + 1)[1:] for a in (z, y, x)]
    boxes = ndimage.find_objects(labels)
    rows = []
    for i in range(count):
        box = boxes[i]
        lo = [s.start for s in box]
        hi = [s.stop - 1 for s in box]
        n = float(voxels[i])
        centroid = [float(int(s[i])) / n for s in sums]
        position = [origin[2 - a] + spacing[2 - a] * centroid[a] for a in range(3)]
        border = any(lo[a] == 0 or hi[a] == labels.shape[a] - 1 for a in range(3))
        row = {"id": i + 1, "voxels": int(voxels[i]), "volume": n * spacing[0] * spacing[1] * spacing[2],
               "lo": lo, "hi": hi, "centroid": centroid, "position": position, "touches_boundary": int(border)}
        rows.append(row)
    if values is not None:
        index = np.arange(1, count + 1)
        lows = ndimage.minimum(values, labels, index)
        highs = ndimage.maximum(values, labels, index)
        means = ndimage.mean(values.astype(np.float64), labels, index)
        for row, lo_v, hi_v, mean in zip(rows, lows, highs, means):
            row["values"] = (float(lo_v), float(mean), float(hi_v))
    return rows


def read_table(path):
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


class LabelTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        e.require_binary()
        cls.dir = tempfile.mkdtemp(prefix="volseg-e2e-label-")

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.dir, ignore_errors=True)

    def setUp(self):
        self.work = tempfile.mkdtemp(dir=self.dir)

    def path(self, name):
        return os.path.join(self.work, name)

    def label(self, source, out, *extra, ranks=1, ok=True):
        proc = e.run(["label", source, "--out", out, "--quiet", "--force", *extra], ranks=ranks, timeout=300)
        if ok:
            e.check_ok(self, proc)
        return proc

    def assert_table(self, path, expected, values=False):
        rows = read_table(path)
        self.assertEqual(len(rows), len(expected), path)
        for got, want in zip(rows, expected):
            where = "%s row %s" % (path, want["id"])
            self.assertEqual(int(got["id"]), want["id"], where)
            self.assertEqual(int(got["voxels"]), want["voxels"], where)
            self.assertEqual(float(got["volume"]), want["volume"], where)
            self.assertEqual([int(got[a + "_min"]) for a in "zyx"], want["lo"], where)
            self.assertEqual([int(got[a + "_max"]) for a in "zyx"], want["hi"], where)
            self.assertEqual([float(got["centroid_" + a]) for a in "zyx"], want["centroid"], where)
            self.assertEqual([float(got["position_" + a]) for a in "zyx"], want["position"], where)
            self.assertEqual(int(got["touches_boundary"]), want["touches_boundary"], where)
            if values:
                lo_v, mean, hi_v = want["values"]
                self.assertEqual(float(got["value_min"]), lo_v, where)
                self.assertEqual(float(got["value_max"]), hi_v, where)
                self.assertAlmostEqual(float(got["value_mean"]), mean, delta=1e-9 * max(1.0, abs(mean)), msg=where)

    def check_everywhere(self, mask, connectivity, runs, name="m"):
        """Labels MASK on 1 rank, checks them and the table against scipy, then
        on each (ranks, brick shape, assignment) of RUNS: identical bytes."""
        source = self.path(name + ".nhdr")
        write_nrrd(source, mask.astype(np.uint8))
        expected, count = scipy_label(mask, connectivity)
        first = self.path(name + "-1.nhdr")
        self.label(source, first, "--mask-input", "--connectivity", connectivity, "--stats", self.path("t.csv"))
        header, labels = e.read_volume(first)
        self.assertEqual(labels.dtype.str[1:], "u4")
        np.testing.assert_array_equal(labels, expected, "%d-connected, 1 rank" % connectivity)
        self.assert_table(self.path("t.csv"), expected_table(expected, count))
        with open(header["data"], "rb") as f:
            reference = f.read()
        with open(self.path("t.csv"), "rb") as f:
            reference_table = f.read()
        for case, (ranks, brick, assign) in enumerate(runs):
            out = self.path("%s-%d.nhdr" % (name, case))
            table = self.path("%s-%d.csv" % (name, case))
            self.label(source, out, "--mask-input", "--connectivity", connectivity, "--brick", brick,
                       "--assign", assign, "--seed", case, "--stats", table, ranks=ranks)
            with open(e.parse_nhdr(out)["data"], "rb") as f:
                self.assertTrue(f.read() == reference, "%d-connected, %d ranks, brick %s, %s: labels differ"
                                % (connectivity, ranks, brick, assign))
            # Each rank writes its slice of the table: the same file as 1 rank's.
            with open(table, "rb") as f:
                self.assertTrue(f.read() == reference_table, "%d-connected, %d ranks, brick %s, %s: tables differ"
                                % (connectivity, ranks, brick, assign))
        return count

    def test_random_masks(self):
        # 70 along x: rows longer than one 64-voxel word of the run finder.
        rng = np.random.default_rng(17)
        shape = (23, 29, 70)
        # 2-4 ranks, 3 brick shapes, every assignment.
        runs = [(ranks, brick, ("block", "cyclic", "random")[(ranks + i) % 3])
                for ranks in (2, 3, 4) for i, brick in enumerate(("5,6,7", "23,7,70", "8,29,33"))]
        for density, connectivity in ((0.12, 26), (0.3, 6), (0.3, 18), (0.3, 26), (0.5, 6), (0.5, 26)):
            with self.subTest(density=density, connectivity=connectivity):
                mask = rng.random(shape) < density
                self.check_everywhere(mask, connectivity, runs, "r%d-%d" % (int(density * 100), connectivity))

    def test_a_million_objects_on_eight_ranks(self):
        """About 10^6 objects (a noisy mask at 6-connectivity), labelled on 1
        rank and checked against scipy, then on 8 ranks (oversubscribed) with
        2,600 bricks of 8x30x30 under random assignment: the same bytes. The
        suite's VOLSEG_MPI_MESSAGE_BYTES=4096 makes every gather, exchange
        and scatter of the merge move in thousands of pieces."""
        mask = np.random.default_rng(26).random((208, 300, 300)) < 0.3
        source = self.path("million.nhdr")
        write_nrrd(source, mask.astype(np.uint8))
        expected, count = scipy_label(mask, 6)
        self.assertGreater(count, 10 ** 6)
        first = self.path("million-1.nhdr")
        self.label(source, first, "--mask-input", "--connectivity", "6", "--report", self.path("r1.json"),
                   "--stats", self.path("t1.csv"))
        header, labels = e.read_volume(first)
        np.testing.assert_array_equal(labels, expected, "1 rank")
        sizes = np.bincount(expected.ravel())[1:]
        with open(self.path("t1.csv")) as f:
            self.assertEqual(f.readline().split(",")[:2], ["id", "voxels"])
            voxels = np.loadtxt(f, delimiter=",", usecols=1, dtype=np.int64)
        np.testing.assert_array_equal(voxels, sizes, "1 rank: the table's voxels")
        out = self.path("million-8.nhdr")
        self.label(source, out, "--mask-input", "--connectivity", "6", "--brick", "8,30,30", "--assign", "random",
                   "--report", self.path("r8.json"), "--stats", self.path("t8.csv"), ranks=8)
        with open(header["data"], "rb") as a, open(e.parse_nhdr(out)["data"], "rb") as b:
            self.assertTrue(a.read() == b.read(), "8 ranks, 2,600 bricks: labels differ from 1 rank's")
        # Eight ranks write their slices of the table into one file: 1 rank's bytes.
        with open(self.path("t1.csv"), "rb") as a, open(self.path("t8.csv"), "rb") as b:
            self.assertTrue(a.read() == b.read(), "8 ranks: the object table differs from 1 rank's")
        with open(self.path("r1.json")) as f:
            one = json.load(f)
        with open(self.path("r8.json")) as f:
            report = json.load(f)
        self.assertEqual(report["table"], one["table"])
        self.assertEqual(report["objects"], count)
        # The report lists the first 100,000 rows and says it stops there.
        self.assertEqual(report["table_rows"], 100000)
        self.assertFalse(report["table_complete"])
        self.assertEqual([row["id"] for row in report["table"][:3]], [1, 2, 3])
        self.assertEqual(len(report["table"]), 100000)

    def test_what_breaks_chunked_tools(self):
        shape = (8, 8, 8)
        # Bricks of 4^3: the cases meet at the corner (4,4,4) of 8 bricks, on 2 and 4 ranks.
        runs = [(2, "4,4,4", "cyclic"), (4, "4,4,4", "block"), (4, "3,3,3", "random"), (3, "8,4,4", "cyclic")]
        corner = np.zeros(shape, bool)
        corner[3, 3, 3] = corner[4, 4, 4] = True  # one object only through a corner of 8 bricks
        edge = np.zeros(shape, bool)
        edge[3, 3, 1] = edge[4, 4, 1] = edge[3, 4, 6] = edge[4, 3, 6] = True  # through brick edges
        z, y, x = np.indices(shape)
        diagonal = (z == y) & (y == x)  # spans every brick on the diagonal, corner to corner
        gym = (z == 5) | (y == 2) | (x == 6)  # spans every brick
        checker = (z + y + x) % 2 == 0  # 6: one-voxel objects only; 18, 26: one object
        cases = {"corner": (corner, {6: 2, 18: 2, 26: 1}), "edge": (edge, {6: 4, 18: 2, 26: 2}),
                 "diagonal": (diagonal, {6: 8, 18: 8, 26: 1}), "gym": (gym, {6: 1, 18: 1, 26: 1}),
                 "checker": (checker, {6: 256, 18: 1, 26: 1}), "empty": (np.zeros(shape, bool), {6: 0, 18: 0, 26: 0}),
                 "full": (np.ones(shape, bool), {6: 1, 18: 1, 26: 1})}
        for name, (mask, counts) in cases.items():
            for connectivity, count in counts.items():
                with self.subTest(case=name, connectivity=connectivity):
                    self.assertEqual(scipy_label(mask, connectivity)[1], count)  # the case is what it says
                    self.assertEqual(self.check_everywhere(mask, connectivity, runs, "%s-%d" % (name, connectivity)),
                                     count)

    def test_threshold_values_and_min_voxels(self):
        rng = np.random.default_rng(5)
        shape = (19, 26, 67)
        source = ndimage.uniform_filter(rng.random(shape).astype(np.float32), 3).astype(np.float32)
        lo, hi = 0.52, 0.7
        spacing, origin = (0.5, 0.75, 2.0), (-10.0, 4.5, 100.25)
        write_nrrd(self.path("s.nhdr"), source, spacing, origin)
        mask = (source >= np.float32(lo)) & (source <= np.float32(hi))
        expected, count = scipy_label(mask, 18)
        self.assertGreater(count, 20)
        for ranks, brick in ((1, "19,26,67"), (3, "6,9,17")):
            self.label(self.path("s.nhdr"), self.path("l.nhdr"), "--lo", lo, "--hi", hi, "--connectivity", 18,
                       "--values", self.path("s.nhdr"), "--stats", self.path("t.csv"), "--brick", brick,
                       "--report", self.path("r.json"), ranks=ranks)
            np.testing.assert_array_equal(e.read_volume(self.path("l.nhdr"))[1], expected)
            table = expected_table(expected, count, spacing, origin, values=source)
            self.assert_table(self.path("t.csv"), table, values=True)
            with open(self.path("r.json")) as f:
                report = json.load(f)
            self.assertEqual(report["objects"], count)
            self.assertEqual(report["foreground_voxels"], int(mask.sum()))
            self.assertEqual(len(report["table"]), count)
            self.assertTrue(report["table_complete"])
            self.assertEqual(report["table"][-1]["voxels"], table[-1]["voxels"])
            self.assertEqual(report["table"][0]["position_zyx"], table[0]["position"])
            self.assertEqual(len(report["ranks"]), ranks)
        # A stream (here rank 0's stdout, a pipe) takes every rank's rows through rank 0, in order.
        proc = self.label(self.path("s.nhdr"), self.path("l2.nhdr"), "--lo", lo, "--hi", hi, "--connectivity", 18,
                          "--values", self.path("s.nhdr"), "--stats", "/dev/stdout", "--brick", "6,9,17", ranks=3)
        with open(self.path("t.csv")) as f:
            self.assertEqual(proc.stdout, f.read())
        # --min-voxels: small objects become 0, the rest keep their order, ids dense.
        sizes = np.bincount(expected.ravel())[1:]
        keep = sizes >= 4
        self.assertTrue(0 < keep.sum() < count)
        renumber = np.zeros(count + 1, np.int64)
        renumber[1:][keep] = np.arange(1, keep.sum() + 1)
        self.label(self.path("s.nhdr"), self.path("m.nhdr"), "--lo", lo, "--hi", hi, "--connectivity", 18,
                   "--min-voxels", 4, "--stats", self.path("m.csv"), "--brick", "7,7,7", ranks=2)
        np.testing.assert_array_equal(e.read_volume(self.path("m.nhdr"))[1], renumber[expected])
        rows = read_table(self.path("m.csv"))
        self.assertEqual([int(r["voxels"]) for r in rows], [int(s) for s in sizes[keep]])
        self.assertEqual([int(r["id"]) for r in rows], list(range(1, int(keep.sum()) + 1)))

    @unittest.skipIf(netCDF4 is None, "missing python3-netcdf4")
    def test_netcdf(self):
        # A NetCDF scalar field thresholded on the fly; labels in CDF-5 and NetCDF-4.
        source = self.path("f.nc")
        proc = e.run(["generate", source, "--format", "cdf2", "--field", "noise", "--dims", "21,34,66",
                      "--quiet"], ranks=2)
        e.check_ok(self, proc)
        with netCDF4.Dataset(source) as ds:
            name = [v for v in ds.variables if ds.variables[v].ndim == 3][0]
            var = ds.variables[name]
            var.set_auto_maskandscale(False)
            values = np.asarray(var[:])
        lo, hi = np.percentile(values, 60), np.percentile(values, 85)
        mask = (values >= lo) & (values <= hi)
        expected, count = scipy_label(mask, 26)
        for fmt, ranks in (("cdf5", 2), ("netcdf4", 3)):
            out = self.path("l-%s.nc" % fmt)
            # A CDF-2 input would give CDF-2 labels, which hold no u32: by default CDF-5.
            extra = ("--format", fmt) if fmt == "netcdf4" else ()
            self.label(source, out, "--lo", repr(float(lo)), "--hi", repr(float(hi)), "--brick", "5,17,66", *extra,
                       ranks=ranks)
            with netCDF4.Dataset(out) as ds:
                self.assertEqual(ds.data_model, "NETCDF3_64BIT_DATA" if fmt == "cdf5" else "NETCDF4")
                labels = ds.variables["labels"]
                labels.set_auto_maskandscale(False)
                self.assertEqual(labels.dtype, np.uint32)
                self.assertEqual(int(labels.getncattr("objects")), count)
                np.testing.assert_array_equal(np.asarray(labels[:]), expected)

    @unittest.skipUnless(os.path.exists(COLIN27), "missing mricron-data (the Colin27 MRI)")
    def test_colin27(self):
        # The Colin27 MRI (NIfTI-1, gzip), converted here to raw NRRD.
        with gzip.open(COLIN27) as f:
            data = f.read()
        dims = struct.unpack("<8h", data[40:56])
        datatype, = struct.unpack("<h", data[70:72])
        pixdim = struct.unpack("<8f", data[76:108])
        offset = int(struct.unpack("<f", data[108:112])[0])
        self.assertEqual((dims[0], datatype), (3, 2))  # 3D, unsigned char
        x, y, z = dims[1:4]
        volume = np.frombuffer(data, np.uint8, x * y * z, offset).reshape(z, y, x)
        spacing = tuple(float(p) for p in pixdim[1:4])
        write_nrrd(self.path("colin.nhdr"), volume, spacing, (-90.0, -126.0, -72.0))
        lo, hi = 96, 140  # grey matter and the brighter tissue around it
        mask = (volume >= lo) & (volume <= hi)
        for connectivity in (6, 26):
            expected, count = scipy_label(mask, connectivity)
            self.assertGreater(count, 100)
            self.label(self.path("colin.nhdr"), self.path("c.nhdr"), "--lo", lo, "--hi", hi, "--connectivity",
                       connectivity, "--stats", self.path("c.csv"), "--values", self.path("colin.nhdr"),
                       "--brick", "40,50,60", "--assign", "cyclic", ranks=3)
            np.testing.assert_array_equal(e.read_volume(self.path("c.nhdr"))[1], expected)
            self.assert_table(self.path("c.csv"),
                              expected_table(expected, count, spacing, (-90.0, -126.0, -72.0), volume), values=True)

    def test_segment_label(self):
        rng = np.random.default_rng(9)
        source = ndimage.uniform_filter(rng.random((17, 30, 41)).astype(np.float32), 2).astype(np.float32)
        write_nrrd(self.path("s.nhdr"), source)
        lo, hi = 0.55, 0.9
        expected, count = scipy_label((source >= np.float32(lo)) & (source <= np.float32(hi)), 6)
        proc = e.run(["segment", self.path("s.nhdr"), "--lo", lo, "--hi", hi, "--out", self.path("mask.nhdr"),
                      "--label", self.path("l.nhdr"), "--label-stats", self.path("t.csv"), "--connectivity", 6,
                      "--quiet"], ranks=2)
        e.check_ok(self, proc)
        np.testing.assert_array_equal(e.read_volume(self.path("l.nhdr"))[1], expected)
        self.assertEqual(len(read_table(self.path("t.csv"))), count)
        self.label(self.path("mask.nhdr"), self.path("direct.nhdr"), "--mask-input", "--connectivity", 6)
        np.testing.assert_array_equal(e.read_volume(self.path("direct.nhdr"))[1], expected)

    def assert_refused(self, args, pattern, ranks=1):
        before = e.digest(self.work)
        proc = e.run(list(args) + ["--quiet"], ranks=ranks, timeout=120)
        e.assert_clean_failure(self, proc, pattern)
        self.assertEqual(e.digest(self.work), before, "files changed by a failed run: " + " ".join(proc.args))

    def test_a_job_past_its_memory_bound(self):
        """--memory: refused before pass 1 when a brick's buffers do not fit, stopped in pass 1 when the
        objects outgrow it (one line, nothing left), and within it on more ranks, which share the objects."""
        board = (np.indices((128, 128, 128)).sum(axis=0) % 2 == 0).astype(np.uint8)  # 2^20 objects (6-conn.)
        write_nrrd(self.path("board.nhdr"), board)
        out = self.path("l.nhdr")
        for ranks in (1, 2):
            with self.subTest(ranks=ranks):
                self.assert_refused(["label", self.path("board.nhdr"), "--mask-input", "--out", out, "--memory",
                                     "4MiB"], r"before its first object.*bound of 4 MiB per rank \(--memory\)",
                                    ranks)
        # With a table, about 100 MiB of parts and merge state on 1 rank, past its bound; a quarter of
        # that on 4 ranks. Without one, the objects inside a brick are no parts: 4 bytes each.
        args = ["--mask-input", "--connectivity", "6", "--brick", "8,128,128", "--memory", "100MiB"]
        self.assert_refused(["label", self.path("board.nhdr"), "--out", out, *args, "--stats", self.path("t.csv")],
                            r"first \d+ of 16 bricks \(\d+ parts.*past its bound of 100 MiB per rank")
        proc = e.run(["label", self.path("board.nhdr"), "--out", out, *args, "--force", "--progress", "none"],
                     ranks=1, timeout=300)
        e.check_ok(self, proc)
        self.assertIn("%d objects" % (128 ** 3 // 2), proc.stdout)
        self.label(self.path("board.nhdr"), out, *args, "--report", self.path("r.json"), ranks=4)
        with open(self.path("r.json")) as f:
            report = json.load(f)
        self.assertEqual(report["objects"], 128 ** 3 // 2)
        self.assertEqual(report["memory"]["bound_bytes_per_rank"], 100 << 20)
        self.assertEqual(report["memory"]["bound_from"], "--memory")
        self.assertLessEqual(report["memory"]["run_label_cache_bytes"], 100 << 20)
        self.assertLessEqual(max(r["max_rss_bytes"] for r in report["ranks"]), 100 << 20)

    def test_bad_input(self):
        rng = np.random.default_rng(3)
        mask = rng.random((9, 10, 11)) < 0.5
        write_nrrd(self.path("m.nhdr"), mask.astype(np.uint8))
        two = mask.astype(np.uint8)
        two[4, 5, 6] = 2
        write_nrrd(self.path("two.nhdr"), two)
        with open(self.path("flat.nhdr"), "w") as f:
            f.write("NRRD0004\ntype: uint8\ndimension: 2\nsizes: 11 10\nencoding: raw\ndata file: m.raw\n\n")
        many = np.zeros((9, 10, 40), np.uint8)
        many[::2, ::2, ::2] = 1  # 5 * 5 * 20 = 500 objects
        write_nrrd(self.path("many.nhdr"), many)
        out = self.path("l.nhdr")
        for ranks in (1, 2):
            with self.subTest(ranks=ranks):
                self.assert_refused(["label", self.path("flat.nhdr"), "--mask-input", "--out", out], r"dimension|3D",
                                    ranks)
                self.assert_refused(["label", self.path("many.nhdr"), "--mask-input", "--out", out, "--type", "u8",
                                     "--brick", "3,4,5"], r"500 objects.*u8|u8.*500", ranks)
                self.assert_refused(["label", self.path("two.nhdr"), "--mask-input", "--out", out],
                                    r"not a 0/1 mask: voxel \(z,y,x\) = \(4,5,6\)", ranks)
                self.assert_refused(["label", self.path("m.nhdr"), "--mask-input", "--out", self.path("m.nhdr"),
                                     "--force"], r"overwrite the input|input", ranks)
                self.assert_refused(["label", self.path("m.nhdr"), "--mask-input", "--out", out, "--connectivity",
                                     "8"], r"connectivity", ranks)
                self.assert_refused(["label", self.path("m.nhdr"), "--out", out], r"--lo", ranks)
                self.assert_refused(["label", self.path("m.nhdr"), "--mask-input", "--lo", "1", "--hi", "1",
                                     "--out", out], r"mask-input", ranks)
                self.assert_refused(["label", self.path("m.nhdr"), "--mask-input", "--out", out, "--values",
                                     self.path("many.nhdr")], r"must match", ranks)
        # An existing output is kept without --force.
        self.label(self.path("m.nhdr"), out, "--mask-input")
        self.assert_refused(["label", self.path("m.nhdr"), "--mask-input", "--out", out], r"exists")


if __name__ == "__main__":
    e.main(verbosity=2)
