# SPDX-License-Identifier: MIT
"""'volseg label --classes' against skimage.measure.label, and 'volseg label
--split' against scikit-image's pipeline (scipy's distance, h_maxima, label,
watershed) and the spheres generator's true count.

The split compares after matching ids by overlap (volseg numbers objects in
file order, scikit-image by marker). volseg floods each connected component
on its own, and must equal scikit-image's watershed of each component alone
voxel for voxel; scikit-image's flood of the whole volume breaks ties
between voxels of one height in an order that depends on the other
components in its heap (0.01% to 0.14% of the voxels of the spheres volumes
here), and must agree on at least 99.9%. A component without a marker is one
object (scikit-image leaves it 0). Every case runs on 1, 2 and 3 ranks with
two brick shapes and must write the same bytes every time."""
import csv
import os
import sys
import tempfile
import unittest

import numpy as np
from scipy import ndimage

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import e2e_util as e  # noqa: E402
from test_label import write_nrrd  # noqa: E402

try:
    from skimage.measure import label as skimage_label
    from skimage.morphology import h_maxima, h_minima
    from skimage.segmentation import watershed
except ImportError:
    skimage_label = None

RANK_OF = {6: 1, 18: 2, 26: 3}


def agreement(ours, theirs, mask):
    """The share of voxels on which two labelings agree once each of ours
    is matched to the one of theirs it overlaps most; and whether that
    matching is one to one."""
    pairs = np.stack([ours[mask], theirs[mask]], 1)
    unique, counts = np.unique(pairs, axis=0, return_counts=True)
    best = {}
    for (a, b), k in zip(map(tuple, unique), counts):
        if k > best.get(a, (0, 0))[1]:
            best[a] = (b, k)
    matched = [b for b, _ in best.values()]
    return sum(k for _, k in best.values()) / max(1, int(mask.sum())), len(matched) == len(set(matched))


def watershed_alone(distance, markers, mask, connectivity):
    """scikit-image's watershed of each connected component of mask on its own."""
    structure = ndimage.generate_binary_structure(3, RANK_OF[connectivity])
    components, _ = ndimage.label(mask, structure=structure)
    out = np.zeros(mask.shape, np.int32)
    for k, box in enumerate(ndimage.find_objects(components), 1):
        inside = components[box] == k
        flooded = watershed(-distance[box], markers[box] * inside, mask=inside, connectivity=RANK_OF[connectivity])
        out[box][inside] = flooded[inside]
    return out


