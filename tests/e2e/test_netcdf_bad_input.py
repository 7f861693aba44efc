# SPDX-License-Identifier: MIT
"""NetCDF bad input: one clear error line, a non-zero exit, nothing left behind."""
import os
import resource
import struct
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from netcdf_util import *  # noqa: E402,F401,F403  (helpers, constants and the Base test case)
from e2e_util import main  # noqa: E402


class BadInput(Base):
    """Each on 1 rank (an MPI singleton) and on 2 ranks (mpirun -np 2)."""
    prefix = "volseg-e2e-netcdf-bad-"

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        if netCDF4 is None:
            return
        source = os.path.join(cls.dir, "source")
        os.mkdir(source)
        helper = unittest.TestCase()
        for fmt in ("cdf2", "cdf5"):
            e.check_ok(helper, e.run(["generate", os.path.join(source, "%s.nc" % fmt), "--format", fmt, "--field",
                                      "smooth", "--dims", ",".join(map(str, DIMS)), "--quiet"], ranks=2))
        cls.source = source

    def setUp(self):
        super().setUp()
        self.work = tempfile.mkdtemp(dir=self.dir)

    def path(self, name):
        return os.path.join(self.work, name)

    def source_bytes(self, fmt):
        with open(os.path.join(self.source, "%s.nc" % fmt), "rb") as f:
            return f.read()

    def write(self, name, data):
        with open(self.path(name), "wb") as f:
            f.write(data)
        return name

    def assert_clean_failure(self, proc, pattern=None):
        e.assert_clean_failure(self, proc, pattern)

    def expect_error(self, args, pattern=None, ranks=(1, 2)):
        """Runs args in the work folder on each rank count: a clean failure,
        and no file added or changed there."""
        for n in ranks:
            with self.subTest(ranks=n, args=" ".join(str(a) for a in args)):
                before = e.digest(self.work)
                proc = e.run(list(args) + ["--quiet"], ranks=n, mpi=n > 1, cwd=self.work)
                self.assert_clean_failure(proc, pattern)
                self.assertEqual(e.digest(self.work), before, "files added, removed or changed")

    def segment_args(self, name, *extra, out="out.nc"):
        return ["segment", name, "--lo", "0.25", "--hi", "0.5", "--out", out, *extra]

    def test_not_netcdf(self):
        self.write("random.nc", np.random.default_rng(1).bytes(4096))
        self.write("empty.nc", b"")
        self.write("text.nc", b"netcdf x {\ndimensions: x = 1 ;\n}\n")
        for name in ("random.nc", "empty.nc", "text.nc"):
            self.assertNotEqual(tool(self, ["ncdump", "-h", self.path(name)], ok=False).returncode, 0)
            self.expect_error(self.segment_args(name), re.escape(name))

    def test_truncated_to_ten_bytes(self):
        for fmt in ("cdf2", "cdf5"):
            name = self.write("ten-%s.nc" % fmt, self.source_bytes(fmt)[:10])
            self.expect_error(self.segment_args(name), re.escape(name))

    # A CDF file cut short of its variable's data (here to half): refused as
    # truncated, as the NRRD reader refuses a data file shorter than its
    # header says (it used to be segmented, the missing half read as zeros).
    def test_truncated_to_half(self):
        for fmt in ("cdf2", "cdf5"):
            data = self.source_bytes(fmt)
            name = self.write("half-%s.nc" % fmt, data[:len(data) // 2])
            self.expect_error(self.segment_args(name), re.escape(name))

    def test_corrupted_header(self):
        """0xFF over the dimension count, and over the first name's length
        (4-byte fields in CDF-2, 8-byte in CDF-5): ncdump fails on each (and
        crashes on one; ncvalidator takes seconds on another)."""
        for fmt, offset, size, what in (("cdf2", 12, 4, "ndims"), ("cdf2", 16, 4, "name length"),
                                        ("cdf5", 16, 8, "ndims"), ("cdf5", 24, 8, "name length")):
            data = bytearray(self.source_bytes(fmt))
            data[offset:offset + size] = b"\xff" * size
            name = self.write("bad-%s-%s.nc" % (fmt, what.replace(" ", "")), bytes(data))
            with self.subTest(format=fmt, field=what):
                self.assertNotEqual(tool(self, ["ncdump", "-h", self.path(name)], ok=False).returncode, 0)
                self.expect_error(self.segment_args(name), re.escape(name))

    def test_attribute_longer_than_the_file(self):
        """The attribute 'field' claims 2^31 - 1 doubles (16 GiB) in a file
        of a few hundred bytes. PnetCDF reads a header past the end of its
        file as zeros, and allocated and filled what an attribute claims
        before refusing the file (6.2 GiB and 21 s for a 790-byte file found
        by fuzz_netcdf; this test took 3 min 47 s and failed). Now refused
        before PnetCDF reads it, by segment and by info (which lists the
        variables first)."""
        for fmt, count in (("cdf2", ">I"), ("cdf5", ">Q")):
            data = bytearray(self.source_bytes(fmt))
            at = data.index(b"field\0\0\0") + 8  # after the name: nc_type, then nelems
            data[at:at + 4] = struct.pack(">I", 6)  # NC_DOUBLE
            data[at + 4:at + 4 + struct.calcsize(count)] = struct.pack(count, 0x7FFFFFFF)
            name = self.write("long-attribute-%s.nc" % fmt, bytes(data))
            pattern = re.escape(name) + ": damaged NetCDF header: attribute values at byte [0-9]+ run past the end"
            self.expect_error(self.segment_args(name), pattern)
            for n in (1, 2):
                self.assert_clean_failure(e.run(["info", name], ranks=n, mpi=n > 1, cwd=self.work), pattern)
        peak_kib = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
        self.assertLess(peak_kib, 1 << 20, "a run of volseg took %d KiB" % peak_kib)

    def test_variable_count_past_the_file(self):
        """The variable list claims 2^31 - 1 variables, and the first
        variable's first attribute has a type no NetCDF file has, where the
        header walk stops. PnetCDF allocated for every variable it was told
        of: 6 s to refuse a 428-byte file found by fuzz_netcdf (17 s under
        AddressSanitizer, past the fuzzer's limit). The count is now checked
        against the bytes left before any variable is read."""
        for fmt, count in (("cdf2", ">I"), ("cdf5", ">Q")):
            n = struct.calcsize(count)
            data = bytearray(self.source_bytes(fmt))
            at = data.index(struct.pack(">I", 0x0B) + struct.pack(count, 1) + struct.pack(count, 6) + b"smooth")
            data[at + 4:at + 4 + n] = struct.pack(count, 0x7FFFFFFF)
            # name, ndims, 3 dimension ids, the attribute list's tag and count
            first_attribute = at + 4 + n + n + 8 + n + 3 * n + 4 + n
            (name_length,) = struct.unpack(count, data[first_attribute:first_attribute + n])
            type_at = first_attribute + n + (name_length + 3) // 4 * 4
            data[type_at:type_at + 4] = b"nnns"
            name = self.write("many-variables-%s.nc" % fmt, bytes(data))
            pattern = re.escape(name) + ": damaged NetCDF header: variables at byte [0-9]+ run past the end"
            self.expect_error(self.segment_args(name), pattern)
            self.assert_clean_failure(e.run(["info", name], ranks=1, mpi=False, cwd=self.work), pattern)

    def test_a_tagged_empty_list_then_a_damaged_attribute(self):
        """netCDF-C and PnetCDF take an empty list whatever its tag: ncdump
        reads the fuzz seed record_count_overflow.nc, whose variable 'time'
        has one. The header walk used to stop at such a list and leave the
        rest to PnetCDF; fuzz_netcdf then found an 888-byte file whose next
        attribute claims more values than the file holds, and PnetCDF took
        24 s and 12.8 GB before failing. The walk now reads past empty lists
        as netCDF-C does and refuses the attribute."""
        corpus = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "fuzz", "corpus",
                              "fuzz_netcdf")
        e.check_ok(self, e.run(["info", os.path.join(corpus, "record_count_overflow.nc")], ranks=1, mpi=False,
                               cwd=self.work))
        with open(os.path.join(corpus, "tagged_empty_list_then_huge_attribute.nc"), "rb") as f:
            name = self.write("tagged-empty-list.nc", f.read())
        pattern = re.escape(name) + ": damaged NetCDF header: attribute values at byte [0-9]+ run past the end"
        self.expect_error(self.segment_args(name), pattern)
        self.assert_clean_failure(e.run(["info", name], ranks=1, mpi=False, cwd=self.work), pattern)
        peak_kib = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
        self.assertLess(peak_kib, 1 << 20, "a run of volseg took %d KiB" % peak_kib)

    def flat_cdl(self):
        return """netcdf flat {
dimensions: y = 3 ; x = 4 ;
variables:
  float plane(y, x) ;
data:
  plane = 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11 ;
}
"""

    def test_missing_and_2d_variables(self):
        shutil.copy(os.path.join(self.source, "cdf5.nc"), self.work)
        self.expect_error(self.segment_args("cdf5.nc", "--var", "nope"), "no variable 'nope'.*smooth")
        self.expect_error(self.segment_args("cdf5.nc", "--time", "1"), "3D.*--time")
        with open(self.path("flat.cdl"), "w") as f:
            f.write(self.flat_cdl())
        for kind in ("cdf2", "netcdf4"):
            tool(self, ["ncgen", "-b", *NCGEN_KIND[kind], "-o", self.path("flat-%s.nc" % kind),
                        self.path("flat.cdl")])
            self.expect_error(self.segment_args("flat-%s.nc" % kind), "no variable with 3 or more dimensions")
            self.expect_error(self.segment_args("flat-%s.nc" % kind, "--var", "plane"), "plane is 2D")

    def test_several_variables_without_var(self):
        text = """netcdf two {
dimensions: z = 2 ; y = 3 ; x = 4 ;
variables:
  float a(z, y, x) ;
  short b(z, y, x) ;
}
"""
        with open(self.path("two.cdl"), "w") as f:
            f.write(text)
        tool(self, ["ncgen", "-b", "-5", "-o", self.path("two.nc"), self.path("two.cdl")])
        self.expect_error(self.segment_args("two.nc"), "several variables.*--var.*a, b")
        # info lists the candidates (and succeeds), then details with --var
        for ranks in (1, 2):
            listing = e.run(["info", self.path("two.nc")], ranks=ranks)
            self.assertEqual(listing.returncode, 0, listing.stderr)
            self.assertRegex(listing.stdout, r"a\(z=2, y=3, x=4\) float\n\s+b\(z=2, y=3, x=4\) short")
            self.assertIn("--var", listing.stdout)
        details = e.run(["info", self.path("two.nc"), "--var", "b"], ranks=1)
        self.assertEqual(details.returncode, 0, details.stderr)
        self.assertRegex(details.stdout, r"variable:\s+b\n.*dims \(z,y,x\):\s+2 3 4")

    def test_record_variable_steps(self):
        text = """netcdf record {
dimensions: time = UNLIMITED ; z = 2 ; y = 3 ; x = 4 ;
variables:
  float temp(time, z, y, x) ;
data:
  temp = %s ;
}
""" % ", ".join(str(v) for v in range(72))
        with open(self.path("record.cdl"), "w") as f:
            f.write(text)
        for kind in ("cdf2", "netcdf4"):
            name = "record-%s.nc" % kind
            tool(self, ["ncgen", "-b", *NCGEN_KIND[kind], "-o", self.path(name), self.path("record.cdl")])
            self.expect_error(self.segment_args(name), "3 steps.*--time 0..2")
            self.expect_error(self.segment_args(name, "--time", "3"), "--time 3 is past the last step 2")
            self.expect_error(self.segment_args(name, "--time", "-1"), "time")

    def test_record_count_past_any_file(self):
        """A CDF-5 header whose record count (2^59 + 2 records of 112 bytes)
        describes more bytes than a file holds. The end of the last record
        overflowed (found by fuzz_netcdf): the file was accepted, and reading
        a late record failed inside MPI-IO."""
        text = """netcdf record {
dimensions: time = UNLIMITED ; z = 2 ; y = 3 ; x = 4 ;
variables:
  ushort temp(time, z, y, x) ;
  double pressure(z, y, x) ;
data:
  temp = %s ;
}
""" % ", ".join(str(v) for v in range(48))
        with open(self.path("records.cdl"), "w") as f:
            f.write(text)
        tool(self, ["ncgen", "-b", *NCGEN_KIND["cdf5"], "-o", self.path("records.nc"), self.path("records.cdl")])
        with open(self.path("records.nc"), "rb") as f:
            data = bytearray(f.read())
        data[4:12] = struct.pack(">Q", 2 ** 59 + 2)  # numrecs, after the magic number
        name = self.write("many-records.nc", bytes(data))
        pattern = re.escape(name) + ": variable temp has more bytes than a file holds"
        self.expect_error(self.segment_args(name, "--var", "temp", "--time", "0"), pattern)

    def test_hdf5_netcdf_cannot_read(self):
        if h5py is None:
            self.skipTest("python3-h5py is not installed")
        with h5py.File(self.path("whole.h5"), "w") as f:
            f.create_dataset("v", data=np.arange(np.prod(DIMS), dtype="f4").reshape(DIMS))
        with open(self.path("whole.h5"), "rb") as f:
            data = f.read()
        os.remove(self.path("whole.h5"))
        for name, content in (("half.h5", data[:len(data) // 2]), ("head.nc", data[:600])):
            self.write(name, content)
            self.assertNotEqual(tool(self, ["ncdump", "-h", self.path(name)], ok=False).returncode, 0)
            self.expect_error(self.segment_args(name), re.escape(name) + ".*HDF")

    def test_filter_netcdf_lacks(self):
        if h5py is None:
            self.skipTest("python3-h5py is not installed")
        with h5py.File(self.path("lzf.h5"), "w") as f:
            f.create_dataset("v", data=np.linspace(0, 1, np.prod(DIMS), dtype="f4").reshape(DIMS),
                             compression="lzf", chunks=(5, 7, 11))
        # netCDF-C opens it (the header), but cannot decode the data.
        self.assertEqual(tool(self, ["ncdump", "-h", self.path("lzf.h5")], ok=False).returncode, 0)
        self.assertNotEqual(tool(self, ["ncdump", self.path("lzf.h5")], ok=False).returncode, 0)
        self.expect_error(self.segment_args("lzf.h5"), r"lzf\.h5.*variable v.*filter 32000")

    def chunked_netcdf4(self, name, dims, chunks):
        """A NetCDF-4 variable v (f4) of dims, chunked so, with no chunk
        written: a few KiB however large the chunks."""
        with netCDF4.Dataset(self.path(name), "w") as d:
            for axis, length in zip("zyx", dims):
                d.createDimension(axis, length)
            d.createVariable("v", "f4", ("z", "y", "x"), chunksizes=chunks)
        return self.path(name)

    def test_netcdf4_chunk_over_the_memory_budget(self):
        if netCDF4 is None:
            self.skipTest("python3-netcdf4 is not installed")
        source = self.chunked_netcdf4("big-chunk.nc", (512, 1024, 1024), (512, 1024, 1024))
        pattern = (r"big-chunk\.nc: variable v: chunk 512 x 1024 x 1024 of f32 is 2147483648 bytes \(2048 MiB\), "
                   r"more than the memory budget for one piece \(1024 MiB, the default; --memory SIZE allows more\)")
        e.check_lying_header(self, ["info", source], pattern)
        e.check_lying_header(self, ["segment", source, "--lo", "0", "--hi", "1", "--out", self.path("never.nhdr")],
                             pattern)

    def test_netcdf4_memory_option_allows_a_larger_chunk(self):
        if netCDF4 is None:
            self.skipTest("python3-netcdf4 is not installed")
        source = self.chunked_netcdf4("16MiB-chunk.nc", (16, 512, 512), (16, 512, 512))
        refused = e.run(["info", source, "--memory", "8M"], ranks=1, mpi=False)
        self.assert_clean_failure(refused, r"16MiB-chunk\.nc: variable v: chunk 16 x 512 x 512 of f32 is 16777216 "
                                           r"bytes \(16 MiB\), more than the memory budget for one piece \(8 MiB, --memory;")
        e.check_ok(self, e.run(["info", source], ranks=1, mpi=False))
        env_refused = e.run(["info", source], ranks=1, mpi=False, prefix=("env", "VOLSEG_MEMORY=8MiB"))
        self.assert_clean_failure(env_refused, r"16MiB-chunk\.nc: variable v: chunk .*VOLSEG_MEMORY")
        e.check_ok(self, e.run(["segment", source, "--lo", "0", "--hi", "1", "--out", self.path("ok.nhdr"),
                                "--quiet"], ranks=2))

    def test_cdf2_refuses_unsigned_and_64_bit_types(self):
        for dtype in ("u16", "u32", "i64", "u64"):
            self.expect_error(["generate", "g.nc", "--format", "cdf2", "--dtype", dtype, "--dims", "5,6,7"],
                              "CDF-2 has no %s type" % dtype)


if __name__ == "__main__":
    main()
