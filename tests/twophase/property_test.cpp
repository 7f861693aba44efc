// SPDX-License-Identifier: MIT
// Property tests of the two-phase engine: random access lists, the same on
// every rank (one seed), written and read through twophase::File and through
// the references (pwrite/pread per piece, and MPI-IO's MPI_File_write_at),
// for every partitioner x exchange x data-sieving mode, with random buffer
// sizes (down to 7 bytes, far below a run), lock sizes, aggregator counts
// (one, all, more than ranks) and explicit aggregator lists. Files are
// pre-filled with a pattern so holes left by data sieving are checked, and
// the last pieces reach past the pre-filled end so writes extend the file.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <mpi.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <fstream>
#include <iterator>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "support/temp_dir.hpp"
#include "volseg/io/error.hpp"
#include "volseg/io/hints.hpp"
#include "volseg/io/twophase.hpp"

using namespace volseg;
using namespace volseg::io;

namespace {

const char* kPartitions[] = {"even", "aligned", "static-cyclic", "group-cyclic", "persistent", "auto"};
const char* kExchanges[] = {"alltoallw", "p2p"};
const char* kSieving[] = {"auto", "always", "never"};

struct Piece {
  std::uint64_t offset = 0, length = 0, memory = 0;  // memory: offset in the rank's buffer
};

// One rank's part of a random plan.
struct Plan {
  std::vector<Piece> pieces;
  std::uint64_t memory_size = 0;
};

std::byte pattern(std::uint64_t seed, std::uint64_t i) {
  return static_cast<std::byte>((i * 2654435761u + seed * 97 + (i >> 8)) & 0xff);
}

// Non-overlapping pieces tiling part of [0, span): each goes to a random
// rank or stays a hole; lists are shuffled (the engine must sort) and laid
// out in memory out of order, with gaps.
std::vector<Plan> random_writes(std::mt19937_64& random, int ranks, std::uint64_t span, std::uint64_t longest) {
  std::vector<Plan> plans(static_cast<std::size_t>(ranks));
  const int idle = ranks > 1 ? static_cast<int>(random() % static_cast<unsigned>(ranks)) : -1;  // a rank with nothing
  std::uint64_t at = random() % 64;
  while (at < span) {
    const std::uint64_t length = 1 + random() % longest;
    const int owner = static_cast<int>(random() % static_cast<unsigned>(ranks + 1));  // ranks: a hole
    if (owner < ranks && owner != idle) plans[static_cast<std::size_t>(owner)].pieces.push_back(Piece{at, length, 0});
    at += length;
  }
  for (auto& plan : plans) {
    std::shuffle(plan.pieces.begin(), plan.pieces.end(), random);
    for (auto& piece : plan.pieces) {
      plan.memory_size += random() % 5;  // gaps in memory
      piece.memory = plan.memory_size;
      plan.memory_size += piece.length;
    }
  }
  return plans;
}

// Overlapping reads anywhere in [0, size).
std::vector<Plan> random_reads(std::mt19937_64& random, int ranks, std::uint64_t size, std::uint64_t longest) {
  std::vector<Plan> plans(static_cast<std::size_t>(ranks));
  for (int r = 0; r < ranks; ++r) {
    auto& plan = plans[static_cast<std::size_t>(r)];
    const int count = r == ranks - 1 && ranks > 1 ? 0 : static_cast<int>(random() % 40);
    for (int i = 0; i < count; ++i) {
      const std::uint64_t length = 1 + random() % std::min(longest, size);
      const std::uint64_t offset = random() % (size - length + 1);
      plan.pieces.push_back(Piece{offset, length, plan.memory_size});
      plan.memory_size += length + random() % 3;
    }
  }
  return plans;
}

std::vector<std::byte> slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::vector<char> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::vector<std::byte> result(bytes.size());
  std::memcpy(result.data(), bytes.data(), bytes.size());
  return result;
}

class TwoPhase : public ::testing::Test {
 protected:
  TwoPhase() : comm_(MPI_COMM_WORLD), dir_(MPI_COMM_WORLD) {}
  std::string path(const std::string& name) const { return (dir_.path() / name).string(); }

