# SPDX-License-Identifier: MIT
"""Shared helpers of the end-to-end tests: running volseg, and an NRRD reader
written from the format specification, independent of volseg's own parser."""
import hashlib
import os
import subprocess
import sys

import numpy as np

VOLSEG = os.environ.get("VOLSEG", "")
MPIEXEC = os.environ.get("MPIEXEC", "mpirun")
# A build with VOLSEG_WITH_PARAVIEW=OFF has no rendering, GUI or Catalyst:
# the tests of those skip, and the tests of its refusals run instead.
WITH_PARAVIEW = os.environ.get("VOLSEG_WITH_PARAVIEW", "ON").upper() in ("ON", "1", "TRUE", "YES")

# NRRD type names (teem's list, restricted to what volseg claims to read).
NRRD_TYPES = {
    "uchar": "u1", "unsigned char": "u1", "uint8": "u1", "uint8_t": "u1",
    "short": "i2", "short int": "i2", "signed short": "i2", "signed short int": "i2",
    "int16": "i2", "int16_t": "i2",
    "ushort": "u2", "unsigned short": "u2", "unsigned short int": "u2", "uint16": "u2", "uint16_t": "u2",
    "int": "i4", "signed int": "i4", "int32": "i4", "int32_t": "i4",
    "float": "f4", "double": "f8",
    "signed char": "i1", "int8": "i1", "int8_t": "i1",
    "uint": "u4", "unsigned int": "u4", "uint32": "u4", "uint32_t": "u4",
    "longlong": "i8", "long long": "i8", "int64": "i8", "int64_t": "i8",
    "ulonglong": "u8", "unsigned long long": "u8", "uint64": "u8", "uint64_t": "u8",
}
# volseg's --dtype names.
DTYPES = {"i8": "i1", "u8": "u1", "i16": "i2", "u16": "u2", "i32": "i4", "u32": "u4", "i64": "i8", "u64": "u8",
          "f32": "f4", "f64": "f8"}


def require_binary():
    if not VOLSEG or not os.access(VOLSEG, os.X_OK):
        sys.exit("e2e: set VOLSEG to the volseg binary (got %r)" % VOLSEG)


def _is_open_mpi():
    try:
        out = subprocess.run([MPIEXEC, "--version"], capture_output=True, text=True, timeout=30).stdout
    except OSError:
        return False
    return "Open MPI" in out or "OpenRTE" in out


# -q silences Open MPI's own "job aborted" banners, so stderr is volseg's alone.
MPI_QUIET = ["-q"] if _is_open_mpi() else []
if MPI_QUIET:
    # After a rank exits non-zero, mpirun waits this long (default 1 s, twice)
    # before killing the others; every failing run paid 2 s for nothing.
    os.environ.setdefault("OMPI_MCA_odls_base_sigkill_timeout", "0")


def xvfb_run(server_args="-screen 0 1280x1024x24"):
    """xvfb-run with a server number of this process's own (from 2000 up;
    xvfb-run -a alone starts every caller at 99, so tests that run at once
    raced for it; 100-999 are volseg's private servers)."""
    return ["xvfb-run", "-a", "-n", str(2000 + os.getpid() % 20000), "-s", server_args]


def without_display(env=None):
    """The environment with no X display: volseg starts its own Xvfb."""
    return {k: v for k, v in (os.environ if env is None else env).items() if k not in ("DISPLAY", "XAUTHORITY")}


def command(args, ranks=2, mpi=True, wrap=None):
    """The argv that runs volseg ARGS on RANKS ranks. With mpi=False and one
    rank, volseg runs as an MPI singleton (no mpirun). wrap: a shell snippet
    run inside each rank before exec (e.g. 'ulimit -f 64')."""
    inner = [VOLSEG] + [str(a) for a in args]
    if wrap:
        inner = ["bash", "-c", wrap + '; exec "$@"', "bash"] + inner
    if not mpi:
        assert ranks == 1
        return inner
    return [MPIEXEC] + MPI_QUIET + ["-np", str(ranks)] + inner


def run(args, ranks=2, mpi=True, cwd=None, timeout=120, wrap=None, prefix=(), env=None):
    """Runs volseg; returns CompletedProcess with text stdout/stderr."""
    argv = list(prefix) + command(args, ranks, mpi, wrap)
    return subprocess.run(argv, cwd=cwd, capture_output=True, text=True, timeout=timeout, env=env)


