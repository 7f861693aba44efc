// SPDX-License-Identifier: MIT
// Property tests of the two-phase engine (twophase::File), on 1 to 5 ranks.
//
// Engine level (twophase::File): seeded random access lists, the same plan
// on every rank (one seed), written through File::write_all and through two
// references, plain pwrite per piece and MPI-IO's MPI_File_write_at per
// piece; the three files must be byte-identical. The files are pre-filled
// with a pattern, so the holes that data sieving reads and writes back must
// keep their bytes, and part of every plan lies past the pre-filled end, so
// writes extend the file (holes there read as zeros). Several write_all
// calls go through one File (later calls overwrite earlier ones, and
// persistent realms must serve every call). Random overlapping reads, some
// duplicated within and across ranks, are checked against the file's bytes,
// through a read-mode File and through the write-mode File just written.
// The sweep: every partitioner x {alltoallw, p2p} x {ds=auto, always, never},
// each with a buffer smaller than a run (7 or 13 bytes), a middling one and a
// large one; lock sizes of 16 to 64 bytes so cyclic methods really deal
// blocks (now and then 512 or the file's st_blksize); one aggregator, one per
// rank, more than ranks (clamped: the aggregator count is checked), and an
// explicit cb_config list out of rank order; ranks with nothing to do.
//
// read_all through all three must equal the model.

#include <fcntl.h>
#include <gtest/gtest.h>
#include <mpi.h>
#include <unistd.h>

#include <linux/magic.h>
#include <sys/vfs.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <numeric>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "property_support.hpp"
#include "support/temp_dir.hpp"
#include "volseg/io/error.hpp"
#include "volseg/io/hints.hpp"
#include "volseg/io/nrrd.hpp"
#include "volseg/io/registry.hpp"
#include "volseg/io/twophase.hpp"

using namespace volseg;
using namespace volseg::io;
using namespace volseg::twophase_testing;

