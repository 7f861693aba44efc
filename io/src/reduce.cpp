// SPDX-License-Identifier: MIT
#include "volseg/io/reduce.hpp"

#include <algorithm>
#include <string>

#include "volseg/io/error.hpp"

namespace volseg::io {

std::vector<TreeRound> tree_rounds(int rank, int ranks) {
  if (ranks < 1 || rank < 0 || rank >= ranks)
    throw Error("internal error: rank " + std::to_string(rank) + " of " + std::to_string(ranks) +
                " in a tree of ranks");
  std::vector<TreeRound> rounds;
  for (int step = 1; step < ranks; step *= 2) {
    TreeRound round;
    round.step = step;
    const int place = rank % (2 * step);
    if (place == step) round.send_to = rank - step;
    if (place == 0 && rank + step < ranks) round.receive_from = rank + step;
    round.holds = place == 0;
    if (round.holds) {
      round.group_begin = rank;
      round.group_end = std::min(ranks, rank + 2 * step);
    }
    rounds.push_back(round);
  }
  return rounds;
}

}  // namespace volseg::io
