#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Outputs for viewers, checked by the viewers' own libraries: multiscale
OME-Zarr read by ome-zarr (napari's reader), Neuroglancer precomputed
volumes and meshes read by cloud-volume, meshes measured by trimesh; each
level against a numpy reference of mode and mean downsampling."""
import json
import os
import shutil
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import viewers_venv  # noqa: E402

viewers_venv.reexec_in_venv()

import numpy as np  # noqa: E402
import trimesh  # noqa: E402
from ome_zarr.io import parse_url  # noqa: E402
from ome_zarr.reader import Reader  # noqa: E402

import e2e_util as util  # noqa: E402


def blocks(a):
    """(Z, Y, X, 8) values of every 2x2x2 block, and how many of the 8 are
    inside the volume (odd edges): padded values are marked by a mask."""
    shape = [(s + 1) // 2 for s in a.shape]
    pad = np.zeros([2 * s for s in shape], a.dtype)
    valid = np.zeros(pad.shape, bool)
    pad[:a.shape[0], :a.shape[1], :a.shape[2]] = a
    valid[:a.shape[0], :a.shape[1], :a.shape[2]] = True
    def split(v):
        return v.reshape(shape[0], 2, shape[1], 2, shape[2], 2).transpose(0, 2, 4, 1, 3, 5).reshape(*shape, 8)
    return split(pad), split(valid)


def mode_reference(a):
    """The most frequent non-zero value of each block, ties to the smaller
    (igneous' mode); 0 where all are 0."""
    b, valid = blocks(a)
    best = np.zeros(b.shape[:3], a.dtype)
    best_count = np.zeros(b.shape[:3], int)
    for i in range(8):
        v = b[..., i]
        count = ((b == v[..., None]) & valid).sum(-1)
        better = valid[..., i] & (v != 0) & ((count > best_count) | ((count == best_count) & (v < best)))
        best = np.where(better, v, best)
        best_count = np.where(better, count, best_count)
    return best


def mean_reference(a):
    b, valid = blocks(a.astype(np.float64))
    return ((b * valid).sum(-1) / valid.sum(-1)).astype(a.dtype)


def ome_levels(path):
    """ome-zarr's reading of an image: (node, [level arrays])."""
    nodes = list(Reader(parse_url(path))())
    node = nodes[0]
    return node, [np.asarray(level) for level in node.data]


def write_nhdr(path, array, keyvalues=()):
    raw = path[:-5] + ".raw"
    array.astype(array.dtype.newbyteorder("<")).tofile(raw)
    types = {"u1": "uint8", "u2": "uint16", "u4": "uint32", "f4": "float"}
    with open(path, "w") as f:
        f.write("NRRD0004\ntype: %s\ndimension: 3\nsizes: %d %d %d\nspacings: 1 1 1\nencoding: raw\n"
                "endian: little\ndata file: %s\n" % (types[array.dtype.str[1:]], array.shape[2], array.shape[1],
                                                   array.shape[0], os.path.basename(raw)))
        for key, value in keyvalues:
            f.write("%s:=%s\n" % (key, value))


class Base(unittest.TestCase):
    def setUp(self):
        util.require_binary()
        self.dir = tempfile.mkdtemp(prefix="volseg-viewers-")
        self.addCleanup(shutil.rmtree, self.dir, True)

    def path(self, name):
        return os.path.join(self.dir, name)

    def volseg(self, args, ranks=1):
        proc = util.run(args, ranks=ranks, mpi=ranks > 1, timeout=300)
        util.check_ok(self, proc)
        return proc


class OmeZarr(Base):
    def setUp(self):
        super().setUp()
        self.source = self.path("s.nhdr")
        util.generate(self, self.source, "smooth", (60, 70, 80), "f32", "little", ranks=1)

    def test_labels_levels_and_properties_on_1_and_3_ranks(self):
        self.volseg(["label", self.source, "--lo", "0.6", "--hi", "2", "--out", self.path("l.nhdr"), "--quiet"])
        _, reference = util.read_volume(self.path("l.nhdr"))
        for ranks in (1, 3):
            out = self.path("l%d.ome.zarr" % ranks)
            self.volseg(["label", self.source, "--lo", "0.6", "--hi", "2", "--out", out, "--brick", "16",
                         "--quiet"], ranks)
            node, levels = ome_levels(out)
            self.assertIn("Label", [type(s).__name__ for s in node.specs])
            self.assertEqual(len(levels), 4, "60x70x80 in chunks of 16: levels down to 10x9x8")  # 80 -> 40 -> 20 -> 10
            np.testing.assert_array_equal(levels[0], reference)
            for k in range(1, len(levels)):
                np.testing.assert_array_equal(levels[k], mode_reference(levels[k - 1]), "level %d" % k)
            counts = np.bincount(reference.ravel())
            properties = node.metadata["properties"]
            self.assertEqual(len(properties), int(reference.max()))
            for label, row in properties.items():
                self.assertEqual(row["voxels"], counts[label], "object %d" % label)
            scales = [t[0]["scale"] for t in node.metadata["coordinateTransformations"]]
            self.assertEqual(scales[2], [4.0, 4.0, 4.0])

    def test_image_mean_and_mask_mode(self):
        _, values = util.read_volume(self.source)
        self.volseg(["convert", self.source, self.path("s.ome.zarr"), "--levels", "3", "--quiet"])
        _, levels = ome_levels(self.path("s.ome.zarr"))
        self.assertEqual(len(levels), 3)
        np.testing.assert_array_equal(levels[0], values)
        for k in (1, 2):
            np.testing.assert_allclose(levels[k], mean_reference(levels[k - 1]), rtol=1e-5, atol=1e-6)
        self.volseg(["segment", self.source, "--lo", "0.6", "--hi", "2", "--out", self.path("m.ome.zarr"),
                     "--brick", "32", "--quiet"], 3)
        _, levels = ome_levels(self.path("m.ome.zarr"))
        for k in range(1, len(levels)):
            np.testing.assert_array_equal(levels[k], mode_reference(levels[k - 1]))

    def test_a_level_below_one_voxel_is_refused(self):
        out = self.path("l.ome.zarr")
        proc = util.run(["label", self.source, "--lo", "0.6", "--hi", "2", "--out", out, "--levels", "8"],
                        ranks=1, mpi=False)
        util.assert_clean_failure(self, proc, "--levels 8: .*below one voxel")
        self.assertFalse(os.path.exists(out))
        self.assertEqual(sorted(os.listdir(self.dir)), ["s.nhdr", "s.raw"])


class Precomputed(Base):
    """Neuroglancer precomputed volumes and meshes, read by cloud-volume."""

    def setUp(self):
        super().setUp()
        self.source = self.path("s.nhdr")
        util.generate(self, self.source, "smooth", (60, 70, 80), "f32", "little", ranks=1)

    @staticmethod
    def levels(path):
        from cloudvolume import CloudVolume
        url = "precomputed://file://" + path
        scales = CloudVolume(url).info["scales"]
        # cloud-volume's arrays are x, y, z (and channels): as volseg's z, y, x.
        return [np.asarray(CloudVolume(url, mip=k)[:, :, :])[..., 0].transpose(2, 1, 0) for k in range(len(scales))]

    def test_labels_levels_properties_and_meshes_on_1_and_3_ranks(self):
        from cloudvolume import CloudVolume
        self.volseg(["label", self.source, "--lo", "0.6", "--hi", "2", "--out", self.path("l.nhdr"), "--quiet"])
        _, reference = util.read_volume(self.path("l.nhdr"))
        counts = np.bincount(reference.ravel())
        faces = {}
        for ranks in (1, 3):
            out = self.path("l%d" % ranks)
            # As Neuroglancer and cloud-volume name it, and by the format's name.
            named = ["--out", "precomputed://file://" + out] if ranks == 1 else ["--out", out, "--format", "precomputed"]
            # 3 ranks: the meshes in the same job, read back from the precomputed labels.
            meshed = [] if ranks == 1 else ["--mesh", os.path.join(out, "mesh")]
            self.volseg(["label", self.source, "--lo", "0.6", "--hi", "2", *named, "--brick", "16", *meshed, "--quiet"],
                        ranks)
            levels = self.levels(out)
            self.assertEqual(len(levels), 4)
            np.testing.assert_array_equal(levels[0], reference)
            for k in range(1, len(levels)):
                np.testing.assert_array_equal(levels[k], mode_reference(levels[k - 1]), "level %d" % k)
            with open(os.path.join(out, "segment_properties", "info")) as f:
                inline = json.load(f)["inline"]
            self.assertEqual(inline["ids"], [str(i) for i in range(1, len(counts))])
            voxels = [p for p in inline["properties"] if p["id"] == "voxels"][0]["values"]
            self.assertEqual(voxels, [int(c) for c in counts[1:]])
            if ranks == 1:
                self.volseg(["mesh", self.path("l.nhdr"), "--out", os.path.join(out, "mesh"), "--ply", "--brick", "24",
                             "--quiet"])
            volume = CloudVolume("precomputed://file://" + out)
            for object_id in range(1, len(counts)):
                mesh = volume.mesh.get(object_id)
                if ranks == 1:
                    ply = trimesh.load(os.path.join(out, "mesh", "ply", "%d.ply" % object_id), process=False)
                    self.assertEqual(len(mesh.faces), len(ply.faces), "object %d" % object_id)
                    faces[object_id] = len(mesh.faces)
                else:
                    self.assertEqual(len(mesh.faces), faces[object_id], "object %d" % object_id)
                self.assertTrue((mesh.vertices >= -1).all() and (mesh.vertices <= [81, 71, 61]).all())

    def test_image_mean_levels(self):
        _, values = util.read_volume(self.source)
        out = self.path("s.precomputed")
        self.volseg(["convert", self.source, out, "--brick", "32", "--quiet"], 3)
        levels = self.levels(out)
        np.testing.assert_array_equal(levels[0], values)
        for k in range(1, len(levels)):
            np.testing.assert_allclose(levels[k], mean_reference(levels[k - 1]), rtol=1e-5, atol=1e-6)

    def test_a_lying_info_is_refused_before_anything_is_allocated(self):
        folder = self.path("lying.precomputed")
        os.mkdir(folder)
        with open(os.path.join(folder, "info"), "w") as f:
            json.dump({"@type": "neuroglancer_multiscale_volume", "data_type": "uint64", "num_channels": 1,
                       "type": "segmentation", "scales": [{"key": "k", "size": [100000] * 3, "resolution": [1] * 3,
                                                           "chunk_sizes": [[4096] * 3], "encoding": "raw"}]}, f)
        for args in (["info", folder], ["mesh", folder, "--out", self.path("m")]):
            proc, _, rss = util.run_measured(args)
            util.assert_clean_failure(self, proc, "memory budget for one piece")
            self.assertLess(rss, util.LYING_HEADER_RSS_MIB)

    def test_an_existing_folder_is_kept_without_force(self):
        out = self.path("l.precomputed")
        os.mkdir(out)
        proc = util.run(["label", self.source, "--lo", "0.6", "--hi", "2", "--out", out], ranks=1, mpi=False)
        util.assert_clean_failure(self, proc, "exists")
        self.assertEqual(os.listdir(out), [])


class Mesh(Base):
    """Balls and a box on the volume's face, labelled, meshed in bricks
    smaller than the objects."""

    def setUp(self):
        super().setUp()
        z, y, x = np.mgrid[0:64, 0:64, 0:72]
        mask = np.zeros(z.shape, np.uint8)
        self.centres = [(16, 16, 16, 10), (44, 20, 30, 8), (20, 44, 50, 12), (46, 46, 20, 7)]
        for cz, cy, cx, r in self.centres:
            mask[(z - cz) ** 2 + (y - cy) ** 2 + (x - cx) ** 2 <= r * r] = 1
        mask[50:64, 40:60, 56:72] = 1  # touches the volume's faces
        write_nhdr(self.path("mask.nhdr"), mask)
        self.labels = self.path("l.nhdr")
        self.volseg(["label", self.path("mask.nhdr"), "--mask-input", "--out", self.labels, "--quiet"])
        _, self.ids = util.read_volume(self.labels)
        self.counts = np.bincount(self.ids.ravel())

    def load(self, folder, object_id):
        return trimesh.load(os.path.join(folder, "ply", "%d.ply" % object_id), process=False)

    def test_closed_surfaces_of_the_objects_volume_on_1_and_3_ranks(self):
        whole = self.path("whole")
        self.volseg(["mesh", self.labels, "--out", whole, "--ply", "--brick", "200", "--quiet"])
        for ranks in (1, 3):
            out = self.path("m%d" % ranks)
            self.volseg(["mesh", self.labels, "--out", out, "--ply", "--vtp", "--brick", "20", "--quiet"], ranks)
            for object_id in range(1, len(self.counts)):
                mesh = self.load(out, object_id)
                edges = {tuple(e) for e in mesh.edges}
                open_edges = [e for e in edges if (e[1], e[0]) not in edges]
                self.assertEqual(open_edges, [], "object %d: a surface with a boundary (cracks)" % object_id)
                self.assertGreater(mesh.volume, 0, "object %d: faces wound inwards" % object_id)
                ratio = mesh.volume / self.counts[object_id]
                self.assertTrue(0.9 <= ratio <= 1.0, "object %d: encloses %.3f of its voxels" % (object_id, ratio))
                one_brick = self.load(whole, object_id)
                self.assertAlmostEqual(mesh.volume, one_brick.volume, delta=1e-3 * one_brick.volume)
                self.assertEqual(len(mesh.faces), len(one_brick.faces))
                with open(os.path.join(out, "%d:0" % object_id)) as f:
                    manifest = json.load(f)
                for fragment in manifest["fragments"]:
                    self.assertTrue(os.path.exists(os.path.join(out, fragment)))
            self.assertTrue(os.path.exists(os.path.join(out, "objects.vtm")))

    def test_chunked_labels_are_meshed_in_bricks_of_whole_chunks(self):
        # Plane chunks: the default bricks stack them towards 128 planes
        # (not 128^3 cubes, which would decode every plane once per brick
        # that crosses it), and the surfaces are the one-brick ones.
        z, y, x = np.mgrid[0:160, 0:40, 0:40]
        mask = np.zeros(z.shape, np.uint8)
        for cz in (20, 70, 126, 150):  # one across the bricks' seam at z = 128
            mask[(z - cz) ** 2 + (y - 20) ** 2 + (x - 20) ** 2 <= 81] = 1
        write_nhdr(self.path("tall.nhdr"), mask)
        labels, zarr = self.path("tall-l.nhdr"), self.path("tall-l.zarr")
        self.volseg(["label", self.path("tall.nhdr"), "--mask-input", "--out", labels, "--quiet"])
        self.volseg(["convert", labels, zarr, "--out-hint", "chunks=1,40,40", "--quiet"])
        whole, out = self.path("tall-whole"), self.path("tall-chunked")
        self.volseg(["mesh", labels, "--out", whole, "--ply", "--brick", "200", "--quiet"])
        proc = self.volseg(["mesh", zarr, "--out", out, "--ply"], 2)
        self.assertIn("2 bricks of 40x40x128", proc.stdout)
        for object_id in range(1, 5):
            mesh, one_brick = self.load(out, object_id), self.load(whole, object_id)
            self.assertEqual(len(mesh.faces), len(one_brick.faces))
            self.assertAlmostEqual(mesh.volume, one_brick.volume, delta=1e-3 * one_brick.volume)

    def test_simplified_meshes_are_closed_and_smaller_on_3_ranks(self):
        full, half = self.path("full"), self.path("half")
        self.volseg(["mesh", self.labels, "--out", full, "--ply", "--quiet"])
        self.volseg(["mesh", self.labels, "--out", half, "--ply", "--simplify", "1", "--brick", "12", "--quiet"], 3)
        for object_id in range(1, len(self.counts)):
            a, b = self.load(full, object_id), self.load(half, object_id)
            edges = {tuple(e) for e in b.edges}
            self.assertEqual([e for e in edges if (e[1], e[0]) not in edges], [], "object %d" % object_id)
            self.assertLess(len(b.faces), 0.4 * len(a.faces), "object %d: not simplified" % object_id)
            ratio = b.volume / self.counts[object_id]
            self.assertTrue(0.8 <= ratio <= 1.2, "object %d: encloses %.3f of its voxels" % (object_id, ratio))

    @unittest.skipUnless(util.WITH_PARAVIEW, "volseg render needs the ParaView SDK build")
    def test_render_draws_the_chosen_objects_in_their_colours_on_1_and_3_ranks(self):
        from PIL import Image
        import colorsys
        out = self.path("m")
        self.volseg(["mesh", self.labels, "--out", out, "--quiet"])
        images = []
        for ranks in (1, 3):
            png = self.path("r%d.png" % ranks)
            proc = util.run(["render", self.path("mask.nhdr"), "--mode", "iso", "--iso", "2", "--mesh", out,
                             "--mesh-ids", "3", "--size", "400x400", "--no-annotations", "--out", png, "--quiet"],
                            ranks=ranks, mpi=ranks > 1, env=util.without_display(), timeout=300)
            util.check_ok(self, proc)
            images.append(np.asarray(Image.open(png).convert("RGB")).astype(float) / 255)
        # Object 3's hue (io::segment_rgba: golden-angle hues, 0.7 saturation).
        hue = (3 * 0.6180339887498949) % 1.0
        for image in images:
            hsv = np.apply_along_axis(lambda p: colorsys.rgb_to_hsv(*p), 2, image[::2, ::2])
            near = (np.abs(hsv[..., 0] - hue) < 0.03) & (hsv[..., 1] > 0.5)
            self.assertGreater(near.sum(), 300, "object 3's surface is not drawn in its colour")
        self.assertLess(np.abs(images[0] - images[1]).max(-1).mean(), 0.01, "3 ranks draw another picture")

    @unittest.skipUnless(util.WITH_PARAVIEW, "volseg-gui needs the ParaView SDK build")
    def test_the_gui_draws_the_chosen_object(self):
        import subprocess
        from PIL import Image
        gui = os.environ.get("VOLSEG_GUI") or os.path.join(os.path.dirname(util.VOLSEG), "..", "..", "gui",
                                                           "volseg-gui")
        out, shot = self.path("m"), self.path("gui.png")
        self.volseg(["mesh", self.labels, "--out", out, "--quiet"])
        proc = subprocess.run([gui, self.path("mask.nhdr"), "--mesh", out, "--mesh-ids", "3", "--size", "400x400",
                               "--screenshot", shot, "--quit"],
                              capture_output=True, text=True, timeout=300, env=util.without_display())
        self.assertEqual(proc.returncode, 0, proc.stderr)
        image = np.asarray(Image.open(shot).convert("RGB")).astype(float) / 255
        import colorsys
        hsv = np.apply_along_axis(lambda p: colorsys.rgb_to_hsv(*p), 2, image[::2, ::2])
        near = (np.abs(hsv[..., 0] - (3 * 0.6180339887498949) % 1.0) < 0.03) & (hsv[..., 1] > 0.5)
        self.assertGreater(near.sum(), 300, "object 3's mesh is not in the GUI's view")

    def test_bad_input(self):
        util.generate(self, self.path("f.nhdr"), "smooth", (16, 16, 16), "f32", "little", ranks=1)
        cases = [(["mesh", self.path("f.nhdr"), "--out", self.path("a")], "not labels"),
                 (["mesh", self.path("mask.nhdr"), "--out", self.path("a")], "does not say it holds labels"),
                 (["mesh", self.labels, "--out", self.path("a"), "--ids", "2,99"], "past the labels' table"),
                 (["mesh", self.labels, "--out", self.path("a"), "--ids", "x"], "not an object id")]
        for args, pattern in cases:
            util.assert_clean_failure(self, util.run(args, ranks=1, mpi=False), pattern)
            self.assertFalse(os.path.exists(self.path("a")))
        os.mkdir(self.path("a"))
        util.assert_clean_failure(self, util.run(["mesh", self.labels, "--out", self.path("a")], ranks=1, mpi=False),
                                  "exists")
        self.assertEqual(os.listdir(self.path("a")), [])


if __name__ == "__main__":
    util.main()