namespace {

struct Piece {
  std::uint64_t offset = 0, length = 0, memory = 0;  // memory: offset in the rank's buffer
};

// One rank's part of one collective call.
struct Plan {
  std::vector<Piece> pieces;
  std::uint64_t memory_size = 0;
};

// Lays a rank's pieces out in memory in list order, with gaps.
void lay_out(std::mt19937_64& random, Plan& plan) {
  for (auto& piece : plan.pieces) {
    plan.memory_size += random() % 5;
    piece.memory = plan.memory_size;
    plan.memory_size += piece.length;
  }
}

// Non-overlapping pieces tiling part of [start, span): each goes to a random
// rank or stays a hole; one rank (when there are several) gets nothing; the
// last piece, which reaches span, always has a writer. Lists are shuffled
// (the engine must sort), and a few zero-length pieces are sprinkled in.
std::vector<Plan> random_writes(std::mt19937_64& random, int ranks, std::uint64_t span, std::uint64_t longest) {
  std::vector<Plan> plans(static_cast<std::size_t>(ranks));
  const int idle = ranks > 1 ? static_cast<int>(random() % static_cast<unsigned>(ranks)) : -1;
  auto writer = [&] {
    int owner = static_cast<int>(random() % static_cast<unsigned>(ranks));
    if (owner == idle) owner = (owner + 1) % ranks;
    return owner;
  };
  std::uint64_t at = random() % 64;
  while (at < span) {
    const std::uint64_t length = 1 + random() % longest;
    const bool last = at + length >= span;
    const bool hole = !last && random() % 4 == 0;
    if (!hole) plans[static_cast<std::size_t>(writer())].pieces.push_back(Piece{at, length, 0});
    at += length;
  }
  for (int r = 0; r < ranks; ++r) {
    auto& plan = plans[static_cast<std::size_t>(r)];
    if (r != idle && random() % 3 == 0) plan.pieces.push_back(Piece{random() % span, 0, 0});
    std::shuffle(plan.pieces.begin(), plan.pieces.end(), random);
    lay_out(random, plan);
  }
  return plans;
}

// Overlapping reads anywhere in [0, size): random pieces, some of them
// copies of another rank's or of the rank's own, one rank (now and then)
// with nothing, some zero-length.
std::vector<Plan> random_reads(std::mt19937_64& random, int ranks, std::uint64_t size, std::uint64_t longest) {
  std::vector<Plan> plans(static_cast<std::size_t>(ranks));
  const int idle = ranks > 1 && random() % 2 ? static_cast<int>(random() % static_cast<unsigned>(ranks)) : -1;
  for (int r = 0; r < ranks; ++r) {
    auto& plan = plans[static_cast<std::size_t>(r)];
    if (r == idle) continue;
    const int count = 1 + static_cast<int>(random() % 30);
    for (int i = 0; i < count; ++i) {
      const auto choice = random() % 10;
      if (choice == 0 && !plan.pieces.empty()) {  // the same bytes twice in one list
        plan.pieces.push_back(plan.pieces[random() % plan.pieces.size()]);
      } else if (choice == 1 && r > 0 && !plans[0].pieces.empty()) {  // what rank 0 reads
        plan.pieces.push_back(plans[0].pieces[random() % plans[0].pieces.size()]);
      } else if (choice == 2) {
        plan.pieces.push_back(Piece{random() % size, 0, 0});
      } else {
        const std::uint64_t length = 1 + random() % std::min(longest, size);
        plan.pieces.push_back(Piece{random() % (size - length + 1), length, 0});
      }
    }
    lay_out(random, plan);
  }
  return plans;
}

// One configuration of the engine, as hints (so Options::from_hints is
// exercised too), and what its aggregator list must be.
struct Config {
  std::vector<std::string> hints;
  std::string partition, sieving, fs_profile;
  std::string cb_read, cb_write;          // automatic | enable | disable
  std::uint64_t lock_size = 0;            // 0: the file's st_blksize
  std::vector<int> expected_aggregators;  // exact list, when cb_config names it
  std::size_t expected_count = 0;
  bool clamped = false;
  std::string text;
};

Config make_config(std::mt19937_64& random, int size, const std::string& partition, const std::string& exchange,
                   const std::string& sieving, std::uint64_t buffer, int nodes_mode) {
  Config config;
  config.partition = partition;
  config.sieving = sieving;
  static const std::uint64_t locks[] = {16, 32, 64, 16, 48, 64, 512, 0};  // 0: the file's st_blksize
  static const char* profiles[] = {"local", "gpfs", "lustre"};
  config.lock_size = locks[random() % std::size(locks)];
  config.hints = {"partition=" + partition,
                  "exchange=" + exchange,
                  "ds=" + sieving,
                  "cb_buffer_size=" + std::to_string(buffer),
                  "lock_size=" + std::to_string(config.lock_size),
                  "io_servers=" + std::to_string(1 + random() % 4)};
  config.fs_profile = profiles[random() % 3];
  config.hints.push_back("fs_profile=" + config.fs_profile);
  // Half the cases aggregate whatever the pattern, so the rounds stay
  // covered on one rank too (where nothing ever interleaves).
  static const char* aggregation[] = {"enable", "enable", "automatic", "disable"};
  config.cb_read = aggregation[random() % 4];
  config.cb_write = aggregation[random() % 4];
  config.hints.push_back("cb_read=" + config.cb_read);
  config.hints.push_back("cb_write=" + config.cb_write);
  config.hints.push_back("ds_threshold=" + std::to_string(random() % 300));
  if (random() % 3 == 0) config.hints.push_back("realm_size=" + std::to_string(1 + random() % 2000));
  switch (nodes_mode) {
    case 0:  // a single aggregator
      config.hints.push_back("cb_nodes=1");
      config.expected_count = 1;
      break;
    case 1:  // every rank
      config.hints.push_back("cb_nodes=" + std::to_string(size));
      config.expected_count = static_cast<std::size_t>(size);
      break;
    case 2:  // more than ranks: clamped
      config.hints.push_back("cb_nodes=" + std::to_string(size + 3));
      config.expected_count = static_cast<std::size_t>(size);
      config.clamped = true;
      break;
    default: {  // an explicit list, out of rank order
      std::vector<int> ranks(static_cast<std::size_t>(size));
      std::iota(ranks.begin(), ranks.end(), 0);
      std::shuffle(ranks.begin(), ranks.end(), random);
      ranks.resize(1 + random() % static_cast<std::size_t>(size));
      std::string list;
      for (int r : ranks) list += (list.empty() ? "" : ",") + std::to_string(r);
      config.hints.push_back("cb_config=" + list);
      config.expected_aggregators = ranks;
      config.expected_count = ranks.size();
      break;
    }
  }
  for (const auto& hint : config.hints) config.text += hint + " ";
  return config;
}

twophase::Options options_of(const Config& config) {
  const Hints hints = Hints::parse(config.hints);
  auto options = twophase::Options::from_hints(hints);
  hints.reject_unused("twophase");
  return options;
}

// Whether a call of these plans (every rank's) must go independent: some
// rank has bytes, and aggregation is disabled, or automatic and no two
// ranks' [first, last] byte ranges overlap.
bool expects_independent(const std::vector<Plan>& plans, const std::string& aggregation) {
  std::vector<std::pair<std::uint64_t, std::uint64_t>> extents;
  for (const auto& plan : plans) {
    std::uint64_t begin = ~0ull, end = 0;
    for (const auto& piece : plan.pieces)
      if (piece.length > 0) {
        begin = std::min(begin, piece.offset);
        end = std::max(end, piece.offset + piece.length);
      }
    if (end > 0) extents.emplace_back(begin, end);
  }
  if (extents.empty() || aggregation == "enable") return false;
  if (aggregation == "disable") return true;
  std::sort(extents.begin(), extents.end());
  for (std::size_t i = 1; i < extents.size(); ++i)
    if (extents[i].first < extents[i - 1].second) return false;
  return true;
}

bool any_piece(const std::vector<Plan>& plans) {
  for (const auto& plan : plans)
    for (const auto& piece : plan.pieces)
      if (piece.length > 0) return true;
  return false;
}

// What the engine's I/O decisions were, summed over a sweep.
struct Decisions {
  std::uint64_t sieved = 0, naive = 0, contiguous = 0, rounds = 0, independent = 0;
};

class TwoPhase : public TwoPhaseFixture {
 protected:
  // Rank 0 writes `size` pattern bytes to each file; everyone waits.
  void prefill(const std::vector<std::string>& files, std::uint64_t size, std::uint64_t seed) {
    if (comm_.rank() == 0) {
      std::vector<std::byte> bytes(size);
      for (std::uint64_t i = 0; i < size; ++i) bytes[i] = pattern(seed, i);
      for (const auto& file : files) {
        std::ofstream out(file, std::ios::binary | std::ios::trunc);
        out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(size));
        EXPECT_TRUE(out.good()) << file;
      }
    }
    comm_.barrier();
  }