  // Rank 0 writes `size` pattern bytes to each file; everyone waits.
  void prefill(const std::vector<std::string>& files, std::uint64_t size, std::uint64_t seed) {
    if (comm_.rank() == 0)
      for (const auto& file : files) {
        std::vector<std::byte> bytes(size);
        for (std::uint64_t i = 0; i < size; ++i) bytes[i] = pattern(seed + 7, i);
        std::ofstream out(file, std::ios::binary | std::ios::trunc);
        out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(size));
        ASSERT_TRUE(out.good());
      }
    comm_.barrier();
  }

  twophase::Options options(std::mt19937_64& random, const std::string& partition, const std::string& exchange,
                            const std::string& sieving) {
    const std::uint64_t buffers[] = {7, 64, 1000, 1u << 20};
    const std::uint64_t locks[] = {16, 64, 512};
    const int nodes[] = {1, comm_.size(), comm_.size() + 3};
    const char* profiles[] = {"local", "gpfs", "lustre"};
    Hints hints = Hints::parse({"partition=" + partition, "exchange=" + exchange, "ds=" + sieving,
                                "cb_buffer_size=" + std::to_string(buffers[random() % 4]),
                                "lock_size=" + std::to_string(locks[random() % 3]),
                                "cb_nodes=" + std::to_string(nodes[random() % 3]),
                                "io_servers=" + std::to_string(1 + random() % 3),
                                "fs_profile=" + std::string(profiles[random() % 3]),
                                "ds_threshold=" + std::to_string(random() % 200)});
    auto result = twophase::Options::from_hints(hints);
    hints.reject_unused("twophase");
    return result;
  }

  Comm comm_;
  volseg::testing::SharedTempDir dir_;
};

TEST_F(TwoPhase, WritesEqualPwriteAndMpiioAndReadsEqualPread) {
  const std::uint64_t seed = 20261122;
  std::mt19937_64 random(seed);  // the same sequence on every rank
  int combination = 0;
  for (const char* partition : kPartitions)
    for (const char* exchange : kExchanges)
      for (const char* sieving : kSieving) {
        ++combination;
        const std::string what = std::string(partition) + "/" + exchange + "/ds=" + sieving + " seed " +
                                 std::to_string(seed) + " case " + std::to_string(combination);
        const std::uint64_t span = 2000 + random() % 6000;
        const std::uint64_t prefilled = span - random() % 500;  // the last pieces extend the file
        const auto plans = random_writes(random, comm_.size(), span, 1 + random() % 300);
        const auto& mine = plans[static_cast<std::size_t>(comm_.rank())];
        std::vector<std::byte> memory(mine.memory_size);
        for (std::uint64_t i = 0; i < memory.size(); ++i) memory[i] = pattern(seed + static_cast<std::uint64_t>(comm_.rank()) * 131 + static_cast<std::uint64_t>(combination), i);
        const std::string ours = path("ours"), posix = path("posix"), mpiio = path("mpiio");
        prefill({ours, posix, mpiio}, prefilled, seed + static_cast<std::uint64_t>(combination));

        // References: pwrite per piece, and MPI-IO per piece.
        const int fd = ::open(posix.c_str(), O_WRONLY);
        ASSERT_GE(fd, 0);
        for (const auto& piece : mine.pieces)
          ASSERT_EQ(::pwrite(fd, memory.data() + piece.memory, piece.length, static_cast<off_t>(piece.offset)),
                    static_cast<ssize_t>(piece.length));
        ASSERT_EQ(::close(fd), 0);
        MPI_File file;
        ASSERT_EQ(MPI_File_open(comm_.get(), mpiio.c_str(), MPI_MODE_WRONLY, MPI_INFO_NULL, &file), MPI_SUCCESS);
        for (const auto& piece : mine.pieces)
          ASSERT_EQ(MPI_File_write_at(file, static_cast<MPI_Offset>(piece.offset), memory.data() + piece.memory,
                                      static_cast<int>(piece.length), MPI_BYTE, MPI_STATUS_IGNORE),
                    MPI_SUCCESS);
        ASSERT_EQ(MPI_File_close(&file), MPI_SUCCESS);

        const auto chosen = options(random, partition, exchange, sieving);
        {
          twophase::File twophase(comm_, ours, twophase::Mode::write, chosen);
          const auto asked = static_cast<std::size_t>(chosen.cb_nodes);
          EXPECT_EQ(twophase.aggregators().size(), std::min(asked, static_cast<std::size_t>(comm_.size()))) << what;
          std::vector<twophase::ConstAccess> accesses;
          for (const auto& piece : mine.pieces)
            accesses.push_back({piece.offset, piece.length, memory.data() + piece.memory});
          twophase.write_all(accesses);
          twophase.close();
        }
        comm_.barrier();
        const auto expected = slurp(posix);
        ASSERT_EQ(slurp(mpiio), expected) << "MPI-IO and pwrite disagree: " << what;
        ASSERT_EQ(slurp(ours), expected) << "twophase write differs from pwrite and MPI-IO: " << what << " ("
                                         << mine.pieces.size() << " pieces on this rank)";

        // Overlapping reads of the file just written.
        const auto reads = random_reads(random, comm_.size(), expected.size(), 1 + random() % 400);
        const auto& wanted = reads[static_cast<std::size_t>(comm_.rank())];
        std::vector<std::byte> got(wanted.memory_size, std::byte{0});
        {
          twophase::File twophase(comm_, ours, twophase::Mode::read, options(random, partition, exchange, sieving));
          std::vector<twophase::Access> accesses;
          for (const auto& piece : wanted.pieces) accesses.push_back({piece.offset, piece.length, got.data() + piece.memory});
          twophase.read_all(accesses);
          twophase.close();
        }
        for (const auto& piece : wanted.pieces)
          ASSERT_EQ(0, std::memcmp(got.data() + piece.memory, expected.data() + piece.offset, piece.length))
              << "twophase read of [" << piece.offset << ", +" << piece.length << ") differs: " << what;
      }
}

