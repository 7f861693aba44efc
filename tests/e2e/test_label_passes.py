# SPDX-License-Identifier: MIT
"""'volseg label' without a table, and what its two passes read.

Without --stats, --report or a multiscale output, the objects that touch no
face a brick shares never reach the merge: each brick numbers them itself.
These labels are checked against scipy.ndimage.label voxel for voxel (scipy
numbers in raster order, as volseg does) on 1 to 4 ranks, bricks of whole
planes and of pieces of rows, every assignment, with and without
--min-voxels. Pass 2 paints the bricks kept from pass 1: the report's
bytes read equal the input's size, and with --cache 0 every brick is read
twice and the labels do not change. Every --label-type holds a mask with
objects, or is refused with one line when they do not fit."""
import csv
import json
import os
import re
import shutil
import sys
import tempfile
import unittest

import numpy as np
from scipy import ndimage

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import e2e_util as e  # noqa: E402
from test_label import RANK_OF, write_nrrd  # noqa: E402


def reference(mask, connectivity, min_voxels=0):
    """scipy's labels, objects under min_voxels dropped and the rest renumbered in order."""
    labels, count = ndimage.label(mask, structure=ndimage.generate_binary_structure(3, RANK_OF[connectivity]))
    sizes = np.bincount(labels.ravel(), minlength=count + 1)
    keep = sizes >= min_voxels
    keep[0] = False
    new_id = np.zeros(count + 1, np.int64)
    new_id[keep] = np.arange(1, int(keep.sum()) + 1)
    return new_id[labels], int(keep.sum())


def union_find(n):
    """find and join over 0..n-1, the smaller root winning."""
    parent = list(range(n))

    def find(x):
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    def join(a, b):
        ra, rb = find(a), find(b)
        if ra != rb:
            parent[max(ra, rb)] = min(ra, rb)

    return find, join


def in_file_order(labels):
    """Labels renumbered 1, 2, ... by each one's first voxel in file order (0 stays 0), and their count."""
    present, first = np.unique(labels.ravel(), return_index=True)
    order = [r for _, r in sorted(zip(first, present)) if r != 0]
    new_id = np.zeros(int(labels.max()) + 1, np.int64)
    new_id[order] = np.arange(1, len(order) + 1)
    return new_id[labels], len(order)


def torus_reference(mask, connectivity, periodic):
    """Components on a torus along the periodic axes (a subset of 0, 1, 2): scipy's labels, joined
    where two voxels touch across a periodic face (each offset of the connectivity, np.roll wrapping
    the periodic axes only) by a union-find, then numbered by first voxel in file order."""
    rank = RANK_OF[connectivity]
    labels, count = ndimage.label(mask, structure=ndimage.generate_binary_structure(3, rank))
    find, join = union_find(count + 1)

    index = np.indices(mask.shape)
    for d in np.ndindex(3, 3, 3):
        d = np.array(d) - 1
        if not d.any() or np.count_nonzero(d) > rank:
            continue
        there = np.roll(labels, tuple(-d), axis=(0, 1, 2))
        valid = (labels > 0) & (there > 0)
        for a in range(3):
            if a not in periodic:  # no wrapping along this axis
                valid &= (index[a] + d[a] >= 0) & (index[a] + d[a] < mask.shape[a])
        for la, lb in set(zip(labels[valid].tolist(), there[valid].tolist())):
            join(la, lb)
    return in_file_order(np.array([find(x) for x in range(count + 1)])[labels])


def tiled_reference(mask, connectivity, periodic):
    """The same from scipy's labels of a copy tiled three times along each periodic axis (every
    contact across a periodic face is inside it, between neighbouring tiles): the copies of one
    voxel are one voxel of the torus, so their labels are joined; numbered by first voxel."""
    reps = [3 if a in periodic else 1 for a in range(3)]
    labels, count = ndimage.label(np.tile(mask, reps),
                                  structure=ndimage.generate_binary_structure(3, RANK_OF[connectivity]))
    find, join = union_find(count + 1)

    def tile(k):
        return labels[tuple(slice(k[a] * mask.shape[a], (k[a] + 1) * mask.shape[a]) for a in range(3))]

    base = tile((0, 0, 0))
    for k in np.ndindex(*reps):
        for la, lb in set(zip(base[mask].tolist(), tile(k)[mask].tolist())):
            join(la, lb)
    return in_file_order(np.array([find(x) for x in range(count + 1)])[base])


