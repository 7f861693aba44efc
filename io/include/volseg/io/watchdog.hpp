// SPDX-License-Identifier: MIT
// A watchdog for a whole job (--timeout SECONDS, or VOLSEG_TIMEOUT): when
// nothing moves on a rank for that long, the rank prints one line naming the
// phase it is in and ends with status 124 (as timeout(1) does), and its
// launcher ends the others. A batch job then fails with a reason instead of
// holding its nodes until the scheduler's limit: a library can still hang
// inside a collective call, and a rank that waits for a
// failed one makes no progress either.
//
// What counts as moving: a brick done (Progress::advance and the brick
// driver beat), a round of collective I/O, a phase begun. A phase that does
// long work without bricks (labeling's merge) beats as it goes.
//
// A rank that has done its part and waits for the others (the bricks'
// progress, the agreement on errors) is not the one to name: while it is
// in a Waiting scope its watchdog allows the others a grace period more
// (the timeout's half, at least 2 s), so that the rank that stopped speaks
// first and its launcher ends the job. If the waiting rank's watchdog does
// fire, its line says it was waiting.
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

// While it lives, this rank is waiting for the others (in a blocking
// receive or reduction after its own work): see above. Nests; begun and
// ended, it beats.
class Waiting {
 public:
  Waiting();
  Waiting(const Waiting&) = delete;
  Waiting& operator=(const Waiting&) = delete;
  ~Waiting();
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
