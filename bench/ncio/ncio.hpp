// SPDX-License-Identifier: MIT
// volseg-ncio's parts (see main.cpp for what the benchmark does): the
// access pattern of one case and its verification (pattern.cpp), and the
// write methods it times (methods.cpp).
#pragma once

#include <mpi.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "volseg/io/comm.hpp"
#include "volseg/io/hints.hpp"
#include "volseg/io/twophase.hpp"

namespace volseg::bench::ncio {

namespace tp = volseg::io::twophase;

constexpr std::byte kFill{0xA5};    // the file's bytes before a verified run
constexpr std::byte kPoison{0xEE};  // memory gaps: must never reach the file
inline constexpr const char* kPartitions[] = {"even", "aligned", "static-cyclic", "group-cyclic", "persistent", "auto"};

inline double now() { return MPI_Wtime(); }

// The byte that belongs at file offset o: never 0, kFill or kPoison.
std::byte expected(std::uint64_t o);
[[noreturn]] void fail(const std::string& message);
void check(int code, const char* what);
void pwrite_all(int fd, const std::byte* from, std::uint64_t length, std::uint64_t offset);

struct Case {
  std::string name;
  bool memory_nc = false, file_nc = false;
};
Case parse_case(const std::string& name);

// One contiguous piece in memory and in file.
struct Piece {
  std::uint64_t offset = 0, length = 0, memory = 0;
};

// A rank's part of one case.
struct Pattern {
  int ranks = 1, rank = 0;
  Case kind;
  std::uint64_t count = 0, size = 0, spacing = 0;
  std::vector<std::byte> memory;
  std::vector<Piece> pieces;  // in file order; neighbours contiguous in both file and memory merged
  std::uint64_t extent = 0;   // bytes of file the job covers, gaps included
  std::uint64_t bytes = 0;    // useful bytes of all ranks

  bool in_region(std::uint64_t o) const { return !kind.file_nc || o % (size + spacing) < size; }
};

Pattern make_pattern(const Case& kind, std::uint64_t count, std::uint64_t size, std::uint64_t spacing, int rank,
                     int ranks);
// Rank 0 creates the file empty, or filled with kFill over the extent and
// synced (and, cold, dropped from the page cache); everybody waits.
void prepare_file(const std::string& path, const Pattern& p, bool prefill, bool cold = false);
// Every rank checks its share of the file; returns the number of bad bytes
// (all ranks), and a description of the first.
std::uint64_t verify_file(const std::string& path, const Pattern& p, std::string& first);

// What one timed run measured on this rank.
struct Run {
  double write = 0, sync = 0, total = 0;
  tp::Timing timing;  // twophase only
  std::string partition;
  int lead = 0;  // twophase: the first aggregator's rank
};

class Method {
 public:
  explicit Method(std::string name) : name_(std::move(name)) {}
  virtual ~Method() = default;
  const std::string& name() const { return name_; }
  virtual std::string impl() const = 0;
  // Untimed set-up (open), the timed write + sync, untimed tear-down.
  virtual void open(const std::string& path, const Pattern& p) = 0;
  virtual void write(const Pattern& p, Run& run) = 0;  // sets run.write, run.sync
  virtual void close() = 0;
  // A new case starts: whatever was built for the last case's pattern is stale.
  virtual void new_case() {}

 private:
  std::string name_;
};

// "posix", "listio", "listio-uring", "datatype", "collective" or
// "twophase-<partition>"; batch: regions per list I/O call.
std::unique_ptr<Method> make_method(const std::string& name, std::uint64_t batch, const volseg::Comm& comm,
                                    const volseg::io::Hints& hints);

}  // namespace volseg::bench::ncio
