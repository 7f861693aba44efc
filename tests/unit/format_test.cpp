// SPDX-License-Identifier: MIT
// io::output_format: the one rule from an output's name (or --format) to the
// format it is written in, for every command that writes a volume.
#include <gtest/gtest.h>

#include <string>

#include "volseg/io/error.hpp"
#include "volseg/io/format.hpp"

using namespace volseg;
using io::FileFormat;

TEST(OutputFormat, FromTheExtension) {
  EXPECT_EQ(io::output_format("dir/mask.nhdr"), FileFormat::raw);
  EXPECT_EQ(io::output_format("mask_%06d.nc"), FileFormat::cdf5);  // classic, with every type
  EXPECT_EQ(io::output_format("mask.nc4"), FileFormat::netcdf4);
  EXPECT_EQ(io::output_format("mask.h5"), FileFormat::netcdf4);
  // The extension names the format whatever the input's: a raw input to .nc,
  // a NetCDF input to .nhdr or to .nc4.
  EXPECT_EQ(io::output_format("m.nc", "", FileFormat::raw), FileFormat::cdf5);
  EXPECT_EQ(io::output_format("m.nhdr", "", FileFormat::netcdf4), FileFormat::raw);
  EXPECT_EQ(io::output_format("m.nc4", "", FileFormat::cdf2), FileFormat::netcdf4);
  EXPECT_EQ(io::output_format("m.h5", "", FileFormat::cdf5), FileFormat::netcdf4);
}

TEST(OutputFormat, DotNcKeepsTheNetcdfInputsKind) {
  EXPECT_EQ(io::output_format("m.nc", "", FileFormat::cdf1), FileFormat::cdf2);  // PnetCDF writes no CDF-1
  EXPECT_EQ(io::output_format("m.nc", "", FileFormat::cdf2), FileFormat::cdf2);
  EXPECT_EQ(io::output_format("m.nc", "", FileFormat::cdf2, /*wide_types=*/true), FileFormat::cdf5);
  EXPECT_EQ(io::output_format("m.nc", "", FileFormat::cdf1, /*wide_types=*/true), FileFormat::cdf5);
  EXPECT_EQ(io::output_format("m.nc", "", FileFormat::cdf5), FileFormat::cdf5);
  EXPECT_EQ(io::output_format("m.nc", "", FileFormat::netcdf4), FileFormat::netcdf4);
}

TEST(OutputFormat, NamedFormatWins) {
  EXPECT_EQ(io::output_format("m.nc", "cdf2"), FileFormat::cdf2);
  EXPECT_EQ(io::output_format("m.nc", "netcdf4", FileFormat::cdf5), FileFormat::netcdf4);
  EXPECT_EQ(io::output_format("m.nhdr", "cdf5"), FileFormat::cdf5);
  EXPECT_EQ(io::output_format("m.anything", "raw"), FileFormat::raw);
  EXPECT_THROW(io::output_format("m.nc", "hdf4"), Error);
}

TEST(OutputFormat, AnUnknownExtensionIsRefusedWithTheKnownOnes) {
  for (const std::string path : {"out.raw", "out", "out.NC", "out.nrrd", "dir.nc/out"}) {
    try {
      (void)io::output_format(path, "", FileFormat::raw, false, "--dump");
      ADD_FAILURE() << path << " was accepted";
    } catch (const Error& e) {
      const std::string message = e.what();
      EXPECT_EQ(message.rfind("--dump " + path + ": cannot tell the format", 0), 0u) << message;
      for (const char* known : {".nhdr", ".nc:", ".nc4", ".h5", "--format raw|cdf2|cdf5|netcdf4"})
        EXPECT_NE(message.find(known), std::string::npos) << known << " missing from: " << message;
    }
  }
  // Also with a NetCDF input: no silent fallback to the input's format.
  EXPECT_THROW(io::output_format("out.dat", "", FileFormat::cdf5), Error);
}

// The format table: every name parses back to its format, every extension
// names its format, and the error of an unknown name lists them all.
TEST(FormatTable, EveryNameRoundTrips) {
  for (const io::FormatTraits& row : io::format_table()) {
    EXPECT_EQ(io::format_traits(row.format).names, row.names);
    EXPECT_EQ(io::format_name(row.format), row.names.front());
    for (const std::string& name : row.names) EXPECT_EQ(io::parse_format(name), row.format) << name;
  }
  EXPECT_EQ(io::parse_format("cdf1"), FileFormat::cdf1);
  EXPECT_EQ(io::format_table().size(), 12u);  // every FileFormat, once
}

TEST(FormatTable, EveryExtensionRoundTrips) {
  for (const io::FormatTraits& row : io::format_table())
    for (const io::Extension& extension : row.extensions) {
      const std::string path = "dir/mask" + extension.suffix;
      EXPECT_EQ(io::format_of_extension(path), row.format) << path;
      EXPECT_EQ(io::output_format(path), row.format) << path;
    }
  EXPECT_EQ(io::output_format("m.TIF"), FileFormat::raw);  // TIFF's any case
  EXPECT_EQ(io::format_of_extension("m.NC"), std::nullopt);
  EXPECT_EQ(io::format_of_extension(".zarr"), std::nullopt);  // a hidden file, not a store
  EXPECT_EQ(io::format_of_extension("dir.zarr/m"), std::nullopt);
}

