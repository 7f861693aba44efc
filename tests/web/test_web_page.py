# SPDX-License-Identifier: MIT
"""The page of `volseg web` in a real browser (Debian's headless Chromium
driven by Selenium), on the number of ranks VOLSEG_WEB_RANKS gives: the
token, a dragged range's count, segment (its mask is batch segment's, byte
for byte), label, an object alone, a turned view, and what the screen shows.
VOLSEG_WEB_SHOT=FILE keeps the last screenshot for a person to look at."""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import unittest

import matplotlib.image
import numpy as np
from selenium import webdriver
from selenium.webdriver.common.action_chains import ActionChains
from selenium.webdriver.common.by import By

sys.path.insert(0, os.path.dirname(__file__))
import web_util  # noqa: E402  (it puts tests/e2e on the path)
import e2e_util  # noqa: E402

e2e_util.require_binary()
MASK_RGB = np.array([0.95, 0.35, 0.2])  # volseg render's mask colour, the page's too


def browser():
    options = webdriver.ChromeOptions()
    for flag in ("--headless=new", "--no-sandbox", "--enable-unsafe-swiftshader", "--use-gl=angle",
                 "--use-angle=swiftshader", "--window-size=1400,900"):
        options.add_argument(flag)
    return webdriver.Chrome(options=options)


def exact_count(h, lo, hi):
    """The voxels in [lo, hi] from the histogram's bins, independently of the
    page: bins wholly inside, the range being whole bins (a drag's)."""
    edges = [h["lo"] + (h["hi"] - h["lo"]) * i / h["bins"] for i in range(h["bins"] + 1)]
    total = 0
    for i, c in enumerate(h["counts"]):
        centre = (edges[i] + edges[i + 1]) / 2
        if lo <= centre <= hi:
            total += c
    return total