def check_ok(test, proc):
    test.assertEqual(proc.returncode, 0, "volseg failed: %s\nstdout:\n%s\nstderr:\n%s"
                     % (" ".join(proc.args), proc.stdout, proc.stderr))


def generate(test, path, field, dims, dtype, endian, ranks=2, extra=()):
    zyx = ",".join(str(d) for d in dims)
    proc = run(["generate", path, "--field", field, "--dims", zyx, "--dtype", dtype,
                "--endian", endian, "--quiet", *extra], ranks=ranks)
    check_ok(test, proc)


def parse_nhdr(path):
    """Parses a detached NRRD header. Returns a dict: dtype (numpy, with byte
    order), shape (z, y, x), endian, data (path of the data file), byte_skip,
    fields, keyvalues."""
    with open(path, "rb") as f:
        text = f.read().decode("latin-1")
    lines = text.split("\n")
    if not lines[0].startswith("NRRD000"):
        raise ValueError("%s: no NRRD magic" % path)
    fields, keyvalues = {}, {}
    for line in lines[1:]:
        line = line.strip("\r")
        if line == "":
            break
        if line.startswith("#"):
            continue
        if ":=" in line:
            key, value = line.split(":=", 1)
            keyvalues[key] = value
        else:
            key, value = line.split(": ", 1)
            fields[key.strip()] = value.strip()
    kind = NRRD_TYPES[fields["type"]]
    endian = fields.get("endian", "little")
    dtype = np.dtype(kind).newbyteorder("<" if endian == "little" else ">")
    sizes = [int(s) for s in fields["sizes"].split()]  # fastest axis (x) first
    data = fields.get("data file", fields.get("datafile"))
    if not os.path.isabs(data):
        data = os.path.join(os.path.dirname(path), data)
    return {"dtype": dtype, "shape": tuple(reversed(sizes)), "endian": endian, "data": data,
            "byte_skip": int(fields.get("byte skip", "0")), "fields": fields, "keyvalues": keyvalues}


def read_volume(path):
    """(header, array of shape (z, y, x) in the file's byte order)."""
    header = parse_nhdr(path)
    count = int(np.prod(header["shape"]))
    size = os.path.getsize(header["data"])
    if size != header["byte_skip"] + count * header["dtype"].itemsize:
        raise ValueError("%s: data file has %d bytes, header describes %d"
                         % (path, size, count * header["dtype"].itemsize))
    values = np.fromfile(header["data"], dtype=header["dtype"], offset=header["byte_skip"])
    return header, values.reshape(header["shape"])


def add_keyvalue(header_in, header_out, line, data_file=None):
    """Copies a header, inserting LINE before 'data file:' and optionally
    pointing it at another data file (relative to the header's folder)."""
    with open(header_in) as f:
        lines = f.read().split("\n")
    out = []
    for text in lines:
        if text.startswith("data file:"):
            if line:
                out.append(line)
            if data_file:
                text = "data file: " + data_file
        out.append(text)
    with open(header_out, "w") as f:
        f.write("\n".join(out))


def listing(folder):
    """Every name under folder, hidden ones included, recursively."""
    names = set()
    for root, dirs, files in os.walk(folder):
        for name in dirs + files:
            names.add(os.path.relpath(os.path.join(root, name), folder))
    return names


# What a crash or an uncaught error leaves in stderr (HDF5-DIAG: the HDF5
# library's own error stack, which volseg must turn into one line).
CRASH_SIGNS = ("terminate called", "Segmentation fault", "Aborted", "core dumped", "Backtrace", "backtrace",
               "MPI_ABORT", "exited on signal", "Traceback", "what():", "HDF5-DIAG")


def digest(folder):
    """{name: sha256} of the plain files under folder (hidden ones too)."""
    out = {}
    for name in listing(folder):
        path = os.path.join(folder, name)
        if os.path.isfile(path) and not os.path.islink(path):
            with open(path, "rb") as f:
                out[name] = hashlib.sha256(f.read()).hexdigest()
        else:
            out[name] = "dir" if os.path.isdir(path) else "other"
    return out