@unittest.skipIf(skimage_label is None, "missing scikit-image (python3-skimage)")
class Split(unittest.TestCase):
    def setUp(self):
        e.require_binary()
        self.tmp = tempfile.TemporaryDirectory()
        self.dir = self.tmp.name

    def tearDown(self):
        self.tmp.cleanup()

    def path(self, name):
        return os.path.join(self.dir, name)

    def label(self, args, ranks=1):
        out = self.path("labels.nhdr")
        proc = e.run(["label", *args, "--out", out, "--force", "--label-type", "u32", "--progress", "none"],
                     ranks=ranks)
        e.check_ok(self, proc)
        return e.read_volume(out)[1], proc.stdout

    def same_everywhere(self, args, bricks):
        """The labels on 1, 2 and 3 ranks and each brick shape: one set of bytes."""
        first = None
        for ranks in (1, 2, 3):
            for brick in bricks:
                labels, _ = self.label([*args, "--brick", brick], ranks)
                if first is None:
                    first = labels
                self.assertEqual(labels.tobytes(), first.tobytes(), "%d ranks, bricks %s" % (ranks, brick))
        return first

    def spheres(self, name, count, dims, seed, extra=()):
        path = self.path(name + ".nhdr")
        e.generate(self, path, "spheres", dims, "u8", "little",
                   extra=("--count", str(count), "--seed", str(seed), *extra))
        mask = e.read_volume(path)[1] != 0
        with open(self.path(name + ".spheres.csv")) as f:
            balls = [{k: int(v) for k, v in row.items()} for row in csv.DictReader(f)]
        return path, mask, balls

    def test_classes_equal_skimage_label(self):
        rng = np.random.default_rng(3)
        blocks = rng.integers(0, 4, size=(6, 8, 8)).astype(np.uint8)
        image = np.kron(blocks, np.ones((4, 4, 4), np.uint8))[:23, :29, :31]
        noise = rng.random(image.shape) < 0.15
        image = np.ascontiguousarray(np.where(noise, rng.integers(0, 4, size=image.shape).astype(np.uint8), image))
        source = self.path("classes.nhdr")
        write_nrrd(source, image)
        for connectivity in (6, 18, 26):
            expected = skimage_label(image, background=0, connectivity=RANK_OF[connectivity])
            for stats in ([], ["--stats", self.path("t.csv")]):
                got = self.same_everywhere(["--classes", source, "--connectivity", str(connectivity), *stats],
                                           ("7,9,11", "23,29,31"))
                np.testing.assert_array_equal(got, expected, "connectivity %d" % connectivity)
            with open(self.path("t.csv")) as f:
                voxels = [int(row["voxels"]) for row in csv.DictReader(f)]
            self.assertEqual(voxels, list(np.bincount(expected.ravel())[1:]))

    def test_markers_agree_with_skimage_watershed(self):
        path, mask, balls = self.spheres("s", 60, (72, 80, 88), 6, ("--radius", "6,10"))
        # Markers: each ball's centre, ids not contiguous; one group left
        # without any, to be one object of its own.
        markers = np.zeros(mask.shape, np.int32)
        components, _ = ndimage.label(mask, structure=np.ones((3, 3, 3)))
        left_out = components[balls[0]["z"], balls[0]["y"], balls[0]["x"]]
        for ball in balls:
            if components[ball["z"], ball["y"], ball["x"]] != left_out:
                markers[ball["z"], ball["y"], ball["x"]] = ball["id"] * 7 + 100
        write_nrrd(self.path("markers.nhdr"), markers)
        distance = ndimage.distance_transform_edt(mask).astype(np.float32)
        for connectivity in (6, 26):
            got = self.same_everywhere([path, "--mask-input", "--split", "--markers", self.path("markers.nhdr"),
                                        "--connectivity", str(connectivity)], ("16,20,24", "72,80,88"))
            expected = watershed(-distance, markers, mask=mask, connectivity=RANK_OF[connectivity])
            marked = mask & (expected > 0)
            share, one_to_one = agreement(got, expected, marked)
            self.assertGreaterEqual(share, 0.999, "connectivity %d" % connectivity)
            self.assertTrue(one_to_one)
            share, one_to_one = agreement(got, watershed_alone(distance, markers, mask, connectivity), marked)
            self.assertEqual(share, 1.0, "connectivity %d: not scikit-image's flood of each component" % connectivity)
            # The group without a marker: one object, all of it.
            unmarked = np.unique(got[components == left_out])
            self.assertEqual(len(unmarked), 1)
            self.assertNotEqual(unmarked[0], 0)
            self.assertEqual(got.max(), len(np.unique(expected)) - 1 + 1)
            # Numbered in file order of each object's first voxel.
            firsts = [np.flatnonzero(got.ravel() == k)[0] for k in range(1, got.max() + 1)]
            self.assertEqual(firsts, sorted(firsts))

    def test_h_maxima_find_the_true_count(self):
        path, mask, balls = self.spheres("many", 240, (128, 128, 128), 11)
        _, plain = self.label([path, "--mask-input"], 2)
        _, split = self.label([path, "--mask-input", "--split", "--stats", self.path("t.csv")], 2)
        whole = int(plain.split(" objects")[0].split()[-1])
        found = int(split.split(" objects, ")[0].split()[-1])
        self.assertLess(whole, len(balls) * 0.8, "the balls should touch: %d objects unsplit" % whole)
        self.assertLessEqual(abs(found - len(balls)), 0.02 * len(balls), "%d objects of %d balls" % (found, len(balls)))
        # scikit-image's pipeline on the same distance gives the same objects.
        distance = ndimage.distance_transform_edt(mask).astype(np.float32)
        expected = watershed(-distance, skimage_label(h_maxima(distance, 0.5)), mask=mask, connectivity=3)
        labels = e.read_volume(self.path("labels.nhdr"))[1]
        share, one_to_one = agreement(labels, expected, mask & (expected > 0))
        self.assertGreaterEqual(share, 0.999)
        markers = skimage_label(h_maxima(distance, 0.5))
        share, _ = agreement(labels, watershed_alone(distance, markers, mask, 26), mask & (expected > 0))
        self.assertEqual(share, 1.0)
        with open(self.path("t.csv")) as f:
            rows = list(csv.DictReader(f))
        self.assertEqual(len(rows), found)
        self.assertEqual([int(r["voxels"]) for r in rows], list(np.bincount(labels.ravel())[1:]))

    def test_anisotropic_spacing_and_threshold_input(self):
        path, mask, _ = self.spheres("a", 40, (48, 56, 64), 2)
        values = np.where(mask, 200, 20).astype(np.uint8)
        write_nrrd(self.path("v.nhdr"), values)
        got = self.same_everywhere([self.path("v.nhdr"), "--lo", "100", "--hi", "255", "--split", "--h", "0.7",
                                    "--spacing", "1.5,1,1"], ("11,13,17", "48,56,64"))
        distance = ndimage.distance_transform_edt(mask, sampling=(1.5, 1, 1)).astype(np.float32)
        expected = watershed(-distance, skimage_label(h_maxima(distance, 0.7)), mask=mask, connectivity=3)
        share, _ = agreement(got, expected, mask & (expected > 0))
        self.assertGreaterEqual(share, 0.999)

    def test_split_on_a_field(self):
        # Flooding the negated distance, given as a field, is --split itself.
        path, mask, _ = self.spheres("f", 30, (36, 40, 44), 5)
        distance = ndimage.distance_transform_edt(mask).astype(np.float32)
        write_nrrd(self.path("d.nhdr"), distance)
        write_nrrd(self.path("negd.nhdr"), -distance)
        plain, _ = self.label([path, "--mask-input", "--split"])
        on, _ = self.label([path, "--mask-input", "--split", "--split-on", self.path("negd.nhdr")])
        negated, _ = self.label([path, "--mask-input", "--split", "--split-on", "-" + self.path("d.nhdr")])
        self.assertGreater(plain.max(), ndimage.label(mask, np.ones((3, 3, 3)))[1])
        np.testing.assert_array_equal(on, plain)
        np.testing.assert_array_equal(negated, plain)
        # Dark cells with bright walls: the input's own values flood, lowest
        # first, from their h-minima, each component as scikit-image floods
        # it alone (outside it: above everything).
        rng = np.random.default_rng(7)
        walls = ndimage.gaussian_filter(rng.random((30, 34, 38)), 2.0)
        image = ((walls - walls.min()) / np.ptp(walls) * 100).astype(np.float32)
        write_nrrd(self.path("cells.nhdr"), image)
        h = 3.0
        for connectivity in (6, 26):
            got = self.same_everywhere([self.path("cells.nhdr"), "--lo", "0", "--hi", "60", "--split", "--split-on",
                                        "input", "--h", str(h), "--connectivity", str(connectivity)],
                                       ("7,9,11", "30,34,38"))
            cells = image <= 60
            structure = ndimage.generate_binary_structure(3, RANK_OF[connectivity])
            components, _ = ndimage.label(cells, structure=structure)
            expected = np.zeros(image.shape, np.int32)
            for k, box in enumerate(ndimage.find_objects(components), 1):
                inside = components[box] == k
                alone = np.where(inside, image[box], image.max() + 1000).astype(np.float32)
                markers = skimage_label(h_minima(alone, h) * inside)
                expected[box][inside] = watershed(image[box], markers, mask=inside,
                                                  connectivity=RANK_OF[connectivity])[inside]
            self.assertGreater(len(np.unique(expected)) - 1, components.max(), "the walls should split cells")
            share, one_to_one = agreement(got, expected, cells)
            self.assertEqual(share, 1.0, "connectivity %d" % connectivity)
            self.assertTrue(one_to_one)

    def test_bad_input(self):
        path, mask, _ = self.spheres("b", 6, (20, 22, 24), 1)
        out = self.path("l.nhdr")
        write_nrrd(self.path("small.nhdr"), np.zeros((20, 22, 23), np.int32))
        write_nrrd(self.path("float.nhdr"), np.zeros((20, 22, 24), np.float32))
        write_nrrd(self.path("twos.nhdr"), mask.astype(np.uint8) * 2)
        for args, pattern in (
                ([path, "--mask-input", "--split", "--markers", self.path("small.nhdr")], "--markers .* must match"),
                ([path, "--mask-input", "--split", "--markers", self.path("float.nhdr")], "integer"),
                ([path, "--mask-input", "--split", "--h", "0"], "--h"),
                ([path, "--mask-input", "--split", "--h", "-1"], "--h"),
                ([path, "--mask-input", "--split", "--h", "tall"], "--h"),
                ([path, "--mask-input", "--split", "--spacing", "1,0,1"], "--spacing"),
                ([self.path("twos.nhdr"), "--mask-input", "--split"], "0 or 1|neither"),
                ([path, "--mask-input", "--h", "1"], "--split"),
                ([path, "--mask-input", "--split", "--split-on", "input"], "--split-on input"),
                ([path, "--mask-input", "--split", "--split-on", self.path("small.nhdr")], "--split-on .* must match"),
                ([path, "--mask-input", "--split-on", self.path("float.nhdr")], "--split"),
                (["--classes", self.path("small.nhdr")], "--classes")):
            proc = e.run(["label", *args, "--out", out], ranks=2)
            e.assert_clean_failure(self, proc, pattern)
            self.assertFalse(os.path.exists(out), args)
            self.assertEqual([n for n in os.listdir(self.dir) if n.startswith(".")], [], "temporary files left")
        e.check_ok(self, e.run(["label", path, "--mask-input", "--split", "--out", out, "--quiet"], ranks=1))
        proc = e.run(["label", path, "--mask-input", "--split", "--out", out], ranks=1)
        e.assert_clean_failure(self, proc, "exists")


if __name__ == "__main__":
    e.main()