  // ds=never never sieves; ds=always never falls back to one call per run.
  void check_decisions(const twophase::File& file, const Config& config, Decisions& decisions,
                       const std::string& what) {
    const twophase::Timing& totals = file.totals();
    if (config.sieving == "never") {
      EXPECT_EQ(totals.sieved, 0u) << "ds=never sieved: " << what;
    }
    // (Independent writes of interleaved ranks may not sieve: another
    // rank's bytes lie between theirs.)
    if (config.sieving == "always" && config.cb_write != "disable") {
      EXPECT_EQ(totals.naive, 0u) << "ds=always wrote run by run: " << what;
    }
    decisions.sieved += totals.sieved;
    decisions.naive += totals.naive;
    decisions.contiguous += totals.contiguous;
    decisions.rounds += totals.rounds;
    decisions.independent += totals.independent;
  }

  void check_aggregators(const twophase::File& file, const Config& config, const std::string& what) {
    EXPECT_EQ(file.aggregators().size(), config.expected_count) << what;
    if (!config.expected_aggregators.empty()) {
      EXPECT_EQ(file.aggregators(), config.expected_aggregators) << what;
    }
    std::vector<int> sorted = file.aggregators();
    std::sort(sorted.begin(), sorted.end());
    EXPECT_EQ(std::adjacent_find(sorted.begin(), sorted.end()), sorted.end()) << "an aggregator twice: " << what;
    for (int rank : sorted) {
      EXPECT_GE(rank, 0) << what;
      EXPECT_LT(rank, comm_.size()) << what;
    }
    EXPECT_EQ(file.describe().find("clamped") != std::string::npos, config.clamped) << file.describe() << ": " << what;
    if (config.lock_size) {
      EXPECT_EQ(file.lock_size(), config.lock_size) << what;
    } else {
      EXPECT_GT(file.lock_size(), 0u) << "lock_size=0 should become the file's st_blksize: " << what;
    }
  }

  // What File::partition() must name after a call in `direction`.
  static std::string partition_used(const Config& config, twophase::Direction direction) {
    if (config.partition != "auto") return config.partition;
    if (config.fs_profile == "local") return "auto:even";
    if (config.fs_profile == "gpfs") return "auto:aligned";
    return direction == twophase::Direction::write ? "auto:group-cyclic" : "auto:aligned";
  }

  // Reads this rank's part of `plans` through `file` and compares with
  // `bytes`; checks the call went independent exactly when it must.
  void check_reads(twophase::File& file, const std::vector<Plan>& plans, const std::string& cb_read,
                   const std::vector<std::byte>& bytes, const std::string& what) {
    const Plan& mine = plans[static_cast<std::size_t>(comm_.rank())];
    std::vector<std::byte> got(mine.memory_size, std::byte{0xEE});
    std::vector<twophase::Access> accesses;
    for (const auto& piece : mine.pieces) accesses.push_back({piece.offset, piece.length, got.data() + piece.memory});
    file.read_all(accesses);
    EXPECT_EQ(file.last_call().independent, expects_independent(plans, cb_read) ? 1u : 0u)
        << "cb_read=" << cb_read << ": " << what;
    for (const auto& piece : mine.pieces) {
      if (piece.length == 0) continue;
      if (piece.offset + piece.length > bytes.size()) {
        ADD_FAILURE() << "a read past the expected file end in the plan: " << what;
        return;
      }
      if (std::memcmp(got.data() + piece.memory, bytes.data() + piece.offset, piece.length) != 0) {
        ADD_FAILURE() << "read of [" << piece.offset << ", +" << piece.length << ") differs from the file: " << what
                      << " (" << mine.pieces.size() << " pieces on this rank)";
        return;
      }
    }
    // Memory between pieces is untouched.
    std::vector<char> covered(mine.memory_size, 0);
    for (const auto& piece : mine.pieces)
      std::fill_n(covered.begin() + static_cast<std::ptrdiff_t>(piece.memory), piece.length, 1);
    for (std::size_t i = 0; i < covered.size(); ++i)
      if (!covered[i] && got[i] != std::byte{0xEE}) {
        ADD_FAILURE() << "read_all wrote memory byte " << i << " outside every piece: " << what;
        return;
      }
  }