class Page(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.mkdtemp(prefix="volseg-page-")
        cls.volume = os.path.join(cls.dir, "shells.nc")
        subprocess.run(e2e_util.command(["generate", cls.volume, "--dims", "48,56,64", "--quiet"], ranks=2),
                       check=True, capture_output=True)
        cls.job = web_util.Job([cls.volume, "--port", "0"])
        cls.driver = browser()

    @classmethod
    def tearDownClass(cls):
        cls.driver.quit()
        cls.job.stop()
        shutil.rmtree(cls.dir, ignore_errors=True)

    def wait(self, script, timeout=60):
        deadline = time.time() + timeout
        while time.time() < deadline:
            value = self.driver.execute_script(script)
            if value:
                return value
            time.sleep(0.05)
        self.fail("timed out waiting for: " + script)

    def screenshot(self, name):
        path = os.path.join(self.dir, name)
        self.driver.save_screenshot(path)
        keep = os.environ.get("VOLSEG_WEB_SHOT")
        if keep:
            shutil.copy(path, keep)
        return matplotlib.image.imread(path)[:, :, :3]

    def mask_pixels(self, image, element):
        r = element.rect
        ratio = self.driver.execute_script("return window.devicePixelRatio")
        part = image[int(r["y"] * ratio):int((r["y"] + r["height"]) * ratio),
                     int(r["x"] * ratio):int((r["x"] + r["width"]) * ratio)]
        # lit surfaces keep the hue: red well above green above blue
        red = (part[:, :, 0] > 0.35) & (part[:, :, 0] > 1.5 * part[:, :, 1]) & (part[:, :, 1] > part[:, :, 2] * 0.9)
        return int(red.sum()), float(part.std())

    def test_1_no_token_no_page(self):
        self.driver.get(f"http://{self.job.host}:{self.job.port}{self.job.base}")
        self.assertIn("token", self.driver.find_element(By.TAG_NAME, "body").text)
        self.assertEqual(self.driver.find_elements(By.ID, "histogram"), [])

    def test_2_session(self):
        d = self.driver
        d.get_log("browser")  # forget the 401 of the visit without the token
        d.get(self.job.url)
        self.wait("return document.body.dataset.state === 'ready' && window.volsegState && window.volsegState.open")
        self.assertNotIn("token=", d.current_url)  # the redirect took it out of the address
        self.wait("return window.volsegView.firstDrawAt > 0")

        # Drag a range: the count follows and is the histogram's.
        histogram = d.find_element(By.ID, "histogram")
        before = d.find_element(By.ID, "count").text
        w = histogram.rect["width"]
        ActionChains(d).move_to_element_with_offset(histogram, int(-w / 2 + w * 0.55), 0).click_and_hold() \
            .move_by_offset(int(w * 0.15), 0).move_by_offset(int(w * 0.2), 0).release().perform()
        count = d.find_element(By.ID, "count").text
        self.assertNotEqual(count, before)
        lo, hi = float(d.find_element(By.ID, "lo").get_attribute("value")), \
            float(d.find_element(By.ID, "hi").get_attribute("value"))
        h = d.execute_script("return window.volsegState.open.histogram")
        self.assertEqual(int(count.split()[0].replace(",", "")), exact_count(h, lo, hi))

        # Segment: the mask is batch segment's, byte for byte.
        out = d.find_element(By.ID, "segment-output")
        out.clear()
        out.send_keys(os.path.join(self.dir, "page-mask.nhdr"))
        d.find_element(By.ID, "segment-btn").click()
        self.wait("return window.volsegState.segment && window.volsegState.busy === null")
        batch = os.path.join(self.dir, "batch-mask.nhdr")
        subprocess.run(e2e_util.command(["segment", self.volume, "--lo", repr(lo), "--hi", repr(hi), "--out", batch,
                                         "--quiet"], ranks=2), check=True, capture_output=True)
        with open(os.path.join(self.dir, "page-mask.raw"), "rb") as a, \
                open(os.path.join(self.dir, "batch-mask.raw"), "rb") as b:
            self.assertEqual(a.read(), b.read())
        self.assertEqual(d.execute_script("return window.volsegState.segment.in_range"),
                         int(count.split()[0].replace(",", "")))
        self.assertIn("volseg segment", d.find_element(By.ID, "command").text)
        self.assertEqual(len(d.find_elements(By.CSS_SELECTOR, "#progress .rank-bar")), web_util.RANKS)

        # Label, then one object alone.
        labels = d.find_element(By.ID, "label-output")
        labels.clear()
        labels.send_keys(os.path.join(self.dir, "page-labels.nc"))
        d.find_element(By.ID, "label-btn").click()
        self.wait("return window.volsegState.label && window.volsegState.busy === null")
        rows = d.find_elements(By.CSS_SELECTOR, "#objects tbody tr")
        self.assertEqual(len(rows), d.execute_script("return Math.min(200, window.volsegState.label.table.length)"))
        self.assertGreater(len(rows), 0)
        received = d.execute_script("return window.volsegView.surfaceReceivedAt")
        rows[0].click()
        self.wait(f"return window.volsegView.surfaceReceivedAt > {received}")
        self.assertIn("object", d.find_element(By.ID, "view-caption").text)
        d.find_element(By.ID, "show-all").click()

        # Split the largest object: a preview (parts and the box's middle
        # plane), then Apply; the table shows the parts, the command list
        # the `volseg edit` that redoes it.
        objects = d.execute_script("return window.volsegState.label.objects")
        largest = d.execute_script("return window.volsegState.label.table.reduce((a, b) => a.voxels >= b.voxels ? a : b).id")
        h = d.find_element(By.ID, "split-h")
        h.clear()
        h.send_keys("0.5")
        d.find_element(By.CSS_SELECTOR, f"#objects button.split-btn[data-id='{largest}']").click()
        self.wait("return !document.getElementById('split-box').classList.contains('hidden') && "
                  "window.volsegState.busy === null")
        info = d.find_element(By.ID, "split-info").text
        self.assertIn(f"object {largest} ", info)
        parts = int(info.split("→ ")[1].split(" parts")[0])
        self.assertGreaterEqual(parts, 2)
        self.screenshot("split.png")
        d.find_element(By.ID, "split-apply").click()
        self.wait("return window.volsegState.label.edits === 1 && window.volsegState.busy === null")
        self.wait("return document.getElementById('split-box').classList.contains('hidden')")
        self.assertEqual(d.execute_script("return window.volsegState.label.objects"), objects + parts - 1)
        self.assertTrue(d.execute_script(f"return window.volsegState.label.table.some((r) => r.id === {objects + 1})"))
        self.assertEqual(len(d.find_elements(By.CSS_SELECTOR, "#objects tbody tr")),
                         d.execute_script("return Math.min(200, window.volsegState.label.table.length)"))
        self.assertIn("volseg edit", d.find_element(By.ID, "command").text)
        self.assertTrue(os.path.exists(os.path.join(self.dir, "page-labels.edited.nc")))

        # Delete an object from its row, then Undo and Redo: the table every
        # page sees follows the journal.
        victim = int(d.find_elements(By.CSS_SELECTOR, "#objects button.delete-btn")[0].get_attribute("data-id"))
        d.find_element(By.CSS_SELECTOR, f"#objects button.delete-btn[data-id='{victim}']").click()
        self.wait("return window.volsegState.label.edits === 2 && window.volsegState.busy === null")
        has_victim = f"return window.volsegState.label.table.some((r) => r.id === {victim})"
        self.assertFalse(d.execute_script(has_victim))
        self.wait(f"return !document.querySelector(\"#objects button.delete-btn[data-id='{victim}']\")")
        d.find_element(By.ID, "edit-undo").click()
        self.wait("return window.volsegState.label.edits === 1 && window.volsegState.label.undone === 1 && "
                  "window.volsegState.busy === null")
        self.assertTrue(d.execute_script(has_victim))
        self.wait("return !document.getElementById('edit-redo').disabled")
        d.find_element(By.ID, "edit-redo").click()
        self.wait("return window.volsegState.label.edits === 2 && window.volsegState.label.undone === 0 && "
                  "window.volsegState.busy === null")
        self.assertFalse(d.execute_script(has_victim))
        with open(d.execute_script("return window.volsegState.label.journal")) as f:
            self.assertEqual([e["op"] for e in json.load(f)["edits"]], ["split", "delete"])

        # Tick two objects and Merge: the smaller id holds both.
        picks = d.find_elements(By.CSS_SELECTOR, "#objects input.merge-pick")[:2]
        ids = sorted(int(p.get_attribute("data-id")) for p in picks)
        voxels = d.execute_script(f"return window.volsegState.label.table.filter((r) => {ids}.includes(r.id))"
                                  ".reduce((a, r) => a + r.voxels, 0)")
        self.assertTrue(d.find_element(By.ID, "edit-merge").get_attribute("disabled"))
        for p in picks:
            p.click()
        self.wait("return !document.getElementById('edit-merge').disabled")
        d.find_element(By.ID, "edit-merge").click()
        self.wait("return window.volsegState.label.edits === 3 && window.volsegState.busy === null")
        table = d.execute_script("return window.volsegState.label.table")
        self.assertFalse(any(r["id"] == ids[1] for r in table))
        self.assertEqual(next(r["voxels"] for r in table if r["id"] == ids[0]), voxels)
        with open(d.execute_script("return window.volsegState.label.journal")) as f:
            self.assertEqual(json.load(f)["edits"][-1], {"op": "merge", "ids": ids})

        # Turn the view; the mesh is drawn, then the ranks' frame lies over it.
        view = d.find_element(By.ID, "view3d")
        drawn = d.execute_script("return window.volsegView.framesDrawn")
        frames = d.execute_script("return window.volsegView.framesReceived")
        ActionChains(d).move_to_element(view).click_and_hold().move_by_offset(60, 20).move_by_offset(40, -10) \
            .release().perform()
        self.wait(f"return window.volsegView.framesDrawn > {drawn}")
        self.assertNotEqual(d.execute_script("return window.volsegView.camera().azimuth"), 30)
        self.wait(f"return window.volsegView.framesReceived > {frames} && window.volsegView.frameShown")
        image = self.screenshot("page.png")
        red, spread = self.mask_pixels(image, view)
        self.assertGreater(spread, 0.02, "the view is blank")
        self.assertGreater(red, 500, "no mask colour in the view")
        self.assertLessEqual(d.execute_script("return window.volsegView.lastFrameBytes"), 300 * 1024)

        # The operators: open 1 and fill holes, as the batch job does them.
        d.find_element(By.CSS_SELECTOR, "#operators summary").click()
        radius = d.find_element(By.ID, "open-radius")
        radius.clear()
        radius.send_keys("1")
        d.find_element(By.ID, "fill-holes").click()
        out.clear()
        out.send_keys(os.path.join(self.dir, "page-ops.nhdr"))
        d.find_element(By.ID, "segment-btn").click()
        self.wait("return window.volsegState.segment && window.volsegState.segment.output.endsWith('page-ops.nhdr')"
                  " && window.volsegState.busy === null")
        subprocess.run(e2e_util.command(["segment", self.volume, "--lo", repr(lo), "--hi", repr(hi), "--open", "1",
                                         "--fill-holes", "--out", os.path.join(self.dir, "batch-ops.nhdr"),
                                         "--quiet"], ranks=2), check=True, capture_output=True)
        with open(os.path.join(self.dir, "page-ops.raw"), "rb") as a, \
                open(os.path.join(self.dir, "batch-ops.raw"), "rb") as b:
            self.assertEqual(a.read(), b.read())
        self.assertIn("--open 1 --fill-holes", d.find_element(By.ID, "command").text)
        self.assertIn("then open 1, fill holes", d.find_element(By.ID, "segment-result").text)
        self.screenshot("page-operators.png")
        errors = [e for e in d.get_log("browser") if e["level"] == "SEVERE"]
        self.assertEqual(errors, [])


if __name__ == "__main__":
    unittest.main(verbosity=2)
