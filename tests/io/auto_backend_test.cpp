// SPDX-License-Identifier: MIT
// `--backend auto`: the residency sample, and the one rule on a warm and a
// cold raw input for each access pattern and on NetCDF inputs, the same on
// every rank.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <mpi.h>
#include <unistd.h>

#include <fstream>
#include <string>
#include <vector>

#include "support/temp_dir.hpp"
#include "volseg/io/auto_backend.hpp"
#include "volseg/io/comm.hpp"
#include "volseg/io/error.hpp"

using namespace volseg;
using namespace volseg::io;

namespace {

int rank() {
  int r = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &r);
  return r;
}

// A raw f32 volume of nz planes of 256 x 256 (256 KiB a plane), in the page cache.
std::string write_raw(const volseg::testing::SharedTempDir& dir, int nz) {
  const std::string header = dir / "v.nhdr";
  if (rank() == 0) {
    std::ofstream h(header);
    h << "NRRD0004\ntype: float\ndimension: 3\nsizes: 256 256 " << nz
      << "\nendian: little\nencoding: raw\ndata file: v.raw\n";
    std::vector<float> plane(256 * 256, 0.5f);
    std::ofstream d(dir / "v.raw", std::ios::binary);
    for (int z = 0; z < nz; ++z) d.write(reinterpret_cast<const char*>(plane.data()), plane.size() * sizeof(float));
  }
  MPI_Barrier(MPI_COMM_WORLD);
  return header;
}

// Evicts a file's pages; false where the file system keeps them (tmpfs).
bool evict(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY);
  if (fd < 0) return false;
  ::fdatasync(fd);
  ::posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
  ::close(fd);
  return sample_residency(path).fraction == 0.0;
}

}  // namespace

TEST(AutoBackend, ResidencyFollowsThePageCache) {
  volseg::testing::SharedTempDir dir(MPI_COMM_WORLD);
  write_raw(dir, 64);  // 16 MiB: 4096 pages, sampled in windows
  if (rank() != 0) return;
  const std::string data = dir / "v.raw";
  std::ifstream(data, std::ios::binary).ignore(1 << 30);  // read it all in
  const Residency warm = sample_residency(data);
  EXPECT_EQ(warm.fraction, 1.0);
  EXPECT_GT(warm.pages_sampled, 0u);
  EXPECT_LE(warm.pages_sampled, 256u * 16u);
  if (!evict(data)) GTEST_SKIP() << "this file system keeps evicted pages (tmpfs)";
  EXPECT_EQ(sample_residency(data).fraction, 0.0);
  // All of it read back, then its second half evicted: about half of the sample.
  std::ifstream(data, std::ios::binary).ignore(1 << 30);
  const int fd = ::open(data.c_str(), O_RDONLY);
  ASSERT_GE(fd, 0);
  ::posix_fadvise(fd, 8 << 20, 0, POSIX_FADV_DONTNEED);
  ::close(fd);
  const double half = sample_residency(data).fraction;
  EXPECT_GT(half, 0.3);
  EXPECT_LT(half, 0.8);
  EXPECT_THROW(sample_residency(dir / "missing.raw"), Error);
}

TEST(AutoBackend, WarmMapsColdReadsDirect) {
  volseg::testing::SharedTempDir dir(MPI_COMM_WORLD);
  const std::string header = write_raw(dir, 16);
  const Comm comm(MPI_COMM_WORLD);
  if (rank() == 0) std::ifstream(dir / "v.raw", std::ios::binary).ignore(1 << 30);
  MPI_Barrier(MPI_COMM_WORLD);
  const AutoChoice warm = choose_backend(comm, FileFormat::raw, header);
  EXPECT_EQ(warm.backend, "mmap");  // all cached; on every rank: rank 0 decides
  EXPECT_EQ(warm.resident, 1.0);
  EXPECT_NE(warm.reason.find("warm (100%"), std::string::npos) << warm.reason;

  int evicted = rank() == 0 ? evict(dir / "v.raw") : 0;
  MPI_Bcast(&evicted, 1, MPI_INT, 0, MPI_COMM_WORLD);
  if (!evicted) GTEST_SKIP() << "this file system keeps evicted pages (tmpfs)";
  const AutoChoice cold = choose_backend(comm, FileFormat::raw, header);
  EXPECT_EQ(cold.backend, "ranged-uring");
  EXPECT_EQ(cold.resident, 0.0);
  EXPECT_NE(cold.reason.find("cold (0%"), std::string::npos) << cold.reason;
  // An eighth cached is still cold (the rule's line is a quarter).
  if (rank() == 0) {
    const int fd = ::open((dir / "v.raw").c_str(), O_RDONLY);
    ::posix_fadvise(fd, 0, 0, POSIX_FADV_RANDOM);  // no readahead past what is read
    std::vector<char> part(512 << 10);             // 0.5 of 4 MiB: under a quarter
    ASSERT_EQ(::pread(fd, part.data(), part.size(), 0), static_cast<ssize_t>(part.size()));
    ::close(fd);
  }
  MPI_Barrier(MPI_COMM_WORLD);
  const AutoChoice partly = choose_backend(comm, FileFormat::raw, header);
  EXPECT_LT(partly.resident, 0.25);
  EXPECT_EQ(partly.backend, "ranged-uring");
  // Half cached: warm, and the rest read ahead.
  if (rank() == 0) {
    const int fd = ::open((dir / "v.raw").c_str(), O_RDONLY);
    ::posix_fadvise(fd, 0, 0, POSIX_FADV_RANDOM);  // only what is read
    std::vector<char> half(2 << 20);
    ASSERT_EQ(::pread(fd, half.data(), half.size(), 0), static_cast<ssize_t>(half.size()));
    ::close(fd);
  }
  MPI_Barrier(MPI_COMM_WORLD);
  const AutoChoice half = choose_backend(comm, FileFormat::raw, header);
  EXPECT_GE(half.resident, 0.25);
  EXPECT_LT(half.resident, 1.0);
  EXPECT_EQ(half.backend, "mmap-advise");

  EXPECT_EQ(choose_backend(comm, FileFormat::cdf5, header).backend, "pnetcdf");
  // An input it cannot sample is left to the reader to refuse, in its words.
  const AutoChoice missing = choose_backend(comm, FileFormat::raw, dir / "missing.nhdr");
  EXPECT_EQ(missing.backend, "mmap-advise");
  EXPECT_NE(missing.reason.find("could not be sampled"), std::string::npos) << missing.reason;
  EXPECT_THROW(sample_residency(dir.path().string()), Error);  // a directory
}

