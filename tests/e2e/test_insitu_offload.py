# SPDX-License-Identifier: MIT
"""The in-situ hook off the simulation's critical path: --async (a helper
thread on every rank) and --analysis-ranks K (the last K ranks analyse)
write what the synchronous hook writes (masks byte for byte, the track and
its steps table, the statistics' values), for K = 1, 2 and N = 2, 3, 4 with
the grid decomposed over the N-K simulation ranks; and equal `volseg
segment` of the dumps. The queue: --when-full skip counts the steps it
leaves; --borrow reads the caller's arrays in place. Faults in the analysis
reach the simulation as one line; bad options are refused before the first
step."""
import csv
import json
import os
import re
import subprocess
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import e2e_util as e  # noqa: E402
import test_insitu as insitu  # noqa: E402  (a module: its test classes are not this file's)

HERE = os.path.dirname(os.path.abspath(__file__))
EXAMPLE = os.path.join(HERE, "..", "..", "examples", "python", "gray_scott.py")
DIMS = "23,19,17"  # no rank count divides it evenly
HOOK = ["--lo", "0.05", "--hi", "1", "--every", "2", "--label", "--connectivity", "6", "--track", "track.csv",
        "--stats", "stats.csv", "--out", "m_%04d.nhdr", "--force"]
VALUES = ["step", "time", "voxels", "valid", "in_range", "min", "max", "objects", "largest"]


sim = insitu.sim


def read(path, mode="rb"):
    with open(path, mode) as f:
        return f.read()


def stats_values(folder):
    """The statistics' values per step (timings aside)."""
    with open(os.path.join(folder, "stats.csv")) as f:
        return [{k: r[k] for k in VALUES + ["action"]} for r in csv.DictReader(f)]


class Base(insitu.Base):
    """test_insitu.py's temporary folder per class and volseg-sim at hand."""
    prefix = "volseg-e2e-offload-"

    def run_sim(self, name, ranks, hook, sim_args=(), steps=8):
        folder = os.path.join(self.dir, name)
        os.makedirs(folder, exist_ok=True)
        proc = sim(["--dims", DIMS, "--steps", steps, "--quiet", *sim_args, "--insitu", *hook], ranks, folder)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        return folder, proc

    def assert_same_outputs(self, reference, folder, steps):
        for step in steps:
            self.assertEqual(read(os.path.join(folder, "m_%04d.raw" % step)),
                             read(os.path.join(reference, "m_%04d.raw" % step)), (folder, step))
        for name in ("track.csv", "track.steps.csv"):
            self.assertEqual(read(os.path.join(folder, name)), read(os.path.join(reference, name)), (folder, name))
        self.assertEqual(stats_values(folder), stats_values(reference))


