// SPDX-License-Identifier: MIT
// The four ways segment moves bricks (private to the segment library):
//   run_mapped      mapped windows, read in place (mmap, mmap-advise)
//   run_any_order   bricks as they arrive (ranged-mmap, ranged-uring)
//   run_buffered    double-buffered reads on an I/O thread (posix, ...)
//   run_collective  rounds of read_all/write_all every rank joins (mpiio,
//                   pnetcdf, netcdf4, twophase)
// Each thresholds every brick of job.driver and writes its mask.
#pragma once

#include <chrono>
#include <cstdint>
#include <vector>

#include "volseg/io/comm.hpp"
#include "volseg/io/volume.hpp"
#include "volseg/segment/brick_driver.hpp"
#include "volseg/segment/segment.hpp"
#include "volseg/segment/threshold.hpp"

namespace volseg::segment::detail {

using Clock = std::chrono::steady_clock;

inline double since(Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); }

template <class Fn>
double timed(Fn&& fn) {
  auto start = Clock::now();
  fn();
  return since(start);
}

struct Job {
  const Comm& comm;
  io::VolumeReader& reader;
  io::VolumeWriter& writer;
  const ThresholdKernel& kernel;
  BrickDriver& driver;  // this rank's bricks, progress, stopping, journal, round size
  Stats& stats;
  RankTimes& times;
};

void run_mapped(Job& job);
void run_any_order(Job& job);
void run_buffered(Job& job);
void run_collective(Job& job);

}  // namespace volseg::segment::detail
