// SPDX-License-Identifier: MIT
// The simulation's side of a hook that hands steps off (offload.hpp), and
// the helper thread of --async.
#include "offload.hpp"

#include <algorithm>
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <deque>
#include <iostream>
#include <mutex>
#include <thread>

#include "block.hpp"
#include "volseg/io/error.hpp"
#include "volseg/io/watchdog.hpp"

namespace volseg::insitu::detail {
namespace {

using Clock = std::chrono::steady_clock;
double since(Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); }

}  // namespace

void StepBuffer::resize(std::size_t bytes) {
  if (bytes > capacity_) {
    data_.reset();
    data_.reset(new std::byte[bytes]);  // uninitialised
    capacity_ = bytes;
  }
  size_ = bytes;
}

void copy_extent(const void* values, std::size_t size, const io::Extent& stored, const io::Extent& extent,
                 std::byte* out) {
  const auto* in = static_cast<const std::byte*>(values);
  // One run when the extent spans whole planes of the stored block, a run
  // per plane when whole rows, else a run per row.
  const bool planes = extent.count[1] == stored.count[1] && extent.count[2] == stored.count[2];
  const bool rows = extent.count[2] == stored.count[2];
  const std::int64_t run = planes ? extent.voxels() : rows ? extent.count[1] * extent.count[2] : extent.count[2];
  const std::int64_t ys = planes || rows ? 1 : extent.count[1], zs = planes ? 1 : extent.count[0];
  for (std::int64_t z = 0; z < zs; ++z)
    for (std::int64_t y = 0; y < ys; ++y) {
      const std::int64_t from = index_in(stored, extent.offset[0] + z, extent.offset[1] + y, extent.offset[2]);
      std::memcpy(out + ((z * extent.count[1] + y) * extent.count[2]) * size, in + from * size,
                  static_cast<std::size_t>(run) * size);
    }
}

bool needs_arrays(const Options& options) { return !options.expression.empty(); }

std::uint64_t stage(const Field& field, const io::Extent& extent, bool arrays, Staged& staged) {
  const io::Extent stored = stored_extent(field);
  staged.field = field;
  staged.field.ghost = field.ghost;
  staged.unanalysed.reset();
  if (!arrays) staged.field.arrays.clear();
  const std::size_t count = 1 + staged.field.arrays.size();
  staged.buffers.resize(count);
  std::uint64_t bytes = 0;
  for (std::size_t i = 0; i < count; ++i) {
    const io::DType type = i == 0 ? field.dtype : field.arrays[i - 1].dtype;
    const void* from = i == 0 ? field.values : field.arrays[i - 1].values;
    const std::size_t size = io::dtype_size(type);
    auto& buffer = staged.buffers[i];
    buffer.resize(static_cast<std::size_t>(extent.voxels()) * size);
    if (!extent.empty()) copy_extent(from, size, stored, extent, buffer.data());
    (i == 0 ? staged.field.values : staged.field.arrays[i - 1].values) = buffer.data();
    bytes += buffer.size();
  }
  return bytes;
}

Front::Front(MPI_Comm simulation, const Options& options)
    : options_(options), comm_(simulation), last_exit_(Clock::now()) {}

void Front::held(std::uint64_t bytes) { hand_off_.peak_bytes = std::max(hand_off_.peak_bytes, bytes); }

const StepRecord& Front::publish(const Field& field) {
  if (finalized_) throw Error("in-situ publish after finalize");
  const auto start = Clock::now();
  const double interval = std::chrono::duration<double>(start - last_exit_).count();
  simulation_seconds_ += interval;
  if (field.step % options_.every != 0) {  // not an in-situ step: no MPI, no work
    // The arrays borrowed at the last in-situ step are the caller's again
    // when this returns.
    if (options_.borrow) release_borrowed(0);
    off_step_ = unanalysed(field, "off-step");
    last_exit_ = Clock::now();
    return off_step_;
  }
  collectively(comm_, [&] { check_field(field); });
  const bool box_changed = !last_box_ || *last_box_ != field.box || last_dims_ != field.global_dims;
  const auto agreed = agree_step(comm_, field, {double(box_changed), double(full()), double(failed())});
  if (agreed[2] != 0) {  // the analysis failed: every rank says so, once
    finalized_ = true;
    const std::string error = drain();
    throw Error(error.empty() ? "in-situ analysis failed" : error);
  }
  if (agreed[0] != 0) {
    collectively(comm_, [&] { boxes_ = check_tiling(comm_, field); });
    last_box_ = field.box;
    last_dims_ = field.global_dims;
  }
  const double share = simulation_seconds_ > 0 ? hand_off_.seconds / simulation_seconds_ : 0;
  if (agreed[1] != 0 && options_.skip_when_full) {
    records_.push_back(unanalysed(field, "queue-full"));
    skip(records_.back());
    ++hand_off_.skipped;
  } else {
    if (agreed[1] != 0) {
      const auto t = Clock::now();
      wait_for_room();
      hand_off_.waited += since(t);
    }
    hand_off(field, boxes_, interval, share);
    if (options_.borrow) {
      const auto t = Clock::now();
      release_borrowed(1);  // the one before is the caller's again
      hand_off_.waited += since(t);
    }
    records_.push_back(unanalysed(field, "handed-off"));
    ++hand_off_.steps;
  }
  const double spent = since(start);
  hand_off_.seconds += spent;
  hand_off_.longest = std::max(hand_off_.longest, spent);
  last_exit_ = Clock::now();
  return records_.back();
}