TEST(FormatTable, TheErrorListsEveryName) {
  try {
    (void)io::parse_format("hdf4");
    ADD_FAILURE() << "hdf4 was accepted";
  } catch (const Error& e) {
    const std::string message = e.what();
    for (const io::FormatTraits& row : io::format_table())
      for (const std::string& name : row.names) EXPECT_NE(message.find(name), std::string::npos) << name;
  }
}

TEST(FormatTable, CdfOneIsReadNotWritten) {
  EXPECT_THROW(io::output_format("m.nc", "cdf1"), Error);
  EXPECT_EQ(io::reading_backend(FileFormat::cdf1), "pnetcdf");
}

TEST(FormatTable, Traits) {
  struct Expected {
    FileFormat format;
    bool netcdf, classic, zarr, chunked, resumable, appendable, keeps_markers, keeps_coordinates, written;
  };
  const Expected expected[] = {
      {FileFormat::raw, false, false, false, false, true, false, false, false, true},
      {FileFormat::cdf1, true, true, false, false, true, false, true, true, false},
      {FileFormat::cdf2, true, true, false, false, true, true, true, true, true},
      {FileFormat::cdf5, true, true, false, false, true, true, true, true, true},
      {FileFormat::netcdf4, true, false, false, false, false, true, true, true, true},
      {FileFormat::hdf5, false, false, false, false, false, false, false, false, true},
      {FileFormat::zarr, false, false, true, true, true, true, true, false, true},
      {FileFormat::ome_zarr, false, false, true, true, true, true, true, false, true},
      {FileFormat::nifti_gz, false, false, false, false, false, false, false, false, true},
      {FileFormat::vti_compressed, false, false, false, false, true, false, false, false, true},
      {FileFormat::tiff, false, false, false, false, true, false, false, false, true},
      {FileFormat::precomputed, false, false, false, true, false, false, false, false, true},
  };
  for (const Expected& e : expected) {
    const io::FormatTraits& t = io::format_traits(e.format);
    const std::string name = io::format_name(e.format);
    EXPECT_EQ(t.netcdf, e.netcdf) << name;
    EXPECT_EQ(t.classic, e.classic) << name;
    EXPECT_EQ(t.zarr, e.zarr) << name;
    EXPECT_EQ(t.chunked, e.chunked) << name;
    EXPECT_EQ(t.resumable, e.resumable) << name;
    EXPECT_EQ(t.appendable, e.appendable) << name;
    EXPECT_EQ(t.keeps_markers, e.keeps_markers) << name;
    EXPECT_EQ(t.keeps_coordinates, e.keeps_coordinates) << name;
    EXPECT_EQ(t.written, e.written) << name;
    EXPECT_EQ(t.follows_input_chunks, e.format != FileFormat::nifti_gz) << name;
  }
}

// The backends each format is read and written by, as before the table.
TEST(FormatTable, Backends) {
  EXPECT_EQ(io::reading_backend(FileFormat::raw), "mmap-advise");
  EXPECT_EQ(io::reading_backend(FileFormat::hdf5), "netcdf4");
  EXPECT_EQ(io::reading_backend(FileFormat::ome_zarr), "zarr");
  EXPECT_EQ(io::writing_backend(FileFormat::cdf1, "pnetcdf").hints, std::vector<std::string>{"format=cdf2"});
  EXPECT_EQ(io::writing_backend(FileFormat::cdf5, "twophase").backend, "twophase");
  EXPECT_EQ(io::writing_backend(FileFormat::cdf5, "posix").backend, "pnetcdf");
  EXPECT_EQ(io::writing_backend(FileFormat::ome_zarr, "zarr").hints, std::vector<std::string>{"ome=1"});
  EXPECT_EQ(io::writing_backend(FileFormat::hdf5, "netcdf4").backend, "hdf5");
}

// A multiscale output: levels and, for labels, the objects' properties.
TEST(FormatTable, MultiscaleOutputs) {
  EXPECT_EQ(io::output_format("labels.precomputed"), FileFormat::precomputed);
  EXPECT_EQ(io::output_format("labels", "precomputed"), FileFormat::precomputed);
  EXPECT_EQ(io::output_format("labels.ome.zarr"), FileFormat::ome_zarr);
  EXPECT_TRUE(io::format_traits(FileFormat::precomputed).multiscale);
  EXPECT_TRUE(io::format_traits(FileFormat::ome_zarr).multiscale);
  EXPECT_FALSE(io::format_traits(FileFormat::zarr).multiscale);
  EXPECT_EQ(io::writing_backend(FileFormat::precomputed, "mmap").backend, "precomputed");
}
