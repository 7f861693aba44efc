#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Drawing where users run: with DISPLAY unset, as on a cluster's compute
node, volseg starts one private Xvfb per node and stops it with the job. The
README's commands run as printed (segment, look, the browser's job); the
frame equals the one drawn on a user's display (xvfb-run); no process of the
job (ranks, the keeper, Xvfb) remains after a normal end, SIGTERM, SIGINT,
SIGKILL of a rank, an error on one rank or the watchdog; a DISPLAY that does
not answer is one line. And --version, and the version in what volseg
writes. Every job carries a tag in its environment, which the ranks, the
keeper and Xvfb inherit, to find its processes in /proc."""
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import unittest
import uuid
import zlib

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "web"))
import e2e_util as e  # noqa: E402

ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))
BUILD = os.path.dirname(os.path.dirname(os.path.dirname(e.VOLSEG))) if e.VOLSEG else ""
PRIVATE = re.compile(r"drawing on a private Xvfb, :(\d+)")
VERSION = re.compile(r"^0\.\d+\.\d+(\+g[0-9a-f]{12}(\.dirty)?)?$")


def headless_env(tag, **extra):
    env = e.without_display()
    env["VOLSEG_HEADLESS_TAG"] = tag
    env.update(extra)
    return env


def tagged(tag):
    """(pid, name) of every process whose environment carries the tag."""
    needle = ("VOLSEG_HEADLESS_TAG=" + tag).encode() + b"\0"
    found = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open(f"/proc/{pid}/environ", "rb") as f:
                if needle not in f.read() + b"\0":
                    continue
            with open(f"/proc/{pid}/comm") as f:
                found.append((int(pid), f.read().strip()))
        except OSError:
            continue
    return found


def parent(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            return int(f.read().rsplit(")", 1)[1].split()[1])
    except OSError:
        return 0


def png_text(path):
    """The tEXt chunks of a PNG, as a dict."""
    with open(path, "rb") as f:
        data = f.read()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", path
    text, at = {}, 8
    while at < len(data):
        length = int.from_bytes(data[at:at + 4], "big")
        kind, body = data[at + 4:at + 8], data[at + 8:at + 8 + length]
        if kind == b"tEXt":
            key, _, value = body.partition(b"\0")
            text[key.decode()] = value.decode()
        at += 12 + length
    return text


def png_pixels(path):
    """The decoded pixel rows of an 8-bit RGB PNG (what VTK writes)."""
    with open(path, "rb") as f:
        data = f.read()
    at, idat, width = 8, b"", 0
    while at < len(data):
        length = int.from_bytes(data[at:at + 4], "big")
        kind, body = data[at + 4:at + 8], data[at + 8:at + 8 + length]
        if kind == b"IHDR":
            width = int.from_bytes(body[:4], "big")
        elif kind == b"IDAT":
            idat += body
        at += 12 + length
    raw, stride = zlib.decompress(idat), 3 * width
    rows, previous = [], bytearray(stride)
    for y in range(len(raw) // (stride + 1)):
        kind, row = raw[y * (stride + 1)], bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for i in range(stride):
            left = row[i - 3] if i >= 3 else 0
            up, corner = previous[i], previous[i - 3] if i >= 3 else 0
            if kind == 1:
                row[i] = (row[i] + left) & 0xff
            elif kind == 2:
                row[i] = (row[i] + up) & 0xff
            elif kind == 3:
                row[i] = (row[i] + (left + up) // 2) & 0xff
            elif kind == 4:
                p = left + up - corner
                pa, pb, pc = abs(p - left), abs(p - up), abs(p - corner)
                row[i] = (row[i] + (left if pa <= pb and pa <= pc else up if pb <= pc else corner)) & 0xff
        rows.append(bytes(row))
        previous = row
    return rows


@unittest.skipUnless(e.WITH_PARAVIEW, "built without ParaView: nothing draws")
class Headless(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.mkdtemp(prefix="volseg-headless-")
        cls.vol = os.path.join(cls.dir, "v.nhdr")
        cls.mask = os.path.join(cls.dir, "m.nhdr")
        for args in (["generate", cls.vol, "--field", "shells", "--dims", "48", "--quiet"],
                     ["segment", cls.vol, "--lo", 2, "--hi", 3, "--out", cls.mask, "--quiet"]):
            proc = e.run(args)
            if proc.returncode != 0:
                raise RuntimeError(proc.stderr)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.dir, ignore_errors=True)

    def render_args(self, out, *more):
        return ["render", self.vol, "--mask", self.mask, "--mode", "volume,mask", "--size", "200x160",
                "--camera", "30,20", "--out", out] + list(more)

    def setUp(self):
        self.tmp = tempfile.mkdtemp(dir=self.dir)  # this test's TMPDIR: its private folder appears here
        self.running = []

    def tearDown(self):
        for proc in self.running:  # a test that failed half-way leaves no job behind
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.communicate()

    def start(self, args, tag, ranks=2, **env):
        proc = subprocess.Popen(e.command(args, ranks=ranks), cwd=self.dir, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True, start_new_session=True,
                                env=headless_env(tag, TMPDIR=self.tmp, **env))
        self.running.append(proc)
        return proc

    def watch(self, proc, tag, timeout=120):
        """Waits for proc; returns (stdout, stderr, the private Xvfb pids seen while it ran)."""
        seen = set()
        deadline = time.time() + timeout
        while proc.poll() is None and time.time() < deadline:
            seen.update(pid for pid, name in tagged(tag) if name == "Xvfb")
            time.sleep(0.05)
        out, err = proc.communicate(timeout=max(1, deadline - time.time()))
        return out, err, seen

    def assert_nothing_left(self, tag, seen):
        self.assertTrue(seen, "no private Xvfb ran")
        deadline = time.time() + 15
        while tagged(tag) and time.time() < deadline:
            time.sleep(0.1)
        self.assertEqual(tagged(tag), [], "processes of the job remain")
        self.assertEqual([f for f in os.listdir(self.tmp) if f.startswith("volseg-x-")], [],
                         "the private folder remains")

    def test_render_draws_the_frame_of_a_user_display(self):
        tag = uuid.uuid4().hex
        proc = self.start(self.render_args("headless.png", "--report", "r.json"), tag)
        out, err, seen = self.watch(proc, tag)
        self.assertEqual(proc.returncode, 0, err)
        self.assertRegex(out, PRIVATE)
        self.assert_nothing_left(tag, seen)
        # The same command on a display of the user's (xvfb-run's server).
        shown = e.run(self.render_args("shown.png"), cwd=self.dir,
                      prefix=e.xvfb_run())
        e.check_ok(self, shown)
        self.assertIn("drawing on the X display", shown.stdout)
        headless, user = (png_pixels(os.path.join(self.dir, n)) for n in ("headless.png", "shown.png"))
        self.assertEqual(headless, user, "the frames differ")
        self.assertGreater(len(set(b"".join(headless))), 16, "nothing drawn")
        # Which volseg drew it: the PNG's text, the report.
        version = e.run(["--version"], ranks=1, mpi=False).stdout.split()
        self.assertEqual(version[0], "volseg")
        self.assertRegex(version[1], VERSION)
        self.assertEqual(png_text(os.path.join(self.dir, "headless.png"))["Software"], "volseg " + version[1])
        with open(os.path.join(self.dir, "r.json")) as f:
            self.assertEqual(json.load(f)["volseg_version"], version[1])

    def test_sigterm_and_sigint_end_the_server(self):
        for sig in (signal.SIGTERM, signal.SIGINT):
            with self.subTest(signal=sig.name):
                tag = uuid.uuid4().hex
                proc = self.start(["web", self.vol, "--port", "0"], tag)
                line = proc.stdout.readline()
                self.assertIn("volseg web: http", line, proc.stderr.read() if proc.poll() is not None else "")
                self.assertRegex(proc.stdout.readline(), PRIVATE)
                seen = {pid for pid, name in tagged(tag) if name == "Xvfb"}
                os.killpg(proc.pid, sig)
                proc.communicate(timeout=60)
                self.assert_nothing_left(tag, seen)

    def test_sigkill_of_a_rank_ends_the_server(self):
        tag = uuid.uuid4().hex
        proc = self.start(["web", self.vol, "--port", "0"], tag)
        self.assertIn("volseg web: http", proc.stdout.readline())
        seen = {pid for pid, name in tagged(tag) if name == "Xvfb"}
        for pid, _ in tagged(tag):
            if parent(pid) == proc.pid:  # the ranks, mpirun's children
                os.kill(pid, signal.SIGKILL)  # no handler, no destructor: only the keeper can stop Xvfb
        proc.communicate(timeout=60)
        self.assert_nothing_left(tag, seen)

    def test_an_error_on_one_rank_ends_the_server(self):
        tag = uuid.uuid4().hex
        proc = self.start(self.render_args("fail.png", "--backend", "posix", "--quiet"), tag,
                          VOLSEG_FAULTS="read:eio,rank=1;read:slow,ms=300,rank=0")
        out, err, seen = self.watch(proc, tag)
        self.assertNotEqual(proc.returncode, 0, out)
        self.assertIn("error", err)
        self.assert_nothing_left(tag, seen)
        self.assertFalse(os.path.exists(os.path.join(self.dir, "fail.png")))

    def test_the_watchdog_ends_the_server(self):
        tag = uuid.uuid4().hex
        proc = self.start(self.render_args("slow.png", "--backend", "posix", "--quiet"), tag,
                          VOLSEG_TIMEOUT="2", VOLSEG_FAULTS="read:slow,ms=20000,rank=1")
        out, err, seen = self.watch(proc, tag)
        self.assertNotEqual(proc.returncode, 0, out)
        self.assertRegex(err, r"nothing moved for 2 s")
        self.assert_nothing_left(tag, seen)

    def test_a_display_that_does_not_answer_is_one_line(self):
        tag = uuid.uuid4().hex
        env = headless_env(tag, DISPLAY=":87")  # no server there (Xvfb's numbers here start at 0 or 99)
        proc = subprocess.run(e.command(self.render_args("no.png", "--quiet"), ranks=2), cwd=self.dir,
                              capture_output=True, text=True, timeout=120, env=env)
        e.assert_clean_failure(self, proc, r"cannot open the X display ':87' .*unset DISPLAY")
        self.assertFalse(os.path.exists(os.path.join(self.dir, "no.png")))

    def test_gui_batch_pictures_without_a_display(self):
        gui = os.environ.get("VOLSEG_GUI", "")
        if not gui:
            self.skipTest("VOLSEG_GUI is not set")
        tag = uuid.uuid4().hex
        argv = [e.MPIEXEC] + e.MPI_QUIET + ["-np", "2", gui, self.vol, "--lo", 2, "--hi", 3,
                                            "--screenshot", "gui.png", "--size", "200x160", "--quit"]
        proc = subprocess.Popen([str(a) for a in argv], cwd=self.dir, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                text=True, start_new_session=True, env=headless_env(tag, TMPDIR=self.tmp))
        self.running.append(proc)
        out, err, seen = self.watch(proc, tag)
        self.assertEqual(proc.returncode, 0, err)
        self.assertRegex(out, PRIVATE)
        self.assertGreater(os.path.getsize(os.path.join(self.dir, "gui.png")), 1000)
        self.assert_nothing_left(tag, seen)
        version = subprocess.run([gui, "--version"], capture_output=True, text=True, timeout=60, env=headless_env(tag))
        self.assertEqual(version.stdout.split()[0], "volseg-gui", version.stderr)
        self.assertRegex(version.stdout.split()[1], VERSION)
        # The window itself needs the user's display.
        proc = subprocess.run([str(a) for a in argv[:-5] + ["--quit"]], cwd=self.dir, capture_output=True,
                              text=True, timeout=120, env=headless_env(tag))
        self.assertNotEqual(proc.returncode, 0)
        self.assertIn("no X display (DISPLAY is not set) to show the window on", proc.stderr)

    def test_insitu_images_without_a_display(self):
        sim = os.environ.get("VOLSEG_SIM", "")
        if not sim:
            self.skipTest("VOLSEG_SIM is not set")
        tag = uuid.uuid4().hex
        argv = [e.MPIEXEC] + e.MPI_QUIET + ["-np", "2", sim, "--dims", "32", "--steps", "2", "--quiet",
                                            "--insitu", "--lo", "0.1", "--hi", "1", "--image", "img_%d.png"]
        proc = subprocess.Popen([str(a) for a in argv], cwd=self.dir, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                text=True, start_new_session=True, env=headless_env(tag, TMPDIR=self.tmp))
        self.running.append(proc)
        out, err, seen = self.watch(proc, tag)
        self.assertEqual(proc.returncode, 0, err)
        images = sorted(f for f in os.listdir(self.dir) if f.startswith("img_"))
        self.assertTrue(images, os.listdir(self.dir))
        self.assertIn("volseg", png_text(os.path.join(self.dir, images[-1]))["Software"])
        self.assert_nothing_left(tag, seen)
        version = subprocess.run([sim, "--version"], capture_output=True, text=True, timeout=60).stdout.split()
        self.assertEqual(version[0], "volseg-sim")
        self.assertRegex(version[1], VERSION)


def readme_block(heading):
    """The first indented block (a command block) under a README heading."""
    with open(os.path.join(ROOT, "README.md")) as f:
        text = f.read()
    after = text[text.index("\n" + heading + "\n"):]
    lines, started = [], False
    for line in after.splitlines()[2:]:
        if line.startswith("    "):
            started = True
            lines.append(line[4:])
        elif started and line.strip():
            break
        elif line.startswith("#"):
            break
    return lines


@unittest.skipUnless(e.WITH_PARAVIEW, "built without ParaView: nothing draws")
class ReadmeVerbatim(unittest.TestCase):
    """The README's commands as printed, in a folder that has the repository's
    scripts/ and this build as build/, with no DISPLAY."""

    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="volseg-readme-")
        os.symlink(os.path.join(ROOT, "scripts"), os.path.join(self.dir, "scripts"))
        os.symlink(BUILD, os.path.join(self.dir, "build"))
        self.tag = uuid.uuid4().hex
        self.env = headless_env(self.tag)

    def tearDown(self):
        shutil.rmtree(self.dir, ignore_errors=True)

    def bash(self, lines, **kwargs):
        return subprocess.Popen(["bash", "-c", "set -eo pipefail\n" + "\n".join(lines)], cwd=self.dir, env=self.env,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True,
                                **kwargs)

    def test_segment_look_and_the_browser(self):
        segment, look, browser = (readme_block(h) for h in ("### Segment", "### Look", "### In the browser"))
        self.assertTrue(any("volseg render" in line for line in look), look)
        proc = self.bash(segment + look)
        out, err = proc.communicate(timeout=600)
        self.assertEqual(proc.returncode, 0, out + err)
        self.assertRegex(out, PRIVATE)
        rows = png_pixels(os.path.join(self.dir, "vol.png"))
        self.assertEqual((len(rows), len(rows[0]) // 3), (1024, 1024))
        self.assertGreater(len(set(b"".join(rows[::16]))), 64, "the frame is blank")
        # The browser's job, the README's line as printed (the line after it is its output).
        command = [line for line in browser if line.startswith("mpirun")]
        self.assertEqual(len(command), 1, browser)
        job = self.bash(segment[:2] + command)
        try:
            address = job.stdout.readline()
            m = re.match(r"^volseg web: http://([^/:]+):(\d+)(/[^?]*)\?token=(\S+)$", address.strip())
            self.assertTrue(m, address + (job.stderr.read() if job.poll() is not None else ""))
            self.assertRegex(job.stdout.readline(), PRIVATE)
            import wsclient
            host, port, base, token = m.group(1), int(m.group(2)), m.group(3), m.group(4)
            ws = wsclient.WebSocket(host, port, f"{base}ws?token={token}", {"Origin": f"http://{host}:{port}"})
            ws.send({"type": "frame", "id": 7, "width": 512, "height": 512,
                     "camera": {"azimuth": 30, "elevation": 20, "zoom": 1}, "lo": 4, "hi": 7})
            frame, _ = ws.until(lambda msg: isinstance(msg, bytes) or (isinstance(msg, dict) and msg.get("type") ==
                                                                         "error"), limit=1000)
            self.assertIsInstance(frame, bytes, frame)
            header, payload = wsclient.binary_header(frame)
            self.assertEqual((header["type"], header["width"], header["height"]), ("frame", 512, 512))
            self.assertEqual(payload[:2], b"\xff\xd8")
            ws.close()
        finally:
            os.killpg(job.pid, signal.SIGTERM)
            job.communicate(timeout=60)
        deadline = time.time() + 15
        while tagged(self.tag) and time.time() < deadline:
            time.sleep(0.1)
        self.assertEqual(tagged(self.tag), [], "processes of the job remain")


class ManySingletons(unittest.TestCase):
    """Many volseg processes at once on one node, each alone (a job array's
    tasks, GNU parallel over files): Open MPI names every one of them job
    [0,1], so each needs its own session folder, or one that ends removes the
    folder under one that starts (one run in about 170 failed so here). Each
    must succeed, print nothing, and leave nothing in TMPDIR."""

    def test_singletons_started_together(self):
        with tempfile.TemporaryDirectory() as d:
            vol = os.path.join(d, "v.nhdr")
            e.check_ok(self, e.run(["generate", vol, "--field", "shells", "--dims", "16", "--quiet"], ranks=1,
                                   mpi=False))
            tmp = os.path.join(d, "tmp")
            os.mkdir(tmp)
            env = {k: v for k, v in os.environ.items() if not k.startswith("OMPI_MCA_orte_")}
            env["TMPDIR"] = tmp
            failures = []
            for _ in range(8):
                procs = [subprocess.Popen(e.command(["info", vol], ranks=1, mpi=False), stdout=subprocess.PIPE,
                                          stderr=subprocess.PIPE, text=True, env=env) for _ in range(8)]
                for proc in procs:
                    _, err = proc.communicate(timeout=120)
                    if proc.returncode != 0 or err.strip():
                        failures.append(f"exit {proc.returncode}: {err.strip()[:400]}")
            self.assertEqual(failures, [], f"{len(failures)} of 64 singletons failed")
            self.assertEqual(os.listdir(tmp), [], "a session folder was left behind")


class Versions(unittest.TestCase):
    """--version, and the version in a mask, a labels file and the reports."""

    def test_version_in_what_volseg_writes(self):
        version = e.run(["--version"], ranks=1, mpi=False)
        e.check_ok(self, version)
        name, number = version.stdout.split()
        self.assertEqual(name, "volseg")
        self.assertRegex(number, VERSION)
        with tempfile.TemporaryDirectory() as d:
            vol, mask, labels = (os.path.join(d, n) for n in ("v.nc", "m.nc", "l.ome.zarr"))
            e.check_ok(self, e.run(["generate", vol, "--field", "shells", "--dims", "24", "--quiet"], cwd=d))
            e.check_ok(self, e.run(["segment", vol, "--lo", 1, "--hi", 2, "--out", mask, "--report", "s.json",
                                    "--quiet"], cwd=d))
            e.check_ok(self, e.run(["label", mask, "--mask-input", "--out", labels, "--report", "l.json",
                                    "--quiet"], cwd=d))
            for report in ("s.json", "l.json"):
                with open(os.path.join(d, report)) as f:
                    self.assertEqual(json.load(f)["volseg_version"], number, report)
            dump = subprocess.run(["ncdump", "-h", mask], capture_output=True, text=True)
            if dump.returncode == 0:
                self.assertIn(f'volseg_version = "{number}"', dump.stdout)
            with open(os.path.join(labels, "0", ".zattrs")) as f:
                self.assertEqual(json.load(f)["volseg"]["volseg_version"], number)
        if e.WITH_PARAVIEW:
            render = subprocess.run([os.path.join(os.path.dirname(e.VOLSEG), "volseg-render"), "--version"],
                                    capture_output=True, text=True, timeout=60)
            self.assertEqual(render.returncode, 0, render.stderr)
            self.assertEqual(render.stdout.split(), ["volseg-render", number])


if __name__ == "__main__":
    e.require_binary()
    e.main(verbosity=2)
