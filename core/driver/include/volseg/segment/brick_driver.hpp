// SPDX-License-Identifier: MIT
// The brick driver: the one loop of every bricked job, after DIY's Master
// (one block driver with a memory limit and a queue policy).
//
// A job gives the driver this rank's items (the bricks of a BrickLayout, or
// any extents: render's loading reads slabs of planes) and what the job
// reports to and hears from (BrickControls). The driver owns, in one place:
//  - rounds: with collective I/O every rank joins as many rounds as the
//    rank with the most items, and a failure on one rank is agreed by all
//    (io::Rounds, the loop underneath);
//  - progress: a finished item moves the job's bar;
//  - stopping: a user's Cancel (Stop) and a scheduler's signal (Interrupt)
//    are looked at between items. In collective rounds they are agreed
//    before each round, so every rank skips the same rounds; otherwise each
//    rank stops at its next item, and the job's agreement carries the kind;
//  - the journal: an item is recorded once its output is written;
//  - the memory bound: how many items a round stages (items_per_round).
// Segment's pipelines run their own schedules (mapped windows, arrivals in
// any order, reads and writes overlapped on I/O threads) and call the
// driver at the same points: item_done, agree_stop, record.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <utility>
#include <vector>

#include "volseg/io/comm.hpp"
#include "volseg/io/rounds.hpp"
#include "volseg/io/types.hpp"
#include "volseg/segment/brick_layout.hpp"
#include "volseg/segment/cancel.hpp"
#include "volseg/segment/journal.hpp"
#include "volseg/segment/progress.hpp"
#include "volseg/segment/stats.hpp"

namespace volseg::segment {

// What a job reports to and hears from; every pointer may be null. A Stop
// and an Interrupt must be given on every rank or on none (agreeing on them
// is collective).
struct BrickControls {
  Progress* progress = nullptr;                     // moved by each finished item
  Stop* stop = nullptr;                             // a user's Cancel
  const Interrupt* interrupt = nullptr;             // a scheduler's signal on this rank
  Journal* journal = nullptr;                       // resumable output: the bricks written
  std::size_t round_bytes = std::size_t{32} << 20;  // input one round stages, per rank
  std::size_t bytes_per_voxel = 1;                  // what progress counts of an item
};

class BrickDriver {
 public:
  // items: this rank's extents, in the order they run; ids: their brick
  // numbers (what the journal records), or empty for 0, 1, ...
  BrickDriver(const Comm& comm, std::vector<io::Extent> items, std::vector<std::int64_t> ids, BrickControls controls);
  // This rank's bricks of a layout.
  BrickDriver(const Comm& comm, const BrickLayout& layout, std::vector<std::int64_t> bricks, BrickControls controls);
  BrickDriver(const BrickDriver&) = delete;
  BrickDriver& operator=(const BrickDriver&) = delete;

  std::size_t size() const { return items_.size(); }
  const io::Extent& extent(std::size_t k) const { return items_[k]; }
  std::int64_t id(std::size_t k) const { return ids_[k]; }
  const std::vector<std::int64_t>& ids() const { return ids_; }
  const BrickControls& controls() const { return controls_; }
  std::int64_t finished() const { return finished_; }  // items done on this rank
  std::size_t largest_voxels() const;                  // of this rank's items; 0 without any

  // Collective when `collective`. Calls step(std::optional<std::size_t> k)
  // once a round: this rank's items in order, then (collective) nullopt for
  // the rounds it joins with nothing. An item's step returning is the item
  // done (item_done). Ends with the ranks' agreement: a failure, a Cancel or
  // a signal on any rank is thrown, typed, on every rank.
  template <class Step>
  void run(bool collective, Step&& step) {
    const io::Rounds rounds(comm_, static_cast<std::int64_t>(size()), collective);
    rounds.run(
        [&](std::optional<std::int64_t> round) {
          if (!round) return step(std::optional<std::size_t>());
          const auto k = static_cast<std::size_t>(*round);
          step(std::optional<std::size_t>(k));
          item_done(k, !collective);
        },
        [&] { return !collective || agree_stop() == 0; });
    throw_if_stopped();
  }

  // Items of item_bytes each that one round stages within round_bytes (one at least).
  std::size_t items_per_round(std::size_t item_bytes) const;
  // Collective: the rounds every rank joins when each takes `per_round` items a round.
  std::int64_t rounds(std::size_t per_round) const;

  // Item k is done: counts it and moves the progress bar. With may_stop (a
  // rank that makes no collective call while it works), throws Cancelled
  // when the user asked, or Interrupted on a signal unless k was this
  // rank's last item (it has nothing left to keep for later).
  void item_done(std::size_t k, bool may_stop = true);
  // Collective, every rank the same answer: 0 to go on, else the signal
  // any rank has had, or kCancelled for the user's Cancel. Remembered: once
  // stopped, later calls return the same without communicating.
  static constexpr int kCancelled = -1;
  int agree_stop();
  int stopped() const { return stopped_.load(); }
  // After the rounds: Interrupted or Cancelled when agree_stop stopped them.
  void throw_if_stopped() const;

  // The journal's record of item k (its statistics), when there is a journal.
  void record(std::size_t k, const Stats& stats);
  // Collective: items [first, first + stats.size()) written by collective
  // calls, in which an aggregator on another rank may have written this
  // rank's bytes: every rank flushes what its node wrote, and all have,
  // before any records an item.
  void record_collective(std::size_t first, const std::vector<Stats>& stats);

 private:
  const Comm& comm_;
  std::vector<io::Extent> items_;
  std::vector<std::int64_t> ids_;
  BrickControls controls_;
  std::int64_t finished_ = 0;
  std::atomic<int> stopped_{0};
};

}  // namespace volseg::segment
