#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""The ctest tests a change touches, as one regular expression for
`ctest -R` (scripts/run-tests.sh --changed uses it).

    changed_tests.py [BASE]

The change: what differs between BASE (default HEAD) and the work tree,
untracked files included; on a clean tree, the last commit. Each changed
path maps to the tests of its part (the table below: a library's own suites
and the end-to-end scripts that exercise it); a test script maps to itself.
A path the table does not know (the top CMakeLists.txt, cmake/) maps to the
smoke set: the unit tests, each job's MPI suite on 2 ranks and the CLI's bad
input. Prints nothing when nothing changed."""
import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

SMOKE = [r"^unit_", r"^(segment|label_merge|pyramid|comm)_np2$", r"^e2e_bad_input_cli$", r"^e2e_headless$"]

# Path prefix -> test-name patterns, first match wins.
PARTS = [
    ("io/backends/netcdf", [r"^conformance_(pnetcdf|netcdf4)_", r"^e2e_netcdf", r"^fuzz_corpus_fuzz_netcdf$"]),
    ("io/backends/zarr", [r"^e2e_zarr$", r"^e2e_viewers$", r"^fuzz_corpus_fuzz_zarr$"]),
    ("io/src/twophase", [r"^twophase_", r"^conformance_twophase"]),
    ("io/twophase", [r"^twophase_", r"^conformance_twophase"]),
    ("io/", [r"^unit_", r"^(conformance|trace|auto_backend|comm)_", r"^fuzz_corpus_", r"^e2e_(numpy_compare|faults)$"]),
    ("core/segment/src/label", [r"^unit_", r"^label_merge_", r"^e2e_label"]),  # label_*, labeling.cpp
    ("core/segment/src/disjoint_set", [r"^unit_", r"^label_merge_", r"^e2e_label"]),  # the labelling's union-find
    ("core/segment/", [r"^unit_", r"^(segment|label_merge|insitu)_", r"^e2e_(numpy_compare|operators|expression|resume)$"]),
    ("core/driver/", [r"^unit_", r"^(segment|pyramid|label_merge|insitu)_", r"^e2e_resume$"]),
    ("core/pyramid/", [r"^pyramid_", r"^render_np2$"]),
    ("core/mesh/", [r"^render_mask_surface$", r"^e2e_viewers$"]),
    ("app/trace_report/", [r"^trace_", r"^fuzz_corpus_fuzz_trace_csv$"]),
    ("app/cli/", [r"^e2e_(bad_input_cli|bad_input|numpy_compare)$", r"^docs_cli_reference$", r"^fuzz_corpus_fuzz_cli$"]),
    ("app/insitu/", [r"^insitu_", r"^e2e_insitu$", r"^install_insitu", r"^python_render_insitu_np1$"]),
    ("app/session/", [r"^session_np", r"^web_", r"^gui_np1$"]),
    ("web/", [r"^web_"]),
    ("render/", [r"^render_", r"^e2e_(render|headless)$", r"^python_render_insitu_np3$"]),
    ("gui/", [r"^gui_", r"^e2e_gui$"]),
    ("python/", [r"^python_api_", r"^python_render_insitu_np1$"]),
    ("datasets/", [r"^segment_np2$", r"^e2e_numpy_compare$"]),
    ("bench/", [r"^bench_"]),
    ("docs/notebooks/", [r"^python_notebook$"]),
    ("docs/", [r"^docs_"]),
    ("README.md", [r"^e2e_headless$"]),
    ("scripts/cluster/", [r"^web_launchers$"]),
    ("scripts/cli_reference.py", [r"^docs_cli_reference$"]),
    ("tests/unit/", [r"^unit_"]),
    ("tests/io/", [r"^(conformance|trace|auto_backend|comm)_"]),
    ("tests/twophase/", [r"^twophase_"]),
    ("tests/render/", [r"^render_"]),
    ("tests/gui/", [r"^gui_"]),
    ("tests/web/", [r"^web_"]),
    ("tests/python/", [r"^python_"]),
    ("tests/install/", [r"^install_"]),
    ("tests/fuzz/", [r"^fuzz_corpus_"]),
    ("tests/faults/", [r"^e2e_fault"]),
    ("tests/e2e/e2e_util.py", SMOKE + [r"^e2e_numpy_compare$"]),
]
UNTESTED = ("CONTRIBUTING.md", ".clang-format", ".gitignore", "examples/", "scripts/install-deps.sh",
            "scripts/run-default.sh")


def git(*args):
    return subprocess.run(["git", "-C", ROOT] + list(args), capture_output=True, text=True, check=True).stdout


def changed_paths(base):
    paths = set(git("diff", "--name-only", base).split())
    paths |= set(git("ls-files", "--others", "--exclude-standard").split())
    if not paths and base == "HEAD":
        paths = set(git("diff", "--name-only", "HEAD~1", "HEAD").split())
    return sorted(paths)


def patterns_for(path):
    m = re.match(r"tests/e2e/test_(\w+)\.py$", path)
    if m:
        return [r"^e2e_%s$" % m.group(1)]
    m = re.match(r"tests/mpi/(\w+)_test\.cpp$", path)
    if m:
        return [r"^%s_" % m.group(1)]
    for prefix, patterns in PARTS:
        if path.startswith(prefix):
            return patterns
    if path.startswith(UNTESTED):
        return []
    return SMOKE


def main():
    base = sys.argv[1] if len(sys.argv) > 1 else "HEAD"
    patterns = []
    for path in changed_paths(base):
        for p in patterns_for(path):
            if p not in patterns:
                patterns.append(p)
    if patterns:
        print("|".join(patterns))


if __name__ == "__main__":
    main()
