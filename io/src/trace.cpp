// SPDX-License-Identifier: MIT
// Records go to one mutex-protected vector per process: a record is taken
// per system call (microseconds at least), so the lock is never hot, and
// take_local() needs no registry of thread buffers.
#include "volseg/io/trace.hpp"

#include <fcntl.h>
#include <mpi.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <climits>
#include <filesystem>
#include <mutex>

#include "volseg/io/error.hpp"
#include "volseg/io/files.hpp"

namespace volseg::io::trace {

namespace detail {
std::atomic<bool> enabled_flag{false};
}

namespace {

using Clock = std::chrono::steady_clock;

constexpr std::array<std::string_view, op_count> kNames{"open",   "close", "read",  "write",    "sync",
                                                        "advise", "map",   "unmap", "exchange", "wait"};

std::atomic<Clock::rep> epoch_ticks{0};
std::atomic<int> this_rank{0};
std::atomic<std::uint64_t> dropped{0};  // records lost to a failed allocation

std::mutex records_mutex;
std::vector<Record> records;

void append(Op op, double start_s, double duration_s, std::int64_t offset, std::uint64_t bytes) noexcept {
  try {
    std::lock_guard lock(records_mutex);
    records.push_back(Record{op, this_rank.load(std::memory_order_relaxed), start_s, duration_s, offset, bytes});
  } catch (...) {
    dropped.fetch_add(1, std::memory_order_relaxed);
  }
}

template <class T>
void append_number(std::string& out, T value) {
  char text[32];
  auto [end, ec] = std::to_chars(text, text + sizeof text, value);
  (void)ec;  // 32 characters hold every int64 and uint64
  out.append(text, end);
}

// Seconds with nanosecond resolution, the steady clock's own.
void append_seconds(std::string& out, double seconds) {
  char text[48];
  auto [end, ec] = std::to_chars(text, text + sizeof text, seconds, std::chars_format::fixed, 9);
  if (ec != std::errc()) throw Error("trace: cannot format the time " + std::to_string(seconds));
  out.append(text, end);
}

}  // namespace

std::string_view name(Op op) {
  const auto index = static_cast<std::size_t>(op);
  return index < kNames.size() ? kNames[index] : std::string_view("unknown");
}

bool parse_op(std::string_view text, Op& op) {
  for (std::size_t i = 0; i < kNames.size(); ++i)
    if (kNames[i] == text) {
      op = static_cast<Op>(i);
      return true;
    }
  return false;
}

void enable(const Comm& comm) {
  disable();
  take_local();
  dropped.store(0, std::memory_order_relaxed);
  comm.barrier();
  epoch_ticks.store(Clock::now().time_since_epoch().count(), std::memory_order_relaxed);
  this_rank.store(comm.rank(), std::memory_order_relaxed);
  detail::enabled_flag.store(true, std::memory_order_release);
}

void disable() noexcept { detail::enabled_flag.store(false, std::memory_order_relaxed); }

double now_s() noexcept {
  const Clock::duration since(Clock::now().time_since_epoch().count() - epoch_ticks.load(std::memory_order_relaxed));
  return std::chrono::duration<double>(since).count();
}

void record(Op op, double start_s, double duration_s, std::int64_t offset, std::uint64_t bytes) noexcept {
  if (enabled()) append(op, start_s, duration_s, offset, bytes);
}

void Span::finish() noexcept { append(op_, start_s_, now_s() - start_s_, offset_, bytes_); }

std::vector<Record> take_local() {
  std::lock_guard lock(records_mutex);
  return std::exchange(records, {});
}

std::string format_csv(const std::vector<Record>& list) {
  std::string out =
      "# volseg I/O trace: one row per I/O call; start_s and duration_s in seconds, start since the epoch "
      "(a barrier when tracing was enabled); offset in bytes from the start of the file, -1 for none\n"
      "rank,op,start_s,duration_s,offset,bytes\n";
  out.reserve(out.size() + list.size() * 48);
  for (const auto& r : list) {
    append_number(out, r.rank);
    out.append(1, ',').append(name(r.op)).append(1, ',');
    append_seconds(out, r.start_s);
    out.append(1, ',');
    append_seconds(out, r.duration_s);
    out.append(1, ',');
    append_number(out, r.offset);
    out.append(1, ',');
    append_number(out, r.bytes);
    out.append(1, '\n');
  }
  return out;
}

void write_gathered(const Comm& comm, const std::string& path) {
  std::vector<Record> mine = take_local();
  std::stable_sort(mine.begin(), mine.end(), [](const Record& a, const Record& b) { return a.start_s < b.start_s; });
  // Records travel as bytes: the same struct on every rank of one program.
  const long long my_bytes = static_cast<long long>(mine.size() * sizeof(Record));
  std::vector<long long> sizes(static_cast<std::size_t>(comm.size()));
  check_mpi(MPI_Gather(&my_bytes, 1, MPI_LONG_LONG, sizes.data(), 1, MPI_LONG_LONG, 0, comm.get()), "MPI_Gather");
  long long total = 0;
  for (long long s : sizes) total += s;
  check_mpi(MPI_Bcast(&total, 1, MPI_LONG_LONG, 0, comm.get()), "MPI_Bcast");
  if (total > INT_MAX)
    throw Error("trace: " + std::to_string(total / static_cast<long long>(sizeof(Record))) +
                " records are too many to gather in one call (at most " + std::to_string(INT_MAX / sizeof(Record)) +
                ")");
  std::vector<int> counts(sizes.size()), displacements(sizes.size());
  int at = 0;
  for (std::size_t r = 0; r < sizes.size(); ++r) {
    counts[r] = static_cast<int>(sizes[r]);
    displacements[r] = at;
    at += counts[r];
  }
  std::vector<Record> all(comm.rank() == 0 ? static_cast<std::size_t>(total) / sizeof(Record) : 0);
  check_mpi(MPI_Gatherv(mine.data(), static_cast<int>(my_bytes), MPI_BYTE, all.data(), counts.data(),
                        displacements.data(), MPI_BYTE, 0, comm.get()),
            "MPI_Gatherv");
  unsigned long long lost = dropped.load(std::memory_order_relaxed), lost_total = 0;
  check_mpi(MPI_Reduce(&lost, &lost_total, 1, MPI_UNSIGNED_LONG_LONG, MPI_SUM, 0, comm.get()), "MPI_Reduce");
  collectively(comm, [&] {
    if (comm.rank() != 0) return;
    std::string text = format_csv(all);
    if (lost_total > 0) text += "# " + std::to_string(lost_total) + " records were lost (out of memory)\n";
    write_file_atomically(path, text);
  });
}

}  // namespace volseg::io::trace