class SameResults(Base):
    """Every mode and rank count against the synchronous hook on 2 ranks."""

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.reference = os.path.join(cls.dir, "sync")
        os.makedirs(cls.reference)
        proc = sim(["--dims", DIMS, "--steps", 8, "--quiet", "--ghost", 2, "--dump", "d_%04d.nhdr", "--insitu",
                    *HOOK], 2, cls.reference)
        assert proc.returncode == 0, proc.stderr

    def test_async_and_analysis_ranks(self):
        cases = [("async", 2, ["--async"]), ("async", 3, ["--async", "--queue", "1"]),
                 ("ranks", 2, ["--analysis-ranks", "1"]), ("ranks", 3, ["--analysis-ranks", "1", "--queue", "3"]),
                 ("ranks", 3, ["--analysis-ranks", "2"]), ("ranks", 4, ["--analysis-ranks", "1"]),
                 ("ranks", 4, ["--analysis-ranks", "2", "--borrow"])]
        for mode, ranks, extra in cases:
            with self.subTest(mode=mode, ranks=ranks, extra=extra):
                folder, proc = self.run_sim("%s-%d-%s" % (mode, ranks, "-".join(extra)), ranks, HOOK + extra,
                                            ["--ghost", 2])
                self.assert_same_outputs(self.reference, folder, range(2, 9, 2))
                # Said at finalize: every in-situ step handed off, none skipped (the default blocks).
                self.assertRegex(proc.stderr, r"volseg_insitu: 4 steps handed off, 0 skipped \(queue full\)")
                self.assertTrue(all(r["action"] == "full" for r in stats_values(folder)))

    def test_equal_batch_segment_of_the_dumps(self):
        folder, _ = self.run_sim("ranks-dump", 3, HOOK + ["--analysis-ranks", "1"], ["--dump", "d_%04d.nhdr"])
        for step in (2, 8):
            out = os.path.join(folder, "batch_%d.nhdr" % step)
            proc = e.run(["segment", os.path.join(folder, "d_%04d.nhdr" % step), "--lo", "0.05", "--hi", "1",
                          "--out", out, "--progress", "none"])
            self.assertEqual(proc.returncode, 0, proc.stderr)
            self.assertEqual(read(out[:-5] + ".raw"), read(os.path.join(folder, "m_%04d.raw" % step)))

    def test_expression_arrays_cross_to_the_analysis(self):
        where = ["--var", "v", "--where", "v > 0.05 && u < 0.9", "--out", "m_%04d.nhdr", "--force", "--every", "3"]
        reference, _ = self.run_sim("where-sync", 2, where)
        for ranks, extra in ((3, ["--analysis-ranks", "2"]), (2, ["--async"])):
            folder, _ = self.run_sim("where-%d" % ranks, ranks, where + extra)
            for step in (3, 6):
                self.assertEqual(read(os.path.join(folder, "m_%04d.raw" % step)),
                                 read(os.path.join(reference, "m_%04d.raw" % step)))
        self.assertGreater(sum(read(os.path.join(reference, "m_0006.raw"))), 0)

    def test_periodic_labels_with_borrowed_arrays(self):
        hook = ["--lo", "0.05", "--hi", "1", "--every", "2", "--label", "--periodic", "zyx", "--track", "track.csv",
                "--stats", "stats.csv", "--out", "m_%04d.nhdr", "--force"]
        reference, _ = self.run_sim("periodic-sync", 2, hook, ["--periodic"])
        for ranks, extra in ((3, ["--analysis-ranks", "1", "--borrow"]), (2, ["--async", "--borrow"])):
            folder, _ = self.run_sim("periodic-%d-%s" % (ranks, extra[0]), ranks, hook + extra, ["--periodic"])
            self.assert_same_outputs(reference, folder, range(2, 9, 2))

    @unittest.skipUnless(e.WITH_PARAVIEW, "built without ParaView")
    def test_images_are_the_synchronous_hooks_pixels(self):
        # The analysis ranks draw their K slabs as K synchronous ranks with
        # slabs would (IceT composites whatever blocks there are); --async
        # draws on the simulation's own blocks.
        hook = ["--lo", "0.05", "--hi", "1", "--every", "3", "--image", "f_%04d.png", "--size", "160x120", "--force"]
        cases = {"img-sync1": (1, []), "img-sync2": (2, []), "img-async2": (2, ["--async"]),
                 "img-ranks-k1": (3, ["--analysis-ranks", "1"]), "img-ranks-k2": (4, ["--analysis-ranks", "2"])}
        for name, (ranks, extra) in cases.items():
            self.run_sim(name, ranks, hook + extra, ["--ghost", 2], steps=6)
        for name, reference in (("img-async2", "img-sync2"), ("img-ranks-k1", "img-sync1"),
                                ("img-ranks-k2", "img-sync2")):
            for step in (3, 6):
                self.assertEqual(read(os.path.join(self.dir, name, "f_%04d.png" % step)),
                                 read(os.path.join(self.dir, reference, "f_%04d.png" % step)), (name, step))

    @unittest.skipUnless(e.WITH_PARAVIEW, "built without ParaView")
    def test_catalyst_scripts_run_off_the_critical_path(self):
        scripts = os.path.join(HERE, "..", "..", "app", "insitu", "scripts")
        hook = ["--lo", "0.05", "--hi", "1", "--every", "2", "--stats", "stats.csv", "--catalyst-script",
                os.path.join(scripts, "extract_pvti.py"), "--catalyst-script",
                os.path.join(scripts, "contour_screenshot.py")]
        for ranks, extra in ((3, ["--analysis-ranks", "1"]), (2, ["--async"])):
            with self.subTest(extra=extra[0]):
                folder, _ = self.run_sim("scripts-%s" % extra[0], ranks, hook + extra, ["--ghost", 2], steps=4)
                with open(os.path.join(folder, "stats.csv")) as f:
                    self.assertEqual([int(r["script_errors"]) for r in csv.DictReader(f)], [0, 0])
                for step in (2, 4):
                    for name in ("contour_%06d.png", "grid_%06d.pvti"):
                        self.assertTrue(os.path.exists(os.path.join(folder, "catalyst", name % step)), name % step)

    @unittest.skipUnless(os.environ.get("VOLSEG_PYTHON"), "set VOLSEG_PYTHON to the built volseg package's folder")
    def test_python_simulation_on_analysis_ranks(self):
        def run(name, ranks, extra):
            folder = os.path.join(self.dir, "py-" + name)
            os.makedirs(folder)
            hook = "--lo 0.2 --hi 1 --every 5 --label --track track.csv --out m_%04d.nhdr --force " + extra
            argv = [e.MPIEXEC] + e.MPI_QUIET + ["-np", str(ranks), "--bind-to", "none", "/usr/bin/python3", EXAMPLE,
                                               "--n", "24", "--steps", "10", "--hook", hook]
            env = dict(os.environ, PYTHONPATH=os.environ["VOLSEG_PYTHON"])
            proc = subprocess.run(argv, cwd=folder, capture_output=True, text=True, timeout=300, env=env)
            self.assertEqual(proc.returncode, 0, proc.stderr)
            return folder

        reference = run("sync", 2, "")
        folder = run("ranks", 3, "--analysis-ranks 1")
        for step in (0, 5, 10):
            self.assertEqual(read(os.path.join(folder, "m_%04d.raw" % step)),
                             read(os.path.join(reference, "m_%04d.raw" % step)))
        self.assertEqual(read(os.path.join(folder, "track.csv")), read(os.path.join(reference, "track.csv")))


