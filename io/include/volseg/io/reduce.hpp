// SPDX-License-Identifier: MIT
// A reduction up a binary tree of ranks, its partners given as DIY's reduce
// takes them: a schedule (tree_rounds) that says, for a rank and the number
// of ranks, whom the rank hands its data to or receives data from in each
// round, and a driver (reduce_tree) that runs the caller's steps round by
// round. Round k: a rank r with r mod 2^(k+1) = 2^k hands what it holds to
// r - 2^k and holds nothing after; a rank with r mod 2^(k+1) = 0 receives
// from r + 2^k (when that rank exists) and then holds the data of the ranks
// [r, min(ranks, r + 2^(k+1))). After ceil(log2 ranks) rounds rank 0 holds
// every rank's data, each once, and each round moves at most half of what is
// still held.
#pragma once

#include <mpi.h>

#include <vector>

#include "volseg/io/comm.hpp"
#include "volseg/io/messages.hpp"

namespace volseg::io {

// One rank's part in one round of the tree.
struct TreeRound {
  int step = 1;           // 2^round: the distance to the partner
  int send_to = -1;       // the rank this one hands its data to, or -1
  int receive_from = -1;  // the rank whose data this one receives, or -1
  // After the round: whether this rank still holds data, and then the ranks
  // whose data it holds, [group_begin, group_end).
  bool holds = false;
  int group_begin = 0, group_end = 0;
};

// The rounds of rank `rank` of `ranks` (none for one rank); every rank has
// the same number, ceil(log2 ranks).
std::vector<TreeRound> tree_rounds(int rank, int ranks);

// Collective. Reduces up the tree of tree_rounds: in each round a rank that
// hands on calls take() (a std::vector<Record>: what it holds, handed over)
// and sends it to its partner, which calls absorb(record) for each record
// it receives; then every rank calls after_round(round), which may itself
// make collective calls (every rank makes it in every round).
template <class Record, class Take, class Absorb, class AfterRound>
void reduce_tree(MPI_Comm comm, Take&& take, Absorb&& absorb, AfterRound&& after_round) {
  int rank = 0, ranks = 1;
  check_mpi(MPI_Comm_rank(comm, &rank), "MPI_Comm_rank");
  check_mpi(MPI_Comm_size(comm, &ranks), "MPI_Comm_size");
  for (const TreeRound& round : tree_rounds(rank, ranks)) {
    std::vector<std::vector<Record>> handed(static_cast<std::size_t>(ranks));
    if (round.send_to >= 0) handed[static_cast<std::size_t>(round.send_to)] = take();
    for (const Record& record : exchange(comm, handed)) absorb(record);
    after_round(round);
  }
}

}  // namespace volseg::io
