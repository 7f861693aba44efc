// SPDX-License-Identifier: MIT
// Stopping a parallel job early. A user asks on rank 0 (from any thread: the
// GUI's Cancel button sets a CancelFlag); a job carries the request to every
// rank with a Stop, so that all ranks leave together and the job's agreement
// (volseg::agree) makes it fail everywhere with "cancelled", leaving no
// output behind.
#pragma once

#include <mpi.h>

#include <atomic>
#include <string>

#include "volseg/io/comm.hpp"
#include "volseg/io/error.hpp"

namespace volseg::segment {

// Set from any thread of rank 0; read by the job running there.
class CancelFlag {
 public:
  void request() { requested_.store(true, std::memory_order_relaxed); }
  void reset() { requested_.store(false, std::memory_order_relaxed); }
  bool requested() const { return requested_.load(std::memory_order_relaxed); }

 private:
  std::atomic<bool> requested_{false};
};

// What a cancelled job throws (every rank, after the agreement): io's
// Cancelled, whose message is "cancelled".
using volseg::Cancelled;
inline constexpr const char* cancelled_message = Cancelled::message;

// A scheduler's warning that a job's time is nearly up (Slurm's
// --signal=B:USR1@120, forwarded by mpirun to every rank): the caller's
// signal handler stores the signal's number in an Interrupt, and the job,
// on each rank, stops taking bricks, finishes those in flight, journals
// them and fails with io's Interrupted ("interrupted by SIGUSR1"), leaving
// its partial output for --resume.
using Interrupt = std::atomic<int>;
using volseg::Interrupted;

// One job's channel for rank 0's request. Two ways to ask, for two kinds of
// pipeline:
//  - requested(): not collective. Rank 0 reads its flag; when set, it starts
//    a non-blocking broadcast that the other ranks posted at construction
//    and test here. For pipelines whose ranks make no collective calls
//    while they work: each rank stops at its next brick.
//  - asked(): not collective: rank 0's flag there, false elsewhere. A
//    pipeline of collective rounds reduces it over the ranks (MAX) in the
//    agreement it makes before each round (BrickDriver::agree_stop), so
//    every rank gets the same answer and skips the same rounds.
// Collective lifetime over comm; finish() (or the destructor) completes the
// broadcast on every rank.
class Stop {
 public:
  Stop(const Comm& comm, const CancelFlag* flag);  // collective; flag matters on rank 0 only (may be null)
  Stop(const Stop&) = delete;
  Stop& operator=(const Stop&) = delete;
  ~Stop();

  bool requested();
  bool asked() const;
  void finish();  // collective

 private:
  void start_broadcast(int value);

  Comm async_;
  const CancelFlag* flag_ = nullptr;
  MPI_Request request_ = MPI_REQUEST_NULL;
  int value_ = 0;
  bool started_ = false, arrived_ = false, finished_ = false;
};

}  // namespace volseg::segment