  // One case: `calls` write_all calls of random plans through twophase, pwrite
  // and MPI-IO, then reads.
  void run_case(std::mt19937_64& random, const Config& write_config, const Config& read_config, std::uint64_t span,
                std::uint64_t longest, int calls, Decisions& decisions, const std::string& what) {
    const int rank = comm_.rank(), size = comm_.size();
    const std::string ours = path("ours"), posix = path("posix"), mpiio = path("mpiio");
    // Between half the span and all of it is there before; the rest is new.
    const std::uint64_t prefilled = span / 2 + random() % (span / 2 + 1);
    prefill({ours, posix, mpiio}, prefilled, random());

    // Every call's plans (all ranks draw them all) and this rank's memory.
    std::vector<std::vector<Plan>> plans;
    std::vector<std::vector<std::byte>> memory;
    for (int call = 0; call < calls; ++call) {
      const auto kind = random() % 8;
      if (kind == 0 && call > 0) {
        plans.emplace_back(static_cast<std::size_t>(size));  // nobody writes anything
      } else if (kind == 1) {                                // one rank writes everything
        auto all = random_writes(random, 1, span, longest);
        plans.emplace_back(static_cast<std::size_t>(size));
        plans.back()[random() % static_cast<std::size_t>(size)] = all[0];
      } else {
        const std::uint64_t call_span = call == 0 ? span : span / 2 + random() % (span / 2 + 1);
        plans.push_back(random_writes(random, size, call_span, longest));
      }
      const auto& mine = plans.back()[static_cast<std::size_t>(rank)];
      memory.emplace_back(mine.memory_size);
      const std::uint64_t salt = random();
      for (std::uint64_t i = 0; i < mine.memory_size; ++i)
        memory.back()[i] = pattern(salt + static_cast<std::uint64_t>(rank) * 7919, i);
    }

    // Reference 1: pwrite per piece; a barrier between calls orders them.
    for (int call = 0; call < calls; ++call) {
      const int fd = ::open(posix.c_str(), O_WRONLY);
      EXPECT_GE(fd, 0) << posix;
      if (fd >= 0) {
        for (const auto& piece : plans[static_cast<std::size_t>(call)][static_cast<std::size_t>(rank)].pieces)
          EXPECT_EQ(::pwrite(fd, memory[static_cast<std::size_t>(call)].data() + piece.memory, piece.length,
                             static_cast<off_t>(piece.offset)),
                    static_cast<ssize_t>(piece.length));
        ::close(fd);
      }
      comm_.barrier();
    }
    // Reference 2: MPI-IO, MPI_File_write_at per piece; sync-barrier-sync
    // between calls (MPI's consistency rule for overlapping writes).
    {
      MPI_File file;
      EXPECT_EQ(MPI_File_open(comm_.get(), mpiio.c_str(), MPI_MODE_WRONLY, MPI_INFO_NULL, &file), MPI_SUCCESS);
      for (int call = 0; call < calls; ++call) {
        for (const auto& piece : plans[static_cast<std::size_t>(call)][static_cast<std::size_t>(rank)].pieces)
          EXPECT_EQ(MPI_File_write_at(file, static_cast<MPI_Offset>(piece.offset),
                                      memory[static_cast<std::size_t>(call)].data() + piece.memory,
                                      static_cast<int>(piece.length), MPI_BYTE, MPI_STATUS_IGNORE),
                    MPI_SUCCESS);
        MPI_File_sync(file);
        comm_.barrier();
        MPI_File_sync(file);
      }
      EXPECT_EQ(MPI_File_close(&file), MPI_SUCCESS);
    }
    comm_.barrier();
    const auto expected = slurp(posix);
    {
      const auto other = difference(slurp(mpiio), expected);
      EXPECT_EQ(other, "") << "MPI-IO and pwrite disagree (a broken reference, not the engine): " << what;
    }

    // The engine: one File, every call, then reads through the same File.
    const auto reads = random_reads(random, size, expected.size(), 1 + random() % 400);
    {
      twophase::File file(comm_, ours, twophase::Mode::write, options_of(write_config));
      check_aggregators(file, write_config, what);
      // partition() names what the last aggregated call used.
      std::string partition = write_config.partition;
      for (int call = 0; call < calls; ++call) {
        std::vector<twophase::ConstAccess> accesses;
        const auto* base = memory[static_cast<std::size_t>(call)].data();
        const auto& call_plans = plans[static_cast<std::size_t>(call)];
        for (const auto& piece : call_plans[static_cast<std::size_t>(rank)].pieces)
          accesses.push_back({piece.offset, piece.length, base + piece.memory});
        file.write_all(accesses);
        EXPECT_EQ(file.last_call().calls, 1u) << what;
        const bool independent = expects_independent(call_plans, write_config.cb_write);
        EXPECT_EQ(file.last_call().independent, independent ? 1u : 0u)
            << "call " << call << ", cb_write=" << write_config.cb_write << ": " << what;
        bool any = false;
        for (const auto& plan : call_plans)
          for (const auto& piece : plan.pieces) any = any || piece.length > 0;
        if (any && !independent) partition = partition_used(write_config, twophase::Direction::write);
      }
      EXPECT_EQ(file.partition(), partition) << what;
      EXPECT_EQ(file.totals().calls, static_cast<std::uint64_t>(calls)) << what;
      check_reads(file, reads, write_config.cb_read, expected, what + " (read through the write-mode File)");
      if (!expects_independent(reads, write_config.cb_read) && any_piece(reads))
        partition = partition_used(write_config, twophase::Direction::read);
      EXPECT_EQ(file.partition(), partition) << what;
      check_decisions(file, write_config, decisions, what);
      file.close();
    }
    comm_.barrier();
    {
      const auto ours_bytes = slurp(ours);
      const auto differs = difference(ours_bytes, expected);
      EXPECT_EQ(differs, "") << "twophase write_all differs from pwrite and MPI-IO: " << what;
    }

    // Overlapping reads through a read-mode File with other options.
    const auto more = random_reads(random, size, expected.size(), 1 + random() % 400);
    twophase::File file(comm_, ours, twophase::Mode::read, options_of(read_config));
    check_aggregators(file, read_config, what + " (reader)");
    check_reads(file, more, read_config.cb_read, expected, what + " (read-mode File: " + read_config.text + ")");
    // And a second read call on the same File: persistent realms again.
    check_reads(file, reads, read_config.cb_read, expected, what + " (second read call)");
    EXPECT_EQ(file.totals().calls, 2u) << what;
    const bool aggregated = (any_piece(more) && !expects_independent(more, read_config.cb_read)) ||
                            (any_piece(reads) && !expects_independent(reads, read_config.cb_read));
    EXPECT_EQ(file.partition(),
              aggregated ? partition_used(read_config, twophase::Direction::read) : read_config.partition)
        << what;
    check_decisions(file, read_config, decisions, what + " (reader)");
    file.close();
  }
};

