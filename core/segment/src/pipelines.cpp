// SPDX-License-Identifier: MIT
#include "pipelines.hpp"

#include <mpi.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <deque>
#include <exception>
#include <functional>
#include <future>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "volseg/io/error.hpp"
#include "volseg/io/rounds.hpp"

namespace volseg::segment::detail {
namespace {

// Thresholds a window's runs in place into out, then releases the window.
// The brick's own statistics (its journal record keeps them).
Stats threshold_window(Job& job, io::Mapping& window, std::uint8_t* out) {
  Stats brick;
  job.times.compute += timed([&] {
    for (const io::Run& run : window.runs())
      job.kernel.run(run.data, run.count, window.needs_swap(), out + run.index, brick);
  });
  job.stats.merge(brick);
  job.times.read += timed([&] { window.release(); });
  return brick;
}

// Runs tasks one after another on one thread, in the order they were
// submitted: the collective calls of every rank then happen in the same
// order, as MPI requires, while the caller's thread computes.
class SerialWorker {
 public:
  SerialWorker() : thread_([this] { loop(); }) {}
  SerialWorker(const SerialWorker&) = delete;
  SerialWorker& operator=(const SerialWorker&) = delete;
  ~SerialWorker() {
    {
      std::lock_guard lock(mutex_);
      stopping_ = true;
    }
    ready_.notify_one();
    thread_.join();
  }
  // The task's result: its wall time in seconds, or its exception.
  std::future<double> submit(std::function<void()> task) {
    std::packaged_task<double()> packaged([task = std::move(task)] { return timed(task); });
    auto future = packaged.get_future();
    {
      std::lock_guard lock(mutex_);
      queue_.push_back(std::move(packaged));
    }
    ready_.notify_one();
    return future;
  }

 private:
  void loop() {
    for (;;) {
      std::packaged_task<double()> task;
      {
        std::unique_lock lock(mutex_);
        ready_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
        if (queue_.empty()) return;
        task = std::move(queue_.front());
        queue_.pop_front();
      }
      task();
    }
  }

  std::mutex mutex_;
  std::condition_variable ready_;
  std::deque<std::packaged_task<double()>> queue_;
  bool stopping_ = false;
  std::thread thread_;
};

// Mask buffers in a ring: brick k's mask is computed into buffer(k) while
// one I/O thread writes the masks before it, in order (so the journal sees
// one thread). Up to four buffers, 64 MiB at most, two at least: with two,
// one slow write stalled the kernel at once, and a warm job on one rank
// spent as long waiting as computing.
class MaskWriter {
 public:
  explicit MaskWriter(Job& job) : job_(job) {
    const std::size_t bytes = std::max<std::size_t>(job.driver.largest_voxels(), 1);
    const std::size_t count = std::clamp<std::size_t>((std::size_t{64} << 20) / bytes, 2, 4);
    masks_.resize(count, std::vector<std::uint8_t>(bytes));
    pending_.resize(count);
  }
  ~MaskWriter() {
    for (auto& p : pending_)  // an error path: let the writes end before the buffers go
      if (p.valid()) p.wait();
  }
  // The buffer for the k-th brick of this rank, once the write that used it is done.
  std::uint8_t* buffer(std::size_t k) {
    collect(k % masks_.size());
    return masks_[k % masks_.size()].data();
  }
  // Queues the write of the k-th brick's mask (in buffer(k)), then the
  // journal's record of item `item` of the driver.
  void write(std::size_t k, std::size_t item, const Stats& stats) {
    const std::uint8_t* out = masks_[k % masks_.size()].data();
    pending_[k % masks_.size()] = worker_.submit([this, item, out, stats] {
      job_.writer.write(job_.driver.extent(item), out);
      job_.driver.record(item, stats);
    });
    written_ = k + 1;
  }
  // Waits for every write, oldest first; their time counts as write, the wait as wait.
  void finish() {
    for (std::size_t i = 0; i < pending_.size(); ++i) collect((written_ + i) % pending_.size());
  }

 private:
  void collect(std::size_t slot) {
    if (pending_[slot].valid()) job_.times.wait += timed([&] { job_.times.write += pending_[slot].get(); });
  }

