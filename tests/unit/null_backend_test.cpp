// SPDX-License-Identifier: MIT
// The null backend: a raw volume's header and no data; every voxel reads as
// zero, through the same checked calls as every backend; it never writes.
#include <gtest/gtest.h>
#include <mpi.h>

#include <fstream>
#include <vector>

#include "support/temp_dir.hpp"
#include "volseg/io/comm.hpp"
#include "volseg/io/error.hpp"
#include "volseg/io/nrrd.hpp"
#include "volseg/io/registry.hpp"

using namespace volseg;

TEST(NullBackend, ReadsZerosOfTheHeadersShapeAndNeverWrites) {
  volseg::testing::SharedTempDir dir(MPI_COMM_SELF);
  io::VolumeInfo info;
  info.dims = {3, 4, 5};
  info.dtype = io::DType::i16;
  const std::string header = dir / "v.nhdr";  // its data file need not exist
  std::ofstream(header) << io::format_nrrd(info, "v.raw");
  Comm self(MPI_COMM_SELF);
  auto reader = io::open_reader("null", {header, {}}, self, io::Hints{});
  EXPECT_EQ(reader->info().dims, info.dims);
  EXPECT_EQ(reader->info().dtype, io::DType::i16);
  std::vector<std::int16_t> values(2 * 3 * 4, 7);
  reader->read(io::Extent{{1, 1, 1}, {2, 3, 4}}, values.data());
  EXPECT_EQ(values, std::vector<std::int16_t>(values.size(), 0));
  EXPECT_THROW(reader->read(io::Extent{{2, 0, 0}, {2, 1, 1}}, values.data()), Error);  // outside: the base refuses
  reader->close();
  EXPECT_THROW(io::create_writer("null", {dir / "m.nhdr", info, true}, self, io::Hints{}), Error);
}
