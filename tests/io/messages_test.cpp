// SPDX-License-Identifier: MIT
// Messages of any size (io/messages.hpp) on 1-3 ranks, with uneven sizes
// on every rank. The tests run with VOLSEG_MPI_MESSAGE_BYTES=4096, so every
// message here moves in many pieces; a piece at a wrong offset, or one
// taken by the wrong call, changes the bytes compared.
#include <gtest/gtest.h>
#include <mpi.h>

#include <cstdint>
#include <cstdlib>
#include <span>
#include <vector>

#include "volseg/io/comm.hpp"
#include "volseg/io/messages.hpp"

using namespace volseg;

namespace {

// A byte that names who sent it, to whom, and where it stood.
std::byte mark(int from, int to, std::uint64_t at) {
  return static_cast<std::byte>((from * 131 + to * 31 + static_cast<int>(at % 251)) & 0xFF);
}
std::uint64_t size_from(int rank) { return 5000 * static_cast<std::uint64_t>(rank) + 4097; }

TEST(Messages, TheTestsTakeThePiecedPath) {
  const char* limit = std::getenv("VOLSEG_MPI_MESSAGE_BYTES");
  ASSERT_NE(limit, nullptr) << "VOLSEG_MPI_MESSAGE_BYTES is not set for this test";
  EXPECT_EQ(io::message_limit(), std::strtoull(limit, nullptr, 10));
  EXPECT_LT(io::message_limit(), size_from(0));
}

TEST(Messages, GatherPutsEveryRanksBytesInRankOrder) {
  Comm comm(MPI_COMM_WORLD);
  for (const int root : {0, comm.size() - 1}) {
    std::vector<std::byte> mine(size_from(comm.rank()));
    for (std::uint64_t i = 0; i < mine.size(); ++i) mine[i] = mark(comm.rank(), root, i);
    std::vector<std::uint64_t> counts;
    const auto all = io::gather(comm.get(), std::span<const std::byte>(mine), root, &counts);
    if (comm.rank() != root) {
      EXPECT_TRUE(all.empty());
      continue;
    }
    ASSERT_EQ(counts.size(), static_cast<std::size_t>(comm.size()));
    std::uint64_t at = 0;
    for (int r = 0; r < comm.size(); ++r) {
      ASSERT_EQ(counts[static_cast<std::size_t>(r)], size_from(r));
      for (std::uint64_t i = 0; i < size_from(r); ++i) ASSERT_EQ(all[at + i], mark(r, root, i)) << r << " " << i;
      at += size_from(r);
    }
    EXPECT_EQ(at, all.size());
  }
}

TEST(Messages, ScatterSendsEachRankItsShare) {
  Comm comm(MPI_COMM_WORLD);
  std::vector<std::byte> all;
  std::vector<std::uint64_t> sizes;
  if (comm.rank() == 0)
    for (int r = 0; r < comm.size(); ++r) {
      sizes.push_back(size_from(r));
      for (std::uint64_t i = 0; i < size_from(r); ++i) all.push_back(mark(0, r, i));
    }
  std::vector<std::byte> mine(size_from(comm.rank()));
  io::scatter_bytes(comm.get(), all.data(), sizes, mine, 0);
  for (std::uint64_t i = 0; i < mine.size(); ++i) ASSERT_EQ(mine[i], mark(0, comm.rank(), i)) << i;
}

TEST(Messages, ExchangeDeliversWhatEveryRankSentThisOne) {
  Comm comm(MPI_COMM_WORLD);
  auto size = [](int from, int to) { return static_cast<std::uint64_t>(3000 * (from + 1) * (to + 2) + 7 * from); };
  std::vector<std::vector<std::byte>> out(static_cast<std::size_t>(comm.size()));
  std::vector<std::span<const std::byte>> spans;
  for (int to = 0; to < comm.size(); ++to) {
    auto& bytes = out[static_cast<std::size_t>(to)];
    bytes.resize(size(comm.rank(), to));
    for (std::uint64_t i = 0; i < bytes.size(); ++i) bytes[i] = mark(comm.rank(), to, i);
    spans.emplace_back(bytes);
  }
  std::vector<std::uint64_t> sizes;
  const auto received = io::exchange_bytes(comm.get(), spans, &sizes);
  std::uint64_t at = 0;
  for (int from = 0; from < comm.size(); ++from) {
    ASSERT_EQ(sizes[static_cast<std::size_t>(from)], size(from, comm.rank()));
    for (std::uint64_t i = 0; i < size(from, comm.rank()); ++i)
      ASSERT_EQ(received[at + i], mark(from, comm.rank(), i)) << from << " " << i;
    at += size(from, comm.rank());
  }
  EXPECT_EQ(at, received.size());
}

// Typed lists: records from every rank in rank order, each list freed; a
// rank whose records all go to itself keeps them without a copy (here rank
// 0 in the second round, when nobody sends it anything else).
TEST(Messages, TypedExchangeDeliversRecordsInRankOrder) {
  Comm comm(MPI_COMM_WORLD);
  struct Record {
    std::uint64_t from, to, index;
    double weight;
  };
  for (int round = 0; round < 2; ++round) {
    auto count = [&](int from, int to) -> std::uint64_t {
      if (round == 1 && to == 0 && from != 0) return 0;
      return 700 * static_cast<std::uint64_t>(from + 1) + 31 * static_cast<std::uint64_t>(to);
    };
    std::vector<std::vector<Record>> out(static_cast<std::size_t>(comm.size()));
    for (int to = 0; to < comm.size(); ++to)
      for (std::uint64_t i = 0; i < count(comm.rank(), to); ++i)
        out[static_cast<std::size_t>(to)].push_back(
            {static_cast<std::uint64_t>(comm.rank()), static_cast<std::uint64_t>(to), i, 0.5 * static_cast<double>(i)});
    const Record* own = out[static_cast<std::size_t>(comm.rank())].data();
    std::vector<std::uint64_t> counts;
    const auto received = io::exchange(comm.get(), out, &counts);
    for (const auto& list : out) EXPECT_TRUE(list.empty());
    std::size_t at = 0;
    for (int from = 0; from < comm.size(); ++from) {
      ASSERT_EQ(counts[static_cast<std::size_t>(from)], count(from, comm.rank()));
      for (std::uint64_t i = 0; i < count(from, comm.rank()); ++i, ++at) {
        const Record& r = received[at];
        ASSERT_EQ(r.from, static_cast<std::uint64_t>(from));
        ASSERT_EQ(r.to, static_cast<std::uint64_t>(comm.rank()));
        ASSERT_EQ(r.index, i);
        ASSERT_EQ(r.weight, 0.5 * static_cast<double>(i));
      }
    }
    EXPECT_EQ(at, received.size());
    if (round == 1 && comm.rank() == 0) {
      EXPECT_EQ(received.data(), own) << "rank 0's own records were copied";
    }
  }
}

TEST(Messages, SumInPlaceAddsEveryElementOverEveryPiece) {
  Comm comm(MPI_COMM_WORLD);
  std::vector<std::uint64_t> values(10001);
  for (std::size_t i = 0; i < values.size(); ++i) values[i] = i * static_cast<std::uint64_t>(comm.rank() + 1);
  io::sum_in_place(comm.get(), values);
  const std::uint64_t factor = static_cast<std::uint64_t>(comm.size()) * (comm.size() + 1) / 2;
  for (std::size_t i = 0; i < values.size(); ++i) ASSERT_EQ(values[i], i * factor) << i;
}

}  // namespace