class Operators(Base):
    """--lo/--hi rules chosen per step and the mask operators in situ equal
    `volseg segment` of the step's dump, in every mode; the labels and the
    statistics the hook records are of that mask and those thresholds."""
    prefix = "volseg-e2e-offload-ops-"

    def check(self, name, ranks, ops, extra=()):
        hook = ["--var", "v", "--lo", ops[0], "--hi", ops[1], *ops[2:], "--every", "3", "--label", "--stats",
                "stats.csv", "--out", "m_%04d.nhdr", "--force", *extra]
        folder, _ = self.run_sim(name, ranks, hook, ["--dump", "d_%04d.nhdr"], steps=6)
        with open(os.path.join(folder, "stats.csv")) as f:
            rows = {int(r["step"]): r for r in csv.DictReader(f)}
        for step in (3, 6):
            out = os.path.join(folder, "batch_%d.nhdr" % step)
            proc = e.run(["segment", os.path.join(folder, "d_%04d.nhdr" % step), "--lo", ops[0], "--hi", ops[1],
                          *ops[2:], "--out", out, "--progress", "none"])
            self.assertEqual(proc.returncode, 0, proc.stderr)
            mask = read(os.path.join(folder, "m_%04d.raw" % step))
            self.assertEqual(mask, read(out[:-5] + ".raw"), (name, step))
            for bound, option in (("lo", "--lo"), ("hi", "--hi")):
                chosen = re.search(r"%s \S+ = (\S+) \(from the histogram" % option, proc.stdout)
                if chosen:  # a rule: the hook chose the same number
                    self.assertEqual(float(rows[step][bound]), float(chosen.group(1)), (name, step, bound))
            labels = e.run(["label", os.path.join(folder, "d_%04d.nhdr" % step), "--lo", ops[0], "--hi", ops[1],
                            *ops[2:], "--out", os.path.join(folder, "l_%d.nhdr" % step), "--progress", "none",
                            "--report", os.path.join(folder, "l_%d.json" % step)])
            self.assertEqual(labels.returncode, 0, labels.stderr)
            with open(os.path.join(folder, "l_%d.json" % step)) as f:
                self.assertEqual(int(rows[step]["objects"]), json.load(f)["objects"], (name, step))
        return mask

    def test_rules_and_operators_equal_batch(self):
        cases = [("otsu", "1", "--open", "1", "--fill-holes"), ("0.05", "p99", "--seed-lo", "0.3", "--seed-hi", "1",
                                                                   "--close", "1")]
        for k, ops in enumerate(cases):
            for ranks, extra in ((2, ()), (3, ("--analysis-ranks", "1")), (2, ("--async",))):
                with self.subTest(ops=ops, extra=extra):
                    mask = self.check("ops%d-%d-%s" % (k, ranks, "-".join(extra)), ranks, ops, extra)
                    self.assertGreater(sum(mask), 0)
        self.assertFalse([f for f in os.listdir(os.path.join(self.dir, "ops0-2-")) if ".volseg-insitu" in f])