TEST_F(TwoPhase, RandomListsMatchPwriteAndMpiioForEveryMethod) {
  // Three sweeps, each from its own seed (seed, seed + 1000, seed + 2000).
  std::array<Decisions, 3> decisions{};  // per sieving mode: auto, always, never
  int cases = 0;
  for (std::uint64_t sweep = 0; sweep < 3; ++sweep) {
    const std::uint64_t seed = base_seed() + 1000 * sweep;
    std::mt19937_64 random(seed);  // the same sequence on every rank
    int number = 0;
    for (const char* partition : kPartitions)
      for (const char* exchange : kExchanges)
        for (const char* sieving : kSieving)
          for (int variant = 0; variant < 3; ++variant) {
            ++number;
            // 0: a buffer smaller than a run; 1: middling; 2: large.
            std::uint64_t buffer = 0, span = 0, longest = 0;
            if (variant == 0) {
              buffer = random() % 2 ? 7 : 13;
              span = 300 + random() % 900;
              longest = 20 + random() % 120;
            } else if (variant == 1) {
              buffer = random() % 2 ? 64 : 1000;
              span = 2000 + random() % 6000;
              longest = 1 + random() % 300;
            } else {
              buffer = 1u << 20;
              span = 2000 + random() % 10000;
              longest = 1 + random() % 2000;
            }
            const int nodes_mode = (number + variant) % 4;
            const Config write_config =
                make_config(random, comm_.size(), partition, exchange, sieving, buffer, nodes_mode);
            const Config read_config = make_config(random, comm_.size(), partition, exchange, sieving,
                                                   variant == 0 ? buffer : 1 + random() % 3000, (nodes_mode + 1) % 4);
            const int calls = 1 + static_cast<int>(random() % 3);
            const std::string what = "seed " + std::to_string(seed) + " case " + std::to_string(number) + " on " +
                                     std::to_string(comm_.size()) + " rank(s): " + std::to_string(calls) +
                                     " call(s) over " + std::to_string(span) + " B, writer " + write_config.text;
            std::size_t mode = 0;  // index of sieving in kSieving
            while (std::string(kSieving[mode]) != sieving) ++mode;
            run_case(random, write_config, read_config, span, longest, calls, decisions[mode], what);
            ++cases;
            if (!everyone_passed(comm_)) return;
          }
  }
  // Every I/O path ran somewhere: sieving (auto and always), one call per
  // run (auto and never), single contiguous pieces, and many rounds.
  std::array<std::uint64_t, 13> sums{};
  for (std::size_t m = 0; m < 3; ++m) {
    sums[4 * m] = decisions[m].sieved;
    sums[4 * m + 1] = decisions[m].naive;
    sums[4 * m + 2] = decisions[m].contiguous;
    sums[4 * m + 3] = decisions[m].rounds;
    sums[12] += decisions[m].independent;
  }
  MPI_Allreduce(MPI_IN_PLACE, sums.data(), 13, MPI_UINT64_T, MPI_SUM, comm_.get());
  if (comm_.rank() == 0)
    std::printf(
        "[   INFO   ] %d cases; rounds %llu, sieved %llu, run by run %llu, contiguous %llu, independent calls "
        "%llu (all ranks)\n",
        cases, static_cast<unsigned long long>(sums[3] + sums[7] + sums[11]),
        static_cast<unsigned long long>(sums[0] + sums[4] + sums[8]),
        static_cast<unsigned long long>(sums[1] + sums[5] + sums[9]),
        static_cast<unsigned long long>(sums[2] + sums[6] + sums[10]), static_cast<unsigned long long>(sums[12]));
  EXPECT_GT(sums[12], 0u) << "no call went independent";
  EXPECT_GT(sums[0], 0u) << "ds=auto never sieved";
  EXPECT_GT(sums[1], 0u) << "ds=auto never wrote run by run";
  EXPECT_GT(sums[4], 0u) << "ds=always never sieved";
  EXPECT_GT(sums[9], 0u) << "ds=never never wrote run by run";
  for (std::size_t m = 0; m < 3; ++m) {
    EXPECT_GT(sums[4 * m + 2], 0u) << kSieving[m];
    EXPECT_GT(sums[4 * m + 3], 1000u) << kSieving[m];
  }
}