  Job& job_;
  std::vector<std::vector<std::uint8_t>> masks_;
  std::vector<std::future<double>> pending_;
  std::size_t written_ = 0;
  SerialWorker worker_;  // last: joined first, before the buffers go
};

}  // namespace

// Zero-copy input: the brick's window is mapped and the kernel reads it in
// place, run by run (Fogal & Krüger's raw method); mmap-advise announces the next
// bricks. The mask goes out through a MaskWriter.
void run_mapped(Job& job) {
  auto& driver = job.driver;
  const int depth = job.reader.capabilities().prefetch_depth;
  auto advise = [&](std::size_t k) {
    if (k < driver.size()) job.reader.will_need(driver.extent(k));
  };
  MaskWriter masks(job);
  for (std::size_t k = 1; k <= static_cast<std::size_t>(depth); ++k) advise(k);
  for (std::size_t k = 0; k < driver.size(); ++k) {
    if (k > 0) job.times.read += timed([&] { advise(k + static_cast<std::size_t>(depth)); });
    io::Mapping input;
    job.times.read += timed([&] { input = job.reader.map(driver.extent(k)); });
    const Stats stats = threshold_window(job, input, masks.buffer(k));
    masks.write(k, k, stats);
    driver.item_done(k);
  }
  masks.finish();
}

// Fogal & Krüger's readanyv: the reader is given all of this rank's bricks and
// hands them out in the order their data become available; the kernel reads
// each in place, as run_mapped.
void run_any_order(Job& job) {
  auto& driver = job.driver;
  std::vector<io::Extent> extents;
  extents.reserve(driver.size());
  for (std::size_t k = 0; k < driver.size(); ++k) extents.push_back(driver.extent(k));
  std::unique_ptr<io::Arrivals> arrivals;
  job.times.read += timed([&] { arrivals = job.reader.read_any(extents); });
  MaskWriter masks(job);
  for (std::size_t k = 0; k < driver.size(); ++k) {
    std::optional<io::Arrival> arrival;
    job.times.read += timed([&] { arrival = arrivals->next(); });
    if (!arrival)
      throw Error("read_any handed out " + std::to_string(k) + " of " + std::to_string(driver.size()) + " bricks");
    const Stats stats = threshold_window(job, arrival->values, masks.buffer(k));
    masks.write(k, arrival->index, stats);
    driver.item_done(arrival->index);
  }
  masks.finish();
  job.times.read += timed([&] { arrivals->close(); });
  job.times.out_of_order = static_cast<std::int64_t>(arrivals->out_of_order());
}

// Double-buffered: an I/O thread reads brick k+1 and another writes the mask
// of brick k-1 while this thread thresholds brick k. Memory: two input
// bricks and two mask bricks, whatever the volume size.
void run_buffered(Job& job) {
  auto& driver = job.driver;
  if (driver.size() == 0) return;
  const std::size_t element = io::dtype_size(job.reader.info().dtype);
  const std::size_t largest = driver.largest_voxels();
  std::vector<std::byte> input[2] = {std::vector<std::byte>(largest * element),
                                     std::vector<std::byte>(largest * element)};
  auto read_brick = [&](std::size_t k) {
    return std::async(std::launch::async, [&job, &input, &driver, k] {
      return timed([&] { job.reader.read(driver.extent(k), input[k % 2].data()); });
    });
  };
  MaskWriter masks(job);
  std::future<double> pending_read = read_brick(0);
  for (std::size_t k = 0; k < driver.size(); ++k) {
    job.times.wait += timed([&] { job.times.read += pending_read.get(); });
    if (k + 1 < driver.size()) pending_read = read_brick(k + 1);
    Stats stats;
    job.times.compute +=
        timed([&] { job.kernel.run(input[k % 2].data(), driver.extent(k).voxels(), false, masks.buffer(k), stats); });
    job.stats.merge(stats);
    masks.write(k, k, stats);
    driver.item_done(k);
  }
  masks.finish();
}

// Collective backends (MPI-IO, PnetCDF, netCDF-4, twophase): every rank
// joins every round of read_all/write_all, with an empty list once its own
// bricks are done. With MPI_THREAD_MULTIPLE the calls run on one I/O thread,
// reading round k+1 and writing round k-1 while round k is computed; the
// I/O library is only ever entered from that thread. Otherwise they run in
// turn on the thread that initialised MPI. Each call is a point where the
// ranks wait for one another, so a call carries several bricks (up to
// SegmentOptions::collective_batch_bytes of input per rank), so a job makes
// few such points. Ranks with fewer rounds join the others' with nothing.
void run_collective(Job& job) {
  auto& driver = job.driver;
  const std::size_t element = io::dtype_size(job.reader.info().dtype);
  const std::size_t largest = std::max<std::size_t>(driver.largest_voxels(), 1);
  // No more slots than this rank has bricks: a rank with none (or only
  // small ones) must not size its buffers and statistics by round_bytes.
  const std::size_t staged = element + job.reader.capabilities().extra_staged_bytes_per_voxel;
  const std::size_t batch = std::min(driver.items_per_round(largest * staged), std::max<std::size_t>(driver.size(), 1));
  // The calls are pipelined below, so failures are agreed by the backends'
  // collective calls and the job's end.
  const long long rounds = driver.rounds(batch);
  int threading = MPI_THREAD_SINGLE;
  MPI_Query_thread(&threading);
  const bool overlap = threading == MPI_THREAD_MULTIPLE;
  const int depth = overlap ? 2 : 1;
  std::vector<std::vector<std::byte>> input(static_cast<std::size_t>(depth),
                                            std::vector<std::byte>(batch * largest * element));
  std::vector<std::vector<std::uint8_t>> mask(static_cast<std::size_t>(depth),
                                              std::vector<std::uint8_t>(batch * largest));
  // The bricks of a round: [first, first + count) of the driver's, each at
  // slot k * largest of the round's buffers.
  auto first_of = [&](long long round) { return static_cast<std::size_t>(round) * batch; };
  auto count_of = [&](long long round) {
    return std::min(batch, driver.size() - std::min(driver.size(), first_of(round)));
  };
  auto extents_of = [&](long long round) {
    std::vector<io::Extent> extents;
    for (std::size_t k = first_of(round); k < first_of(round) + count_of(round); ++k)
      extents.push_back(driver.extent(k));
    return extents;
  };
  auto slots = [&](auto* base, std::size_t count, std::size_t stride) {
    std::vector<decltype(base)> pointers(count);
    for (std::size_t k = 0; k < count; ++k) pointers[k] = base + k * stride;
    return pointers;
  };
  // Each round's bricks' statistics, for the journal.
  std::vector<std::vector<Stats>> round_stats(static_cast<std::size_t>(depth), std::vector<Stats>(batch));
  // A user's request to stop, and a scheduler's signal on any rank, are
  // agreed on before each round's read (driver.agree_stop), on the thread
  // that makes the collective calls, so every rank skips the same rounds'
  // reads and writes.
  auto read = [&](long long round) {
    if (driver.agree_stop()) return;
    auto extents = extents_of(round);
    auto pointers = slots(input[static_cast<std::size_t>(round % depth)].data(), extents.size(), largest * element);
    std::vector<void*> memory(pointers.begin(), pointers.end());
    job.reader.read_all(extents, {memory.data(), memory.size()});
  };
  // Every rank joins every round's write. A round that was not computed
  // (its read failed, on this rank alone perhaps, or the job was stopped)
  // joins with nothing and records nothing.
  std::vector<char> computed(static_cast<std::size_t>(rounds), 0);
  auto write = [&](long long round) {
    auto extents = computed[static_cast<std::size_t>(round)] ? extents_of(round) : std::vector<io::Extent>{};
    auto pointers = slots(mask[static_cast<std::size_t>(round % depth)].data(), extents.size(), largest);
    std::vector<const void*> memory(pointers.begin(), pointers.end());
    job.writer.write_all(extents, {memory.data(), memory.size()});
    const auto& stats = round_stats[static_cast<std::size_t>(round % depth)];
    driver.record_collective(
        first_of(round),
        std::vector<Stats>(stats.begin(), stats.begin() + static_cast<std::ptrdiff_t>(extents.size())));
  };
  auto compute = [&](long long round) {
    if (driver.stopped()) return;
    const std::size_t first = first_of(round), count = count_of(round);
    for (std::size_t k = 0; k < count; ++k) {
      Stats& stats = round_stats[static_cast<std::size_t>(round % depth)][k];
      stats = Stats{};
      job.times.compute += timed([&] {
        job.kernel.run(input[static_cast<std::size_t>(round % depth)].data() + k * largest * element,
                       driver.extent(first + k).voxels(), false,
                       mask[static_cast<std::size_t>(round % depth)].data() + k * largest, stats);
      });
      job.stats.merge(stats);
      driver.item_done(first + k, false);
    }
    computed[static_cast<std::size_t>(round)] = 1;
  };
  if (!overlap) {
    for (long long round = 0; round < rounds; ++round) {
      job.times.read += timed([&] { read(round); });
      compute(round);
      job.times.write += timed([&] { write(round); });
    }
    driver.throw_if_stopped();
    return;
  }
  SerialWorker worker;
  std::vector<std::future<double>> reads, writes;  // by round
  // Every submitted task is waited for, even when one fails, so no rank
  // leaves a collective call behind.
  std::exception_ptr failure;
  auto wait = [&](std::future<double>& future, double& into) {
    if (!future.valid()) return;
    job.times.wait += timed([&] {
      try {
        into += future.get();
      } catch (...) {
        if (!failure) failure = std::current_exception();
      }
    });
  };
  reads.resize(static_cast<std::size_t>(rounds));
  writes.resize(static_cast<std::size_t>(rounds));
  if (rounds > 0) reads[0] = worker.submit([&] { read(0); });
  for (long long round = 0; round < rounds; ++round) {
    const auto r = static_cast<std::size_t>(round);
    wait(reads[r], job.times.read);
    if (round + 1 < rounds) reads[r + 1] = worker.submit([&, round] { read(round + 1); });
    if (round >= 2) wait(writes[r - 2], job.times.write);  // its mask buffer is this round's
    if (!failure) compute(round);
    writes[r] = worker.submit([&, round] { write(round); });
  }
  for (auto& pending : writes) wait(pending, job.times.write);
  if (failure) std::rethrow_exception(failure);
  driver.throw_if_stopped();
}

}  // namespace volseg::segment::detail
