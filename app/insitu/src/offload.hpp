// SPDX-License-Identifier: MIT
// The simulation's side of a hook that hands steps off (--async,
// --analysis-ranks): publish does the least that makes the step safe to
// release, and returns.
//
//   publish: check the block, and in one reduction over the simulation's
//   ranks agree on the grid and the step, on whether any rank's queue is
//   full and whether the analysis has failed; then (the same on every rank)
//   throw the analysis's error, skip the step (--when-full skip), or wait for
//   a slot (block) and hand the step off: a copy of the block into a slot of
//   the queue (none with --borrow), taken in by the helper thread
//   (ThreadFront) or sent to the analysis ranks (RankFront, offload_ranks.cpp).
//
// The analysis runs Pipeline, the synchronous hook's code, on the steps in
// the order published, so what it writes is what the synchronous hook
// writes.
#pragma once

#include <chrono>
#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "pipeline.hpp"
#include "volseg/insitu/insitu.hpp"
#include "volseg/io/comm.hpp"

namespace volseg::insitu::detail {

// Memory for one array of a step: never zero-filled (the copy writes every
// byte), kept from step to step. Ordinary pages: asking for transparent
// huge pages (io::allocate_huge) made the first copies 10x slower here,
// the kernel compacting memory to find them.
class StepBuffer {
 public:
  void resize(std::size_t bytes);  // keeps its memory when that is enough
  std::byte* data() const { return data_.get(); }
  std::size_t size() const { return size_; }

 private:
  std::unique_ptr<std::byte[]> data_;
  std::size_t size_ = 0, capacity_ = 0;
};

// A step held by the queue: the field over buffers of its own (or, with
// --borrow, the caller's pointers).
struct Staged {
  Field field;
  std::vector<StepBuffer> buffers;       // values, then the arrays the analysis reads
  std::optional<StepRecord> unanalysed;  // a step the analysis only records
  double simulation = 0, share = 0;      // as the simulation measured them
};

// The arrays of a field the analysis reads: the values, and the other
// arrays only when --expr or --where may name them.
bool needs_arrays(const Options& options);

// Copies what the analysis reads of `field` (over `extent`, a part of the
// stored block, packed x fastest) into `staged`, reusing its buffers.
// Returns the bytes it holds.
std::uint64_t stage(const Field& field, const io::Extent& extent, bool arrays, Staged& staged);

class Front {
 public:
  Front(MPI_Comm simulation, const Options& options);  // collective (duplicates it)
  virtual ~Front() = default;
  Front(const Front&) = delete;
  Front& operator=(const Front&) = delete;

  // Collective over the simulation's ranks.
  const StepRecord& publish(const Field& field);
  // Collective: every step handed off is analysed, the analysis finalized;
  // throws its error, if it met one.
  void finalize();

  const std::vector<StepRecord>& records() const { return records_; }
  const HandOff& hand_off() const { return hand_off_; }
  const Comm& comm() const { return comm_; }

 protected:
  // This rank's queue holds --queue steps (after taking back those done).
  virtual bool full() = 0;
  // Waits until this rank's queue has room.
  virtual void wait_for_room() = 0;
  // The analysis has said (to this rank) that it failed.
  virtual bool failed() = 0;
  // Hands a step off (boxes: every simulation rank's block, by rank).
  virtual void hand_off(const Field& field, const std::vector<io::Extent>& boxes, double simulation, double share) = 0;
  // Tells the analysis of a step it will not analyse.
  virtual void skip(const StepRecord& record) = 0;
  // Waits until all but the newest `keep` steps are taken in (--borrow).
  virtual void release_borrowed(int keep) = 0;
  // Collective: every step handed off taken in, the analysis ended and
  // finalized; its error ("" if none).
  virtual std::string drain() = 0;

  void held(std::uint64_t bytes);  // the queue now holds this many bytes
  // For a derived destructor: drains unless finalized (errors only
  // printed), so that the analysis is never left waiting.
  void finish_quietly();

  Options options_;
  HandOff hand_off_;

 private:
  Comm comm_;
  std::vector<StepRecord> records_;
  StepRecord off_step_;
  std::optional<io::Extent> last_box_;
  io::Index3 last_dims_{};
  std::vector<io::Extent> boxes_;
  std::chrono::steady_clock::time_point last_exit_;
  double simulation_seconds_ = 0;
  bool finalized_ = false;
};

// --async: a helper thread per rank, over a communicator of its own.
std::unique_ptr<Front> make_thread_front(MPI_Comm simulation, const Options& options);

// --analysis-ranks K: collective over comm. On the first N-K ranks, returns
// their front (simulation: their communicator); on the last K, serves the
// steps until the simulation's ranks finalize, keeping the analysis's
// records in `served`, and returns null.
std::unique_ptr<Front> start_analysis_ranks(MPI_Comm comm, const Options& options, std::vector<StepRecord>& served,
                                            double& create_seconds);

}  // namespace volseg::insitu::detail