def assert_clean_failure(test, proc, pattern=None):
    """A failed volseg run as bad input must end: non-zero status, not a
    signal, no crash text, exactly one 'volseg: error:' line (matching pattern)."""
    where = "%s\nstdout:\n%s\nstderr:\n%s" % (" ".join(proc.args), proc.stdout, proc.stderr)
    test.assertNotEqual(proc.returncode, 0, "succeeded: " + where)
    test.assertLess(proc.returncode, 128, "killed by a signal: " + where)
    for sign in CRASH_SIGNS:
        test.assertNotIn(sign, proc.stderr, where)
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    test.assertEqual(len(lines), 1, "not exactly one stderr line: " + where)
    test.assertTrue(lines[0].startswith("volseg: error: "), where)
    if pattern:
        test.assertRegex(lines[0], pattern, where)


# What one run on a lying header may cost (the bar: 256 MiB of RSS on
# any rank). Time is printed, never asserted (the machines are shared).
LYING_HEADER_RSS_MIB = 256


# Runs argv[2:] and writes its peak RSS in KiB (wait4's ru_maxrss: the
# largest of it and the children it waited for, the ranks under mpirun) to
# the file argv[1]. A fresh small interpreter, because a child's ru_maxrss
# starts from its parent's RSS at fork: measured from the test's own process
# (numpy, VTK) it would count the test's memory, not volseg's.
_MEASURE = """
import os, sys
pid = os.posix_spawn(sys.argv[2], sys.argv[2:], os.environ)
_, status, usage = os.wait4(pid, 0)
with open(sys.argv[1], "w") as f:
    f.write(str(usage.ru_maxrss))
sys.exit(os.waitstatus_to_exitcode(status) & 0xff)
"""


def run_measured(args, ranks=1, timeout=120):
    """Runs volseg ARGS on RANKS ranks (1: a singleton, no mpirun); returns
    (CompletedProcess, seconds, peak RSS in MiB of its largest process)."""
    import shutil
    import tempfile
    import time
    argv = command(args, ranks, mpi=ranks > 1)
    argv[0] = shutil.which(argv[0]) or argv[0]
    with tempfile.NamedTemporaryFile("r") as rss:
        start = time.monotonic()
        proc = subprocess.run(["/usr/bin/python3", "-S", "-c", _MEASURE, rss.name] + argv, capture_output=True,
                              text=True, timeout=timeout)
        seconds = time.monotonic() - start
        kib = int(rss.read() or 0)
    return subprocess.CompletedProcess(argv, proc.returncode, proc.stdout, proc.stderr), seconds, kib // 1024


def check_lying_header(test, args, pattern, ranks_list=(1, 3)):
    """A file whose header claims what its bytes cannot hold: on every rank
    count, one line matching pattern, a non-zero exit, nothing on stdout
    from info (it describes nothing it cannot read), nothing new in the
    folder of the file (args[1]) where the outputs go, and at most
    LYING_HEADER_RSS_MIB of RSS. Prints each run's seconds and RSS."""
    folder = os.path.dirname(os.path.abspath(str(args[1])))
    before = sorted(os.listdir(folder))
    for ranks in ranks_list:
        proc, seconds, rss = run_measured(args, ranks)
        assert_clean_failure(test, proc, pattern)
        if args[0] == "info":
            test.assertEqual(proc.stdout, "", "info described what it cannot read: %s" % " ".join(proc.args))
        print("  volseg %s, %d rank(s): exit %d, %.2f s, %d MiB: %s"
              % (args[0], ranks, proc.returncode, seconds, rss, proc.stderr.strip()), file=sys.stderr)
        test.assertLessEqual(rss, LYING_HEADER_RSS_MIB, "%s took %d MiB of RSS" % (" ".join(proc.args), rss))
        test.assertEqual(sorted(os.listdir(folder)), before, "%s left files behind" % " ".join(proc.args))


# ctest's SKIP_RETURN_CODE for every e2e script (tests/e2e/CMakeLists.txt).
SKIPPED_FOR_A_MISSING_TOOL = 77


def main(**kwargs):
    """unittest.main for an e2e script: exit 1 on a failure; 77 when all
    passed but a test was skipped because a tool that checks it is missing
    (its skip reason starts with "missing "), so ctest reports the script as
    skipped rather than passed; else 0. Other skips (running as root, a
    build without ParaView) are what the configuration asks for."""
    import unittest
    program = unittest.main(exit=False, **kwargs)
    result = program.result
    if not result.wasSuccessful():
        sys.exit(1)
    missing = [reason for _, reason in result.skipped if reason.startswith("missing ")]
    if missing:
        print("e2e: skipped for want of a validator: " + "; ".join(sorted(set(missing))), file=sys.stderr)
        sys.exit(SKIPPED_FOR_A_MISSING_TOOL)
    sys.exit(0)