// Offsets past 4 GiB (sparse files): 64-bit arithmetic in domains, rounds
// and coordinates. Compared with pwrite/pread around the written range.
TEST_F(TwoPhase, OffsetsPastFourGiB) {
  const std::uint64_t seed = base_seed() + 7;
  std::mt19937_64 random(seed);
  const int rank = comm_.rank(), size = comm_.size();
  const std::string ours = path("far-ours"), posix = path("far-posix");
  auto pread_range = [](const std::string& file, std::uint64_t offset, std::uint64_t length) {
    std::vector<std::byte> bytes(length);
    const int fd = ::open(file.c_str(), O_RDONLY);
    EXPECT_GE(fd, 0) << file;
    EXPECT_EQ(::pread(fd, bytes.data(), length, static_cast<off_t>(offset)), static_cast<ssize_t>(length)) << file;
    ::close(fd);
    return bytes;
  };
  int number = 0;
  for (const char* partition : kPartitions)
    for (const char* exchange : kExchanges) {
      ++number;
      const std::uint64_t base = (std::uint64_t{1} << 32) + random() % 100000;
      const std::uint64_t span = 1000 + random() % 3000;
      prefill({ours, posix}, 1000, random());
      auto plans = random_writes(random, size, span, 1 + random() % 200);
      for (auto& plan : plans)
        for (auto& piece : plan.pieces) piece.offset += base;
      const auto& mine = plans[static_cast<std::size_t>(rank)];
      std::vector<std::byte> memory(mine.memory_size);
      const std::uint64_t salt = random();
      for (std::uint64_t i = 0; i < memory.size(); ++i) memory[i] = pattern(salt + static_cast<std::uint64_t>(rank), i);
      const int fd = ::open(posix.c_str(), O_WRONLY);
      EXPECT_GE(fd, 0);
      for (const auto& piece : mine.pieces)
        EXPECT_EQ(::pwrite(fd, memory.data() + piece.memory, piece.length, static_cast<off_t>(piece.offset)),
                  static_cast<ssize_t>(piece.length));
      ::close(fd);
      const Config config =
          make_config(random, size, partition, exchange, kSieving[number % 3], number % 2 ? 7 : 4096, number % 4);
      const std::string what = "seed " + std::to_string(seed) + " case " + std::to_string(number) + " base " +
                               std::to_string(base) + ": " + config.text;
      {
        twophase::File file(comm_, ours, twophase::Mode::write, options_of(config));
        std::vector<twophase::ConstAccess> accesses;
        for (const auto& piece : mine.pieces)
          accesses.push_back({piece.offset, piece.length, memory.data() + piece.memory});
        file.write_all(accesses);
        file.close();
      }
      comm_.barrier();
      EXPECT_EQ(std::filesystem::file_size(ours), std::filesystem::file_size(posix)) << what;
      const std::uint64_t end = std::filesystem::file_size(posix);
      EXPECT_EQ(difference(pread_range(ours, 0, 1000), pread_range(posix, 0, 1000)), "") << what;
      const auto expected = pread_range(posix, base - 100, end - (base - 100));
      EXPECT_EQ(difference(pread_range(ours, base - 100, end - (base - 100)), expected), "") << what;
      // Overlapping reads over [base - 100, end), through twophase.
      auto reads = random_reads(random, size, end - (base - 100), 300);
      auto& wanted = reads[static_cast<std::size_t>(rank)];
      std::vector<std::byte> got(wanted.memory_size);
      std::vector<twophase::Access> accesses;
      for (const auto& piece : wanted.pieces)
        accesses.push_back({piece.offset + base - 100, piece.length, got.data() + piece.memory});
      twophase::File reader(comm_, ours, twophase::Mode::read, options_of(config));
      reader.read_all(accesses);
      reader.close();
      for (const auto& piece : wanted.pieces)
        if (std::memcmp(got.data() + piece.memory, expected.data() + piece.offset, piece.length) != 0) {
          ADD_FAILURE() << "read of [" << piece.offset + base - 100 << ", +" << piece.length << ") differs: " << what;
          break;
        }
      if (!everyone_passed(comm_)) return;
    }
}