TEST_F(TwoPhase, ExplicitAggregatorListAndRefusals) {
  const std::string file = path("config");
  prefill({file}, 5000, 3);
  // Aggregators named out of rank order (the last rank first).
  std::string config;
  for (int r = comm_.size() - 1; r >= 0; r -= 2) config += (config.empty() ? "" : ",") + std::to_string(r);
  Hints hints = Hints::parse({"cb_config=" + config, "cb_buffer_size=33", "partition=static-cyclic", "lock_size=16"});
  auto chosen = twophase::Options::from_hints(hints);
  twophase::File twophase(comm_, file, twophase::Mode::read, chosen);
  EXPECT_EQ(twophase.aggregators().front(), comm_.size() - 1);
  std::vector<std::byte> got(1000);
  twophase::Access access{static_cast<std::uint64_t>(comm_.rank()) * 700, 1000, got.data()};
  twophase.read_all({&access, 1});
  const auto expected = slurp(file);
  EXPECT_EQ(0, std::memcmp(got.data(), expected.data() + access.offset, 1000));
  twophase.close();

  // A rank that does not exist: refused on every rank, no hang.
  auto missing = twophase::Options::from_hints(Hints::parse({"cb_config=0," + std::to_string(comm_.size())}));
  EXPECT_THROW(twophase::File(comm_, file, twophase::Mode::read, missing), Error);
  EXPECT_THROW(twophase::Options::from_hints(Hints::parse({"cb_config=1,1"})), Error);
  EXPECT_THROW(twophase::Options::from_hints(Hints::parse({"partition=diagonal"})), Error);
  EXPECT_THROW(twophase::Options::from_hints(Hints::parse({"exchange=carrier-pigeon"})), Error);
  EXPECT_THROW(twophase::Options::from_hints(Hints::parse({"cb_buffer_size=0"})), Error);
  // Reading past the end of the file fails on every rank.
  twophase::File reader(comm_, file, twophase::Mode::read, twophase::Options{});
  twophase::Access past{4990, comm_.rank() == 0 ? 100u : 0u, got.data()};
  EXPECT_THROW(reader.read_all({&past, 1}), Error);
  reader.close();
  // A missing file fails on every rank.
  EXPECT_THROW(twophase::File(comm_, path("absent"), twophase::Mode::read, twophase::Options{}), Error);
}

}  // namespace
