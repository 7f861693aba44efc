#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""More bad inputs to the volseg CLI (docs/bad_inputs.md), beside
test_bad_input.py and test_netcdf_bad_input.py: NRRD header fields those do
not try, NetCDF variables volseg cannot segment, options of segment,
pyramid and render, the trace file, and bad VOLSEG_FAULTS specifications.

Each case on 1 rank (an MPI singleton, no mpirun) and on 2 ranks (mpirun
-np 2): exit status 1 (2 for a usage error), exactly one stderr line,
'volseg: error: ...' naming the problem, no crash text, and nothing added,
removed or changed in the work folder (hidden files included)."""
import os
import re
import shutil
import subprocess
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import e2e_util as e  # noqa: E402

DIMS = (10, 12, 14)  # z, y, x; f32: 6720 bytes
RANKS = (1, 2)
USAGE = 2  # CLI11's parse errors
TRACE = "rank,op,start_s,duration_s,offset,bytes\n0,read,0.1,0.2,0,10\n"


class Base(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        e.require_binary()
        cls.tmp = tempfile.TemporaryDirectory(prefix="volseg-e2e-bad-cli-")
        cls.source = os.path.join(cls.tmp.name, "source")
        os.mkdir(cls.source)
        helper = unittest.TestCase()
        e.generate(helper, os.path.join(cls.source, "in.nhdr"), "smooth", DIMS, "f32", "big", ranks=1)
        e.check_ok(helper, e.run(["generate", os.path.join(cls.source, "in.nc"), "--format", "cdf5", "--field",
                                  "smooth", "--dims", ",".join(map(str, DIMS)), "--quiet"], ranks=1, mpi=False))

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def setUp(self):
        # A fresh folder per test holding copies of the good inputs.
        self.work = tempfile.mkdtemp(dir=self.tmp.name)
        for name in ("in.nhdr", "in.raw", "in.nc"):
            shutil.copy(os.path.join(self.source, name), self.work)

    def path(self, name):
        return os.path.join(self.work, name)

    def write(self, name, content):
        with open(self.path(name), "wb" if isinstance(content, bytes) else "w") as f:
            f.write(content)
        return name

    def header_text(self):
        with open(self.path("in.nhdr")) as f:
            return f.read()

    def argv(self, args, ranks, env_names=()):
        inner = [e.VOLSEG] + [str(a) for a in args]
        if ranks == 1:
            return inner
        forward = [word for name in env_names for word in ("-x", name)]
        return [e.MPIEXEC] + e.MPI_QUIET + forward + ["-np", str(ranks)] + inner

    def expect_error(self, args, pattern, status=1, quiet=True, env=None, ranks=RANKS):
        """Runs args in the work folder on each rank count: status, one
        'volseg: error:' line matching pattern, nothing changed there."""
        full_env = dict(os.environ)
        full_env.pop("DISPLAY", None)  # render must refuse before it opens a window
        full_env.update(env or {})
        args = list(args) + (["--quiet"] if quiet else [])
        for n in ranks:
            with self.subTest(ranks=n, args=" ".join(str(a) for a in args), env=env):
                before = e.digest(self.work)
                proc = subprocess.run(self.argv(args, n, tuple(env or ())), cwd=self.work, capture_output=True,
                                      text=True, timeout=120, env=full_env)
                e.assert_clean_failure(self, proc, pattern)
                self.assertEqual(proc.returncode, status, proc.stderr)
                self.assertEqual(e.digest(self.work), before, "files added, removed or changed")

    def segment(self, header="in.nhdr", *extra, out="out.nhdr"):
        return ["segment", header, "--lo", "0.25", "--hi", "0.5", "--out", out, *extra]

    def expect_header_error(self, text, pattern, name="bad.nhdr"):
        self.write(name, text)
        self.expect_error(self.segment(name), re.escape(name) + ": " + pattern)


class NrrdHeaderFields(Base):
    """Header fields test_bad_input.py does not try (io/src/nrrd.cpp)."""

    def edit(self, old_prefix, new_line):
        """The good header with the line starting old_prefix replaced."""
        lines = self.header_text().split("\n")
        index = [i for i, line in enumerate(lines) if line.startswith(old_prefix)]
        self.assertEqual(len(index), 1, old_prefix)
        lines[index[0]] = new_line
        return "\n".join(lines)

    def before_data_file(self, line):
        return self.header_text().replace("data file: in.raw", line + "\ndata file: in.raw")

    def test_size_too_large_for_an_integer(self):
        self.expect_header_error(self.edit("sizes:", "sizes: 99999999999999999999 12 10"),
                                 r"malformed NRRD header: size '99999999999999999999' is not an integer")

    def test_sizes_whose_bytes_overflow(self):
        # Each size fits; their product (times 4 bytes) does not fit 64 bits.
        self.expect_header_error(self.edit("sizes:", "sizes: 4611686018427387904 4611686018427387904 8"),
                                 r"sizes 4611686018427387904 x 4611686018427387904 x 8 of f32 need 6\.8e38 bytes from "
                                 r"byte skip 0, more than its data file .*in\.raw holds \(6720 bytes\)")

    def test_data_file_list(self):
        for line in ("data file: LIST", "data file: in.raw in.raw"):
            with self.subTest(line=line):
                self.expect_header_error(self.edit("data file:", line),
                                         r"unsupported NRRD data file list \(volseg reads one data file\)")

    def test_byte_skip(self):
        self.expect_header_error(self.before_data_file("byte skip: -1"), r"unsupported NRRD byte skip -1")
        self.expect_header_error(self.before_data_file("byte skip: four"),
                                 r"malformed NRRD header: byte skip 'four' is not an integer")
        # Past the end of the data file: the file is shorter than skip + data.
        self.expect_header_error(self.before_data_file("byte skip: 100000"),
                                 r"sizes 14 x 12 x 10 of f32 need 6720 bytes from byte skip 100000, more than its "
                                 r"data file .*in\.raw holds \(6720 bytes\)")

    def test_line_skip(self):
        self.expect_header_error(self.before_data_file("line skip: 1"), r"unsupported NRRD line skip 1")

    def test_spacings(self):
        self.expect_header_error(self.edit("spacings:", "spacings: 1 1"),
                                 r"malformed NRRD header: spacings needs 3 numbers")
        self.expect_header_error(self.edit("spacings:", "spacings: 1 wide 1"),
                                 r"malformed NRRD header: spacing 'wide' is not a number")

    def test_space_directions(self):
        self.expect_header_error(self.edit("spacings:", "space directions: (1,0,0) (0,1,0)"),
                                 r"malformed NRRD header: space directions needs 3 vectors of 3")
        self.expect_header_error(self.edit("spacings:", "space directions: (1,0,0) (0,y,0) (0,0,1)"),
                                 r"malformed NRRD header: space directions 'y' is not a number")

    def test_origin_not_a_number(self):
        self.expect_header_error(self.edit("spacings:", "axis mins: 0 0 q"),
                                 r"malformed NRRD header: axis mins 'q' is not a number")

    def test_fill_value_not_a_number(self):
        self.expect_header_error(self.before_data_file("_FillValue:=lots"),
                                 r"malformed NRRD header: _FillValue 'lots' is not a number")

    def test_valid_range(self):
        self.expect_header_error(self.before_data_file("valid_range:=0"),
                                 r"malformed NRRD header: valid_range needs two numbers")
        self.expect_header_error(self.before_data_file("valid_range:=0 high"),
                                 r"malformed NRRD header: valid_range 'high' is not a number")

    def test_dimension_not_an_integer(self):
        self.expect_header_error(self.edit("dimension:", "dimension: three"),
                                 r"malformed NRRD header: dimension 'three' is not an integer")

    def test_no_end_of_header_in_a_mebibyte(self):
        comments = "".join("# %s\n" % ("x" * 100) for _ in range(11000))  # 1.1 MB, no blank line
        self.expect_header_error(self.header_text().replace("encoding: raw\n", "encoding: raw\n" + comments),
                                 r"not a NRRD header \(no end of header in the first 1048576 bytes\)")

    def test_attached_data(self):
        header = "NRRD0004\ntype: float\ndimension: 3\nsizes: 4 4 4\nendian: little\nencoding: raw\n"
        # No data file line, and no blank line with data after it.
        self.expect_header_error(header, r"malformed NRRD header: no data file and no attached data",
                                 name="att.nrrd")
        # Attached data shorter than the header says (256 bytes).
        self.expect_header_error(header + "\n" + "\0" * 100, r"sizes 4 x 4 x 4 of f32 need 256 bytes from byte \d+ "
                                 r"of the file, more than the file holds \(\d+ bytes\)", name="att.nrrd")


class NetcdfVariables(Base):
    """Variables a NetCDF reader opens that volseg cannot segment (files made
    by ncgen from CDL)."""

    def ncgen(self, name, cdl, kind):
        if shutil.which("ncgen") is None:
            self.skipTest("missing ncgen (netcdf-bin)")
        self.write(name + ".cdl", cdl)
        proc = subprocess.run(["ncgen", "-b", *kind, "-o", self.path(name), self.path(name + ".cdl")],
                              capture_output=True, text=True, timeout=120)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        os.remove(self.path(name + ".cdl"))
        return name

    def test_text_variable(self):
        for kind, type_name in ((["-5"], "char"), (["-k", "nc4"], "string")):
            cdl = "netcdf t {\ndimensions: z = 2 ; y = 3 ; x = 4 ;\nvariables: %s v(z, y, x) ;\n}\n" % type_name
            name = self.ncgen("%s.nc" % type_name, cdl, kind)
            self.expect_error(self.segment(name, out="o.nc"),
                              re.escape(name) + r": variable v has type %s, which volseg does not segment" % type_name)

    def test_record_variable_without_records(self):
        cdl = ("netcdf r {\ndimensions: time = UNLIMITED ; z = 2 ; y = 3 ; x = 4 ;\n"
               "variables: float t(time, z, y, x) ;\n}\n")
        name = self.ncgen("empty-record.nc", cdl, ["-5"])
        self.expect_error(self.segment(name, out="o.nc"), r"empty-record\.nc: variable t has 0 steps along time")


class Options(Base):
    def test_brick_too_large_for_an_integer(self):
        self.expect_error(self.segment("in.nhdr", "--brick", "99999999999999999999"),
                          r"malformed shape '99999999999999999999': expected positive integers Z,Y,X")

    def test_unknown_progress_mode(self):
        # Without --quiet: --quiet turns progress off whatever --progress says.
        self.expect_error(self.segment("in.nhdr", "--progress", "sometimes"),
                          r"unknown progress mode 'sometimes' \(known: auto, bar, lines, none\)", quiet=False)

    def test_unknown_format(self):
        self.expect_error(self.segment("in.nhdr", "--format", "hdf4"),
                          r"unknown format 'hdf4' \(known: raw, cdf1, cdf2, cdf5, netcdf4, hdf5, zarr, ome-zarr, nifti-gz, "
                          r"vti-compressed, tiff, precomputed\)")

    def test_netcdf_options_on_a_raw_input(self):
        self.expect_error(self.segment("in.nhdr", "--var", "smooth"),
                          r"--var smooth: .*in.nhdr holds one volume \(--var names a NetCDF or HDF5 variable, or a "
                          r"\.vti file's point data array\)")
        self.expect_error(self.segment("in.nhdr", "--time", "0"),
                          r"--time names a NetCDF variable or step; backend .* reads raw volumes")

    def test_batch_bytes_zero(self):
        self.expect_error(self.segment("in.nhdr", "--batch-bytes", "0"), r"--batch-bytes: Value 0 not in range",
                          status=USAGE)

    def test_reader_that_cannot_read_the_format(self):
        self.expect_error(self.segment("in.nhdr", "--backend", "pnetcdf"), r"in\.nhdr: .*Unknown file format")
        self.expect_error(self.segment("in.nc", "--backend", "posix", out="o.nc"),
                          r"in\.nc: not a NRRD header \(no NRRD000x magic line\)")

    def test_pyramid_bins_and_reduction(self):
        self.expect_error(["pyramid", "in.nhdr", "--bins", "0"], r"--bins 0: a histogram needs at least one bin")
        self.expect_error(["pyramid", "in.nhdr", "--reduce", "median"],
                          r"--reduce median: known reductions are mean and max")


@unittest.skipUnless(e.WITH_PARAVIEW, "built without ParaView")
class RenderOptions(Base):
    """Options render checks before it needs a display (no Xvfb here)."""

    def render(self, *extra, out="r.png"):
        return ["render", "in.nhdr", "--out", out, "--size", "64x64", *extra]

    def test_camera_and_view(self):
        for camera in ("left", "1,2,3,4"):
            self.expect_error(self.render("--camera", camera),
                              r"--camera: '%s' is not AZIMUTH,ELEVATION\[,ZOOM\]" % camera)
        self.expect_error(self.render("--zoom", "0"), r"--zoom must be positive")
        self.expect_error(self.render("--orbit", "-3"), r"--orbit must not be negative")

    def test_colours_and_opacities(self):
        self.expect_error(self.render("--mask-color", "2,0,0"), r"--mask-color: components are in \[0, 1\]")
        self.expect_error(self.render("--background", "1,1"), r"--background: '1,1' needs 3 numbers")
        self.expect_error(self.render("--mask-opacity", "2"), r"--mask-opacity must be in \[0, 1\]")
        self.expect_error(self.render("--range-lo", "5", "--range-hi", "1"), r"--range-lo must be below --range-hi")

    def test_memory_and_iso(self):
        self.expect_error(self.render("--memory", "lots"), r"--memory lots: not a positive size")
        self.expect_error(self.render("--mode", "iso"), r"mode iso needs values \(--iso VALUE\.\.\.\)")


class Outputs(Base):
    def test_trace_over_the_input_mask_or_report(self):
        for trace in ("in.nhdr", "in.raw", "out.nhdr", "r.json"):
            with self.subTest(trace=trace):
                self.expect_error(self.segment("in.nhdr", "--report", "r.json", "--trace", trace),
                                  r"trace %s would overwrite the input, the mask or the report" % re.escape(trace))

    def test_trace_in_a_missing_folder(self):
        self.expect_error(self.segment("in.nhdr", "--trace", "nofolder/t.csv"),
                          r"cannot write the trace in nofolder: No such file or directory")

    def test_trace_exists_without_force(self):
        self.write("t.csv", "precious\n")
        self.expect_error(self.segment("in.nhdr", "--trace", "t.csv"), r"t\.csv exists \(use --force to replace it\)")

    @unittest.skipUnless(e.WITH_PARAVIEW, "built without ParaView")
    def test_render_output_not_png(self):
        self.expect_error(["render", "in.nhdr", "--out", "r.jpg", "--size", "64x64"], r"output r\.jpg is not a \.png file")

    @unittest.skipIf(e.WITH_PARAVIEW, "built with ParaView")
    def test_render_without_paraview(self):
        self.expect_error(["render", "in.nhdr", "--out", "r.png"],
                          r"render: this volseg was built without ParaView \(VOLSEG_WITH_PARAVIEW=OFF\)")

    def test_pyramid_dir_is_a_file(self):
        self.expect_error(["pyramid", "in.nhdr", "--pyramid-dir", "in.raw"], r"in\.raw exists and is not a directory")

    def test_side_outputs_that_are_folders_are_refused_before_the_job(self):
        # With --force too: refused before the mask is made, not after.
        os.mkdir(self.path("d"))
        for flag in ("--report", "--trace"):
            with self.subTest(flag=flag):
                self.expect_error(self.segment("in.nhdr", flag, "d", "--force"),
                                  r"%s d is a directory" % flag.lstrip("-"))

    def test_pyramid_dir_of_segment_is_a_file(self):
        self.expect_error(self.segment("in.nhdr", "--pyramid", "--pyramid-dir", "in.raw"),
                          r"--pyramid-dir in\.raw exists and is not a directory")

    def test_generate_trace_over_the_volume_or_an_existing_file(self):
        for trace in ("g.nhdr", "g.raw"):
            with self.subTest(trace=trace):
                self.expect_error(["generate", "g.nhdr", "--dims", "8", "--trace", trace],
                                  r"trace %s would overwrite the volume's g\.(nhdr|raw)" % re.escape(trace))
        self.write("keep.txt", "precious\n")
        self.expect_error(["generate", "g.nhdr", "--dims", "8", "--trace", "keep.txt"],
                          r"keep\.txt exists \(use --force to replace it\)")

    def test_generate_dims_whose_bytes_overflow(self):
        self.expect_error(["generate", "g.nhdr", "--dims", "2147483648,2147483648,2147483648"],
                          r"--dims 2147483648,2147483648,2147483648: a volume of .* f32 voxels is more than 2\^63 bytes")

    def test_trace_report_plots_onto_a_file(self):
        self.write("t.csv", TRACE)
        self.expect_error(["trace-report", "t.csv", "--plots", "in.nhdr"],
                          r"create plot folder in\.nhdr: Not a directory", quiet=False)


class FaultSpecification(Base):
    """VOLSEG_FAULTS (docs/reliability.md) that cannot be parsed: one line at
    the first I/O call, before any output exists. test_faults.py tries an
    unknown fault kind."""

    def expect_spec_error(self, spec, pattern):
        self.expect_error(self.segment("in.nhdr"), r"VOLSEG_FAULTS: " + pattern, env={"VOLSEG_FAULTS": spec})

    def test_unknown_call(self):
        self.expect_spec_error("seek:eio", r"unknown call 'seek' in 'seek:eio' \(open, read, write, close, fsync, "
                                           r"rename\)")

    def test_rule_without_a_kind(self):
        self.expect_spec_error("write", r"'write' is not CALL:KIND\[@N\]\[,rank=R\]\[,ms=M\]")

    def test_count_not_a_number(self):
        for spec, word in (("write:eio@x", "x"), ("write:eio,rank=one", "one"), ("write:slow,ms=-5", "-5")):
            with self.subTest(spec=spec):
                self.expect_spec_error(spec, r"'%s' in '%s' is not a count" % (re.escape(word), re.escape(spec)))

    def test_call_zero(self):
        self.expect_spec_error("write:eio@0", r"'@0' in 'write:eio@0': calls count from 1")

    def test_unknown_key(self):
        self.expect_spec_error("write:eio,colour=red", r"unknown key 'colour' in 'write:eio,colour=red' \(rank, ms\)")

    def test_short_open(self):
        self.expect_spec_error("open:short", r"'open:short': only reads and writes can be short")


if __name__ == "__main__":
    e.main(verbosity=2)