// The one rule's second parameter: a reader that copies each piece once into
// its own buffer (render loading, the GUI's planes) gets pread for a raw
// volume whatever the page cache holds, and nothing is sampled.
TEST(AutoBackend, CopiedPiecesOfRawAreReadWithPread) {
  volseg::testing::SharedTempDir dir(MPI_COMM_WORLD);
  const std::string header = write_raw(dir, 16);
  const Comm comm(MPI_COMM_WORLD);
  if (rank() == 0) std::ifstream(dir / "v.raw", std::ios::binary).ignore(1 << 30);
  MPI_Barrier(MPI_COMM_WORLD);
  ASSERT_EQ(choose_backend(comm, FileFormat::raw, header, Access::stream).backend, "mmap");  // warm, streamed
  const AutoChoice copied = choose_backend(comm, FileFormat::raw, header, Access::copy);
  EXPECT_EQ(copied.backend, "posix");
  EXPECT_EQ(copied.resident, -1);  // not sampled
  EXPECT_NE(copied.reason.find("posix"), std::string::npos) << copied.reason;
  // Even a missing input: the reader's open reports it.
  EXPECT_EQ(choose_backend(comm, FileFormat::raw, dir / "missing.nhdr", Access::copy).backend, "posix");
}

// NetCDF and HDF5 inputs have one reader each, however they are read: the
// file is not looked at (these paths do not exist).
TEST(AutoBackend, NetcdfGetsItsFormatsReaderForEveryAccess) {
  const Comm comm(MPI_COMM_WORLD);
  for (const Access access : {Access::stream, Access::copy}) {
    for (const FileFormat format : {FileFormat::cdf1, FileFormat::cdf2, FileFormat::cdf5}) {
      const AutoChoice choice = choose_backend(comm, format, "/nonexistent/v.nc", access);
      EXPECT_EQ(choice.backend, "pnetcdf");
      EXPECT_EQ(choice.resident, -1);
      EXPECT_NE(choice.reason.find(format_name(format)), std::string::npos) << choice.reason;
    }
    EXPECT_EQ(choose_backend(comm, FileFormat::netcdf4, "/nonexistent/v.nc", access).backend, "netcdf4");
  }
}

// resolve_backend: a named backend as it is, with no reason and no look at
// the file; "auto" detects the format and applies the rule, the same on
// every rank.
TEST(AutoBackend, ResolveKeepsANamedBackendAndDecidesAuto) {
  volseg::testing::SharedTempDir dir(MPI_COMM_WORLD);
  const std::string header = write_raw(dir, 16);
  const Comm comm(MPI_COMM_WORLD);
  const AutoChoice named = resolve_backend(comm, "mpiio", dir / "missing.nhdr", Access::stream);
  EXPECT_EQ(named.backend, "mpiio");
  EXPECT_TRUE(named.reason.empty());
  EXPECT_EQ(named.resident, -1);

  if (rank() == 0) std::ifstream(dir / "v.raw", std::ios::binary).ignore(1 << 30);
  MPI_Barrier(MPI_COMM_WORLD);
  const AutoChoice streamed = resolve_backend(comm, "auto", header, Access::stream);
  EXPECT_EQ(streamed.backend, "mmap");
  EXPECT_EQ(streamed.resident, 1.0);
  EXPECT_FALSE(streamed.reason.empty());
  EXPECT_EQ(resolve_backend(comm, "auto", header, Access::copy).backend, "posix");
  // Every rank has rank 0's choice, name and reason.
  const std::string mine = streamed.backend + "|" + streamed.reason;
  const std::string first = comm.broadcast(mine);
  EXPECT_EQ(mine, first);
  // "auto" on a file that is no volume: the format's own error, on every rank.
  if (rank() == 0) std::ofstream(dir / "text.nhdr") << "not a header\n";
  MPI_Barrier(MPI_COMM_WORLD);
  EXPECT_THROW(resolve_backend(comm, "auto", dir / "text.nhdr", Access::stream), Error);
}
