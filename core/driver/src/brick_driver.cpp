// SPDX-License-Identifier: MIT
#include "volseg/segment/brick_driver.hpp"

#include <mpi.h>

#include <algorithm>
#include <exception>
#include <string>

#include "volseg/io/error.hpp"
#include "volseg/io/watchdog.hpp"

namespace volseg::segment {
namespace {

std::vector<io::Extent> extents_of(const BrickLayout& layout, const std::vector<std::int64_t>& bricks) {
  std::vector<io::Extent> extents;
  extents.reserve(bricks.size());
  for (const auto brick : bricks) extents.push_back(layout.brick(brick));
  return extents;
}

}  // namespace

BrickDriver::BrickDriver(const Comm& comm, std::vector<io::Extent> items, std::vector<std::int64_t> ids,
                         BrickControls controls)
    : comm_(comm), items_(std::move(items)), ids_(std::move(ids)), controls_(controls) {
  if (ids_.empty())
    for (std::size_t k = 0; k < items_.size(); ++k) ids_.push_back(static_cast<std::int64_t>(k));
  if (ids_.size() != items_.size())
    throw Error("internal error: " + std::to_string(ids_.size()) + " brick ids for " + std::to_string(items_.size()) +
                " bricks");
}

// bricks is copied, not moved: the order in which arguments are evaluated is
// unspecified, and extents_of reads it.
BrickDriver::BrickDriver(const Comm& comm, const BrickLayout& layout, std::vector<std::int64_t> bricks,
                         BrickControls controls)
    : BrickDriver(comm, extents_of(layout, bricks), bricks, controls) {}

std::size_t BrickDriver::largest_voxels() const {
  std::size_t largest = 0;
  for (const auto& item : items_) largest = std::max(largest, static_cast<std::size_t>(item.voxels()));
  return largest;
}

std::size_t BrickDriver::items_per_round(std::size_t item_bytes) const {
  return std::max<std::size_t>(1, controls_.round_bytes / std::max<std::size_t>(item_bytes, 1));
}

std::int64_t BrickDriver::rounds(std::size_t per_round) const {
  const auto mine = static_cast<std::int64_t>((size() + per_round - 1) / std::max<std::size_t>(per_round, 1));
  return io::Rounds(comm_, mine, true).rounds();
}

void BrickDriver::item_done(std::size_t k, bool may_stop) {
  ++finished_;
  io::watchdog::beat();
  if (controls_.progress)
    controls_.progress->advance(1, static_cast<std::uint64_t>(items_[k].voxels()) * controls_.bytes_per_voxel);
  if (!may_stop) return;
  const bool last = static_cast<std::size_t>(finished_) == size();
  if (const int signal = controls_.interrupt && !last ? controls_.interrupt->load() : 0) throw Interrupted(signal);
  if (controls_.stop && controls_.stop->requested()) throw Cancelled();
}

int BrickDriver::agree_stop() {
  if (const int already = stopped_.load()) return already;
  if (!controls_.stop && !controls_.interrupt) return 0;
  // A scheduler's signal on any rank stops every rank; the user's Cancel,
  // asked on rank 0, when there is none. One reduction carries both.
  const int here[2] = {controls_.interrupt ? controls_.interrupt->load() : 0,
                       controls_.stop && controls_.stop->asked() ? 1 : 0};
  int all[2] = {0, 0};
  check_mpi(MPI_Allreduce(here, all, 2, MPI_INT, MPI_MAX, comm_.get()), "MPI_Allreduce");
  const int any = all[0] != 0 ? all[0] : all[1] != 0 ? kCancelled : 0;
  stopped_.store(any);
  return any;
}

void BrickDriver::throw_if_stopped() const {
  const int reason = stopped_.load();
  if (reason == kCancelled) throw Cancelled();
  if (reason != 0) throw Interrupted(reason);
}

void BrickDriver::record(std::size_t k, const Stats& stats) {
  if (controls_.journal) controls_.journal->record(ids_[k], stats);
}

void BrickDriver::record_collective(std::size_t first, const std::vector<Stats>& stats) {
  if (!controls_.journal) return;
  std::exception_ptr unflushed;
  try {
    controls_.journal->flush_data();
  } catch (...) {
    unflushed = std::current_exception();
  }
  agree(comm_, unflushed);  // and a barrier: every rank has flushed
  const auto begin = ids_.begin() + static_cast<std::ptrdiff_t>(first);
  controls_.journal->record(std::vector<std::int64_t>(begin, begin + static_cast<std::ptrdiff_t>(stats.size())), stats,
                            true);
}

}  // namespace volseg::segment
