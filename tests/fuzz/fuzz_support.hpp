// SPDX-License-Identifier: MIT
// What the libFuzzer targets share. A target may end an input in two ways:
// normally, or with volseg::Error (bad input, reported as one line). Any
// other exception escapes to libFuzzer, which saves the input as a crash.
#pragma once

#include <fcntl.h>
#include <mpi.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>

#include "volseg/io/comm.hpp"
#include "volseg/io/memory.hpp"

namespace volseg::fuzz {

// What a reader may decode at once (io::check_piece), well under the 512 MiB
// that one allocation may take (-malloc_limit_mb): an allocation past it
// means a size taken from a header that no check bounded. Set before any
// input runs, in every target (an inline variable of this header).
inline constexpr std::uint64_t kPieceBudget = std::uint64_t{64} << 20;
inline const bool piece_budget_set = [] {
  io::set_piece_budget(kPieceBudget, "the fuzz target's budget");
  return true;
}();

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

// The targets that open whole files (NetCDF, TIFF) write each input to a
// file of this process in /dev/shm, named once. The process id is padded to
// ten digits: a name of the same length in every run, so that messages
// naming the file, and the code that builds them, take the same paths (a CI
// campaign is the same executions on every run).
inline std::string scratch_file(const std::string& name, const std::string& extension) {
  char pid[16];
  std::snprintf(pid, sizeof pid, "%010d", static_cast<int>(::getpid()));
  return "/dev/shm/volseg-fuzz-" + name + "-" + pid + extension;
}

inline void write_scratch(const std::string& path, const std::uint8_t* data, std::size_t size) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) invariant_broken("cannot create " + path);
  std::size_t done = 0;
  while (done < size) {
    const ssize_t put = ::write(fd, data + done, size - done);
    if (put <= 0) invariant_broken("cannot write " + path);
    done += static_cast<std::size_t>(put);
  }
  ::close(fd);
}

// This process's open file descriptors: a refused file must be closed too.
inline int open_files() {
  int count = 0;
  for ([[maybe_unused]] const auto& entry : std::filesystem::directory_iterator("/proc/self/fd")) ++count;
  return count;
}

}  // namespace volseg::fuzz