class Queue(Base):
    prefix = "volseg-e2e-offload-queue-"

    def test_when_full_skip_counts_what_it_leaves(self):
        # The analysis (NetCDF-4 masks and labels every step) is far slower
        # than 40 steps of a tiny grid, so a queue of one step overflows.
        hook = ["--lo", "0.05", "--hi", "1", "--label", "--stats", "stats.csv", "--out", "m_%04d.nc4", "--force",
                "--queue", "1", "--when-full", "skip"]
        for ranks, extra in ((3, ["--analysis-ranks", "1"]), (2, ["--async"])):
            with self.subTest(extra=extra[0]):
                folder, proc = self.run_sim("skip-%s" % extra[0], ranks, hook + extra, steps=40)
                match = re.search(r"volseg_insitu: (\d+) steps handed off, (\d+) skipped \(queue full\)", proc.stderr)
                self.assertTrue(match, proc.stderr)
                handed, skipped = int(match.group(1)), int(match.group(2))
                self.assertEqual(handed + skipped, 40)
                self.assertGreater(skipped, 0)
                rows = stats_values(folder)
                self.assertEqual([int(r["step"]) for r in rows], list(range(1, 41)))
                left = [int(r["step"]) for r in rows if r["action"] == "queue-full"]
                self.assertEqual(len(left), skipped)
                masks = sorted(int(f[2:6]) for f in os.listdir(folder) if f.startswith("m_"))
                self.assertEqual(masks, [int(r["step"]) for r in rows if r["action"] == "full"])


class Faults(Base):
    prefix = "volseg-e2e-offload-faults-"

    def test_an_analysis_error_reaches_every_simulation_rank(self):
        for ranks, extra in ((3, ["--analysis-ranks", "1"]), (2, ["--async"]), (4, ["--analysis-ranks", "2"])):
            with self.subTest(extra=extra, ranks=ranks):
                folder = os.path.join(self.dir, "fault-%d-%s" % (ranks, extra[0]))
                os.makedirs(folder)
                with open(os.path.join(folder, "m_0004.nhdr"), "w") as f:
                    f.write("precious")
                proc = sim(["--dims", DIMS, "--steps", 12, "--quiet", "--insitu", "--lo", "0.05", "--hi", "1",
                            "--every", "2", "--out", "m_%04d.nhdr"] + extra, ranks, folder, timeout=120)
                self.assertEqual(proc.returncode, 3, proc.stderr)  # the simulation went on without the hook
                lines = [line for line in proc.stderr.splitlines() if line.strip()]
                self.assertEqual(len(lines), 1, proc.stderr)
                self.assertRegex(lines[0], r"^volseg-sim: in situ stopped at step \d+: .*m_0004.nhdr.*exists")
                self.assertEqual(read(os.path.join(folder, "m_0004.nhdr"), "r"), "precious")
                self.assertTrue(os.path.exists(os.path.join(folder, "m_0002.raw")))
                self.assertFalse([f for f in os.listdir(folder) if "tmp" in f], os.listdir(folder))


class BadOptions(Base):
    prefix = "volseg-e2e-offload-bad-"

    def refused(self, ranks, hook, pattern, sim_args=()):
        proc = sim(["--dims", DIMS, "--steps", 2, "--quiet", "--insitu-errors", "stop", *sim_args, "--insitu", "--lo", 0,
                    "--hi", 1, "--stats", "s.csv", *hook], ranks, self.dir, timeout=120)
        self.assertNotEqual(proc.returncode, 0)
        lines = [line for line in proc.stderr.splitlines() if line.strip()]
        self.assertEqual(len(lines), 1, proc.stderr)
        self.assertRegex(lines[0], pattern)
        self.assertNotIn("step 1/", proc.stderr)
        self.assertFalse(os.path.exists(os.path.join(self.dir, "s.csv")))

    def test_refusals(self):
        self.refused(2, ["--analysis-ranks", 2], r"--analysis-ranks: 2 of 2 ranks leaves none to simulate")
        self.refused(2, ["--analysis-ranks", 1, "--queue", 0], r"--queue: '0' is not a whole number >= 1")
        self.refused(2, ["--async", "--analysis-ranks", 1], r"--async and --analysis-ranks .* give one")
        self.refused(2, ["--async", "--when-full", "drop"], r"--when-full: 'drop' is not block or skip")
        self.refused(2, ["--queue", 3], r"--queue, --when-full and --borrow are of --async and --analysis-ranks")
        self.refused(2, ["--async", "--budget", "5%"], r"--budget .* use --when-full skip")
        # --async from a config file: volseg-sim started MPI without MPI_THREAD_MULTIPLE.
        config = os.path.join(self.dir, "async.cfg")
        with open(config, "w") as f:
            f.write("async\n")
        self.refused(2, ["--config", config], r"--async: MPI was initialised with MPI_THREAD_FUNNELED.*"
                                              r"MPI_THREAD_MULTIPLE")
        self.refused(2, ["--async"], r"--dump: with the hook's --async .* dump raw", ["--dump", "d_%d.nc"])


if __name__ == "__main__":
    e.main(verbosity=2)
