// SPDX-License-Identifier: MIT
// What the two-phase property tests share (engine_property_test.cpp,
// volume_property_test.cpp): the sweep's names, the seed, failure
// agreement across ranks, byte comparison, and the fixture's communicator
// and shared temporary folder.
#pragma once

#include <gtest/gtest.h>
#include <mpi.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>
#include <vector>

#include "support/temp_dir.hpp"
#include "volseg/io/comm.hpp"

namespace volseg::testing {
extern std::vector<std::string> arguments;
}

namespace volseg::twophase_testing {

inline constexpr const char* kPartitions[] = {"even", "aligned", "static-cyclic", "group-cyclic", "persistent", "auto"};
inline constexpr const char* kExchanges[] = {"alltoallw", "p2p"};
inline constexpr const char* kSieving[] = {"auto", "always", "never"};

// --seed=N, else a fixed seed; the same on every rank (mpirun passes the
// same arguments), so every rank draws the same plan.
inline std::uint64_t base_seed() {
  for (const auto& argument : volseg::testing::arguments)
    if (argument.rfind("--seed=", 0) == 0) return std::stoull(argument.substr(7));
  return 20261122;
}

// True on every rank when every rank has passed so far: lets a sweep stop
// after its first failing case on all ranks together (no rank left waiting
// in a collective call), and keeps the report short.
inline bool everyone_passed(const Comm& comm) {
  int failed = ::testing::Test::HasFailure() ? 1 : 0;
  MPI_Allreduce(MPI_IN_PLACE, &failed, 1, MPI_INT, MPI_MAX, comm.get());
  return failed == 0;
}

// "" when equal, else where the first difference is (a short message, not
// two dumps of a whole file).
inline std::string difference(const std::vector<std::byte>& got, const std::vector<std::byte>& want) {
  const std::size_t common = std::min(got.size(), want.size());
  std::size_t i = 0;
  while (i < common && got[i] == want[i]) ++i;
  if (i == common && got.size() == want.size()) return "";
  std::ostringstream text;
  text << "sizes " << got.size() << " and " << want.size();
  if (i < common) {
    std::size_t differing = 0;
    for (std::size_t j = i; j < common; ++j) differing += got[j] != want[j];
    text << ", first difference at byte " << i << " (" << std::to_integer<int>(got[i]) << " instead of "
         << std::to_integer<int>(want[i]) << "), " << differing << " byte(s) differ";
  }
  return text.str();
}

inline std::vector<std::byte> slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::vector<char> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::vector<std::byte> result(bytes.size());
  std::memcpy(result.data(), bytes.data(), bytes.size());
  return result;
}

inline std::byte pattern(std::uint64_t seed, std::uint64_t i) {
  std::uint64_t h = (i + 1) * 0x9e3779b97f4a7c15ull ^ (seed * 0xbf58476d1ce4e5b9ull);
  h ^= h >> 29;
  return static_cast<std::byte>((h * 0x94d049bb133111ebull) >> 56);
}

// Every rank's communicator and one temporary folder shared by all ranks.
class TwoPhaseFixture : public ::testing::Test {
 protected:
  TwoPhaseFixture() : comm_(MPI_COMM_WORLD), dir_(MPI_COMM_WORLD) {}
  std::string path(const std::string& name) const { return dir_ / name; }

  Comm comm_;
  volseg::testing::SharedTempDir dir_;
};

}  // namespace volseg::twophase_testing
