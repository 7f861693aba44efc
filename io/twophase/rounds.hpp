// SPDX-License-Identifier: MIT
// How the engine lays an aggregator's requests over rounds: merging the
// clients' sorted lists, placing the rounds' windows over requested bytes
// only, and cutting pieces and requests at the windows' edges the same way
// on clients and aggregators. Internal to io/twophase/.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <iterator>
#include <utility>
#include <vector>

#include "volseg/io/error.hpp"

namespace volseg::io::twophase::detail {

// An aggregator's items (pieces or requests, sorted by file offset) cut at
// the edges of its rounds' windows and ordered by round, keeping file
// order inside a round. Items may overlap (reads), so an item's tail can
// belong to a later round than the next item's head: hence the stable sort,
// not a cursor. Clients and the aggregator cut the same list the same way,
// so the pieces of a round match one for one on both sides.
struct Cut {
  std::uint64_t round = 0;
  std::size_t item = 0;
  std::uint64_t skip = 0, length = 0, position = 0;  // position: in the round's buffer
};

template <class Item, class Coordinate>
std::vector<Cut> cut_into_rounds(const std::vector<Item>& items, const std::vector<std::uint64_t>& windows,
                                 std::uint64_t window, Coordinate&& coordinate) {
  std::vector<Cut> cuts;
  cuts.reserve(items.size());
  for (std::size_t i = 0; i < items.size(); ++i) {
    std::uint64_t done = 0;
    while (done < items[i].length) {
      const std::uint64_t c = coordinate(items[i].offset + done);
      const auto after = std::upper_bound(windows.begin(), windows.end(), c);
      if (after == windows.begin() || c - *std::prev(after) >= window)
        throw Error("twophase: internal error: a requested byte outside every round's window");
      const auto round = static_cast<std::uint64_t>(after - windows.begin() - 1);
      const std::uint64_t start = windows[round];
      const std::uint64_t n = std::min(items[i].length - done, start + window - c);
      cuts.push_back(Cut{round, i, done, n, c - start});
      done += n;
    }
  }
  const auto by_round = [](const Cut& a, const Cut& b) { return a.round < b.round; };
  if (!std::is_sorted(cuts.begin(), cuts.end(), by_round)) std::stable_sort(cuts.begin(), cuts.end(), by_round);
  return cuts;
}

// Orders items that arrive as sorted runs (each client's list is in file
// order) by merging the runs pairwise: O(n log runs) instead of a full sort,
// nothing at all for one run. bounds: where each run starts, then the end.
// A run out of order (never expected) falls back to a sort.
template <class T, class Less>
void merge_runs(std::vector<T>& items, std::vector<std::size_t> bounds, Less less) {
  for (std::size_t i = 0; i + 1 < bounds.size(); ++i)
    if (!std::is_sorted(items.begin() + static_cast<std::ptrdiff_t>(bounds[i]),
                        items.begin() + static_cast<std::ptrdiff_t>(bounds[i + 1]), less)) {
      std::sort(items.begin(), items.end(), less);
      return;
    }
  bounds.erase(std::unique(bounds.begin(), bounds.end()), bounds.end());  // empty runs
  while (bounds.size() > 2) {
    std::vector<std::size_t> merged;
    for (std::size_t i = 0; i + 2 < bounds.size(); i += 2) {
      std::inplace_merge(items.begin() + static_cast<std::ptrdiff_t>(bounds[i]),
                         items.begin() + static_cast<std::ptrdiff_t>(bounds[i + 1]),
                         items.begin() + static_cast<std::ptrdiff_t>(bounds[i + 2]), less);
      merged.push_back(bounds[i]);
    }
    if (bounds.size() % 2 == 0) merged.push_back(bounds[bounds.size() - 2]);  // an odd run out, unmerged
    merged.push_back(bounds.back());
    bounds = std::move(merged);
  }
}

// The start coordinates of an aggregator's rounds: each window holds `window`
// bytes of its domain and begins at the first requested byte at or after the
// previous window's end. spans must be sorted. `used`: the most buffer bytes
// any one round needs (the collective buffers are sized to it, not to the
// window, so a small call does not pay for cb_buffer_size).
inline std::vector<std::uint64_t> place_windows(const std::vector<std::pair<std::uint64_t, std::uint64_t>>& spans,
                                                std::uint64_t window, std::uint64_t& used) {
  std::vector<std::uint64_t> starts;
  std::uint64_t covered = 0;  // requested coordinates below this are in a window
  std::size_t i = 0;
  while (i < spans.size()) {
    if (spans[i].second <= covered) {
      ++i;
      continue;
    }
    starts.push_back(std::max(spans[i].first, covered));
    covered = starts.back() + window;
  }
  // A round's buffer reaches as far as the furthest requested byte of its
  // window; spans may straddle windows, and an earlier span may reach
  // further into a window than the one that opened the next.
  used = 0;
  for (const auto& [begin, end] : spans) {
    auto k = static_cast<std::size_t>(std::upper_bound(starts.begin(), starts.end(), begin) - starts.begin() - 1);
    for (; k < starts.size() && starts[k] < end; ++k)
      used = std::max(used, std::min(end, starts[k] + window) - starts[k]);
  }
  return starts;
}

// Hands out the cuts of one round after another.
class RoundCursor {
 public:
  explicit RoundCursor(std::vector<Cut> cuts = {}) : cuts_(std::move(cuts)) {}
  template <class Emit>
  void take(std::uint64_t round, Emit&& emit) {
    for (; next_ < cuts_.size() && cuts_[next_].round == round; ++next_) emit(cuts_[next_]);
  }

 private:
  std::vector<Cut> cuts_;
  std::size_t next_ = 0;
};

}  // namespace volseg::io::twophase::detail
