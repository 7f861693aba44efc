// SPDX-License-Identifier: MIT
// Fault injection in the I/O layer, compiled in and off by default: while
// off, a call site costs one relaxed atomic load (as tracing does). Turned on
// by the environment, before the first I/O call:
//
//   VOLSEG_FAULTS="write:eio@3,rank=1;rename:eio@2;read:short;write:slow,ms=200"
//
// rule  := CALL ":" KIND ["@" N] {"," KEY "=" VALUE}   (rules separated by ";")
// CALL  := open | read | write | close | fsync | rename
// KIND  := eio | enospc | short | slow
// @N    := only the N-th such call of the process (1-based); without it, every one
// rank=R: only on MPI rank R (of MPI_COMM_WORLD, the process's identity)
// ms=M  : for slow, the delay in milliseconds (default 100)
//
// eio and enospc make the call fail with that errno; short makes a read or a
// write move half of what was asked (the caller must resume); slow delays it.
// A bad specification is reported once, on the first I/O call, as an error.
#pragma once

#include <atomic>
#include <string>

namespace volseg::io::faults {

enum class Call { open, read, write, close, fsync, rename };

struct Injected {
  int error = 0;          // errno to fail with, or 0
  bool short_io = false;  // move half the bytes asked
};

namespace detail {
// 0: not yet read from the environment, 1: off, 2: on.
extern std::atomic<int> state;
Injected decide(Call call);
}  // namespace detail

// What to do to this call (nothing, when fault injection is off).
inline Injected at(Call call) {
  if (detail::state.load(std::memory_order_relaxed) == 1) return {};
  return detail::decide(call);
}

// Replaces the rules (tests); throws volseg::Error naming the bad part.
void configure(const std::string& spec);

// The grammar, for docs and error messages.
std::string grammar();

}  // namespace volseg::io::faults