def unwrapped_reference(mask, connectivity, periodic):
    """The objects on a torus with where each voxel lies unwrapped: a union-find over the voxels
    that keeps each one's offset in whole periods from its root's frame. Per object in file order of
    first voxels: (voxels, box lo, box hi, centroid, wrap axes) with the box's low corner moved into
    the volume; along an axis where the object meets itself moved by a period, the box is the whole
    axis and the centroid NaN."""
    dims = np.array(mask.shape)
    flat = np.flatnonzero(mask)
    coords = np.array(np.unravel_index(flat, mask.shape)).T
    node = np.full(mask.size, -1, np.int64)
    node[flat] = np.arange(flat.size)
    parent = list(range(flat.size))
    offset = [np.zeros(3, np.int64) for _ in range(flat.size)]
    wraps = [set() for _ in range(flat.size)]

    def find(x):
        total = np.zeros(3, np.int64)
        while parent[x] != x:
            total += offset[x]
            x = parent[x]
        return x, total

    rank = RANK_OF[connectivity]
    for d in np.ndindex(3, 3, 3):
        d = np.array(d) - 1
        if not d.any() or np.count_nonzero(d) > rank:
            continue
        there = coords + d
        shift = np.zeros_like(there)
        ok = np.ones(len(coords), bool)
        for a in range(3):
            if a in periodic:
                shift[:, a] = np.floor_divide(there[:, a], dims[a])
                there[:, a] -= shift[:, a] * dims[a]
            else:
                ok &= (there[:, a] >= 0) & (there[:, a] < dims[a])
        idx = np.ravel_multi_index(there[ok].T, mask.shape)
        for a_node, b_node, s in zip(np.flatnonzero(ok), node[idx], shift[ok]):
            if b_node < 0:
                continue
            # b's voxel moved by s periods touches a's: pos(b) = pos(a) + s.
            ra, pa = find(int(a_node))
            rb, pb = find(int(b_node))
            rel = pa + s - pb  # rb's frame in ra's
            if ra == rb:
                wraps[ra].update(int(k) for k in np.flatnonzero(rel))
            elif ra < rb:
                parent[rb], offset[rb] = ra, rel
                wraps[ra] |= wraps[rb]
            else:
                parent[ra], offset[ra] = rb, -rel
                wraps[rb] |= wraps[ra]
    objects = {}
    for n in range(flat.size):  # in file order: each object's first voxel comes first
        root, pos = find(n)
        objects.setdefault(root, []).append(coords[n] + pos * dims)
    table = []
    for root, points in objects.items():
        points = np.array(points)
        axes = wraps[root]
        back = np.array([0 if a in axes or a not in periodic else points[:, a].min() // dims[a] for a in range(3)])
        points = points - back * dims
        lo, hi, centroid = points.min(axis=0), points.max(axis=0), points.mean(axis=0)
        for a in axes:
            lo[a], hi[a], centroid[a] = 0, dims[a] - 1, np.nan
        table.append((len(points), lo, hi, centroid, "".join("zyx"[a] for a in sorted(axes))))
    return table


def read_other(path):
    """A mask written as NetCDF (netCDF4-python) or Zarr v2 (zarr-python), as their users read them."""
    if path.endswith(".nc"):
        import netCDF4
        with netCDF4.Dataset(path) as ds:
            return np.asarray(ds.variables["mask"][:])
    import zarr
    return zarr.open(path, mode="r")[:]


class LabelPasses(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        e.require_binary()
        cls.dir = tempfile.mkdtemp(prefix="volseg-e2e-label-passes-")

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.dir, ignore_errors=True)

    def setUp(self):
        self.work = tempfile.mkdtemp(dir=self.dir)

    def path(self, name):
        return os.path.join(self.work, name)

    def label(self, *args, ranks=1):
        proc = e.run(["label", *map(str, args), "--force", "--progress", "none"], ranks=ranks, timeout=300)
        e.check_ok(self, proc)
        return proc

    def test_objects_numbered_in_their_bricks(self):
        rng = np.random.default_rng(49)
        shape = (21, 26, 70)  # rows longer than a 64-voxel word
        cases = [(1, "5,6,7", "block"), (2, "4,26,70", "block"), (3, "5,6,7", "cyclic"), (4, "8,26,33", "random"),
                 (2, "21,26,70", "block"), (3, "3,26,70", "cyclic")]
        for density, connectivity in ((0.1, 26), (0.3, 6), (0.3, 18), (0.5, 26), (0.55, 6)):
            mask = rng.random(shape) < density
            source = self.path("m.nhdr")
            write_nrrd(source, mask.astype(np.uint8))
            for min_voxels in (0, 3):
                want, count = reference(mask, connectivity, min_voxels)
                for ranks, brick, assign in cases:
                    where = "density %g, %d-connected, min %d, %d ranks, brick %s, %s" % (
                        density, connectivity, min_voxels, ranks, brick, assign)
                    with self.subTest(where):
                        out = self.path("l.nhdr")
                        proc = self.label(source, "--mask-input", "--out", out, "--connectivity", connectivity,
                                          "--brick", brick, "--assign", assign, "--min-voxels", min_voxels,
                                          ranks=ranks)
                        self.assertIn(" %d objects" % count, proc.stdout, where)
                        _, got = e.read_volume(out)
                        np.testing.assert_array_equal(got, want, where)

    def test_pass_2_reads_nothing_when_the_bricks_fit(self):
        rng = np.random.default_rng(5)
        values = rng.random((20, 24, 40)).astype(np.float32)
        source = self.path("v.nhdr")
        write_nrrd(source, values)
        want, count = reference((values >= 0.2) & (values <= 0.7), 26)
        size = values.nbytes
        for ranks in (1, 3):
            for cache, read in ((None, size), ("0", 2 * size)):
                with self.subTest(ranks=ranks, cache=cache):
                    out, report = self.path("l.nhdr"), self.path("r.json")
                    extra = ["--cache", cache] if cache else []
                    self.label(source, "--lo", 0.2, "--hi", 0.7, "--out", out, "--brick", "7,9,40", "--report",
                               report, *extra, ranks=ranks)
                    with open(report) as f:
                        r = json.load(f)
                    self.assertEqual(r["input"]["bytes"], size)
                    self.assertEqual(r["input"]["bytes_read"], read)
                    self.assertEqual(r["memory"]["bricks_read_again"], 0 if cache is None else r["bricks"]["count"])
                    self.assertEqual(r["objects"], count)
                    np.testing.assert_array_equal(e.read_volume(out)[1], want)

    def test_one_read_for_mask_labels_and_table(self):
        """label --mask-out M --out L --stats S: the mask segment writes, the labels and the table, from one
        read of the input (the report's bytes read = its size), in any mask format and on any ranks."""
        rng = np.random.default_rng(11)
        values = ndimage.gaussian_filter(rng.random((18, 22, 30)), 1.5).astype(np.float32)
        lo, hi = np.quantile(values, [0.4, 0.8])
        source = self.path("v.nhdr")
        write_nrrd(source, values)
        band = (values >= np.float32(lo)) & (values <= np.float32(hi))
        want, count = reference(band, 26)
        for ranks in (1, 3):
            for mask_name in ("m.nhdr", "m.nc", "m.zarr"):
                with self.subTest(ranks=ranks, mask=mask_name):
                    out, mask, table, report = (self.path(n) for n in ("l.nhdr", mask_name, "t.csv", "r.json"))
                    proc = self.label(source, "--lo", repr(float(lo)), "--hi", repr(float(hi)), "--mask-out", mask,
                                      "--out", out, "--stats", table, "--report", report, "--brick", "5,11,30",
                                      ranks=ranks)
                    self.assertIn("mask (u8, ", proc.stdout)
                    with open(report) as f:
                        r = json.load(f)
                    self.assertEqual(r["input"]["bytes_read"], values.nbytes)
                    self.assertEqual(r["output"]["mask"]["path"], mask)
                    _, got_mask = e.read_volume(mask) if mask.endswith(".nhdr") else (None, read_other(mask))
                    np.testing.assert_array_equal(got_mask, band.astype(np.uint8))
                    np.testing.assert_array_equal(e.read_volume(out)[1], want)
                    with open(table) as f:
                        self.assertEqual(len(f.read().splitlines()), count + 1)
        # The operators' mask is what is written: segment's, byte for byte.
        e.check_ok(self, e.run(["segment", source, "--lo", repr(float(lo)), "--hi", repr(float(hi)), "--open", "1",
                                "--out", self.path("s.nhdr"), "--quiet", "--force"], ranks=2))
        self.label(source, "--lo", repr(float(lo)), "--hi", repr(float(hi)), "--open", "1", "--mask-out",
                   self.path("o.nhdr"), "--out", self.path("l.nhdr"), "--brick", "6,11,30", ranks=2)
        np.testing.assert_array_equal(e.read_volume(self.path("o.nhdr"))[1], e.read_volume(self.path("s.nhdr"))[1])
        # Hysteresis alone too: the mask after it, not the band (label drops unseeded objects itself).
        blobs = ["--lo", repr(float(np.quantile(values, 0.85))), "--hi", repr(float(values.max()))]
        seeds = ["--seed-lo", repr(float(np.quantile(values, 0.97))), "--seed-hi", repr(float(values.max()))]
        e.check_ok(self, e.run(["segment", source, *blobs, *seeds, "--out", self.path("s.nhdr"), "--quiet",
                                "--force"], ranks=2))
        self.label(source, *blobs, *seeds, "--mask-out", self.path("o.nhdr"), "--out", self.path("l.nhdr"),
                   "--brick", "6,11,30", ranks=2)
        hysteresis = e.read_volume(self.path("s.nhdr"))[1]
        self.assertLess(int(hysteresis.sum()), int((values >= np.quantile(values, 0.85)).sum()),
                        "no object without a seed: a weak case")
        np.testing.assert_array_equal(e.read_volume(self.path("o.nhdr"))[1], hysteresis)
        np.testing.assert_array_equal(e.read_volume(self.path("l.nhdr"))[1] > 0, hysteresis > 0)
        # Over the input or the labels: refused, nothing written.
        for mask, pattern in ((source, r"input"), (self.path("l2.nhdr"), r"l2\.nhdr")):
            before = e.digest(self.work)
            proc = e.run(["label", source, "--lo", "0", "--hi", "1", "--out", self.path("l2.nhdr"), "--mask-out",
                          mask, "--quiet"], ranks=1, timeout=120)
            e.assert_clean_failure(self, proc, pattern)
            self.assertEqual(e.digest(self.work), before)

    def test_periodic_boundaries(self):
        """--periodic: objects across a periodic face are one, numbered by first voxel, against a torus
        union-find and a tiled copy, at 6, 18 and 26, 1-4 ranks, a brick its own
        neighbour, two bricks along an axis (each other's neighbour twice) and small bricks."""
        rng = np.random.default_rng(91)
        shape = (12, 14, 40)
        bar = np.zeros(shape, bool)
        bar[3, 4, :5] = bar[3, 4, -6:] = True  # one bar across x's faces
        bar[0, 7, 9] = bar[-1, 8, 10] = True  # across z's faces diagonally (18 and 26 only)
        cases = [(1, "12,14,40", "block"), (2, "12,14,20", "block"), (3, "5,6,7", "cyclic"), (4, "4,14,40", "random"),
                 (2, "12,7,13", "cyclic")]
        source = self.path("m.nhdr")
        for density in (0.08, 0.3):
            mask = (rng.random(shape) < density) | bar
            write_nrrd(source, mask.astype(np.uint8))
            for axes, periodic in (("x", (2,)), ("z,y", (0, 1)), ("zyx", (0, 1, 2))):
                for connectivity in (6, 18, 26):
                    want, count = torus_reference(mask, connectivity, periodic)
                    tiled, _ = tiled_reference(mask, connectivity, periodic)
                    np.testing.assert_array_equal(tiled, want, "the two references differ")
                    for ranks, brick, assign in cases:
                        where = "density %g, --periodic %s, %d-connected, %d ranks, brick %s" % (
                            density, axes, connectivity, ranks, brick)
                        with self.subTest(where):
                            out = self.path("l.nhdr")
                            proc = self.label(source, "--mask-input", "--out", out, "--connectivity", connectivity,
                                              "--periodic", axes, "--brick", brick, "--assign", assign, ranks=ranks)
                            self.assertIn(" %d objects" % count, proc.stdout, where)
                            header, got = e.read_volume(out)
                            np.testing.assert_array_equal(got, want, where)
        # The bar is one object only with --periodic x.
        write_nrrd(source, bar.astype(np.uint8))
        plain = e.read_volume(self.path("l.nhdr"))
        self.label(source, "--mask-input", "--out", self.path("p.nhdr"), "--connectivity", 6, "--periodic", "x")
        _, got = e.read_volume(self.path("p.nhdr"))
        self.assertEqual(got[3, 4, 0], got[3, 4, -1])
        self.label(source, "--mask-input", "--out", self.path("n.nhdr"), "--connectivity", 6)
        _, got = e.read_volume(self.path("n.nhdr"))
        self.assertNotEqual(got[3, 4, 0], got[3, 4, -1])
        del plain
        # Bad input: one line, nothing written.
        for args, pattern in ((["--periodic", "w"], r"--periodic w: 'w' is not an axis \(z, y or x\)"),
                              (["--periodic", "x", "--open", "1"], r"--periodic: the operators")):
            with self.subTest(args=args):
                before = e.digest(self.work)
                proc = e.run(["label", source, "--mask-input", "--out", self.path("bad.nhdr"), "--quiet", *args],
                             ranks=1, timeout=120)
                e.assert_clean_failure(self, proc, pattern)
                self.assertEqual(e.digest(self.work), before)
        before = e.digest(self.work)
        proc = e.run(["label", source, "--mask-input", "--out", self.path("bad.ome.zarr"), "--periodic", "x"],
                     ranks=1, timeout=120)
        e.assert_clean_failure(self, proc, r"--periodic: ome-zarr labels record each object's box")
        self.assertEqual(e.digest(self.work), before)

    def test_periodic_table_is_unwrapped(self):
        """--periodic with --stats and --report: boxes and centroids unwrapped (in the frame where the box's
        low corner lies in the volume), objects that meet themselves flagged with their axes, against a
        union-find with offsets over the voxels, on 1-4 ranks with small bricks. A periodic volume rolled
        so that an object lies inside gives that object's shape and values as the plain job does."""
        rng = np.random.default_rng(17)
        shape = (12, 14, 16)
        smooth = ndimage.gaussian_filter(rng.random(shape), 1.3, mode="wrap")
        mask = smooth > np.quantile(smooth, 0.62)
        mask[6, 3, :] = True  # a tube along x: it meets itself across x's faces
        write_nrrd(self.path("m.nhdr"), mask.astype(np.uint8))
        for axes, periodic in (("zyx", (0, 1, 2)), ("x", (2,)), ("z,y", (0, 1))):
            for connectivity in (6, 26):
                want = unwrapped_reference(mask, connectivity, periodic)
                for ranks, brick, assign in ((1, "5,6,7", "block"), (2, "12,7,16", "cyclic"), (3, "4,5,6", "random"),
                                             (4, "6,14,8", "block")):
                    where = "--periodic %s, %d-connected, %d ranks, brick %s" % (axes, connectivity, ranks, brick)
                    with self.subTest(where):
                        table, report = self.path("t.csv"), self.path("r.json")
                        self.label(self.path("m.nhdr"), "--mask-input", "--out", self.path("l.nhdr"), "--periodic",
                                   axes, "--connectivity", connectivity, "--brick", brick, "--assign", assign,
                                   "--stats", table, "--report", report, ranks=ranks)
                        with open(table) as f:
                            rows = list(csv.DictReader(f))
                        with open(report) as f:
                            json_rows = json.load(f)["table"]
                        self.assertEqual(len(rows), len(want), where)
                        for k, (row, (voxels, lo, hi, centroid, wraps)) in enumerate(zip(rows, want)):
                            self.assertEqual(int(row["voxels"]), voxels, f"object {k + 1}")
                            self.assertEqual([int(row[a + "_min"]) for a in "zyx"], lo.tolist(), f"object {k + 1}")
                            self.assertEqual([int(row[a + "_max"]) for a in "zyx"], hi.tolist(), f"object {k + 1}")
                            self.assertEqual(row["wraps"], wraps, f"object {k + 1}")
                            self.assertEqual(json_rows[k]["wraps"], wraps)
                            for a, axis in enumerate("zyx"):
                                got = float(row["centroid_" + axis])
                                if np.isnan(centroid[a]):
                                    self.assertTrue(np.isnan(got), f"object {k + 1} centroid_{axis}")
                                    self.assertIsNone(json_rows[k]["centroid_zyx"][a])
                                else:
                                    self.assertAlmostEqual(got, centroid[a], delta=1e-9, msg=f"object {k + 1}")
                        self.assertTrue(any(w for *_, w in want) or axes == "z,y")

        # Rolled so that an object across every face (an ellipsoid about a corner) lies inside: its shape
        # and values are the plain job's.
        z, y, x = np.indices(shape)
        dz, dy, dx = (np.minimum(c, n - c) for c, n in zip((z, y, x), shape))  # distances to the corner, wrapped
        mask = (dz / 3.5) ** 2 + (dy / 2.5) ** 2 + ((x - 1) / 4.5) ** 2 <= 1  # x from the low face only...
        mask |= (dz / 3.5) ** 2 + (dy / 2.5) ** 2 + ((x - shape[2] + 2) / 2.2) ** 2 <= 1  # ...and the high one
        mask[5:8, 6:9, 6:10] = True  # and one inside
        write_nrrd(self.path("m.nhdr"), mask.astype(np.uint8))
        values = rng.random(shape).astype(np.float32)
        write_nrrd(self.path("v.nhdr"), values)
        want = unwrapped_reference(mask, 26, (0, 1, 2))
        self.assertEqual(len(want), 2)
        k, (voxels, lo, hi, centroid, wraps) = 0, want[0]
        self.assertEqual(wraps, "")
        self.assertTrue((hi >= np.array(shape)).all(), "the corner object crosses every face")
        roll = tuple(int(shape[a] // 2 - (lo[a] + hi[a]) // 2) for a in range(3))
        write_nrrd(self.path("rolled.nhdr"), np.roll(mask, roll, axis=(0, 1, 2)).astype(np.uint8))
        write_nrrd(self.path("rolled_v.nhdr"), np.roll(values, roll, axis=(0, 1, 2)))
        self.label(self.path("m.nhdr"), "--mask-input", "--out", self.path("l.nhdr"), "--periodic", "zyx",
                   "--values", self.path("v.nhdr"), "--stats", self.path("p.csv"), "--brick", "5,6,7", ranks=2)
        self.label(self.path("rolled.nhdr"), "--mask-input", "--out", self.path("r.nhdr"), "--values",
                   self.path("rolled_v.nhdr"), "--stats", self.path("r.csv"))
        with open(self.path("p.csv")) as f:
            periodic_row = list(csv.DictReader(f))[k]
        with open(self.path("r.csv")) as f:
            rolled = [r for r in csv.DictReader(f) if r["touches_boundary"] == "0"]
        moved = [(centroid[a] + roll[a]) for a in range(3)]
        match = [r for r in rolled if all(abs(float(r["centroid_" + x]) - moved[a]) < 1e-9 for a, x in enumerate("zyx"))]
        self.assertEqual(len(match), 1, "the rolled object")
        plain = match[0]
        for column in ("voxels", "surface_area", "equivalent_diameter", "inertia_1", "inertia_2", "inertia_3",
                       "major_axis_length", "minor_axis_length", "sphericity", "value_min", "value_max", "value_sum"):
            self.assertAlmostEqual(float(periodic_row[column]), float(plain[column]), delta=1e-6, msg=column)
        for a, axis in enumerate("zyx"):
            self.assertAlmostEqual(float(periodic_row["value_centroid_" + axis]) + roll[a],
                                   float(plain["value_centroid_" + axis]), delta=1e-6, msg=axis)

    def test_value_sum_and_centroid(self):
        """--values: value_sum and the value-weighted centroid of each object, against numpy over scipy's
        labels, on 1 and 3 ranks with bricks smaller than the objects (the sums add across parts)."""
        rng = np.random.default_rng(23)
        field = ndimage.gaussian_filter(rng.random((16, 20, 26)), 1.0)
        mask = field > np.quantile(field, 0.75)
        values = (rng.random(mask.shape) * 10 - 2).astype(np.float32)
        write_nrrd(self.path("m.nhdr"), mask.astype(np.uint8))
        write_nrrd(self.path("v.nhdr"), values)
        labels, count = reference(mask, 26)
        index = np.arange(1, count + 1)
        v64 = values.astype(np.float64)
        sums = ndimage.sum(v64, labels, index)
        z, y, x = np.indices(mask.shape)
        centroids = [ndimage.sum(v64 * a, labels, index) / sums for a in (z, y, x)]
        self.assertGreater(count, 3)
        for ranks in (1, 3):
            with self.subTest(ranks=ranks):
                table = self.path("t.csv")
                self.label(self.path("m.nhdr"), "--mask-input", "--out", self.path("l.nhdr"), "--values",
                           self.path("v.nhdr"), "--stats", table, "--brick", "5,7,9", ranks=ranks)
                with open(table) as f:
                    rows = list(csv.DictReader(f))
                self.assertEqual(len(rows), count)
                for k, row in enumerate(rows):
                    self.assertAlmostEqual(float(row["value_sum"]), sums[k], delta=1e-9 * max(1, abs(sums[k])))
                    for a, axis in enumerate("zyx"):
                        self.assertAlmostEqual(float(row["value_centroid_" + axis]), centroids[a][k],
                                               delta=1e-7 * max(1, abs(centroids[a][k])))

    def test_every_label_type(self):
        many = np.zeros((9, 10, 40), np.uint8)
        many[::2, ::2, ::2] = 1  # 5 * 5 * 20 = 500 objects
        few = np.zeros((9, 10, 40), np.uint8)
        few[::2, ::2, ::8] = 1  # 125
        for name, mask in (("many", many), ("few", few)):
            write_nrrd(self.path(name + ".nhdr"), mask)
        want_many, _ = reference(many, 6)
        want_few, _ = reference(few, 6)
        for ranks in (1, 2):
            for option, kind, dtype in (("--label-type", "u16", "u2"), ("--label-type", "u32", "u4"),
                                        ("--label-type", "u64", "u8"), ("--type", "u64", "u8"),
                                        ("--label-type", "auto", "u4")):
                with self.subTest(ranks=ranks, option=option, kind=kind):
                    out = self.path("l.nhdr")
                    proc = self.label(self.path("many.nhdr"), "--mask-input", "--connectivity", 6, "--out", out,
                                      option, kind, "--brick", "3,4,5", "--stats", self.path("t.csv"), ranks=ranks)
                    self.assertIn("labels (%s" % {"u2": "u16", "u4": "u32", "u8": "u64"}[dtype], proc.stdout)
                    _, got = e.read_volume(out)
                    self.assertEqual(got.dtype.str[1:], dtype)
                    np.testing.assert_array_equal(got, want_many)
            with self.subTest(ranks=ranks, kind="u8"):
                out = self.path("l.nhdr")
                self.label(self.path("few.nhdr"), "--mask-input", "--connectivity", 6, "--out", out,
                           "--label-type", "u8", ranks=ranks)
                _, got = e.read_volume(out)
                self.assertEqual(got.dtype.str[1:], "u1")
                np.testing.assert_array_equal(got, want_few)
                before = e.digest(self.work)
                proc = e.run(["label", self.path("many.nhdr"), "--mask-input", "--connectivity", "6", "--out",
                              self.path("n.nhdr"), "--label-type", "u8", "--quiet"], ranks=ranks, timeout=120)
                e.assert_clean_failure(self, proc, r"--label-type u8 holds at most 255 labels, and the mask has "
                                                   r"500 objects")
                self.assertEqual(e.digest(self.work), before)


if __name__ == "__main__":
    e.main()