TEST_F(TwoPhase, ExplicitAggregatorListsAndRefusals) {
  const std::string file = path("config");
  prefill({file}, 5000, 3);
  const auto expected = slurp(file);
  // Aggregators named out of rank order (the last rank first), every other rank.
  std::string config;
  std::vector<int> ranks;
  for (int r = comm_.size() - 1; r >= 0; r -= 2) {
    config += (config.empty() ? "" : ",") + std::to_string(r);
    ranks.push_back(r);
  }
  for (const char* exchange : kExchanges) {
    auto chosen = twophase::Options::from_hints(
        Hints::parse({"cb_config=" + config, "cb_buffer_size=33", "partition=static-cyclic", "lock_size=16",
                      "exchange=" + std::string(exchange)}));
    twophase::File twophase(comm_, file, twophase::Mode::read, chosen);
    EXPECT_EQ(twophase.aggregators(), ranks);
    std::vector<std::byte> got(1000);
    twophase::Access access{static_cast<std::uint64_t>(comm_.rank()) * 700 % 4000, 1000, got.data()};
    twophase.read_all({&access, 1});
    EXPECT_EQ(0, std::memcmp(got.data(), expected.data() + access.offset, 1000)) << exchange;
    twophase.close();
  }

  // A rank that does not exist: refused on every rank, no hang, for reads
  // and writes, and the job goes on.
  for (int missing : {comm_.size(), comm_.size() + 5}) {
    auto options = twophase::Options::from_hints(Hints::parse({"cb_config=0," + std::to_string(missing)}));
    EXPECT_THROW(twophase::File(comm_, file, twophase::Mode::read, options), Error);
    EXPECT_THROW(twophase::File(comm_, file, twophase::Mode::write, options), Error);
    try {
      twophase::File(comm_, file, twophase::Mode::read, options);
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(std::to_string(missing)), std::string::npos) << e.what();
    }
  }
  comm_.barrier();
  // More aggregators than ranks: clamped, and said so.
  {
    twophase::Options options;
    options.cb_nodes = comm_.size() + 3;
    twophase::File clamped(comm_, file, twophase::Mode::read, options);
    EXPECT_EQ(clamped.aggregators().size(), static_cast<std::size_t>(comm_.size()));
    EXPECT_NE(clamped.describe().find("clamped"), std::string::npos) << clamped.describe();
    clamped.close();
  }
  EXPECT_THROW(twophase::Options::from_hints(Hints::parse({"cb_config=1,1"})), Error);
  EXPECT_THROW(twophase::Options::from_hints(Hints::parse({"partition=diagonal"})), Error);
  EXPECT_THROW(twophase::Options::from_hints(Hints::parse({"exchange=carrier-pigeon"})), Error);
  EXPECT_THROW(twophase::Options::from_hints(Hints::parse({"cb_buffer_size=0"})), Error);
  {
    twophase::Options options;
    options.partition = "diagonal";
    EXPECT_THROW(twophase::File(comm_, file, twophase::Mode::read, options), Error);
  }
}

TEST_F(TwoPhase, ErrorsReachEveryRank) {
  const std::string file = path("errors");
  prefill({file}, 5000, 4);
  std::vector<std::byte> got(200);
  {
    // Reading past the end of the file, asked by one rank only, fails on every rank.
    twophase::File reader(comm_, file, twophase::Mode::read, twophase::Options{});
    twophase::Access past{4990, comm_.rank() == comm_.size() - 1 ? 100u : 0u, got.data()};
    EXPECT_THROW(reader.read_all({&past, 1}), Error);
    // The File still works afterwards.
    twophase::Access fine{static_cast<std::uint64_t>(comm_.rank()) * 10, 100, got.data()};
    EXPECT_NO_THROW(reader.read_all({&fine, 1}));
    EXPECT_EQ(0, std::memcmp(got.data(), slurp(file).data() + fine.offset, 100));
    // A read-mode File refuses to write (a local check on every caller).
    twophase::ConstAccess write{0, 1, got.data()};
    EXPECT_THROW(reader.write_all({&write, 1}), Error);
    reader.close();
  }
  // Missing files fail on every rank, for reading and for writing.
  EXPECT_THROW(twophase::File(comm_, path("absent"), twophase::Mode::read, twophase::Options{}), Error);
  EXPECT_THROW(twophase::File(comm_, path("absent"), twophase::Mode::write, twophase::Options{}), Error);
  comm_.barrier();
  // Collective calls where nobody has anything to do are no-ops.
  {
    twophase::Options options;
    options.cb_nodes = comm_.size();
    options.partition = "persistent";
    twophase::File writer(comm_, file, twophase::Mode::write, options);
    writer.write_all({});
    writer.read_all({});
    twophase::ConstAccess empty{123, 0, got.data()};
    writer.write_all({&empty, 1});
    writer.sync();
    writer.close();
  }
  comm_.barrier();
  EXPECT_EQ(difference(slurp(file),
                       [&] {
                         std::vector<std::byte> bytes(5000);
                         for (std::uint64_t i = 0; i < bytes.size(); ++i) bytes[i] = pattern(4, i);
                         return bytes;
                       }()),
            "");
}

