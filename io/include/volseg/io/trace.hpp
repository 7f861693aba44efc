// SPDX-License-Identifier: MIT
// Built-in I/O tracing, in the manner of Darshan's DXT: one record per
// system or library call a backend makes (operation, start, duration, file
// offset, bytes), kept per rank in memory and gathered to one CSV file at
// the end (docs/trace.md describes the format).
//
// Off by default; while off, an instrumented call costs one relaxed atomic
// load. Recording is thread-safe: segment's pipelines call backends from I/O
// threads.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "volseg/io/comm.hpp"

namespace volseg::io::trace {

// What a record measures. `map` covers mmap and, with populate, the
// MADV_POPULATE that faults the window in (mmap with MAP_POPULATE in two
// calls); `advise` is a hint (posix_fadvise WILLNEED); `exchange` is
// inter-rank data movement of collective I/O (the two-phase engine's
// requests and data); `wait` is waiting on requests already posted
// (MPI_Waitall, ncmpi_wait_all).
enum class Op : std::uint8_t { open, close, read, write, sync, advise, map, unmap, exchange, wait };
inline constexpr int op_count = 10;

std::string_view name(Op op);
// The Op called `text`, or false when there is none.
bool parse_op(std::string_view text, Op& op);

namespace detail {
extern std::atomic<bool> enabled_flag;
}

inline bool enabled() noexcept { return detail::enabled_flag.load(std::memory_order_relaxed); }

// Collective. A barrier, then every rank takes the current time as its epoch,
// so start times of different ranks are comparable (to the barrier's exit
// skew); records this rank's number in comm. Clears earlier records.
void enable(const Comm& comm);
void disable() noexcept;

// Seconds since the epoch (steady clock).
double now_s() noexcept;

// Records one call, if tracing is enabled. start_s is relative to the epoch
// (take it with now_s()); offset -1 means the call has none.
void record(Op op, double start_s, double duration_s, std::int64_t offset, std::uint64_t bytes) noexcept;

// RAII: measures from construction to destruction; records only if tracing
// was enabled at construction.
class Span {
 public:
  explicit Span(Op op, std::int64_t offset = -1, std::uint64_t bytes = 0) noexcept
      : op_(op), active_(enabled()), offset_(offset), bytes_(bytes) {
    if (active_) start_s_ = now_s();
  }
  ~Span() {
    if (active_) finish();
  }
  void set_bytes(std::uint64_t bytes) noexcept { bytes_ = bytes; }
  void set_offset(std::int64_t offset) noexcept { offset_ = offset; }
  Span(const Span&) = delete;
  Span& operator=(const Span&) = delete;

 private:
  void finish() noexcept;

  Op op_;
  bool active_;
  std::int64_t offset_;
  std::uint64_t bytes_;
  double start_s_ = 0;
};

struct Record {
  Op op;
  int rank;
  double start_s, duration_s;
  std::int64_t offset;
  std::uint64_t bytes;
};

// This rank's records so far, moved out.
std::vector<Record> take_local();

// Collective. Gathers every rank's records (take_local) to rank 0, which
// writes them as CSV, by rank and start time, under a temporary name beside
// path and renames it to path when complete. Every rank throws volseg::Error
// if writing failed.
void write_gathered(const Comm& comm, const std::string& path);

// The CSV text of records: the comment and header lines, then one row each.
std::string format_csv(const std::vector<Record>& records);

}  // namespace volseg::io::trace
