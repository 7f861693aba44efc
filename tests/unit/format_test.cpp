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
