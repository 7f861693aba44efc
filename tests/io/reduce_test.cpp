// SPDX-License-Identifier: MIT
// io::tree_rounds and io::reduce_tree: each rank's data reaches rank 0
// exactly once, and after every round a rank holds exactly the data of the
// group of ranks the schedule names.
#include "volseg/io/reduce.hpp"

#include <gtest/gtest.h>
#include <mpi.h>

#include <algorithm>
#include <cstddef>
#include <string>
#include <utility>
#include <vector>

#include "volseg/io/comm.hpp"
#include "volseg/io/error.hpp"

using volseg::io::tree_rounds;
using volseg::io::TreeRound;

namespace {

std::vector<int> ranks_from(int begin, int end) {
  std::vector<int> ranks;
  for (int r = begin; r < end; ++r) ranks.push_back(r);
  return ranks;
}

}  // namespace

TEST(TreeRounds, EveryRanksDataReachesRankZeroOnce) {
  for (int ranks = 1; ranks <= 9; ++ranks) {
    SCOPED_TRACE("ranks " + std::to_string(ranks));
    std::vector<std::vector<TreeRound>> rounds;
    for (int r = 0; r < ranks; ++r) rounds.push_back(tree_rounds(r, ranks));
    int levels = 0;
    while ((1 << levels) < ranks) ++levels;
    for (const auto& of_rank : rounds) ASSERT_EQ(static_cast<int>(of_rank.size()), levels);
    std::vector<std::vector<int>> held;  // the ranks whose data each rank holds
    for (int r = 0; r < ranks; ++r) held.push_back({r});
    for (int k = 0; k < levels; ++k) {
      for (int r = 0; r < ranks; ++r) {
        const TreeRound& round = rounds[static_cast<std::size_t>(r)][static_cast<std::size_t>(k)];
        EXPECT_EQ(round.step, 1 << k);
        if (round.send_to < 0) continue;
        ASSERT_LT(round.send_to, r);
        EXPECT_EQ(round.receive_from, -1) << "rank " << r << " both sends and receives";
        const TreeRound& partner = rounds[static_cast<std::size_t>(round.send_to)][static_cast<std::size_t>(k)];
        ASSERT_EQ(partner.receive_from, r) << "round " << k << ": rank " << r << "'s partner does not receive";
        auto& to = held[static_cast<std::size_t>(round.send_to)];
        auto& from = held[static_cast<std::size_t>(r)];
        to.insert(to.end(), from.begin(), from.end());
        from.clear();
      }
      for (int r = 0; r < ranks; ++r) {
        const TreeRound& round = rounds[static_cast<std::size_t>(r)][static_cast<std::size_t>(k)];
        if (round.receive_from >= 0) {
          EXPECT_EQ(rounds[static_cast<std::size_t>(round.receive_from)][static_cast<std::size_t>(k)].send_to, r);
        }
        auto mine = held[static_cast<std::size_t>(r)];
        std::sort(mine.begin(), mine.end());
        if (round.holds) {
          EXPECT_EQ(mine, ranks_from(round.group_begin, round.group_end)) << "round " << k;
        } else {
          EXPECT_TRUE(mine.empty()) << "round " << k << ": rank " << r << " still holds data";
        }
      }
    }
    EXPECT_EQ(held[0], ranks_from(0, ranks));  // in any order, each once: sorted and compared
    for (int r = 1; r < ranks; ++r) EXPECT_TRUE(held[static_cast<std::size_t>(r)].empty());
  }
}

TEST(TreeRounds, RefusesARankOutsideTheRanks) {
  EXPECT_THROW(tree_rounds(3, 3), volseg::Error);
  EXPECT_THROW(tree_rounds(0, 0), volseg::Error);
  EXPECT_THROW(tree_rounds(-1, 2), volseg::Error);
}

// Collective, on the test's ranks: each rank's rank travels up the tree;
// after each round every rank that holds data holds its group's ranks.
TEST(ReduceTree, EachRanksRecordReachesRankZeroOnce) {
  const volseg::Comm comm(MPI_COMM_WORLD);
  std::vector<int> held{comm.rank()};
  int rounds = 0;
  volseg::io::reduce_tree<int>(
      comm.get(), [&] { return std::exchange(held, {}); }, [&](int rank) { held.push_back(rank); },
      [&](const TreeRound& round) {
        ++rounds;
        auto mine = held;
        std::sort(mine.begin(), mine.end());
        if (round.holds) {
          EXPECT_EQ(mine, ranks_from(round.group_begin, round.group_end));
        } else {
          EXPECT_TRUE(mine.empty());
        }
      });
  EXPECT_EQ(rounds, static_cast<int>(tree_rounds(comm.rank(), comm.size()).size()));
  std::sort(held.begin(), held.end());
  if (comm.rank() == 0) {
    EXPECT_EQ(held, ranks_from(0, comm.size()));
  } else {
    EXPECT_TRUE(held.empty());
  }
}
