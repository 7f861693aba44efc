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
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})  # a failed wait prints the console
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
        # What the page showed: its error line and the browser's console.
        shown = self.driver.execute_script("const e = document.getElementById('error-text');"
                                           "return e ? e.textContent : ''")
        console = [e.get("message") for e in self.driver.get_log("browser")]
        self.fail(f"timed out waiting for: {script}\n  page error: {shown!r}\n  console: {console}")

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

    # --- the edit tools on the planes, the journal, a second page, the view link ---
    def click_plane_pixel(self, plane, column, row):
        """A click at pixel (column, row) of slice plane `plane` (0 z, 1 y, 2 x),
        through the page's own placement of the plane on its canvas."""
        d = self.driver
        canvas = d.find_element(By.ID, ["slice-z", "slice-y", "slice-x"][plane])
        x, y = d.execute_script(
            "const s = window.volsegSlices, b = s.box[arguments[0]], p = s.header.planes[arguments[0]];"
            "const ratio = window.devicePixelRatio || 1;"
            "return [(b.x0 + (arguments[1] + 0.5) / p.columns * b.dw) / ratio,"
            "        (b.y0 + b.dh - (arguments[2] + 0.5) / p.rows * b.dh) / ratio];", plane, column, row)
        r = canvas.rect
        ActionChains(d).move_to_element_with_offset(canvas, int(x - r["width"] / 2), int(y - r["height"] / 2)) \
            .click().perform()

    def edits_done(self, n):
        self.wait(f"return window.volsegState && window.volsegState.label && window.volsegState.label.edits === {n} && "
                  "window.volsegState.busy === null")

    def test_3_edit_tools_journal_second_page_and_link(self):
        d = self.driver
        labels = d.find_element(By.ID, "label-output")
        labels.clear()
        labels.send_keys(os.path.join(self.dir, "tools-labels.nhdr"))
        received = d.execute_script("return window.volsegSlices.received")
        d.find_element(By.ID, "label-btn").click()
        self.wait("return window.volsegState.label && window.volsegState.label.output.endsWith('tools-labels.nhdr')"
                  " && window.volsegState.busy === null")
        # The planes show the labels once labelled.
        self.wait(f"return window.volsegSlices.received > {received} && window.volsegSlices.planes.labels")
        self.assertEqual(d.execute_script("return window.volsegSlices.header.level"), 0)
        # The object with the most pixels in the z plane, found in the planes the page holds.
        find = """
            const s = window.volsegSlices, p = s.header.planes[0], l = s.planes.labels[0], count = new Map();
            for (const id of l) if (id) count.set(id, (count.get(id) || 0) + 1);
            const id = [...count.entries()].sort((a, b) => b[1] - a[1])[0][0];
            const at = [];
            for (let i = 0; i < l.length; ++i) if (l[i] === id) at.push([i % p.columns, Math.floor(i / p.columns)]);
            at.sort((a, b) => (a[0] + a[1]) - (b[0] + b[1]));
            return [id, [at[0], at[at.length - 1]], at[Math.floor(at.length / 2)]];"""
        obj, _, centre = d.execute_script(find)

        # Paint a ball of the object's id where it is, then erase one elsewhere.
        paint_id = d.find_element(By.ID, "paint-id")
        paint_id.clear()
        paint_id.send_keys(str(obj))
        radius = d.find_element(By.ID, "brush-radius")
        radius.clear()
        radius.send_keys("2")
        tool = d.find_element(By.ID, "tool")
        tool.find_element(By.CSS_SELECTOR, "option[value='paint']").click()
        self.click_plane_pixel(0, *centre)
        self.edits_done(1)
        journal_path = d.execute_script("return window.volsegState.label.journal")
        with open(journal_path) as f:
            last = json.load(f)["edits"][-1]
        z = d.execute_script("return window.volsegSlices.header.at[0]")
        self.assertEqual(last, {"op": "paint", "id": obj, "center": [z, centre[1], centre[0]], "radius": 2.0})
        tool.find_element(By.CSS_SELECTOR, "option[value='erase']").click()
        self.click_plane_pixel(0, 2, 2)
        self.edits_done(2)
        # The planes of the edited labels; two seeds far apart in the object.
        received = d.execute_script("window.volsegSlices.request(); return window.volsegSlices.received")
        self.wait(f"return window.volsegSlices.received > {received}")
        obj, seeds, _ = d.execute_script(find)

        # Two seeds in the object, Split, Apply.
        tool.find_element(By.CSS_SELECTOR, "option[value='seed']").click()
        for c, r in seeds:
            self.click_plane_pixel(0, c, r)
        self.assertEqual(d.find_element(By.ID, "seed-info").text, f"object {obj}: 2 seeds")
        d.find_element(By.ID, "seed-split").click()
        self.wait("return !document.getElementById('split-box').classList.contains('hidden') && "
                  "window.volsegState.busy === null")
        self.assertIn("from 2 seeds", d.find_element(By.ID, "split-info").text)
        self.screenshot("page-seeds.png")
        d.find_element(By.ID, "split-apply").click()
        self.edits_done(3)
        with open(journal_path) as f:
            last = json.load(f)["edits"][-1]
        self.assertEqual((last["op"], last["id"], len(last["seeds"])), ("split", obj, 2))
        # Undo and redo the split.
        d.find_element(By.ID, "edit-undo").click()
        self.edits_done(2)
        self.wait("return !document.getElementById('edit-redo').disabled")
        d.find_element(By.ID, "edit-redo").click()
        self.edits_done(3)
        tool.find_element(By.CSS_SELECTOR, "option[value='move']").click()

        # A second page sees the edits and deletes an object; the first
        # page's table follows, and an edit based on its old view is refused.
        first = d.current_window_handle
        d.switch_to.new_window("tab")
        d.get(f"http://{self.job.host}:{self.job.port}{self.job.base}")
        self.edits_done(3)
        victim = int(d.find_elements(By.CSS_SELECTOR, "#objects button.delete-btn")[0].get_attribute("data-id"))
        d.find_element(By.CSS_SELECTOR, f"#objects button.delete-btn[data-id='{victim}']").click()
        self.edits_done(4)
        d.close()
        d.switch_to.window(first)
        self.edits_done(4)
        self.assertFalse(d.execute_script(f"return window.volsegState.label.table.some((r) => r.id === {victim})"))
        saved = os.path.join(self.dir, "tools-labels.edited.raw")
        with open(saved, "rb") as f:
            before = f.read()
        d.execute_script("send({type: 'edit', op: 'delete', ids: [arguments[0]], base: 3})", obj)
        self.wait("return !document.getElementById('error').classList.contains('hidden')")
        self.assertIn("the labels have 4 edits, not the 3 this view holds", d.find_element(By.ID, "error-text").text)
        d.find_element(By.ID, "error-close").click()
        with open(saved, "rb") as f:
            self.assertEqual(f.read(), before)

        # The downloaded journal, replayed by volseg edit, gives the saved labels byte for byte.
        self.assertTrue(d.find_element(By.ID, "journal-link").is_displayed())
        text = d.execute_async_script("fetch('journal.json').then((r) => r.text()).then(arguments[0])")
        downloaded = os.path.join(self.dir, "downloaded.json")
        with open(downloaded, "w") as f:
            f.write(text)
        self.assertEqual([e["op"] for e in json.loads(text)["edits"]], ["paint", "erase", "split", "delete"])
        replay = os.path.join(self.dir, "replay.nhdr")
        subprocess.run(e2e_util.command(["edit", os.path.join(self.dir, "tools-labels.nhdr"), "--edits", downloaded,
                                         "--out", replay, "--quiet"], ranks=3), check=True, capture_output=True)
        with open(os.path.join(self.dir, "replay.raw"), "rb") as f:
            self.assertEqual(f.read(), before)
        # Save: the same labels, their whole table beside them.
        d.find_element(By.ID, "edit-save").click()
        self.wait("return document.getElementById('label-result').textContent.includes('saved ')")
        with open(saved, "rb") as f:
            self.assertEqual(f.read(), before)
        with open(os.path.join(self.dir, "tools-labels.edited.nhdr.objects.csv")) as f:
            rows = [line for line in f.read().splitlines() if line and not line.startswith("#")]
        present = set(np.unique(e2e_util.read_volume(replay)[1]).tolist()) - {0}
        self.assertEqual({int(r.split(",")[0]) for r in rows[1:]}, present)

        # The view link: an object shown, the planes moved, the view turned;
        # the link opened in another tab brings the same view back.
        d.find_element(By.CSS_SELECTOR, "#objects tbody tr td").click()
        shown = d.execute_script("return Number(document.querySelector('#objects tr.chosen').dataset.id)")
        self.click_plane_pixel(0, 10, 12)
        d.execute_script("window.volsegView.setCamera(75, -30, 1.5)")
        self.wait("return location.hash.includes('object=') && location.hash.includes('camera=75')")
        link = d.current_url
        self.assertNotIn("token", link)
        at = d.execute_script("return window.volsegSlices.at")
        page_range = [float(d.find_element(By.ID, "lo").get_attribute("value")),
                      float(d.find_element(By.ID, "hi").get_attribute("value"))]
        self.screenshot("page-edit.png")
        d.switch_to.new_window("tab")
        d.get(link)
        self.wait("return window.volsegState && window.volsegState.open && document.querySelector('#objects tr.chosen')"
                  " && window.volsegSlices.header")
        self.assertEqual(d.execute_script("return Number(document.querySelector('#objects tr.chosen').dataset.id)"), shown)
        self.assertEqual(d.execute_script("return window.volsegSlices.at"), at)
        cam = d.execute_script("return window.volsegView.camera()")
        self.assertEqual((cam["azimuth"], cam["elevation"], cam["zoom"]), (75, -30, 1.5))
        self.assertEqual([float(d.find_element(By.ID, "lo").get_attribute("value")),
                          float(d.find_element(By.ID, "hi").get_attribute("value"))], page_range)
        d.close()
        d.switch_to.window(first)
        errors = [e for e in d.get_log("browser") if e["level"] == "SEVERE"]
        self.assertEqual(errors, [])


if __name__ == "__main__":
    unittest.main(verbosity=2)
