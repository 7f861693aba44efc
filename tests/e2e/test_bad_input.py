#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Bad inputs to the volseg CLI, each on 1 rank (an MPI singleton, no
mpirun) and on 2 ranks (mpirun -np 2): exactly one stderr line starting
'volseg: error:', no crash or stack trace, a non-zero exit, and no new file
(hidden temporaries included) where volseg writes."""
import gzip
import math
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
import unittest

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import e2e_util as e  # noqa: E402

DIMS = (40, 50, 60)  # z, y, x; f32: 480000 bytes, its mask 120000
MASK_BYTES = DIMS[0] * DIMS[1] * DIMS[2]
RANKS = (1, 2)
BACKENDS = ("posix", "mmap", "mmap-advise")
TMPFS_SIZE = 256 * 1024


class Base(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        e.require_binary()
        cls.tmp = tempfile.TemporaryDirectory(prefix="volseg-e2e-bad-")
        cls.source = os.path.join(cls.tmp.name, "source")
        os.mkdir(cls.source)
        e.generate(unittest.TestCase(), os.path.join(cls.source, "in.nhdr"), "smooth", DIMS, "f32", "big", ranks=1)

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def setUp(self):
        # A fresh folder per test holding a copy of the good input.
        self.work = tempfile.mkdtemp(dir=self.tmp.name)
        for name in ("in.nhdr", "in.raw"):
            shutil.copy(os.path.join(self.source, name), self.work)
        self.input = os.path.join(self.work, "in.nhdr")

    def path(self, name):
        return os.path.join(self.work, name)

    def write(self, name, text):
        with open(self.path(name), "w") as f:
            f.write(text)
        return self.path(name)

    def header_text(self):
        with open(self.input) as f:
            return f.read()

    def assert_clean_failure(self, proc, pattern=None):
        e.assert_clean_failure(self, proc, pattern)

    def expect_error(self, args, pattern=None, ranks=RANKS):
        """Runs args (in the work folder, which holds input and outputs) on
        each rank count: a clean failure, and no file added or changed."""
        for n in ranks:
            with self.subTest(ranks=n, args=" ".join(str(a) for a in args)):
                before = e.digest(self.work)
                proc = e.run(list(args) + ["--quiet"], ranks=n, mpi=n > 1, cwd=self.work)
                self.assert_clean_failure(proc, pattern)
                self.assertEqual(e.digest(self.work), before, "files added, removed or changed")

    def segment(self, header, out="out.nhdr", *extra):
        return ["segment", header, "--lo", "0.25", "--hi", "0.5", "--out", out, *extra]


class Inputs(Base):
    def test_missing_input(self):
        self.expect_error(self.segment("nope.nhdr"), "nope.nhdr.*No such file")
        self.expect_error(self.segment("nofolder/in.nhdr"), "No such file")

    def test_input_is_a_directory(self):
        os.mkdir(self.path("dir.nhdr"))
        self.expect_error(self.segment(self.work), "directory")
        self.expect_error(self.segment("dir.nhdr"), "directory")

    def test_data_file_is_a_directory(self):
        os.mkdir(self.path("data"))
        self.write("d.nhdr", self.header_text().replace("data file: in.raw", "data file: data"))
        self.expect_error(self.segment("d.nhdr"), "not a regular file")

    def test_missing_data_file(self):
        self.write("m.nhdr", self.header_text().replace("data file: in.raw", "data file: gone.raw"))
        self.expect_error(self.segment("m.nhdr"), "gone.raw.*No such file")

    def test_unreadable_input(self):
        if os.geteuid() == 0:
            self.skipTest("running as root: permissions do not stop root from reading "
                          "(directories as input are tested instead)")
        os.chmod(self.path("in.raw"), 0)
        self.expect_error(self.segment("in.nhdr"), "Permission denied")
        os.chmod(self.path("in.raw"), 0o644)
        os.chmod(self.input, 0)
        self.expect_error(self.segment("in.nhdr"), "Permission denied")

    def test_data_shorter_or_longer_than_header(self):
        with open(self.path("in.raw"), "rb") as f:
            data = f.read()
        for name, content in (("short", data[:-1]), ("shorter", data[:1000]), ("long", data + b"\0\0\0\0"),
                              ("empty", b"")):
            with open(self.path(name + ".raw"), "wb") as f:
                f.write(content)
            self.write(name + ".nhdr", self.header_text().replace("in.raw", name + ".raw"))
            self.expect_error(self.segment(name + ".nhdr"), "size")

    def test_unknown_dtype(self):
        for dtype in ("block", "float16", "int128"):
            self.write("t.nhdr", self.header_text().replace("type: float", "type: " + dtype))
            self.expect_error(self.segment("t.nhdr"), "dtype|type")

    def test_malformed_headers(self):
        text = self.header_text()
        lines = text.split("\n")
        cases = {
            "garbage first line": "garbage\n" + "\n".join(lines[1:]),
            "empty file": "",
            "binary junk": "\x00\x01\x02" * 50,
            "sizes: 10 x 10": "\n".join("sizes: 10 x 10" if l.startswith("sizes:") else l for l in lines),
            "sizes: 60 50": "\n".join("sizes: 60 50" if l.startswith("sizes:") else l for l in lines),
            "sizes: 60 50 -40": "\n".join("sizes: 60 50 -40" if l.startswith("sizes:") else l for l in lines),
            "no sizes": "\n".join(l for l in lines if not l.startswith("sizes:")),
            "no type": "\n".join(l for l in lines if not l.startswith("type:")),
            "no endian (f32)": "\n".join(l for l in lines if not l.startswith("endian:")),
            "endian: middle": text.replace("endian: big", "endian: middle"),
            "dimension: 2": text.replace("dimension: 3", "dimension: 2"),
            "encoding: gzip": text.replace("encoding: raw", "encoding: gzip"),
            "line without colon": text.replace("encoding: raw", "encoding: raw\nwhat is this"),
        }
        for what, content in cases.items():
            self.write("bad.nhdr", content)
            with self.subTest(case=what):
                self.expect_error(self.segment("bad.nhdr"))


class Options(Base):
    def test_lo_above_hi(self):
        self.expect_error(["segment", "in.nhdr", "--lo", "5", "--hi", "2", "--out", "out.nhdr"], "lo")

    def test_nan_thresholds(self):
        self.expect_error(["segment", "in.nhdr", "--lo", "nan", "--hi", "2", "--out", "out.nhdr"], "NaN")
        self.expect_error(["segment", "in.nhdr", "--lo", "0", "--hi", "nan", "--out", "out.nhdr"], "NaN")

    def test_unknown_backend(self):
        self.expect_error(self.segment("in.nhdr", "out.nhdr", "--backend", "nope"), "unknown backend 'nope'")
        self.expect_error(self.segment("in.nhdr", "out.nhdr", "--out-backend", "nope"), "unknown backend 'nope'")
        self.expect_error(["generate", "g.nhdr", "--dims", "8", "--backend", "nope"], "unknown backend 'nope'")

    def test_unknown_or_malformed_hint(self):
        for backend in BACKENDS:
            self.expect_error(self.segment("in.nhdr", "out.nhdr", "--backend", backend, "--hint", "foo=1"),
                              "unknown hint 'foo'")
        self.expect_error(self.segment("in.nhdr", "out.nhdr", "--hint", "foo"), "hint")
        self.expect_error(self.segment("in.nhdr", "out.nhdr", "--hint", "fsync=maybe"), "fsync")

    def test_hint_for_the_other_role(self):
        # Each role refuses the other's hints by name; --hint gives each role its own.
        self.expect_error(self.segment("in.nhdr", "out.nhdr", "--in-hint", "fsync=1"),
                          r"hint fsync= is for writers \(")
        self.expect_error(self.segment("in.nhdr", "out.nhdr", "--backend", "ranged-mmap", "--out-hint",
                                       "queue_depth=4"), r"hint queue_depth= is for readers \(ranged-mmap\)")

    def test_bad_brick_and_assignment(self):
        self.expect_error(self.segment("in.nhdr", "out.nhdr", "--brick", "0,1,1"), "shape")
        self.expect_error(self.segment("in.nhdr", "out.nhdr", "--brick", "a,b"), "shape")
        self.expect_error(self.segment("in.nhdr", "out.nhdr", "--assign", "foo"), "assignment")

    def test_bad_generate_options(self):
        for args, pattern in ((["--dims", "8", "--dtype", "int128"], "dtype"), (["--dims", "0"], "shape"),
                              (["--dims", "8,8"], "shape"), (["--dims", "8", "--field", "foo"], "field"),
                              (["--dims", "8", "--endian", "middle"], "byte order"),
                              (["--dims", "8", "--shell-width", "0"], "shell width")):
            self.expect_error(["generate", "g.nhdr", *args], pattern)

    def test_usage_errors_follow_the_convention(self):
        # CLI11's parse errors too: one 'volseg: error:' line, not its own two.
        self.expect_error(["segment", "in.nhdr", "--hi", "1", "--out", "out.nhdr"], "lo")
        self.expect_error(["segment", "in.nhdr", "--lo", "abc", "--hi", "1", "--out", "out.nhdr"], "abc")
        self.expect_error(["generate"], "output")
        self.expect_error(["segment", "in.nhdr", "--lo", "0", "--hi", "1", "--out", "out.nhdr", "--bogus"], "bogus")


class Outputs(Base):
    def test_output_is_the_input(self):
        os.mkdir(self.path("sub"))
        os.symlink("in.nhdr", self.path("link.nhdr"))
        for out in ("in.nhdr", self.input, "sub/../in.nhdr", "./in.nhdr"):
            for force in ([], ["--force"]):
                self.expect_error(self.segment("in.nhdr", out, *force), "is the input")
        self.expect_error(self.segment("link.nhdr", "in.nhdr", "--force"), "is the input")

    def test_output_data_is_the_input_data_without_force(self):
        # other.nhdr reads data.raw; the output data.nhdr would write data.raw.
        os.rename(self.path("in.raw"), self.path("data.raw"))
        self.write("other.nhdr", self.header_text().replace("data file: in.raw", "data file: data.raw"))
        self.expect_error(self.segment("other.nhdr", "data.nhdr"))

    def test_output_data_is_the_input_data_with_force(self):
        # The input's data file is the one its header names (data.raw), not
        # other.raw: --force must not let the mask replace it.
        os.rename(self.path("in.raw"), self.path("data.raw"))
        self.write("other.nhdr", self.header_text().replace("data file: in.raw", "data file: data.raw"))
        self.expect_error(self.segment("other.nhdr", "data.nhdr", "--force"), "input")

    def test_report_over_input_or_mask(self):
        for report in ("in.raw", "in.nhdr", "out.nhdr", "out.raw"):
            self.setUp()  # a fresh work folder and input each time
            with self.subTest(report=report):
                self.expect_error(self.segment("in.nhdr", "out.nhdr", "--report", report), "report")

    def test_report_exists_without_force(self):
        self.write("r.json", "precious\n")
        self.expect_error(self.segment("in.nhdr", "out.nhdr", "--report", "r.json"), "exists.*--force")

    def test_output_exists_without_force(self):
        for present in (("out.nhdr", "out.raw"), ("out.nhdr",), ("out.raw",)):
            for name in present:
                self.write(name, "precious\n")
            with self.subTest(present=present):
                self.expect_error(self.segment("in.nhdr", "out.nhdr"), "exists.*--force")
                self.expect_error(["generate", "out.nhdr", "--dims", "8"], "exists.*--force")
            for name in present:
                os.remove(self.path(name))

    def test_output_exists_with_force_is_replaced(self):
        _, values = e.read_volume(self.input)
        v = values.astype(np.float64)
        for n in RANKS:
            for name in ("out.nhdr", "out.raw"):
                self.write(name, "precious\n")
            with self.subTest(ranks=n):
                proc = e.run(self.segment("in.nhdr", "out.nhdr", "--force", "--quiet"), ranks=n, mpi=n > 1,
                             cwd=self.work)
                e.check_ok(self, proc)
                self.assertEqual(e.listing(self.work), {"in.nhdr", "in.raw", "out.nhdr", "out.raw"})
                _, mask = e.read_volume(self.path("out.nhdr"))
                np.testing.assert_array_equal(mask, ((v >= 0.25) & (v <= 0.5)).astype(np.uint8))

    def test_bad_output_paths(self):
        self.expect_error(self.segment("in.nhdr", "nofolder/out.nhdr"), "No such file")
        self.expect_error(self.segment("in.nhdr", "out.raw"), "nhdr")
        self.expect_error(self.segment("in.nhdr", "out"), "nhdr")
        self.expect_error(self.segment("in.nhdr", "out.nhdr", "--report", "nofolder/r.json"), "report")
        os.mkdir(self.path("d.nhdr"))
        self.expect_error(self.segment("in.nhdr", "d.nhdr", "--force"))
        os.mkdir(self.path("e.raw"))
        self.expect_error(self.segment("in.nhdr", "e.nhdr", "--force"))


class FullDisk(Base):
    """Writes that fail for want of space: a small tmpfs mounted by root, or
    in a user+mount namespace, or else a file-size limit (EFBIG)."""

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        probe = os.path.join(cls.tmp.name, "probe")
        os.mkdir(probe)
        mount = ["mount", "-t", "tmpfs", "-o", "size=%d" % TMPFS_SIZE, "tmpfs"]
        cls.strategy = "ulimit"
        if os.environ.get("VOLSEG_E2E_FULL") in ("mount", "unshare", "ulimit"):
            cls.strategy = os.environ["VOLSEG_E2E_FULL"]
        elif subprocess.run(mount + [probe], capture_output=True).returncode == 0:
            subprocess.run(["umount", probe], check=True)
            cls.strategy = "mount"
        elif subprocess.run(["unshare", "--user", "--map-root-user", "--mount", "sh", "-c",
                             " ".join(mount) + ' "$0"', probe], capture_output=True).returncode == 0:
            cls.strategy = "unshare"
        print("\nFullDisk: using", cls.strategy, file=sys.stderr)

    def setUp(self):
        super().setUp()
        self.full = os.path.join(self.work, "full")
        os.mkdir(self.full)
        self.mounted = False

    def tearDown(self):
        if self.mounted:
            subprocess.run(["umount", self.full], check=True)

    def run_full(self, args, ranks, filler=0):
        """Runs volseg with self.full nearly full; returns (proc, the names
        left in self.full, filler excluded)."""
        if self.strategy == "ulimit":
            if filler:
                self.skipTest("a file-size limit cannot fill a folder")
            env = dict(os.environ, OMPI_MCA_btl="self,tcp")  # vader's shm file would exceed the limit
            cmd = e.command(args + ["--quiet"], ranks, mpi=True, wrap="ulimit -f 64")
            proc = subprocess.run(cmd, cwd=self.work, capture_output=True, text=True, timeout=120, env=env)
            return proc, e.listing(self.full)
        cmd = e.command(args + ["--quiet"], ranks, mpi=ranks > 1)
        script = 'mount -t tmpfs -o size=%d tmpfs "$0" || exit 99; ' % TMPFS_SIZE
        if filler:
            script += 'head -c %d /dev/zero > "$0/.filler" || exit 98; ' % filler
        if self.strategy == "mount":
            subprocess.run(["sh", "-c", script, self.full], check=True)
            self.mounted = True
        else:
            listing = os.path.join(self.work, "full.listing")
            script += '"$@"; rc=$?; ls -A "$0" > %s; exit $rc' % shlex.quote(listing)
            cmd = ["unshare", "--user", "--map-root-user", "--mount", "bash", "-c", script, self.full] + cmd
        proc = subprocess.run(cmd, cwd=self.work, capture_output=True, text=True, timeout=120)
        if self.strategy == "mount":
            names = e.listing(self.full)
        else:
            with open(listing) as f:
                names = set(f.read().split())
            os.remove(listing)
        self.assertNotEqual(proc.returncode, 99, "could not mount: " + proc.stderr)
        return proc, names - {".filler"}

    def check_full(self, args, pattern=None, filler=0, kept=()):
        """kept: hidden files a failed job keeps for --resume (its finished
        bricks and their journal); nothing else may be left."""
        for n in RANKS:
            with self.subTest(ranks=n, args=" ".join(args), filler=filler):
                before = e.digest(self.work)
                proc, names = self.run_full(args, n, filler)
                if self.mounted:
                    subprocess.run(["umount", self.full], check=True)
                    self.mounted = False
                self.assert_clean_failure(proc, pattern)
                self.assertEqual(names, set(kept), "left behind in the full folder")
                self.assertEqual(e.digest(self.work), before)

    def test_segment_mask_does_not_fit(self):
        # The tmpfs holds 256 KiB: a 4x-larger mask does not fit.
        big = os.path.join(self.source, "big.nhdr")
        if not os.path.exists(big):
            e.generate(self, big, "smooth", (64, 64, 64), "u8", "little", ranks=1)
        for backend in BACKENDS:
            self.check_full(["segment", big, "--lo", "10", "--hi", "100", "--out", "full/m.nhdr",
                             "--backend", backend], "No space|too large")

    def test_segment_header_does_not_fit(self):
        # Room for the mask's data and its journal (a header page and one
        # brick's record page), not one page more for its header. The
        # finished mask stays in its partial file for --resume.
        filler = TMPFS_SIZE - math.ceil(MASK_BYTES / 4096) * 4096 - 2 * 4096
        for backend in BACKENDS:
            self.check_full(["segment", "in.nhdr", "--lo", "0.25", "--hi", "0.5", "--out", "full/m.nhdr",
                             "--backend", backend],
                            r"m.nhdr.*No space.* \(1 of 1 bricks done and kept in full/\.m\.raw\.volseg-partial: "
                            r"rerun with --resume to finish\)", filler=filler,
                            kept=(".m.raw.volseg-partial", ".m.nhdr.volseg-journal"))

    def test_report_does_not_fit(self):
        # The mask goes to the work folder; only the report's folder is full.
        # (The mask itself is left complete; only the report failed.)
        for n in RANKS:
            with self.subTest(ranks=n):
                proc, names = self.run_full(["segment", "in.nhdr", "--lo", "0.25", "--hi", "0.5", "--out",
                                             "m%d.nhdr" % n, "--report", "full/r.json"], n, filler=TMPFS_SIZE)
                if self.mounted:
                    subprocess.run(["umount", self.full], check=True)
                    self.mounted = False
                self.assert_clean_failure(proc, "No space")
                self.assertEqual(names, set())

    def test_generate_does_not_fit(self):
        for backend in BACKENDS:
            self.check_full(["generate", "full/g.nhdr", "--dims", "40,50,60", "--backend", backend],
                            "No space|too large")


class NrrdLyingHeaders(unittest.TestCase):
    """NRRD headers whose sizes the data cannot hold: one line naming the
    file and the field from 'volseg info' and 'volseg segment', on 1 and 3
    ranks, in at most 256 MiB, nothing written (e2e.check_lying_header)."""

    @classmethod
    def setUpClass(cls):
        e.require_binary()
        cls.tmp = tempfile.TemporaryDirectory(prefix="volseg-e2e-nrrd-lying-")

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def check(self, name, header, data, pattern):
        path = os.path.join(self.tmp.name, name)
        with open(path, "wb") as f:
            f.write(header.encode() + data)
        out = os.path.join(self.tmp.name, "out.nhdr")
        for argv in (["info", path], ["segment", path, "--lo", "0", "--hi", "1", "--out", out]):
            with self.subTest(name=name, command=argv[0]):
                e.check_lying_header(self, argv, pattern)

    @staticmethod
    def header(sizes, rest):
        return "NRRD0004\ntype: uint8\ndimension: 3\nsizes: %s\nencoding: raw\n%s" % (sizes, rest)

    def test_sizes_past_a_tiny_data_file(self):
        with open(os.path.join(self.tmp.name, "tiny.raw"), "wb") as f:
            f.write(b"0123456789")
        self.check("huge.nhdr", self.header("1099511627776 1099511627776 1099511627776", "data file: tiny.raw\n"), b"",
                   r"huge\.nhdr: sizes 1099511627776 x 1099511627776 x 1099511627776 of u8 need 1\.3e36 bytes from "
                   r"byte skip 0, more than its data file \S*tiny\.raw holds \(10 bytes\)$")
        self.check("long.nhdr", self.header("1099511627776 1 1", "data file: tiny.raw\n"), b"",
                   r"long\.nhdr: sizes 1099511627776 x 1 x 1 of u8 need 1099511627776 bytes from byte skip 0, more "
                   r"than its data file \S*tiny\.raw holds \(10 bytes\)$")

    def test_attached_sizes_past_the_file(self):
        header = self.header("1099511627776 1099511627776 1099511627776", "\n")
        self.check("attached.nrrd", header, b"0123456789",
                   r"attached\.nrrd: sizes 1099511627776 x 1099511627776 x 1099511627776 of u8 need 1\.3e36 bytes from "
                   r"byte %d of the file, more than the file holds \(%d bytes\)$" % (len(header), len(header) + 10))

    def test_gzip_encoding_is_refused(self):
        # volseg reads raw NRRD data only: a gzip-encoded one is refused by its header, decoding nothing.
        header = self.header("1099511627776 1 1", "").replace("encoding: raw", "encoding: gzip") + "\n"
        self.check("gzip.nrrd", header, gzip.compress(bytes(1 << 20)),
                   r"gzip\.nrrd: unsupported NRRD encoding 'gzip' \(volseg reads raw\)$")


if __name__ == "__main__":
    e.main()
