// SPDX-License-Identifier: MIT
// Rounds that every rank joins: the one loop of volseg's bricked work.
//
// MPI-IO, PnetCDF and parallel netCDF-4 make every read_all/write_all a
// collective call: every rank must make the same number of them, so a rank
// with fewer bricks (or none left) joins the others' rounds with nothing. A
// rank whose brick fails (an I/O error met on this rank only) must not leave
// either: it too joins the remaining rounds with nothing, and the outcome is
// agreed once at the end, so that every rank throws the same, typed, error.
// Independent backends need none of this: a rank runs its own items and
// stops at its first failure, and the ranks still agree at the end.
//
// The MPI backends' read_all/write_all run through Rounds::run; every
// bricked job (segment's pipelines, label, pyramid, render's loading, the
// in-situ hook's output) runs through segment::BrickDriver, which adds a
// job's policies to these rounds: progress, stopping, the journal, memory.
#pragma once

#include <cstdint>
#include <exception>
#include <optional>
#include <utility>
#include <vector>

#include "volseg/io/comm.hpp"
#include "volseg/io/error.hpp"
#include "volseg/io/types.hpp"
#include "volseg/io/volume.hpp"
#include "volseg/io/watchdog.hpp"

namespace volseg::io {

class Rounds {
 public:
  // Collective: `items` is this rank's count. With `collective` every rank
  // runs as many rounds as the rank with the most items.
  Rounds(const Comm& comm, std::int64_t items, bool collective) : comm_(comm), items_(items), collective_(collective) {
    rounds_ = items;
    if (collective) check_mpi(MPI_Allreduce(&items, &rounds_, 1, MPI_INT64_T, MPI_MAX, comm.get()), "MPI_Allreduce");
  }

  std::int64_t rounds() const { return rounds_; }
  bool collective() const { return collective_; }

  // Collective. Calls step(std::optional<std::int64_t> item) once a round:
  // this rank's items in order, then (collective) nullopt for the rounds
  // past them and for every round after a failure here. Agrees at the end:
  // a failure on any rank is thrown on every rank.
  template <class Step>
  void run(Step&& step) const {
    run(std::forward<Step>(step), [] { return true; });
  }

  // As run(step), with keep_going() asked before each round, by every rank
  // (collective rounds: a collective call is allowed, and every rank must
  // get the same answer). false ends the rounds, and this rank's items.
  template <class Step, class KeepGoing>
  void run(Step&& step, KeepGoing&& keep_going) const {
    std::exception_ptr failure;
    for (std::int64_t round = 0; round < rounds_; ++round) {
      if (!keep_going()) break;
      watchdog::beat();
      const bool mine = round < items_ && !failure;
      if (!mine && !collective_) break;
      try {
        step(mine ? std::optional<std::int64_t>(round) : std::nullopt);
      } catch (...) {
        if (!failure) failure = std::current_exception();
      }
    }
    agree(comm_, failure);
  }

 private:
  const Comm& comm_;
  std::int64_t items_ = 0, rounds_ = 0;
  bool collective_ = false;
};

// One round's I/O of one extent (nullptr: this rank joins with nothing): the
// collective call for a collective backend, else the independent one.
inline void read_in_round(VolumeReader& reader, const Extent* extent, void* buffer) {
  if (!reader.capabilities().collective) {
    if (extent) reader.read(*extent, buffer);
    return;
  }
  std::vector<Extent> extents;
  std::vector<void*> buffers;
  if (extent) extents.push_back(*extent), buffers.push_back(buffer);
  reader.read_all(extents, buffers);
}

inline void write_in_round(VolumeWriter& writer, const Extent* extent, const void* buffer) {
  if (!writer.capabilities().collective) {
    if (extent) writer.write(*extent, buffer);
    return;
  }
  std::vector<Extent> extents;
  std::vector<const void*> buffers;
  if (extent) extents.push_back(*extent), buffers.push_back(buffer);
  writer.write_all(extents, buffers);
}

}  // namespace volseg::io