void Front::finish_quietly() {
  if (finalized_) return;
  finalized_ = true;
  try {
    const std::string error = drain();
    if (!error.empty() && comm_.rank() == 0) std::cerr << "volseg_insitu: finalize: " << error << "\n";
  } catch (const std::exception& e) {
    if (comm_.rank() == 0) std::cerr << "volseg_insitu: finalize: " << e.what() << "\n";
  }
}

void Front::finalize() {
  if (finalized_) return;
  finalized_ = true;
  const std::string error = drain();
  if (!error.empty()) throw Error(error);
  if (comm_.rank() != 0) return;
  const auto& h = hand_off_;
  const double per = h.steps > 0 ? 1e3 / double(h.steps) : 0;
  char line[512];
  std::snprintf(line, sizeof line,
                "volseg_insitu: %lld steps handed off, %lld skipped (queue full); publish took %.2f ms a step "
                "(copy %.2f, waiting %.2f; longest %.2f ms); the queue held at most %.1f MiB of its %.1f MiB bound\n",
                static_cast<long long>(h.steps), static_cast<long long>(h.skipped), h.seconds * per, h.copy * per,
                h.waited * per, h.longest * 1e3, double(h.peak_bytes) / (1 << 20), double(h.bound_bytes) / (1 << 20));
  std::cerr << line;
}

namespace {

// --async. The helper thread creates the Pipeline (so Catalyst, Python and
// OpenGL live in the one thread that uses them), analyses the queue's steps
// in order, and finalizes it; its MPI traffic is over a communicator of its
// own, so it never meets the simulation's.
class ThreadFront : public Front {
 public:
  ThreadFront(MPI_Comm simulation, const Options& options) : Front(simulation, options), helper_comm_(comm().get()) {
    helper_ = std::thread([this] { serve(); });
    std::unique_lock<std::mutex> lock(mutex_);
    changed_.wait(lock, [&] { return created_; });
    if (create_error_) {
      lock.unlock();
      helper_.join();
      std::rethrow_exception(create_error_);  // agreed: every helper met it
    }
  }
  ~ThreadFront() override {
    finish_quietly();
    if (!helper_.joinable()) return;
    {
      const std::lock_guard<std::mutex> lock(mutex_);
      stop_ = true;
    }
    changed_.notify_all();
    helper_.join();
  }

  double create_seconds = 0;

 protected:
  bool full() override {
    const std::lock_guard<std::mutex> lock(mutex_);
    return static_cast<int>(queue_.size()) + busy_ >= queue_steps();
  }
  void wait_for_room() override {
    const io::watchdog::Phase phase("in situ: waiting for room in the queue");
    const io::watchdog::Waiting waiting;
    std::unique_lock<std::mutex> lock(mutex_);
    changed_.wait(lock, [&] { return static_cast<int>(queue_.size()) + busy_ < queue_steps() || error_; });
  }
  bool failed() override {
    const std::lock_guard<std::mutex> lock(mutex_);
    return error_ != nullptr;
  }
  void hand_off(const Field& field, const std::vector<io::Extent>&, double simulation, double share) override {
    Staged staged;
    {
      const std::lock_guard<std::mutex> lock(mutex_);
      if (!spare_.empty()) staged = std::move(spare_.back()), spare_.pop_back();
    }
    const auto t = Clock::now();
    if (options_.borrow) {
      staged.field = field;
      if (!needs_arrays(options_)) staged.field.arrays.clear();
    } else {
      stage(field, stored_extent(field), needs_arrays(options_), staged);
    }
    hand_off_.copy += since(t);
    staged.simulation = simulation;
    staged.share = share;
    push(std::move(staged));
  }
  void skip(const StepRecord& record) override {
    Staged staged;
    staged.unanalysed = record;
    push(std::move(staged));
  }
  void release_borrowed(int keep) override {
    const io::watchdog::Phase phase("in situ: waiting for the helper thread to take a borrowed step in");
    const io::watchdog::Waiting waiting;
    std::unique_lock<std::mutex> lock(mutex_);
    changed_.wait(lock, [&] { return static_cast<int>(queue_.size()) + busy_ <= keep || error_; });
  }
  std::string drain() override {
    {
      const std::lock_guard<std::mutex> lock(mutex_);
      stop_ = true;
    }
    changed_.notify_all();
    if (helper_.joinable()) helper_.join();
    if (!error_) return {};
    try {
      std::rethrow_exception(error_);
    } catch (const std::exception& e) {
      return e.what();
    } catch (...) {
      return "in-situ analysis failed";
    }
  }

