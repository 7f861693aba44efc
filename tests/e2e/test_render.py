#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""volseg render as a user runs it, under Xvfb (ctest wraps this script in
xvfb-run). Images from N ranks must equal the 1-rank image within the
tolerance below, for every mode and several cameras; pyramids of two brick
shapes must give the same image at a pinned level; and three checks that
need no reference image: an isosurface of the shells field is a circle of
the predicted radius under an orthographic camera, a mask-only image covers
exactly where the mask projects, and an empty mask draws nothing."""
import json
import os
import sys
import tempfile
import unittest

import numpy as np
import matplotlib.image as mpimg

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import e2e_util as e  # noqa: E402

N = 64          # volume edge
SIZE = 160      # image edge
WIDTH = 8       # shell width: v = floor(r / 8)
BACKGROUND = (0.0, 0.0, 0.0)

# Rank invariance: the ray caster starts its samples where each rank's box
# begins, so sample positions differ by up to one step between rank counts;
# on a field with jumps (the shells' integer steps) that moves a band edge by
# a pixel, and rays that graze the volume's silhouette take a sample more or
# less. Stated tolerance, in 8-bit levels: mean difference <= 3, and at
# most 2% of the pixels differ by more than 24. Surfaces and slices are
# drawn from the same triangles and texels on any rank count: <= 0.1% of the
# pixels may differ by more than 8 (rounding where two ranks' cuts meet).
VOLUME_TOLERANCE = (3.0, 24, 0.02)
SURFACE_TOLERANCE = (0.25, 8, 0.001)
# Translucent surfaces: one rank blends its layers in the framebuffer, N
# ranks blend theirs as 8-bit premultiplied images, so each layer a rank
# boundary separates is rounded once more: measured on 4 ranks, mean 0.33
# of 255, at most 18, where four layers overlap.
TRANSLUCENT_TOLERANCE = (1.0, 24, 0.005)


def image(path):
    return (mpimg.imread(path)[..., :3] * 255).round()


class Render(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        e.require_binary()
        cls.tmp = tempfile.TemporaryDirectory(prefix="volseg-render-")
        cls.dir = cls.tmp.name
        cls.volume = os.path.join(cls.dir, "shells.nhdr")
        cls.mask = os.path.join(cls.dir, "mask.nhdr")
        cls.empty = os.path.join(cls.dir, "empty.nhdr")
        steps = [
            ["generate", cls.volume, "--field", "shells", "--dims", str(N), "--shell-width", str(WIDTH), "--quiet"],
            ["segment", cls.volume, "--lo", "2", "--hi", "3", "--out", cls.mask, "--quiet"],
            ["segment", cls.volume, "--lo", "100", "--hi", "200", "--out", cls.empty, "--quiet"],
            ["pyramid", cls.volume, "--brick", "16", "--quiet"],
            ["pyramid", cls.mask, "--brick", "16", "--quiet"],
            ["pyramid", cls.empty, "--brick", "16", "--quiet"],
            ["pyramid", cls.volume, "--brick", "32", "--pyramid-dir", os.path.join(cls.dir, "b32.pyramid"), "--quiet"],
            ["pyramid", cls.volume, "--brick", "8", "--pyramid-dir", os.path.join(cls.dir, "b8.pyramid"), "--quiet"],
            ["generate", os.path.join(cls.dir, "shells.nc"), "--field", "shells", "--dims", str(N), "--shell-width",
             str(WIDTH), "--format", "cdf5", "--quiet"],
            ["generate", os.path.join(cls.dir, "shells4.nc"), "--field", "shells", "--dims", str(N),
             "--shell-width", str(WIDTH), "--format", "netcdf4", "--quiet"],
            # Zarr: the field in chunks of another shape than the bricks, the mask as an OME-Zarr label image.
            ["generate", os.path.join(cls.dir, "shells.zarr"), "--field", "shells", "--dims", str(N),
             "--shell-width", str(WIDTH), "--hint", "chunks=24,20,16", "--quiet"],
            ["segment", os.path.join(cls.dir, "shells.zarr"), "--lo", "2", "--hi", "3", "--out",
             os.path.join(cls.dir, "mask.ome.zarr"), "--brick", "8", "--quiet"],
        ]
        for step in steps:
            proc = e.run(step, ranks=1 if step[0] == "generate" and step[1].endswith(".zarr") else 2)
            if proc.returncode != 0:
                raise RuntimeError("%s failed:\n%s" % (step, proc.stderr))

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def render(self, name, ranks, *args, report=False):
        out = os.path.join(self.dir, name + ".png")
        argv = ["render", self.volume, "--out", out, "--size", "%dx%d" % (SIZE, SIZE), "--no-annotations",
                "--background", "0,0,0", "--quiet", *args]
        if report:
            argv += ["--report", out + ".json", "--force"]
        proc = e.run(argv, ranks=ranks, timeout=300)
        e.check_ok(self, proc)
        return out

    def assert_close(self, reference, other, tolerance, what):
        a, b = image(reference), image(other)
        self.assertEqual(a.shape, b.shape)
        difference = np.abs(a - b).max(axis=2)
        mean_limit, level, fraction = tolerance
        over = float((difference > level).mean())
        self.assertLessEqual(difference.mean(), mean_limit, "%s: mean difference %.3f" % (what, difference.mean()))
        self.assertLessEqual(over, fraction, "%s: %.4f of the pixels differ by more than %d" % (what, over, level))
        # and the image is not empty: a blank image equals another blank one
        self.assertGreater(float((a.max(axis=2) > 0).mean()), 0.05, what + ": nothing drawn")

    def test_rank_invariance_every_mode(self):
        cases = {
            "volume": (["--mode", "volume", "--tf", "0:0,1.5:0,2:0.05,5:0.2"], VOLUME_TOLERANCE),
            "volume_mask": (["--mode", "volume,mask", "--mask", self.mask, "--tf", "3.5:0,4:0.1,5:0.3"],
                            VOLUME_TOLERANCE),
            "mask": (["--mode", "mask", "--mask", self.mask], SURFACE_TOLERANCE),
            # translucent surfaces: depth peeling on each rank, premultiplied colour kept
            # at or below alpha (once drawn wrong where ranks met)
            "mask_translucent": (["--mode", "mask", "--mask", self.mask, "--mask-opacity", "0.6"],
                                 TRANSLUCENT_TOLERANCE),
            "volume_mask_translucent": (["--mode", "volume,mask", "--mask", self.mask, "--mask-opacity", "0.5",
                                         "--tf", "3.5:0,4:0.1,5:0.3"], VOLUME_TOLERANCE),
            "threshold": (["--mode", "mask", "--lo", "1.5", "--hi", "2.5"], SURFACE_TOLERANCE),
            "iso": (["--mode", "iso", "--iso", "1.5", "3.5"], SURFACE_TOLERANCE),
            "slices": (["--mode", "slices", "--mask", self.mask, "--slice-at", "0.3,0.5,0.62"], SURFACE_TOLERANCE),
        }
        cameras = [["--camera", "30,20", "--orbit", "3"], ["--view", "+x", "--parallel"]]
        for mode, (args, tolerance) in cases.items():
            for c, camera in enumerate(cameras):
                level = ["--level", "1"] if mode == "volume" and c == 1 else ["--level", "0"]
                frames = 3 if "--orbit" in camera else 1
                outputs = {n: self.render("%s-%d-np%d" % (mode, c, n), n, *args, *camera, *level) for n in (1, 2, 3, 4)}
                for n in (2, 3, 4):
                    for f in range(frames):
                        if frames > 1:
                            one = outputs[1].replace(".png", "-%03d.png" % f)
                            many = outputs[n].replace(".png", "-%03d.png" % f)
                        else:
                            one, many = outputs[1], outputs[n]
                        self.assert_close(one, many, tolerance, "%s camera %d frame %d on %d ranks" % (mode, c, f, n))

    def test_brick_shape_invariance_at_a_pinned_level(self):
        args = ["--mode", "volume,iso", "--iso", "2.5", "--tf", "0:0,2.9:0,3:0.1,5:0.3", "--level", "1"]
        a = self.render("bricks16", 2, *args)
        b = self.render("bricks32", 2, *args, "--pyramid-dir", os.path.join(self.dir, "b32.pyramid"))
        c = self.render("bricks-nocull", 3, *args, "--no-cull")
        self.assert_close(a, b, VOLUME_TOLERANCE, "brick 16 vs 32")
        self.assert_close(a, c, VOLUME_TOLERANCE, "culled vs every brick")

    def test_isosurface_is_a_circle_of_the_predicted_radius(self):
        # v = floor(r / 8): the 2.5 isosurface lies between the voxels with
        # r < 24 and r >= 24, a sphere of radius 24 (voxel spacing 1) about
        # the volume's centre.
        out = self.render("circle", 3, "--mode", "iso", "--iso", "2.5", "--view", "-z", "--parallel", report=True)
        with open(out + ".json") as f:
            camera = json.load(f)["camera"]
        self.assertTrue(camera["parallel"])
        pixels_per_unit = SIZE / (2 * camera["parallel_scale"])
        drawn = image(out).max(axis=2) > 0
        radius = np.sqrt(drawn.sum() / np.pi) / pixels_per_unit
        self.assertAlmostEqual(radius, 24.0, delta=0.5, msg="circle radius %.3f voxels" % radius)
        ys, xs = np.nonzero(drawn)
        self.assertAlmostEqual(xs.mean(), (SIZE - 1) / 2, delta=0.5)
        self.assertAlmostEqual(ys.mean(), (SIZE - 1) / 2, delta=0.5)
        # round, not square: the farthest drawn pixel is at the radius too
        far = np.sqrt((xs - (SIZE - 1) / 2) ** 2 + (ys - (SIZE - 1) / 2) ** 2).max() / pixels_per_unit
        self.assertLess(far, 24.0 + 1.5)

    def test_mask_image_covers_where_the_mask_projects(self):
        # A mask with structure: the shells field thresholded to two bands,
        # cut by a plane, so its projection is not a disc.
        _, values = e.read_volume(self.volume)
        zz, yy, xx = np.indices(values.shape)
        mask = ((values == 1) | (values == 3)) & (xx + 2 * yy < 80)
        header = e.parse_nhdr(self.mask)
        path = os.path.join(self.dir, "shaped.nhdr")
        e.add_keyvalue(self.mask, path, "", data_file="shaped.raw")
        mask.astype(np.uint8).tofile(os.path.join(self.dir, "shaped.raw"))
        self.assertEqual(header["shape"], values.shape)
        out = self.render("coverage", 2, "--mode", "mask", "--mask", path, "--level", "0", "--view", "-z",
                          "--parallel", report=True)
        with open(out + ".json") as f:
            camera = json.load(f)["camera"]
        per_pixel = 2 * camera["parallel_scale"] / SIZE  # world units per pixel
        drawn = image(out).max(axis=2) > 0
        # Looking down -z with y up: pixel column i is x, row j (from the top) is y.
        centre = (N - 1) / 2
        x = centre + (np.arange(SIZE) + 0.5 - SIZE / 2) * per_pixel
        y = centre - (np.arange(SIZE) + 0.5 - SIZE / 2) * per_pixel
        footprint = mask.any(axis=0)  # (y, x)
        column = lambda v: np.clip(np.round(v).astype(int), -1, N)  # noqa: E731
        padded = np.pad(footprint, 1)
        cx, cy = column(x) + 1, column(y) + 1
        # Certain pixels: the voxel column under the pixel and its eight
        # neighbours agree (the surface passes within half a voxel of a
        # boundary, so pixels next to one can go either way).
        inside = np.ones((SIZE, SIZE), bool)
        outside = np.ones((SIZE, SIZE), bool)
        for dy in (-1, 0, 1):
            for dx in (-1, 0, 1):
                sample = padded[np.clip(cy + dy, 0, N + 1)][:, np.clip(cx + dx, 0, N + 1)]
                inside &= sample
                outside &= ~sample
        self.assertGreater(inside.sum(), 500)
        self.assertGreater(outside.sum(), 500)
        self.assertEqual(int((inside & ~drawn).sum()), 0, "mask columns left undrawn")
        self.assertEqual(int((outside & drawn).sum()), 0, "drawn where no mask projects")

    def test_empty_mask_draws_nothing(self):
        empty = self.render("empty", 2, "--mode", "mask", "--mask", self.empty, "--level", "1")
        self.assertEqual(int(image(empty).max()), 0, "an empty mask drew something")
        # the same command with a real mask does draw
        full = self.render("full", 2, "--mode", "mask", "--mask", self.mask, "--level", "1")
        self.assertGreater(int((image(full).max(axis=2) > 0).sum()), 1000)

    def test_progressive_and_orbit_outputs_and_report(self):
        out = self.render("progressive", 2, "--mode", "volume", "--progressive", "--level", "0", report=True)
        with open(out + ".json") as f:
            report = json.load(f)
        levels = [frame["level"] for frame in report["frames"]]
        self.assertEqual(levels, [2, 1, 0])  # coarse first
        times = [frame["seconds_since_start"] for frame in report["frames"]]
        self.assertEqual(times, sorted(times))
        for frame in report["frames"]:
            self.assertTrue(os.path.isfile(frame["path"]), frame["path"])
        self.assertEqual(report["frames"][-1]["path"], out)
        self.assertEqual(len(report["per_rank"]), 2)
        for rank in report["per_rank"]:
            for key in ("read", "render", "composite"):
                self.assertGreater(rank[key], 0, key)
        self.assertEqual(image(out).shape, (SIZE, SIZE, 3))

    def test_netcdf_inputs_render_like_raw(self):
        # PnetCDF and netCDF-4 read in collective rounds on every rank.
        args = ["--mode", "volume,iso", "--iso", "2.5", "--tf", "0:0,2.9:0,3:0.1,5:0.3", "--level", "0"]
        raw = self.render("nc-raw", 1, *args)
        for name in ("shells.nc", "shells4.nc"):
            out = os.path.join(self.dir, "nc-" + name + ".png")
            proc = e.run(["render", os.path.join(self.dir, name), "--out", out, "--size", "%dx%d" % (SIZE, SIZE),
                          "--no-annotations", "--background", "0,0,0", "--quiet", *args], ranks=3)
            e.check_ok(self, proc)
            self.assert_close(raw, out, VOLUME_TOLERANCE, name + " on 3 ranks vs raw on 1")

    def test_zarr_inputs_render_like_raw(self):
        # The field from a Zarr array, the mask from an OME-Zarr label image, on 3 ranks.
        args = ["--mode", "volume,mask", "--tf", "0:0,2.9:0,3:0.1,5:0.3", "--level", "0"]
        raw = self.render("zarr-raw", 1, "--mask", self.mask, *args)
        out = os.path.join(self.dir, "zarr.png")
        proc = e.run(["render", os.path.join(self.dir, "shells.zarr"), "--mask", os.path.join(self.dir, "mask.ome.zarr"),
                      "--out", out, "--size", "%dx%d" % (SIZE, SIZE), "--no-annotations", "--background", "0,0,0",
                      "--quiet", *args], ranks=3)
        e.check_ok(self, proc)
        self.assert_close(raw, out, VOLUME_TOLERANCE, "Zarr on 3 ranks vs raw on 1")

    def test_orbit_turns_a_view_too(self):
        out = self.render("orbit-view", 2, "--mode", "slices", "--slice-at", "0.2,0.5,0.7", "--view", "+y",
                          "--zoom", "1.5", "--orbit", "4", report=True)
        with open(out + ".json") as f:
            frames = [frame["path"] for frame in json.load(f)["frames"]]
        self.assertEqual(len(frames), 4)
        a, b = image(frames[0]), image(frames[1])
        self.assertGreater(float(np.abs(a - b).max(axis=2).mean()), 0.5, "the orbit did not turn the camera")

    def test_auto_level_fits_the_memory_budget(self):
        out = self.render("auto", 2, "--level", "auto", "--memory", "4GiB", report=True)
        with open(out + ".json") as f:
            report = json.load(f)
        self.assertEqual(report["frames"][0]["level"], 0)
        need = report["level_bytes"]
        self.assertEqual(len(need), 3)
        self.assertGreater(need[0], need[1])
        self.assertGreater(need[1], need[2])
        # a budget between what levels 0 and 1 need picks level 1
        budget = (need[0] + need[1]) // 2
        out = self.render("auto-1", 2, "--level", "auto", "--memory", str(budget), report=True)
        with open(out + ".json") as f:
            self.assertEqual(json.load(f)["frames"][0]["level"], 1)
        proc = e.run(["render", self.volume, "--out", os.path.join(self.dir, "none.png"), "--memory",
                      str(need[2] - 1), "--quiet"], ranks=2)
        e.assert_clean_failure(self, proc, "no level .* fits")
        self.assertFalse(os.path.exists(os.path.join(self.dir, "none.png")))

    def test_culling_skips_bricks_the_transfer_function_hides(self):
        # Only the innermost shells are visible: bricks near the corners
        # (and their neighbours) hold nothing the transfer function shows.
        args = ["--mode", "volume", "--tf", "0:0.3,1.5:0.3,1.6:0", "--level", "0", "--pyramid-dir",
                os.path.join(self.dir, "b8.pyramid")]
        out = self.render("culled", 2, *args, report=True)
        with open(out + ".json") as f:
            ranks = json.load(f)["per_rank"]
        self.assertGreater(sum(r["bricks_skipped"] for r in ranks), 0)
        full = self.render("unculled", 2, *args, "--no-cull", report=True)
        with open(full + ".json") as f:
            self.assertEqual(sum(r["bricks_skipped"] for r in json.load(f)["per_rank"]), 0)
        self.assert_close(full, out, VOLUME_TOLERANCE, "culled vs not culled")


class BadInput(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        e.require_binary()
        cls.tmp = tempfile.TemporaryDirectory(prefix="volseg-render-bad-")
        cls.dir = cls.tmp.name
        cls.volume = os.path.join(cls.dir, "v.nhdr")
        cls.other = os.path.join(cls.dir, "other.nhdr")
        for step in (["generate", cls.volume, "--dims", "24", "--quiet"],
                     ["generate", cls.other, "--dims", "24,24,20", "--dtype", "u8", "--quiet"]):
            proc = e.run(step, ranks=1)
            if proc.returncode != 0:
                raise RuntimeError(proc.stderr)

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def refuse(self, args, pattern, env=None, ranks=2):
        out = os.path.join(self.dir, "bad.png")
        before = e.listing(self.dir)
        size = [] if "--size" in args else ["--size", "64x64"]
        argv = e.command(["render", self.volume, "--out", out, *size, *args], ranks=ranks)
        import subprocess
        proc = subprocess.run(argv, capture_output=True, text=True, timeout=120, env=env)
        e.assert_clean_failure(self, proc, pattern)
        self.assertEqual(e.listing(self.dir), before, "left files behind")

    def test_bad_input(self):
        self.refuse(["--size", "0x64"], "size")
        self.refuse(["--size", "100000x64"], "outside 1..")
        self.refuse(["--mask", self.other, "--mode", "mask"], "dims")
        self.refuse(["--mode", "glow"], "unknown mode 'glow'")
        self.refuse(["--colormap", "jet2"], "unknown colormap 'jet2'")
        self.refuse(["--level", "3"], "level '3' does not exist")
        self.refuse(["--mode", "mask"], "needs a mask")
        self.refuse(["--tf", "1:2"], "opacity")
        self.refuse(["--view", "+w"], "unknown view")
        self.refuse(["--sample-distance", "-1"], "sample-distance")
        self.refuse(["--lo", "1"], "--lo and --hi go together")

    def test_a_display_that_does_not_answer_is_one_clear_line(self):
        # (No DISPLAY at all draws on a private Xvfb: test_headless.py.)
        env = dict(os.environ, DISPLAY=":89")
        self.refuse([], r"cannot open the X display ':89' \(DISPLAY\): no X server answers there", env=env)


if __name__ == "__main__":
    e.main(verbosity=2)
