// SPDX-License-Identifier: MIT
// A watchdog for a whole job (--timeout SECONDS, or VOLSEG_TIMEOUT): when
// nothing moves on a rank for that long, the rank prints one line naming the
// phase it is in and ends with status 124 (as timeout(1) does), and its
// launcher ends the others. A batch job then fails with a reason instead of
// holding its nodes until the scheduler's limit: a library can still hang
// inside a collective call (issue 14's notes), and a rank that waits for a
// failed one makes no progress either.
//
// What counts as moving: a brick done (Progress::advance and the brick
// driver beat), a round of collective I/O, a phase begun. A phase that does
// long work without bricks (labeling's merge) beats as it goes.
#pragma once

namespace volseg::io::watchdog {

// Something moved on this rank: the watchdog's clock starts again. One
// relaxed atomic increment: cheap enough for every brick.
void beat();

// While it lives, this rank is in `name` (a string literal or one that
// outlives it): the watchdog's line names it. Phases nest; the innermost is
// named. Begun and ended, it beats.
class Phase {
 public:
  explicit Phase(const char* name);
  Phase(const Phase&) = delete;
  Phase& operator=(const Phase&) = delete;
  ~Phase();

 private:
  const char* outer_;
};

// Starts this process's watchdog with `seconds` (0: none); rank names the
// process in its line. Call once, after MPI_Init. The seconds from the
// environment's VOLSEG_TIMEOUT when the command line gave none: see
// timeout_from_environment.
void start(double seconds, int rank);
// Stops it (before MPI_Finalize: a job that has ended does not time out).
void stop();
// VOLSEG_TIMEOUT in seconds, 0 when unset; throws volseg::Error when it is
// not a number of seconds.
double timeout_from_environment();

}  // namespace volseg::io::watchdog
