// SPDX-License-Identifier: MIT
#include "volseg/io/watchdog.hpp"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <string>
#include <thread>

#include "volseg/io/error.hpp"

namespace volseg::io::watchdog {
namespace {

std::atomic<unsigned long long> beats{0};
std::atomic<const char*> current_phase{"start-up"};
std::atomic<int> waiting_depth{0};

// How much longer than the timeout a waiting rank allows the others.
double grace(double seconds) { return std::max(2.0, seconds / 2); }

class Watchdog {
 public:
  Watchdog(double seconds, int rank) : seconds_(seconds), rank_(rank), thread_([this] { watch(); }) {}
  Watchdog(const Watchdog&) = delete;
  Watchdog& operator=(const Watchdog&) = delete;
  ~Watchdog() {
    {
      std::lock_guard lock(mutex_);
      stopping_ = true;
    }
    wake_.notify_one();
    thread_.join();
  }

 private:
  void watch() {
    using Clock = std::chrono::steady_clock;
    const auto timeout = std::chrono::duration<double>(seconds_);
    const auto waiting_timeout = std::chrono::duration<double>(seconds_ + grace(seconds_));
    const auto tick = std::chrono::duration<double>(std::clamp(seconds_ / 10, 0.05, 1.0));
    unsigned long long seen = beats.load(std::memory_order_relaxed);
    auto last_move = Clock::now();
    std::unique_lock lock(mutex_);
    while (!wake_.wait_for(lock, tick, [this] { return stopping_; })) {
      const unsigned long long now_beats = beats.load(std::memory_order_relaxed);
      if (now_beats != seen) {
        seen = now_beats;
        last_move = Clock::now();
        continue;
      }
      const bool waiting = waiting_depth.load(std::memory_order_relaxed) > 0;
      const auto still = Clock::now() - last_move;
      if (still < (waiting ? waiting_timeout : timeout)) continue;
      // One line, then out: the job's threads may be stuck inside MPI, so
      // nothing here may call it or wait for them.
      if (waiting)
        std::fprintf(stderr,
                     "volseg: error: rank %d: waited %.0f s for the other ranks in %s (--timeout %g); ending the job\n",
                     rank_, std::chrono::duration<double>(still).count(), current_phase.load(), seconds_);
      else
        std::fprintf(stderr, "volseg: error: rank %d: nothing moved for %g s in %s (--timeout %g); ending the job\n",
                     rank_, seconds_, current_phase.load(), seconds_);
      std::fflush(stderr);
      std::_Exit(124);
    }
  }

  double seconds_;
  int rank_;
  std::mutex mutex_;
  std::condition_variable wake_;
  bool stopping_ = false;
  std::thread thread_;  // last: started once the rest is ready
};

std::mutex running_mutex;
Watchdog* running = nullptr;

}  // namespace

void beat() { beats.fetch_add(1, std::memory_order_relaxed); }

Phase::Phase(const char* name) : outer_(current_phase.exchange(name)) { beat(); }

Phase::~Phase() {
  current_phase.store(outer_);
  beat();
}

Waiting::Waiting() {
  waiting_depth.fetch_add(1, std::memory_order_relaxed);
  beat();
}

Waiting::~Waiting() {
  waiting_depth.fetch_sub(1, std::memory_order_relaxed);
  beat();
}

void start(double seconds, int rank) {
  if (!(seconds > 0)) return;
  std::lock_guard lock(running_mutex);
  if (!running) running = new Watchdog(seconds, rank);
}

void stop() {
  std::lock_guard lock(running_mutex);
  delete running;
  running = nullptr;
}

double timeout_from_environment() {
  const char* text = std::getenv("VOLSEG_TIMEOUT");
  if (!text || !*text) return 0;
  char* end = nullptr;
  const double seconds = std::strtod(text, &end);
  if (*end != '\0' || !std::isfinite(seconds) || seconds < 0)
    throw Error(std::string("VOLSEG_TIMEOUT='") + text + "' is not a number of seconds");
  return seconds;
}

}  // namespace volseg::io::watchdog
