#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""End-to-end checks of `volseg edit`: a journal replayed on labels on 1, 2
and 3 ranks equals a numpy replay of the same journal (merge, delete, paint
and erase exactly; a split as scikit-image's watershed of the object's
distance, from its h-maxima or from seeds, with the numbering rule of
docs/edit.md), and bad journals get one line naming the edit and field."""
import csv
import json
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
    from skimage.morphology import h_maxima
    from skimage.segmentation import watershed
except ImportError:
    skimage_label = None

RANK_OF = {6: 1, 18: 2, 26: 3}


def split_reference(labels, edit, max_id, connectivity):
    """The split of one object as docs/edit.md says, with scipy and scikit-image."""
    obj = labels == edit["id"]
    box = ndimage.find_objects(obj.astype(np.int8))[0]
    o = obj[box]
    # The object's distance, outside it background (the volume's outside too).
    distance = ndimage.distance_transform_edt(np.pad(o, 1))[1:-1, 1:-1, 1:-1].astype(np.float32)
    if "h" in edit:
        maxima = h_maxima(np.pad(distance, 1), edit["h"])[1:-1, 1:-1, 1:-1]
        markers = skimage_label(maxima, connectivity=3) * o
    else:
        markers = np.zeros(o.shape, np.int64)
        k = 0
        for z, y, x in edit["seeds"]:
            at = (z - box[0].start, y - box[1].start, x - box[2].start)
            if markers[at] == 0:
                k += 1
                markers[at] = k
    parts = watershed(-distance, markers, mask=o, connectivity=RANK_OF[connectivity]).astype(np.int64)
    unreached = o & (parts == 0)
    pieces, _ = ndimage.label(unreached, ndimage.generate_binary_structure(3, RANK_OF[connectivity]))
    parts[unreached] = pieces[unreached] + parts.max()
    flat = parts.ravel()
    regions = [r for r in np.unique(flat) if r != 0]
    first = {r: np.flatnonzero(flat == r)[0] for r in regions}
    keep = flat[np.flatnonzero(o.ravel())[0]]
    new = {}
    for r in sorted(regions, key=first.get):
        if r == keep:
            new[r] = edit["id"]
        else:
            max_id += 1
            new[r] = max_id
    out = labels[box].copy()
    for r, v in new.items():
        out[parts == r] = v
    labels[box] = out
    return max_id


def replay(labels, edits, connectivity=26):
    """The journal replayed with numpy."""
    labels = labels.astype(np.int64).copy()
    max_id = int(labels.max())
    zz, yy, xx = np.ogrid[:labels.shape[0], :labels.shape[1], :labels.shape[2]]
    for edit in edits:
        op = edit["op"]
        if op == "merge":
            labels[np.isin(labels, edit["ids"])] = min(edit["ids"])
        elif op == "delete":
            labels[np.isin(labels, edit["ids"])] = 0
        elif op in ("paint", "erase"):
            cz, cy, cx = edit["center"]
            r = edit["radius"]
            ball = (zz - cz) ** 2 + (yy - cy) ** 2 + (xx - cx) ** 2 <= r * r
            labels[ball] = edit["id"] if op == "paint" else 0
            if op == "paint":
                max_id = max(max_id, edit["id"])
        elif op == "split":
            max_id = split_reference(labels, edit, max_id, connectivity)
    return labels


@unittest.skipIf(skimage_label is None, "missing scikit-image (python3-skimage)")
class Edit(unittest.TestCase):
    def setUp(self):
        e.require_binary()
        self.tmp = tempfile.TemporaryDirectory()
        self.dir = self.tmp.name

    def tearDown(self):
        self.tmp.cleanup()

    def path(self, name):
        return os.path.join(self.dir, name)

    def labels(self):
        """Touching balls, labelled: their ids, and the balls."""
        spheres = self.path("s.nhdr")
        e.generate(self, spheres, "spheres", (40, 44, 48), "u8", "little", extra=("--count", "40", "--seed", "4"))
        e.check_ok(self, e.run(["label", spheres, "--mask-input", "--out", self.path("l.nhdr"), "--label-type", "u32",
                                "--quiet"], ranks=1))
        with open(self.path("s.spheres.csv")) as f:
            balls = [{k: int(v) for k, v in row.items()} for row in csv.DictReader(f)]
        return e.read_volume(self.path("l.nhdr"))[1], balls

    def edit(self, edits, ranks, extra=()):
        journal = self.path("e.json")
        with open(journal, "w") as f:
            json.dump({"edits": edits}, f)
        out = self.path("edited.nhdr")
        proc = e.run(["edit", self.path("l.nhdr"), "--edits", journal, "--out", out, "--force", "--progress", "none",
                      *extra], ranks=ranks)
        e.check_ok(self, proc)
        return e.read_volume(out)[1], proc.stdout

    def test_replay_equals_numpy(self):
        labels, balls = self.labels()
        ids_of = {}  # object id -> the balls in it
        for b in balls:
            ids_of.setdefault(int(labels[b["z"], b["y"], b["x"]]), []).append(b)
        groups = sorted((i for i, bs in ids_of.items() if len(bs) >= 2), key=lambda i: -len(ids_of[i]))
        singles = sorted(i for i, bs in ids_of.items() if len(bs) == 1)
        self.assertGreaterEqual(len(groups), 2, "the generator should make touching balls")
        self.assertGreaterEqual(len(singles), 4)
        top = int(labels.max())
        seeds = [[b["z"], b["y"], b["x"]] for b in ids_of[groups[1]]]
        edits = [
            {"op": "split", "id": groups[0], "h": 0.5},
            {"op": "merge", "ids": [singles[0], singles[1], top + 1]},
            {"op": "delete", "ids": [singles[2]]},
            {"op": "paint", "id": singles[3], "center": [20, 22, 24], "radius": 5.5},
            {"op": "erase", "center": [0, 43, 47], "radius": 7},
            {"op": "split", "id": groups[1], "seeds": seeds},
            {"op": "paint", "id": top + 50, "center": [39, 0, 10], "radius": 3},
        ]
        expected = replay(labels, edits)
        self.assertGreater(len(np.unique(expected)), 4)
        table = self.path("edited.csv")
        for ranks in (1, 2, 3):
            got, out = self.edit(edits, ranks, ("--stats", table))
            self.assertEqual(got.dtype, labels.dtype)
            np.testing.assert_array_equal(got, expected, "%d ranks" % ranks)
            self.check_table(table, expected)
        self.assertIn("splits gave ids", out)
        # The first split made parts with new ids past the largest, which
        # the merge after it then names.
        after_split = replay(labels, edits[:1])
        self.assertGreaterEqual(len(np.unique(after_split[labels == groups[0]])), 2)
        self.assertTrue(np.any(after_split == top + 1))
        self.assertFalse(np.any(expected == top + 1))
        # 6-connected floods too.
        expected6 = replay(labels, edits[:1] + edits[5:6], connectivity=6)
        got6, _ = self.edit(edits[:1] + edits[5:6], 2, ("--connectivity", "6"))
        np.testing.assert_array_equal(got6, expected6)

    def check_table(self, path, labels):
        """--stats: a row per id the edited labels hold (ids skip where
        deleted), each as numpy counts it."""
        with open(path) as f:
            rows = list(csv.DictReader(f))
        ids = [int(r["id"]) for r in rows]
        self.assertEqual(ids, sorted(set(np.unique(labels)) - {0}))
        dims = labels.shape
        for r in rows:
            at = np.argwhere(labels == int(r["id"]))
            self.assertEqual(int(r["voxels"]), len(at), r)
            for a, axis in enumerate("zyx"):
                self.assertEqual(int(r[f"{axis}_min"]), at[:, a].min(), r)
                self.assertEqual(int(r[f"{axis}_max"]), at[:, a].max(), r)
                self.assertAlmostEqual(float(r[f"centroid_{axis}"]), at[:, a].mean(), places=9)
            edge = bool(np.any(at == 0) or np.any(at == np.array(dims) - 1))
            self.assertEqual(r["touches_boundary"], "1" if edge else "0", r)

    def test_bad_journals(self):
        labels, _ = self.labels()
        present = int(labels.max())
        out = self.path("edited.nhdr")
        journal = self.path("bad.json")
        write_nrrd(self.path("float.nhdr"), labels.astype(np.float32))
        other = int(labels[labels > 0][0])
        background = [int(v) for v in np.argwhere(labels == 0)[0]]
        cases = [
            ("{not json", "not JSON"),
            ('{"edits": [{"op": "glue", "ids": [1]}]}', "edit 0: 'op' .*glue"),
            ('{"edits": [{"op": "merge", "ids": [1, %d]}]}' % (present + 7), "edit 0: 'ids' names object %d"
             % (present + 7)),
            ('{"edits": [{"op": "delete", "ids": [1]}, {"op": "merge", "ids": [1, 2]}]}', "edit 1: 'ids' names object 1"),
            ('{"edits": [{"op": "split", "id": %d, "seeds": [%s, %s]}]}' % (other, json.dumps(background),
                                                                          json.dumps(background)),
             "edit 0: 'seeds' .* not a voxel of object"),
            ('{"edits": [{"op": "paint", "id": 1, "center": [40, 0, 0], "radius": 2}]}', "edit 0: 'center' .*outside"),
            ('{"edits": [{"op": "erase", "center": [1, 1, 1], "radius": 0}]}', "edit 0: 'radius'"),
            ('{"edits": [{"op": "erase", "center": [1, 1, 1], "radius": 300}]}', "edit 0: 'radius' .*256"),
            ('{"edits": [{"op": "split", "id": 1}]}', "edit 0: 'h'"),
            ('{"edits": [{"op": "merge", "ids": [1, 2], "into": 3}]}', "edit 0: 'into'"),
        ]
        for text, pattern in cases:
            with open(journal, "w") as f:
                f.write(text)
            # Without progress bars: an id or a seed is checked after the
            # pass that finds the ids, whose bar would be a line of its own.
            proc = e.run(["edit", self.path("l.nhdr"), "--edits", journal, "--out", out, "--progress", "none"],
                         ranks=2)
            e.assert_clean_failure(self, proc, pattern)
            self.assertFalse(os.path.exists(out), text)
        with open(journal, "w") as f:
            f.write('{"edits": [{"op": "delete", "ids": [1]}]}')
        proc = e.run(["edit", self.path("float.nhdr"), "--edits", journal, "--out", out], ranks=1)
        e.assert_clean_failure(self, proc, "integer type")
        e.check_ok(self, e.run(["edit", self.path("l.nhdr"), "--edits", journal, "--out", out, "--quiet"], ranks=1))
        proc = e.run(["edit", self.path("l.nhdr"), "--edits", journal, "--out", out], ranks=1)
        e.assert_clean_failure(self, proc, "exists")
        self.assertEqual([n for n in os.listdir(self.dir) if n.startswith(".")], [], "temporary files left")


if __name__ == "__main__":
    e.main()
