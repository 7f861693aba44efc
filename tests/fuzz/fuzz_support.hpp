// SPDX-License-Identifier: MIT
// What the libFuzzer targets share. A target may end an input in two ways:
// normally, or with volseg::Error (bad input, reported as one line). Any
// other exception escapes to libFuzzer, which saves the input as a crash.
#pragma once

#include <mpi.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "volseg/io/comm.hpp"

namespace volseg::fuzz {

// An invariant of the code under test does not hold: libFuzzer saves the input.
[[noreturn]] inline void invariant_broken(const std::string& what) {
  std::fprintf(stderr, "fuzz invariant broken: %s\n", what.c_str());
  std::abort();
}

// A one-rank MPI world for the targets that reach MPI, set up once from
// LLVMFuzzerInitialize as main does (a singleton: no mpirun). Never
// finalised: MPI_Finalize unloads Open MPI's components, whose memory
// LeakSanitizer's check at exit would then report as leaks it cannot name.
inline const Comm& world() {
  static const Comm* comm = [] {
    int provided = 0;
    MPI_Init_thread(nullptr, nullptr, MPI_THREAD_MULTIPLE, &provided);
    return new Comm(MPI_COMM_WORLD);
  }();
  return *comm;
}

}  // namespace volseg::fuzz
