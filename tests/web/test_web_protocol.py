# SPDX-License-Identifier: MIT
"""`volseg web` end to end without a browser: what a page sends over its
WebSocket (tests/web/wsclient.py) and what the job answers, on the number of
ranks VOLSEG_WEB_RANKS gives. Who gets in, which files it touches, bad
messages, and that the page's segment is batch segment's, byte for byte."""
import glob
import json
import os
import shlex
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import unittest

import numpy as np

sys.path.insert(0, os.path.dirname(__file__))
import web_util  # noqa: E402  (it puts tests/e2e on the path)
import e2e_util  # noqa: E402
import wsclient  # noqa: E402

e2e_util.require_binary()


def generate(path, dims, field="shells"):
    subprocess.run(e2e_util.command(["generate", path, "--dims", dims, "--field", field, "--quiet"], ranks=2),
                   check=True, capture_output=True)


class Serving(unittest.TestCase):
    """One job for the whole class, as a user keeps one open."""

    hellos = 1000

    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.mkdtemp(prefix="volseg-web-")
        cls.data = os.path.join(cls.dir, "data")
        os.makedirs(cls.data)
        os.makedirs(os.path.join(cls.dir, "elsewhere"))
        with open(os.path.join(cls.dir, "elsewhere", "secret.nc"), "wb") as f:
            f.write(b"CDF\x01")
        os.symlink(os.path.join(cls.dir, "elsewhere", "secret.nc"), os.path.join(cls.data, "link.nc"))
        cls.volume = os.path.join(cls.data, "shells.nc")
        generate(cls.volume, "40,48,56")
        cls.big = os.path.join(cls.data, "big.nc")
        generate(cls.big, "320")
        cls.job = web_util.Job([cls.volume, "--port", "0"])

    @classmethod
    def tearDownClass(cls):
        status, err = cls.job.stop()
        shutil.rmtree(cls.dir, ignore_errors=True)

    def connect(self, **headers):
        j = self.job
        return wsclient.WebSocket(j.host, j.port, f"{j.base}ws?token={j.token}",
                                  dict({"Origin": f"http://{j.host}:{j.port}"}, **headers))

    def ask(self, ws, message, want=lambda m: True):
        """Sends message; the reply, error or binary frame with its id."""
        ws.send(message)
        m, _ = ws.until(lambda m: (isinstance(m, bytes) and want(m)) or
                        (isinstance(m, dict) and m.get("type") in ("reply", "error") and
                         m.get("id") == message["id"]), limit=1000)
        return m

    def state(self, ws):
        """The session now: the answer to a hello (broadcasts before it are older)."""
        Serving.hellos += 1
        ws.send({"type": "hello", "id": Serving.hellos})
        m, _ = ws.until(lambda m: isinstance(m, dict) and m.get("type") == "state" and m.get("id") == Serving.hellos,
                        limit=10000)
        return m["state"]

    def wait_idle(self, ws, timeout=120):
        deadline = time.time() + timeout
        while time.time() < deadline:
            s = self.state(ws)
            if s["busy"] is None:
                return s
            time.sleep(0.2)
        self.fail("the session stayed busy")

    # --- who gets in --------------------------------------------------------
    def test_http_needs_the_token(self):
        j = self.job
        status, _, body = j.get(j.base)
        self.assertEqual(status, 401)
        self.assertNotIn(b"<html", body.lower())
        status, _, _ = j.get(j.base + "?token=" + "0" * len(j.token))
        self.assertEqual(status, 401)
        status, _, _ = j.get(j.base + "app.js")
        self.assertEqual(status, 401)
        status, headers, _ = j.get(j.base + "?token=" + j.token)
        self.assertEqual(status, 302)
        self.assertEqual(headers["Location"], j.base)  # the token leaves the address bar
        cookie = headers["Set-Cookie"]
        self.assertIn("HttpOnly", cookie)
        self.assertIn("SameSite=Strict", cookie)
        name_value = cookie.split(";")[0]
        status, headers, body = j.get(j.base, {"Cookie": name_value})
        self.assertEqual(status, 200)
        self.assertIn(b"<html", body.lower())
        self.assertIn("Content-Security-Policy", headers)
        status, _, _ = j.get(j.base + "app.js", {"Authorization": "token " + j.token})
        self.assertEqual(status, 200)
        status, _, _ = j.get(j.base + "../../etc/passwd", {"Cookie": name_value})
        self.assertEqual(status, 404)

    def test_websocket_needs_the_token_and_the_origin(self):
        j = self.job
        with self.assertRaises(wsclient.HandshakeRefused) as e:
            wsclient.WebSocket(j.host, j.port, j.base + "ws")
        self.assertEqual(e.exception.status, 401)
        with self.assertRaises(wsclient.HandshakeRefused) as e:
            wsclient.WebSocket(j.host, j.port, j.base + "ws?token=" + j.token[:-1] + "x")
        self.assertEqual(e.exception.status, 401)
        with self.assertRaises(wsclient.HandshakeRefused) as e:
            self.connect(Origin="http://evil.example")
        self.assertEqual(e.exception.status, 403)

    # --- bad messages: an error reply each, the job goes on ----------------
    def test_bad_messages_get_error_replies(self):
        ws = self.connect()
        cases = [
            ("not json", "not JSON"),
            (json.dumps({"type": "launch", "id": 5}), "unknown message type"),
            (json.dumps({"type": "segment", "id": 6, "lo": 1}), "'hi' is missing"),
            (json.dumps({"type": "segment", "id": 7, "lo": 1, "hi": 2, "output": "/etc/m.nc"}), "outside"),
            (json.dumps({"type": "segment", "id": 8, "lo": 1, "hi": 2, "output": "../m.nc"}), "'..'"),
            (json.dumps({"type": "segment", "id": 12, "lo": 1, "hi": 2, "output": "m.nc", "open": 40}), "'open'"),
            (json.dumps({"type": "segment", "id": 13, "lo": 1, "hi": 2, "output": "m.nc", "seed": [3]}), "'seed'"),
            (json.dumps({"type": "open", "id": 9, "path": "link.nc"}), "outside"),
            (json.dumps({"type": "open", "id": 10, "path": "/etc/passwd"}), "outside"),
            ("x" * 70000, "over the limit"),
        ]
        for text, expected in cases:
            ws.send(text)
            m, _ = ws.until(lambda m: isinstance(m, dict) and m.get("type") == "error")
            self.assertIn(expected, m["message"], text[:80])
        # An unknown variable or expression: the job's own one-line error.
        for open_message in ({"var": "nope"}, {"expr": "nope + 1"}):
            m = self.ask(ws, dict({"type": "open", "id": 11}, **open_message))
            self.assertEqual(m["type"], "error", open_message)
            self.assertNotIn("\n", m["message"])
        state = self.state(ws)
        self.assertEqual(state["open"]["path"], os.path.realpath(self.volume))  # still the file it had
        # Past the hard limit the connection closes (1009); the job lives on.
        try:
            ws.send("y" * (2 << 20))
            with self.assertRaises(wsclient.Closed) as e:
                while True:
                    ws.receive()
            self.assertIn(e.exception.code, (1009, 1006))
        except (BrokenPipeError, ConnectionResetError):
            pass  # closed while the message was still being sent
        self.assertTrue(self.job.alive())
        self.state(self.connect())

    # --- the session --------------------------------------------------------
    def test_segment_equals_batch_and_every_page_sees_it(self):
        ws, other = self.connect(), self.connect()
        self.wait_idle(ws)
        out = os.path.join(self.data, "web-mask.nhdr")
        m = self.ask(ws, {"type": "segment", "id": 21, "lo": 4, "hi": 6, "output": "web-mask.nhdr", "force": True})
        self.assertEqual(m["type"], "reply", m)
        batch = os.path.join(self.dir, "batch-mask.nhdr")
        subprocess.run(e2e_util.command(["segment", self.volume, "--lo", "4", "--hi", "6", "--out", batch,
                                         "--quiet"], ranks=2), check=True, capture_output=True)
        with open(out.replace(".nhdr", ".raw"), "rb") as a, open(batch.replace(".nhdr", ".raw"), "rb") as b:
            self.assertEqual(a.read(), b.read())
        # The second page was told, and its state shows the same session.
        state = self.state(other)
        self.assertEqual(state["segment"]["output"], os.path.realpath(out))
        self.assertEqual(state["segment"]["in_range"], m["data"]["in_range"])
        self.assertIn("volseg segment", state["command"][0])
        self.assertIn("--lo 4 --hi 6", state["command"][0])

    def test_segment_with_operators_equals_batch(self):
        """The page's hysteresis, open, close and fill holes: the job's mask
        equals the command line's, and the command it shows redoes it."""
        ws = self.connect()
        self.wait_idle(ws)
        out = os.path.join(self.data, "web-ops.nhdr")
        m = self.ask(ws, {"type": "segment", "id": 22, "lo": 3, "hi": 7, "output": "web-ops.nhdr", "force": True,
                          "seed": [5, 7], "open": 1, "close": 1, "fill_holes": True, "connectivity": 6})
        self.assertEqual(m["type"], "reply", m)
        self.assertIn("hysteresis", m["data"]["operators"])
        command = self.state(ws)["command"][0]
        for option in ("--seed-lo 5 --seed-hi 7", "--open 1", "--close 1", "--fill-holes", "--connectivity 6"):
            self.assertIn(option, command)
        batch = os.path.join(self.dir, "batch-ops.nhdr")
        subprocess.run(e2e_util.command(["segment", self.volume, "--lo", "3", "--hi", "7", "--seed-lo", "5",
                                         "--seed-hi", "7", "--open", "1", "--close", "1", "--fill-holes",
                                         "--connectivity", "6", "--out", batch, "--quiet"], ranks=2),
                       check=True, capture_output=True)
        with open(out.replace(".nhdr", ".raw"), "rb") as a, open(batch.replace(".nhdr", ".raw"), "rb") as b:
            web, cli = a.read(), b.read()
        self.assertEqual(web, cli)
        self.assertGreater(sum(web), 0)

    def test_label_and_surfaces(self):
        ws = self.connect()
        self.wait_idle(ws)
        self.assertEqual(self.ask(ws, {"type": "open", "id": 70})["type"], "reply")  # no mask now
        m = self.ask(ws, {"type": "label", "id": 71, "output": "l.nc"})
        self.assertEqual((m["type"], m["message"]), ("error", "segment first: there is no mask to label"))
        band = self.ask(ws, {"type": "surface", "id": 72, "lo": 4, "hi": 6})
        self.assertIsInstance(band, bytes, band)
        self.assertEqual(self.ask(ws, {"type": "segment", "id": 73, "lo": 1, "hi": 2, "output": "shell.nc",
                                       "force": True})["type"], "reply")
        m = self.ask(ws, {"type": "label", "id": 74, "output": "labels.nc", "force": True, "connectivity": 6})
        self.assertEqual(m["type"], "reply", m)
        table = m["data"]["table"]
        self.assertEqual(m["data"]["objects"], len(table))
        self.assertGreater(len(table), 0)
        self.assertEqual(sum(r["voxels"] for r in table), self.state(ws)["segment"]["in_range"])
        for frame, box in ((band, None), (self.ask(ws, {"type": "surface", "id": 75}), None),
                           (self.ask(ws, {"type": "surface", "id": 76, "object": table[0]["id"]}), table[0]["box"])):
            self.assertIsInstance(frame, bytes, frame)
            header, payload = wsclient.binary_header(frame)
            points, triangles = header["points"], header["triangles"]
            self.assertGreater(triangles, 0)
            self.assertEqual(len(payload), 24 * points + 12 * triangles)
            xyz = np.frombuffer(payload[:12 * points], dtype=np.float32).reshape(-1, 3)
            index = np.frombuffer(payload[24 * points:], dtype=np.uint32)
            self.assertLess(int(index.max()), points)
            self.assertEqual(header["bounds"], [0, 55, 0, 47, 0, 39])  # the volume's box, x y z
            lo = np.array(header["bounds"][0::2]) - 1.01
            hi = np.array(header["bounds"][1::2]) + 1.01
            if box:  # one object: inside its box, a voxel or two around it
                lo, hi = np.array(box[0]) - 2.01, np.array(box[1]) + 2.01
                self.assertEqual(header["object"], table[0]["id"])
            self.assertTrue(((xyz >= lo) & (xyz <= hi)).all())
        m = self.ask(ws, {"type": "surface", "id": 77, "object": 999999})
        self.assertEqual((m["type"], m["message"]), ("error", "no object 999999 in the table"))
        self.assertIn("volseg label", self.state(ws)["command"][1])

    def test_split_previews_then_applies_what_batch_edit_does(self):
        ws, other = self.connect(), self.connect()
        self.wait_idle(ws)
        self.assertEqual(self.ask(ws, {"type": "open", "id": 80})["type"], "reply")
        m = self.ask(ws, {"type": "split", "id": 81, "object": 1, "h": 0.5})
        self.assertEqual((m["type"], m["message"]), ("error", "label first: there are no objects to split"))
        self.assertEqual(self.ask(ws, {"type": "segment", "id": 82, "lo": 1, "hi": 2, "output": "sp-mask.nhdr",
                                       "force": True})["type"], "reply")
        m = self.ask(ws, {"type": "label", "id": 83, "output": "sp-labels.nhdr", "force": True, "connectivity": 6})
        self.assertEqual(m["type"], "reply", m)
        labels = os.path.join(self.data, "sp-labels.nhdr")
        before = e2e_util.read_volume(labels)[1]
        table = m["data"]["table"]
        largest = max(table, key=lambda r: r["voxels"])
        # The preview: parts, a plane, and nothing written.
        m = self.ask(ws, {"type": "split", "id": 84, "object": largest["id"], "h": 0.5})
        self.assertEqual(m["type"], "reply", m)
        parts = m["data"]["parts"]
        self.assertGreaterEqual(len(parts), 2)
        self.assertFalse(m["data"]["applied"])
        self.assertEqual(parts[0]["id"], largest["id"])
        self.assertEqual([p["id"] for p in parts[1:]], list(range(len(table) + 1, len(table) + len(parts))))
        self.assertEqual(sum(p["voxels"] for p in parts), largest["voxels"])
        plane = m["data"]["plane"]
        self.assertEqual(len(plane["cells"]), plane["width"] * plane["height"])
        self.assertTrue(set(plane["cells"]) <= set(range(len(parts) + 1)))
        self.assertGreater(len(set(plane["cells"]) - {0}), 1)
        self.assertFalse(os.path.exists(os.path.join(self.data, "sp-labels.edited.nhdr")))
        np.testing.assert_array_equal(e2e_util.read_volume(labels)[1], before)
        # Bad asks are one error each, and change nothing.
        for bad, text in (({"object": 999999, "h": 0.5}, "no object 999999 in the table"),
                          ({"object": 1}, "a split takes 'h' or 'seeds'"),
                          ({"object": 1, "h": -1}, "'h' must be above 0")):
            m = self.ask(ws, dict({"type": "split", "id": 85}, **bad))
            self.assertEqual((m["type"], m["message"]), ("error", text))
        # Applied: the labels written again from the journal; the state every
        # page sees holds the parts' rows and the command that redoes it.
        m = self.ask(ws, {"type": "split", "id": 86, "object": largest["id"], "h": 0.5, "apply": True})
        self.assertEqual(m["type"], "reply", m)
        self.assertTrue(m["data"]["applied"])
        edited = m["data"]["output"]
        self.assertEqual(edited, os.path.join(self.data, "sp-labels.edited.nhdr"))
        state = self.state(other)
        self.assertEqual(state["label"]["objects"], len(table) + len(parts) - 1)
        self.assertEqual(sorted(r["id"] for r in state["label"]["table"]),
                         sorted([r["id"] for r in table if r["id"] != largest["id"]] + [p["id"] for p in parts]))
        command = state["command"][-1]
        self.assertTrue(command.startswith("volseg edit "), command)
        with open(m["data"]["journal"]) as f:
            self.assertEqual(json.load(f)["edits"], [{"op": "split", "id": largest["id"], "h": 0.5}])
        batch = os.path.join(self.dir, "batch-edited.nhdr")
        words = shlex.split(command)
        words[words.index("--out") + 1] = batch
        subprocess.run(e2e_util.command(words[1:], ranks=2), check=True, capture_output=True)
        got = e2e_util.read_volume(edited)[1]
        np.testing.assert_array_equal(got, e2e_util.read_volume(batch)[1])
        self.assertEqual(len(np.unique(got)) - 1, len(table) + len(parts) - 1)
        np.testing.assert_array_equal(got != 0, before != 0)
        # Undone, the object is whole again and splits again, into the same
        # parts (its box is still the whole object's, not its first part's).
        m = self.ask(ws, {"type": "edit", "id": 87, "op": "undo"})
        self.assertEqual(m["type"], "reply", m)
        np.testing.assert_array_equal(e2e_util.read_volume(edited)[1], before)
        m = self.ask(ws, {"type": "split", "id": 88, "object": largest["id"], "h": 0.5, "apply": True})
        self.assertEqual(m["type"], "reply", m)
        np.testing.assert_array_equal(e2e_util.read_volume(edited)[1], got)

    def label_planes(self, ws, at):
        """The labels the slices through `at` (x, y, z fractions) carry: the
        plane indices (z, y, x) and the z, y and x planes."""
        m = self.ask(ws, {"type": "slices", "id": 120, "at": at})
        header, payload = wsclient.binary_header(m)
        self.assertTrue(header["labels"])
        sizes = [p["rows"] * p["columns"] for p in header["planes"]]
        start = sum(sizes) * (2 if header["mask"] else 1)
        ids = np.frombuffer(payload[start:], "<u4")
        self.assertEqual(len(ids), sum(sizes))
        parts = np.split(ids, np.cumsum(sizes)[:-1])
        return header["at"], [a.reshape(p["rows"], p["columns"]) for a, p in zip(parts, header["planes"])]

    def test_edits_undo_redo_and_a_stale_edit_refused(self):
        ws, other = self.connect(), self.connect()
        self.wait_idle(ws)
        self.assertEqual(self.ask(ws, {"type": "open", "id": 90})["type"], "reply")
        self.assertEqual(self.ask(ws, {"type": "segment", "id": 91, "lo": 5, "hi": 6, "output": "ed-mask.nhdr",
                                       "force": True})["type"], "reply")
        m = self.ask(ws, {"type": "label", "id": 92, "output": "ed-labels.nhdr", "force": True, "connectivity": 6})
        self.assertEqual(m["type"], "reply", m)
        labels = os.path.join(self.data, "ed-labels.nhdr")
        before = e2e_util.read_volume(labels)[1]
        table = sorted(m["data"]["table"], key=lambda r: -r["voxels"])
        a, b, c = (r["id"] for r in table[:3])
        keep, gone = min(a, b), max(a, b)  # a merge keeps the group's smallest id
        dims = before.shape
        # Merge, delete, paint and erase, each based on the edits seen.
        edits = [{"op": "merge", "ids": [a, b]}, {"op": "delete", "ids": [c]},
                 {"op": "paint", "object": keep, "center": [dims[0] // 2, dims[1] // 2, 3], "radius": 2.5},
                 {"op": "erase", "center": [1, 1, 1], "radius": 1.5}]
        # The planes through the paint's centre, read before the edits (the
        # job keeps them and, after an edit in place, reads again only what
        # it wrote).
        through = [3.5 / dims[2], (dims[1] // 2 + 0.5) / dims[1], (dims[0] // 2 + 0.5) / dims[0]]
        self.label_planes(ws, through)
        for k, edit in enumerate(edits):
            m = self.ask(ws, dict({"type": "edit", "id": 93 + k, "base": k}, **edit))
            self.assertEqual(m["type"], "reply", m)
            self.assertEqual((m["data"]["edits"], m["data"]["undone"]), (k + 1, 0))
            # The first edit writes the edited labels; the next ones change
            # only the regions they reach (a raw NRRD).
            self.assertEqual(m["data"].get("in_place", False), k > 0, m["data"])
        # The merge, the delete and the paint show in the table every page
        # sees: the merged row holds what the labels hold of it.
        edited = m["data"]["output"]
        saved = e2e_util.read_volume(edited)[1]
        at, (pz, py, px) = self.label_planes(ws, through)
        self.assertEqual(at, [dims[0] // 2, dims[1] // 2, 3])
        np.testing.assert_array_equal(pz, saved[at[0]])
        np.testing.assert_array_equal(py, saved[:, at[1]])
        np.testing.assert_array_equal(px, saved[:, :, at[2]])
        self.assertTrue(np.any(px == keep))
        state = self.state(other)
        ids = {r["id"] for r in state["label"]["table"]}
        self.assertTrue(keep in ids and gone not in ids and c not in ids)
        self.assertEqual(next(r for r in state["label"]["table"] if r["id"] == keep)["voxels"],
                         np.count_nonzero(saved == keep))
        self.assertGreater(np.count_nonzero(saved == keep), table[0]["voxels"] + table[1]["voxels"])
        # Broadcasts carry the table only when it changed: the one that says
        # a request is running leaves it out, the one after an edit has it,
        # and a hello always has it.
        other.send({"type": "edit", "id": 130, "op": "undo"})
        undo, seen = other.until(lambda m: isinstance(m, dict) and m.get("id") == 130 and
                                 m.get("type") in ("reply", "error"), limit=1000)
        self.assertEqual(undo["type"], "reply", undo)
        states = [m["state"] for m in seen if isinstance(m, dict) and m.get("type") == "state"]
        busy = [s for s in states if s["busy"] is not None]
        self.assertTrue(busy)
        self.assertTrue(all(s["label"].get("table_kept") and "table" not in s["label"] for s in busy))
        m = self.ask(other, {"type": "edit", "id": 131, "op": "redo"})
        self.assertEqual(m["type"], "reply", m)
        after, _ = other.until(lambda m: isinstance(m, dict) and m.get("type") == "state" and m["state"]["busy"] is None)
        self.assertIn("table", after["state"]["label"])
        self.assertIn("table", self.state(other)["label"])
        np.testing.assert_array_equal(e2e_util.read_volume(edited)[1], saved)
        # A page whose view holds 2 edits is refused, and nothing changes.
        m = self.ask(other, {"type": "edit", "id": 97, "op": "delete", "ids": [a], "base": 2})
        self.assertEqual(m["type"], "error")
        self.assertIn("the labels have 4 edits, not the 2 this view holds", m["message"])
        np.testing.assert_array_equal(e2e_util.read_volume(edited)[1], saved)
        # Undo twice, redo once: the journal is the first three edits.
        for k, op in enumerate(("undo", "undo", "redo")):
            m = self.ask(ws, {"type": "edit", "id": 98 + k, "op": op})
            self.assertEqual(m["type"], "reply", m)
        self.assertEqual((m["data"]["edits"], m["data"]["undone"]), (3, 1))
        with open(m["data"]["journal"]) as f:
            journal = json.load(f)["edits"]
        self.assertEqual([e["op"] for e in journal], ["merge", "delete", "paint"])
        # The journal replayed in batch gives the labels the job wrote, and
        # numpy's replay of it gives them too.
        command = self.state(other)["command"][-1]
        batch = os.path.join(self.dir, "batch-ed.nhdr")
        words = shlex.split(command)
        words[words.index("--out") + 1] = batch
        subprocess.run(e2e_util.command(words[1:], ranks=2), check=True, capture_output=True)
        got = e2e_util.read_volume(m["data"]["output"])[1]
        np.testing.assert_array_equal(got, e2e_util.read_volume(batch)[1])
        want = before.copy()
        want[want == gone] = keep
        want[want == c] = 0
        z, y, x = np.ogrid[:dims[0], :dims[1], :dims[2]]
        want[(z - dims[0] // 2) ** 2 + (y - dims[1] // 2) ** 2 + (x - 3) ** 2 <= 2.5 ** 2] = keep
        np.testing.assert_array_equal(got, want)
        self.assertTrue(m["data"]["in_place"])  # the redo wrote the paint's region back
        # The table every page sees is the labels', exactly: the paint's
        # voxels and centroids counted by the job, undo and redo followed.
        rows = self.state(other)["label"]["table"]
        present = set(np.unique(got)) - {0}
        self.assertEqual({r["id"] for r in rows}, present)
        for r in rows:
            at = np.argwhere(got == r["id"])
            self.assertEqual(r["voxels"], len(at), r)
            np.testing.assert_allclose(r["centroid"], at.mean(axis=0)[::-1], atol=1e-3)
        self.assertNotIn("table_stale", self.state(other)["label"])
        # Save: the same labels written again, their whole object table
        # beside them: what `volseg edit --stats` of the journal writes.
        out = m["data"]["output"]
        m = self.ask(ws, {"type": "edit", "id": 109, "op": "save"})
        self.assertEqual(m["type"], "reply", m)
        self.assertEqual(m["data"]["table_file"], out + ".objects.csv")
        self.assertEqual((m["data"]["edits"], m["data"]["objects"]), (3, len(present)))
        np.testing.assert_array_equal(e2e_util.read_volume(out)[1], got)
        stats = os.path.join(self.dir, "batch-ed.csv")
        words[words.index("--out") + 1] = os.path.join(self.dir, "batch-ed2.nhdr")
        subprocess.run(e2e_util.command(words[1:] + ["--stats", stats], ranks=2), check=True, capture_output=True)
        with open(m["data"]["table_file"]) as saved_table, open(stats) as batch_table:
            self.assertEqual(saved_table.read(), batch_table.read())
        self.assertEqual(self.state(other)["label"]["edits"], 3)
        self.assertEqual(len(self.state(other)["label"]["table"]), len(present))
        # Bad asks: one line each.
        for bad, text in (({"op": "merge", "ids": [a]}, "edit merge: 'ids' must name 2 or more objects"),
                          ({"op": "delete", "ids": [999999]}, "edit delete: no object 999999 in the table"),
                          ({"op": "erase", "center": [0, 0, 10 ** 6], "radius": 2}, "is outside the volume"),
                          ({"op": "paint", "object": a, "center": [0, 0, 0], "radius": 0}, "'radius' must be above 0"),
                          ({"op": "shrink"}, "'op' must be merge, delete, paint, erase, undo, redo or save")):
            m = self.ask(ws, dict({"type": "edit", "id": 110}, **bad))
            self.assertEqual(m["type"], "error", bad)
            self.assertIn(text, m["message"])

    def test_frame_is_a_small_jpeg(self):
        ws = self.connect()
        self.wait_idle(ws)
        m = self.ask(ws, {"type": "frame", "id": 31, "width": 1024, "height": 1024,
                          "camera": {"azimuth": 30, "elevation": 20, "zoom": 1}, "lo": 4, "hi": 6})
        self.assertIsInstance(m, bytes, m)
        header, payload = wsclient.binary_header(m)
        self.assertEqual((header["type"], header["width"], header["height"]), ("frame", 1024, 1024))
        self.assertEqual(payload[:2], b"\xff\xd8")
        self.assertLessEqual(len(payload), 300 * 1024)

    def test_slices(self):
        ws = self.connect()
        self.wait_idle(ws)
        m = self.ask(ws, {"type": "slices", "id": 41, "at": [0.5, 0.25, 0.75]})
        self.assertIsInstance(m, bytes, m)
        header, payload = wsclient.binary_header(m)
        self.assertEqual(header["dims"], [40, 48, 56])
        planes = header["planes"]
        values = sum(p["rows"] * p["columns"] for p in planes)
        self.assertEqual(len(payload), values * (2 if header["mask"] else 1))

    def test_closing_mid_job_leaves_the_job_whole(self):
        ws = self.connect()
        self.wait_idle(ws)
        ws.send({"type": "segment", "id": 51, "lo": 4, "hi": 6, "output": "closed.nhdr", "force": True,
                 })
        ws.close()  # the page goes away while the ranks work
        watcher = self.connect()
        time.sleep(0.2)
        state = self.wait_idle(watcher)
        self.assertEqual(state["segment"]["output"], os.path.realpath(os.path.join(self.data, "closed.nhdr")))
        self.assertEqual(os.path.getsize(os.path.join(self.data, "closed.raw")), 40 * 48 * 56)
        self.assertEqual(glob.glob(os.path.join(self.data, ".*volseg-tmp*")), [])

    def test_cancel_leaves_no_output(self):
        ws = self.connect()
        self.wait_idle(ws)
        self.assertEqual(self.ask(ws, {"type": "open", "id": 60, "path": "big.nc"})["type"], "reply")
        try:
            ws.send({"type": "segment", "id": 61, "lo": 4, "hi": 6, "output": "cancelled.nhdr"})
            ws.send({"type": "cancel", "id": 62})
            m, _ = ws.until(lambda m: isinstance(m, dict) and m.get("id") == 61 and m["type"] in ("reply", "error"))
            self.assertEqual((m["type"], m["message"]), ("error", "cancelled"))
            self.assertFalse(os.path.exists(os.path.join(self.data, "cancelled.nhdr")))
            self.assertEqual(glob.glob(os.path.join(self.data, ".*volseg-tmp*")), [])
            # A second job while one runs is refused, not queued.
            ws.send({"type": "segment", "id": 63, "lo": 4, "hi": 6, "output": "first.nhdr", "force": True})
            m = self.ask(ws, {"type": "segment", "id": 64, "lo": 1, "hi": 2, "output": "second.nhdr"})
            self.assertEqual(m["type"], "error")
            self.assertIn("busy", m["message"])
            self.wait_idle(ws)
        finally:
            self.ask(ws, {"type": "open", "id": 65})


class Launchers(unittest.TestCase):
    """What launchers set: a token of their own, a proxy's path prefix, no
    token on loopback."""

    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.mkdtemp(prefix="volseg-web-")
        cls.volume = os.path.join(cls.dir, "v.nc")
        generate(cls.volume, "24")

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.dir, ignore_errors=True)

    def test_token_from_the_environment_and_a_base_url(self):
        token = "launcher-chosen-token-0123456789"
        url_file = os.path.join(self.dir, "url.txt")
        job = web_util.Job([self.volume, "--port", "0", "--base-url", "/node/n7/8765/", "--print-url-file", url_file],
                           env={"VOLSEG_WEB_TOKEN": token})
        try:
            self.assertEqual(job.token, token)
            self.assertEqual(job.base, "/node/n7/8765/")
            with open(url_file) as f:
                self.assertEqual(f.read().strip(), "volseg web: " + job.url)
            self.assertEqual(job.get("/?token=" + token)[0], 404)  # outside the prefix
            status, headers, _ = job.get(job.base + "?token=" + token)
            self.assertEqual((status, headers["Location"]), (302, job.base))
            self.assertIn("Path=/node/n7/8765/", headers["Set-Cookie"])
            ws = wsclient.WebSocket(job.host, job.port, job.base + "ws", {"Authorization": "token " + token})
            ws.send({"type": "hello", "id": 1})
            m, _ = ws.until(lambda m: isinstance(m, dict) and m.get("type") == "state")
            self.assertEqual(m["state"]["file"], os.path.realpath(self.volume))
        finally:
            job.stop()

    def test_a_series_opens_at_its_first_step(self):
        import netCDF4
        path = os.path.join(self.dir, "series.nc")
        with netCDF4.Dataset(path, "w") as f:
            for name, size in (("time", None), ("z", 6), ("y", 7), ("x", 8)):
                f.createDimension(name, size)
            for name in ("a", "b"):
                v = f.createVariable(name, "f4", ("time", "z", "y", "x"))
                for t in range(3):
                    v[t] = np.full((6, 7, 8), t, dtype=np.float32)
        job = web_util.Job([path, "--port", "0"])
        try:
            ws = wsclient.WebSocket(job.host, job.port, f"{job.base}ws?token={job.token}")
            ws.send({"type": "hello", "id": 1})
            m, _ = ws.until(lambda m: isinstance(m, dict) and m.get("type") == "state")
            opened = m["state"]["open"]
            self.assertEqual((opened["variable"], opened["step"], opened["steps"]), ("a", 0, 3))
            ws.send({"type": "open", "id": 2, "var": "b", "time": 2})
            m, _ = ws.until(lambda m: isinstance(m, dict) and m.get("id") == 2)
            self.assertEqual((m["type"], m["data"]["variable"], m["data"]["step"]), ("reply", "b", 2))
            self.assertEqual(m["data"]["range"], [2, 2])
        finally:
            job.stop()

    def test_no_token_on_loopback(self):
        job = web_util.Job([self.volume, "--port", "0", "--no-token"])
        try:
            self.assertIsNone(job.token)
            self.assertEqual(job.get(job.base)[0], 200)
        finally:
            job.stop()

    def test_sigterm_ends_every_rank(self):
        job = web_util.Job([self.volume, "--port", "0"])
        status, err = job.stop()
        self.assertFalse(job.alive())
        try:
            socket.create_connection((job.host, job.port), timeout=5).close()
        except OSError:
            return  # the port is closed
        # A process of a test running beside this one (mpirun's daemons
        # listen on ephemeral ports) may have taken the freed port: it must
        # not be this job's server answering with its token.
        try:
            answered = job.get(job.base + "?token=" + job.token)[0] in (200, 302, 303)
        except Exception:  # another protocol, or no answer: not this server
            answered = False
        self.assertFalse(answered, "the page is still served after SIGTERM")


class Refusals(unittest.TestCase):
    """Jobs that must not start: one line, a non-zero exit."""

    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="volseg-web-")
        self.volume = os.path.join(self.dir, "v.nc")
        generate(self.volume, "24")

    def tearDown(self):
        shutil.rmtree(self.dir, ignore_errors=True)

    def refused(self, args, expected, env=None):
        job = web_util.Job([self.volume] + args, ranks=2, wait=False, env=env)
        status, out, err = job.finish()
        self.assertNotEqual(status, 0, err)
        self.assertNotIn("volseg web: http", out)
        self.assertIn(expected, err)
        return err

    def test_open_to_the_network_without_a_token(self):
        self.refused(["--host", "0.0.0.0", "--no-token", "--port", "0"], "without a token")

    def test_a_port_in_use(self):
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            s.listen()
            port = s.getsockname()[1]
            self.refused(["--port", str(port)], "in use")

    def test_an_unknown_variable(self):
        self.refused(["--var", "nope", "--port", "0"], "nope")

    def test_a_short_token(self):
        self.refused(["--port", "0"], "at least 16", env={"VOLSEG_WEB_TOKEN": "short"})


if __name__ == "__main__":
    unittest.main(verbosity=2)
