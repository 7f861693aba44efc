// SPDX-License-Identifier: MIT
#include "volseg/segment/progress.hpp"

#include <unistd.h>

#include <cstdio>

#include "volseg/io/error.hpp"
#include "volseg/io/watchdog.hpp"

namespace volseg::segment {
namespace {
constexpr int kTag = 7;
}

ProgressMode parse_progress_mode(const std::string& name) {
  if (name == "auto") return ProgressMode::automatic;
  if (name == "bar") return ProgressMode::bar;
  if (name == "lines") return ProgressMode::lines;
  if (name == "none") return ProgressMode::none;
  throw Error("unknown progress mode '" + name + "' (known: auto, bar, lines, none)");
}

Progress::Progress(const Comm& comm, std::string label, std::int64_t total_units, ProgressMode mode, std::string unit)
    : comm_(comm.duplicate()),
      label_(std::move(label)),
      unit_(std::move(unit)),
      total_(total_units),
      enabled_(mode != ProgressMode::none) {
  tty_ = mode == ProgressMode::bar || (mode == ProgressMode::automatic && ::isatty(STDERR_FILENO) != 0);
  start_ = last_draw_ = std::chrono::steady_clock::now();
  if (comm_.rank() == 0) {
    units_.assign(static_cast<std::size_t>(comm_.size()), 0);
    bytes_.assign(static_cast<std::size_t>(comm_.size()), 0);
  }
}

Progress::~Progress() {
  if (!finished_) {
    try {
      finish();
    } catch (...) {
    }
  }
}

void Progress::advance(std::int64_t units, std::uint64_t bytes) {
  io::watchdog::beat();
  local_units_ += units;
  local_bytes_ += bytes;
  if (comm_.rank() == 0) {
    units_[0] = local_units_;
    bytes_[0] = local_bytes_;
    poll();
    draw(false);
  } else {
    send_update(false);
  }
}

void Progress::send_update(bool final) {
  if (request_ != MPI_REQUEST_NULL) {
    int done = 0;
    if (final)
      check_mpi(MPI_Wait(&request_, MPI_STATUS_IGNORE), "MPI_Wait");
    else
      check_mpi(MPI_Test(&request_, &done, MPI_STATUS_IGNORE), "MPI_Test");
    if (!final && !done) return;  // the previous update is still on its way; coalesce
  }
  message_[0] = static_cast<std::uint64_t>(local_units_);
  message_[1] = local_bytes_;
  message_[2] = final ? 1 : 0;
  if (final)
    check_mpi(MPI_Send(message_, 3, MPI_UINT64_T, 0, kTag, comm_.get()), "MPI_Send");
  else
    check_mpi(MPI_Isend(message_, 3, MPI_UINT64_T, 0, kTag, comm_.get(), &request_), "MPI_Isend");
}

void Progress::poll() {
  int pending = 1;
  while (pending) {
    MPI_Status status;
    check_mpi(MPI_Iprobe(MPI_ANY_SOURCE, kTag, comm_.get(), &pending, &status), "MPI_Iprobe");
    if (!pending) break;
    std::uint64_t message[3];
    check_mpi(MPI_Recv(message, 3, MPI_UINT64_T, status.MPI_SOURCE, kTag, comm_.get(), MPI_STATUS_IGNORE), "MPI_Recv");
    units_[static_cast<std::size_t>(status.MPI_SOURCE)] = static_cast<std::int64_t>(message[0]);
    bytes_[static_cast<std::size_t>(status.MPI_SOURCE)] = message[1];
    if (message[2]) ++done_ranks_;
  }
}

void Progress::finish() {
  if (finished_) return;
  finished_ = true;
  if (comm_.rank() != 0) {
    send_update(true);
    return;
  }
  units_[0] = local_units_;
  bytes_[0] = local_bytes_;
  const io::watchdog::Waiting waiting;
  while (done_ranks_ < comm_.size() - 1) {
    MPI_Status status;
    std::uint64_t message[3];
    check_mpi(MPI_Recv(message, 3, MPI_UINT64_T, MPI_ANY_SOURCE, kTag, comm_.get(), &status), "MPI_Recv");
    units_[static_cast<std::size_t>(status.MPI_SOURCE)] = static_cast<std::int64_t>(message[0]);
    bytes_[static_cast<std::size_t>(status.MPI_SOURCE)] = message[1];
    if (message[2]) ++done_ranks_;
    draw(false);
  }
  draw(true);
}

void Progress::draw(bool final) {
  if (observer_) {
    auto now = std::chrono::steady_clock::now();
    if (final || now - last_observed_ >= std::chrono::milliseconds(100)) {
      last_observed_ = now;
      observer_(units_, total_, final);
    }
  }
  if (!enabled_) return;
  std::int64_t units = 0;
  std::uint64_t bytes = 0;
  for (std::size_t r = 0; r < units_.size(); ++r) {
    units += units_[r];
    bytes += bytes_[r];
  }
  auto now = std::chrono::steady_clock::now();
  double seconds = std::chrono::duration<double>(now - start_).count();
  double fraction = total_ > 0 ? static_cast<double>(units) / static_cast<double>(total_) : 1.0;
  double rate = seconds > 0 ? static_cast<double>(bytes) / seconds / 1e9 : 0.0;
  constexpr int width = 30;
  std::string bar(static_cast<std::size_t>(fraction * width), '#');
  bar.resize(width, '.');
  char throughput[32] = "";  // only for work that moves bytes
  if (bytes > 0) std::snprintf(throughput, sizeof throughput, "  %.2f GB/s", rate);
  if (tty_) {
    if (!final && now - last_draw_ < std::chrono::milliseconds(100)) return;
    last_draw_ = now;
    std::fprintf(stderr, "\r%s [%s] %3d%% %lld/%lld %s%s  %.1f s", label_.c_str(), bar.c_str(),
                 static_cast<int>(fraction * 100), static_cast<long long>(units), static_cast<long long>(total_),
                 unit_.c_str(), throughput, seconds);
    if (final) std::fputc('\n', stderr);
  } else {
    int decile = static_cast<int>(fraction * 10);
    // Nothing done, nothing to say: a job that ends before its first unit
    // (bad input) leaves no line beside its error.
    if (decile == last_decile_ || units == 0) return;
    last_decile_ = decile;
    std::fprintf(stderr, "%s [%s] %3d%% %lld/%lld %s%s  %.1f s\n", label_.c_str(), bar.c_str(), decile * 10,
                 static_cast<long long>(units), static_cast<long long>(total_), unit_.c_str(), throughput, seconds);
  }
  std::fflush(stderr);
}

}  // namespace volseg::segment