// An access whose end passes 2^64, on one rank only: every rank's call
// fails (twophase.hpp: "Errors on one rank reach every rank at the end of
// the call, never a hang"), and the file still closes on every rank. (The
// engine once threw on that rank before the first collective, and the job
// aborted in the next one.)
TEST_F(TwoPhase, AccessPastTwoToThe64OnOneRankFailsEverywhere) {
  const std::string file = path("overflow");
  prefill({file}, 100, 5);
  twophase::File reader(comm_, file, twophase::Mode::read, twophase::Options{});
  std::vector<std::byte> got(100);
  twophase::Access access{~std::uint64_t{0} - 10, comm_.rank() == 0 ? 20u : 0u, got.data()};
  EXPECT_THROW(reader.read_all({&access, 1}), Error);
  reader.close();
}

// cb_config and cb_buffer_size set in Options directly (not through hints):
// File refuses a rank named twice, a negative rank and an empty buffer, on
// every rank, as from_hints() does. (It once accepted a rank named twice and
// read wrong bytes, aborted in MPI_Bcast on a negative rank, and looped
// allocating on cb_buffer_size = 0.)
TEST_F(TwoPhase, FileRefusesBadOptionsGivenInCode) {
  const std::string file = path("twice");
  prefill({file}, 3000, 9);
  auto refused = [&](twophase::Options options, const std::string& expected) {
    try {
      twophase::File reader(comm_, file, twophase::Mode::read, options);
      ADD_FAILURE() << "accepted; expected: " << expected;
      reader.close();
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(expected), std::string::npos) << e.what();
    }
  };
  twophase::Options twice;
  twice.cb_config = {0, 0};
  refused(twice, "names rank 0 twice");
  twophase::Options negative;
  negative.cb_config = {-1};
  refused(negative, "names rank -1");
  twophase::Options empty;
  empty.cb_buffer_size = 0;
  refused(empty, "cb_buffer_size");
}

// Direct writes (direct_write, on by default): accesses of whole 4 KiB
// blocks go through O_DIRECT, the rest through the page cache, in the same
// call. Aggregated (the ranks' blocks alternate) and independent (each rank
// its own region, ds=never so the whole blocks are a run of their own), over
// a file with old bytes in its holes: the file must hold exactly what a
// plain write would, with direct_write on and off, and say which way it
// wrote (buffered on a tmpfs, which has no O_DIRECT).
TEST_F(TwoPhase, DirectWritesOfWholeBlocksMatchBufferedOnes) {
  constexpr std::uint64_t kBlock = 4096;
  const auto size = static_cast<std::uint64_t>(comm_.size()), rank = static_cast<std::uint64_t>(comm_.rank());
  for (const bool direct : {true, false}) {
    for (const bool interleaved : {true, false}) {
      const std::string file = path(std::string("direct-") + (direct ? "on" : "off") + (interleaved ? "-il" : "-ind"));
      const std::uint64_t total = 4 * kBlock * size + 1000;
      prefill({file}, total, 11);
      // Each rank: two whole blocks and a 1000-byte piece that covers no block.
      auto pieces_of = [&](std::uint64_t r) {
        std::vector<std::pair<std::uint64_t, std::uint64_t>> list;
        if (interleaved) {
          for (std::uint64_t k = 0; k < 2; ++k) list.emplace_back((k * size + r) * kBlock, kBlock);
          list.emplace_back(2 * size * kBlock + 500 + r * 1000, 1000);
        } else {
          list.emplace_back(3 * r * kBlock, 2 * kBlock);
          list.emplace_back((3 * r + 2) * kBlock + 500, 1000);
        }
        return list;
      };
      std::vector<std::byte> memory(3 * kBlock);
      std::vector<twophase::ConstAccess> accesses;
      std::uint64_t at = 0;
      for (const auto& [offset, length] : pieces_of(rank)) {
        for (std::uint64_t i = 0; i < length; ++i) memory[at + i] = pattern(99, offset + i);
        accesses.push_back(twophase::ConstAccess{offset, length, memory.data() + at});
        at += length;
      }
      twophase::Options options;
      options.direct_write = direct;
      options.cb_nodes = 1;
      if (!interleaved) options.sieving = twophase::Sieving::never;
      twophase::File writer(comm_, file, twophase::Mode::write, options);
      writer.write_all(accesses);
      EXPECT_EQ(writer.last_call().independent, interleaved && size > 1 ? 0u : 1u);
      writer.sync();
      if (rank == 0) {
        struct statfs fs {};
        const bool can = direct && ::statfs(file.c_str(), &fs) == 0 && fs.f_type != TMPFS_MAGIC;
        EXPECT_NE(writer.describe().find(can ? "direct writes" : "buffered writes"), std::string::npos)
            << writer.describe();
      }
      writer.close();
      comm_.barrier();
      std::vector<std::byte> expected(total);
      for (std::uint64_t i = 0; i < total; ++i) expected[i] = pattern(11, i);
      for (std::uint64_t r = 0; r < size; ++r)
        for (const auto& [offset, length] : pieces_of(r))
          for (std::uint64_t i = 0; i < length; ++i) expected[offset + i] = pattern(99, offset + i);
      EXPECT_EQ(difference(slurp(file), expected), "") << "direct_write " << direct << ", interleaved " << interleaved;
    }
  }
}

}  // namespace