 private:
  int queue_steps() const { return options_.borrow ? 2 : options_.queue > 0 ? options_.queue : 2; }
  std::uint64_t bytes_held() const {
    std::uint64_t bytes = 0;
    for (const auto& s : queue_)
      for (const auto& b : s.buffers) bytes += b.size();
    return bytes + busy_bytes_;
  }
  void push(Staged&& staged) {
    {
      const std::lock_guard<std::mutex> lock(mutex_);
      queue_.push_back(std::move(staged));
      held(bytes_held());
      hand_off_.bound_bytes = std::max<std::uint64_t>(hand_off_.bound_bytes, [&] {
        std::uint64_t step = 0;
        for (const auto& b : queue_.back().buffers) step += b.size();
        hand_off_.step_bytes = std::max(hand_off_.step_bytes, step);
        return options_.borrow ? 0 : step * static_cast<std::uint64_t>(queue_steps());
      }());
    }
    changed_.notify_all();
  }
  void serve();

  Comm helper_comm_;  // the helper threads' own
  std::thread helper_;
  std::mutex mutex_;
  std::condition_variable changed_;
  std::deque<Staged> queue_;  // handed off, not yet taken by the helper
  int busy_ = 0;              // the step the helper analyses (0 or 1)
  std::uint64_t busy_bytes_ = 0;
  std::vector<Staged> spare_;  // buffers to reuse
  bool created_ = false, stop_ = false;
  std::exception_ptr create_error_, error_;
};

void ThreadFront::serve() {
  std::unique_ptr<Pipeline> pipeline;
  try {
    pipeline = std::make_unique<Pipeline>(helper_comm_.get(), options_);
    create_seconds = pipeline->create_seconds();
  } catch (...) {
    create_error_ = std::current_exception();
  }
  {
    const std::lock_guard<std::mutex> lock(mutex_);
    created_ = true;
  }
  changed_.notify_all();
  if (!pipeline) return;
  for (;;) {
    Staged staged;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      changed_.wait(lock, [&] { return !queue_.empty() || stop_; });
      if (queue_.empty()) break;  // stopped, and nothing left
      staged = std::move(queue_.front());
      queue_.pop_front();
      busy_ = 1;
      busy_bytes_ = 0;
      for (const auto& b : staged.buffers) busy_bytes_ += b.size();
    }
    // After an error the steps left are dropped: the simulation learns of
    // it at its next publish (every rank alike: the analysis agreed on it).
    if (!error_) {
      try {
        if (staged.unanalysed)
          pipeline->record(*staged.unanalysed);
        else
          pipeline->analyse(staged.field, staged.simulation, staged.share);
      } catch (...) {
        const std::lock_guard<std::mutex> lock(mutex_);
        error_ = std::current_exception();
      }
    }
    {
      const std::lock_guard<std::mutex> lock(mutex_);
      busy_ = 0;
      busy_bytes_ = 0;
      if (!staged.buffers.empty() && spare_.size() < 2) spare_.push_back(std::move(staged));
    }
    changed_.notify_all();
  }
  try {
    pipeline->finalize();
  } catch (...) {
    if (!error_) error_ = std::current_exception();
  }
  pipeline.reset();  // Catalyst and OpenGL released in the thread that made them
}

}  // namespace

std::unique_ptr<Front> make_thread_front(MPI_Comm simulation, const Options& options) {
  Comm comm(simulation);
  collectively(comm, [&] {
    int level = MPI_THREAD_SINGLE;
    check_mpi(MPI_Query_thread(&level), "MPI_Query_thread");
    static const char* names[] = {"MPI_THREAD_SINGLE", "MPI_THREAD_FUNNELED", "MPI_THREAD_SERIALIZED",
                                  "MPI_THREAD_MULTIPLE"};
    if (level < MPI_THREAD_MULTIPLE)
      throw Error(std::string("in-situ option --async: MPI was initialised with ") +
                  (level >= 0 && level <= 3 ? names[level] : "an unknown thread level") +
                  "; the helper thread calls MPI beside the simulation, which needs MPI_THREAD_MULTIPLE "
                  "(MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided))");
  });
  return std::make_unique<ThreadFront>(simulation, options);
}

}  // namespace volseg::insitu::detail
