// SPDX-License-Identifier: MIT
// Progress of a parallel job, shown by rank 0. Other ranks report their
// counts with small non-blocking messages; rank 0 polls for them between
// units of work and draws a bar redrawn in place, or a line every 10% (a
// log). Under mpirun a rank's stderr is a pipe even on a terminal, so "auto"
// can only choose lines there; "bar" asks for the redrawn bar.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include <mpi.h>

#include "volseg/io/comm.hpp"

namespace volseg::segment {

enum class ProgressMode { automatic, bar, lines, none };
ProgressMode parse_progress_mode(const std::string& name);  // auto | bar | lines | none

// Rank 0: told each rank's finished units (index = rank) and the total, at
// most ten times a second and once at the end (final = true). Runs on the
// job's thread: a GUI hands the figures to its own thread.
using ProgressObserver = std::function<void(const std::vector<std::int64_t>& units, std::int64_t total, bool final)>;

class Progress {
 public:
  // Collective. total_units: the whole job's units (bricks). With mode none
  // nothing is drawn but the rank still takes part in the protocol.
  // unit names what is counted ("bricks", "frames").
  Progress(const Comm& comm, std::string label, std::int64_t total_units, ProgressMode mode,
           std::string unit = "bricks");
  Progress(const Progress&) = delete;
  Progress& operator=(const Progress&) = delete;
  ~Progress();

  // This rank finished `units` more units that moved `bytes` of input.
  void advance(std::int64_t units, std::uint64_t bytes);
  // Collective in effect: every rank must call it, on success and on error.
  void finish();
  // Rank 0: also tell `observer` (see ProgressObserver).
  void observe(ProgressObserver observer) { observer_ = std::move(observer); }

 private:
  void send_update(bool final);
  void poll();
  void draw(bool final);

  Comm comm_;
  std::string label_, unit_;
  std::int64_t total_ = 0;
  bool enabled_ = false, finished_ = false, tty_ = false;
  std::int64_t local_units_ = 0;
  std::uint64_t local_bytes_ = 0;
  // rank 0
  std::vector<std::int64_t> units_;
  std::vector<std::uint64_t> bytes_;
  int done_ranks_ = 0;
  int last_decile_ = -1;
  std::chrono::steady_clock::time_point start_, last_draw_, last_observed_;
  ProgressObserver observer_;
  // other ranks
  MPI_Request request_ = MPI_REQUEST_NULL;
  std::uint64_t message_[3] = {};
};

}  // namespace volseg::segment
