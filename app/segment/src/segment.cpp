// SPDX-License-Identifier: MIT
#include "volseg/segment/segment.hpp"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <cmath>
#include <filesystem>
#include <future>
#include <memory>
#include <optional>
#include <vector>

#include "volseg/io/error.hpp"
#include "volseg/io/format.hpp"
#include "volseg/io/nrrd.hpp"
#include "volseg/io/registry.hpp"
#include "volseg/io/trace.hpp"
#include "volseg/segment/progress.hpp"

namespace volseg::segment {
namespace {

using Clock = std::chrono::steady_clock;

double since(Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); }

template <class Fn>
double timed(Fn&& fn) {
  auto start = Clock::now();
  fn();
  return since(start);
}

// The files an output path will create: a raw header names its data file too.
std::vector<std::filesystem::path> output_files(const std::string& path) {
  std::vector<std::filesystem::path> files{path};
  if (std::filesystem::path(path).extension() == ".nhdr") files.emplace_back(io::data_path_for_header(path));
  return files;
}

// Compared by identity (links, "..", symlinks), not by spelling.
void refuse_output_over_input(const std::string& output, const std::vector<std::string>& input_files) {
  namespace fs = std::filesystem;
  auto same = [](const fs::path& a, const fs::path& b) {
    std::error_code ec;
    if (fs::exists(a, ec) && fs::exists(b, ec)) return fs::equivalent(a, b, ec);
    return fs::weakly_canonical(a, ec) == fs::weakly_canonical(b, ec);
  };
  for (const auto& out : output_files(output))
    for (const auto& in : input_files)
      if (same(out, in)) throw Error("output " + out.string() + " is the input " + in);
}

// The report and the trace are outputs too: never over the input, the mask
// or each other, never over an existing file without --force, and their
// folder must be writable (checked before the job, not after it).
void check_side_output(const std::string& path, const std::string& what, const SegmentOptions& options,
                       std::vector<std::string> taken) {
  namespace fs = std::filesystem;
  if (path.empty()) return;
  for (const auto& file : output_files(options.output)) taken.push_back(file.string());
  try {
    refuse_output_over_input(path, taken);
  } catch (const Error&) {
    throw Error(what + " " + path + " would overwrite the input, the mask or the report");
  }
  if (!options.force && fs::exists(path)) throw Error(path + " exists (use --force to replace it)");
  fs::path folder = fs::path(path).parent_path();
  if (folder.empty()) folder = ".";
  if (::access(folder.c_str(), W_OK) != 0) throw_errno("cannot write the " + what + " in", folder.string());
}

// Tracing is on for this job only, also when it fails.
struct TraceSession {
  explicit TraceSession(const Comm& comm, bool on) : on_(on) {
    if (on_) io::trace::enable(comm);
  }
  ~TraceSession() {
    if (on_) io::trace::disable();
  }
  TraceSession(const TraceSession&) = delete;
  TraceSession& operator=(const TraceSession&) = delete;

 private:
  bool on_;
};

std::vector<std::string> joined(std::vector<std::string> a, const std::vector<std::string>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

// --format, else the output's extension, else the input's format.
io::FileFormat choose_output_format(const SegmentOptions& options, io::FileFormat input) {
  if (!options.format.empty()) return io::parse_format(options.format);
  const auto extension = std::filesystem::path(options.output).extension();
  if (extension == ".nhdr") return io::FileFormat::raw;
  if (input == io::FileFormat::raw) return extension == ".nc" ? io::FileFormat::cdf5 : io::FileFormat::raw;
  return input == io::FileFormat::cdf1 ? io::FileFormat::cdf2 : input;  // PnetCDF writes CDF-2 and CDF-5
}

io::VolumeInfo mask_info(const SegmentOptions& options, const io::VolumeInfo& input) {
  io::VolumeInfo mask;
  mask.dims = input.dims;
  mask.dtype = io::DType::u8;
  mask.byte_order = input.byte_order;
  mask.variable = "mask";
  mask.spacing = input.spacing;
  auto number = [](double value) {
    char text[64];
    std::snprintf(text, sizeof text, "%.17g", value);
    return std::string(text);
  };
  mask.attributes["threshold_lo"] = number(options.lo);
  mask.attributes["threshold_hi"] = number(options.hi);
  mask.attributes["source_file"] = options.input;
  if (!input.variable.empty()) mask.attributes["source_variable"] = input.variable;
  mask.attributes["long_name"] =
      "mask of " + (input.variable.empty() ? std::string("the input") : input.variable) + " in [" + number(options.lo) +
      ", " + number(options.hi) + "]";
  for (int a = 0; a < 3; ++a)  // keep the input's dimension names
    if (auto it = input.attributes.find("dim" + std::to_string(a)); it != input.attributes.end())
      mask.attributes[it->first] = it->second;
  mask.attributes["flag_values"] = "0 1";
  mask.attributes["flag_meanings"] = "outside inside";
  mask.attributes["history"] = options.command_line.empty() ? "volseg segment" : options.command_line;
  return mask;
}

// CF packing of stored values.
struct Packing {
  double scale = 1, offset = 0;
  bool packed() const { return scale != 1 || offset != 0; }
  // The stored-value range that unpacks into [lo, hi].
  std::pair<double, double> to_stored(double lo, double hi) const {
    double a = (lo - offset) / scale, b = (hi - offset) / scale;
    return scale > 0 ? std::pair{a, b} : std::pair{b, a};
  }
  std::pair<double, double> to_values(double low, double high) const {
    double a = low * scale + offset, b = high * scale + offset;
    return scale > 0 ? std::pair{a, b} : std::pair{b, a};
  }
};

struct Job {
  const Comm& comm;
  io::VolumeReader& reader;
  io::VolumeWriter& writer;
  const BrickLayout& layout;
  const std::vector<std::int64_t>& bricks;
  const ThresholdKernel& kernel;
  Progress& progress;
  Stats& stats;
  RankTimes& times;
  std::size_t batch_bytes;  // collective pipeline: input per call
};

std::uint64_t input_bytes(const Job& job, const io::Extent& extent) {
  return static_cast<std::uint64_t>(extent.voxels()) * io::dtype_size(job.reader.info().dtype);
}

// Zero-copy input: the brick's window is mapped and the kernel reads it in
// place, run by run (seed 004's raw method); mmap-advise announces the next
// bricks. The mask goes to a buffer that an I/O thread writes while the
// kernel works on the next brick (writing fresh pages through write() is
// cheaper than faulting them in through a mapping), unless the writer can
// only be mapped.
void run_mapped(Job& job) {
  const int depth = job.reader.prefetch_depth();
  const auto& bricks = job.bricks;
  auto advise = [&](std::size_t k) {
    if (k < bricks.size()) job.reader.will_need(job.layout.brick(bricks[k]));
  };
  const auto largest = static_cast<std::size_t>(job.layout.largest_brick_voxels());
  std::vector<std::uint8_t> mask[2] = {std::vector<std::uint8_t>(largest), std::vector<std::uint8_t>(largest)};
  std::future<double> pending_write;
  for (std::size_t k = 1; k <= static_cast<std::size_t>(depth); ++k) advise(k);
  for (std::size_t k = 0; k < bricks.size(); ++k) {
    const io::Extent extent = job.layout.brick(bricks[k]);
    if (k > 0) job.times.read += timed([&] { advise(k + static_cast<std::size_t>(depth)); });
    io::Mapping input;
    job.times.read += timed([&] { input = job.reader.map(extent); });
    std::uint8_t* out = mask[k % 2].data();
    job.times.compute += timed([&] {
      for (const io::Run& run : input.runs())
        job.kernel.run(run.data, run.count, input.needs_swap(), out + run.index, job.stats);
    });
    job.times.read += timed([&] { input.release(); });
    if (pending_write.valid()) job.times.wait += timed([&] { job.times.write += pending_write.get(); });
    pending_write = std::async(std::launch::async, [&job, out, extent] {
      return timed([&] { job.writer.write(extent, out); });
    });
    ++job.times.bricks;
    job.progress.advance(1, input_bytes(job, extent));
  }
  if (pending_write.valid()) job.times.wait += timed([&] { job.times.write += pending_write.get(); });
}

// Seed 004's readanyv: the reader is given all of this rank's bricks and
// hands them out in the order their data become available; the kernel reads
// each in place and the mask is written by an I/O thread, as run_mapped.
void run_any_order(Job& job) {
  const auto& bricks = job.bricks;
  std::vector<io::Extent> extents;
  extents.reserve(bricks.size());
  for (auto brick : bricks) extents.push_back(job.layout.brick(brick));
  std::unique_ptr<io::Arrivals> arrivals;
  job.times.read += timed([&] { arrivals = job.reader.read_any(extents); });
  const auto largest = static_cast<std::size_t>(job.layout.largest_brick_voxels());
  std::vector<std::uint8_t> mask[2] = {std::vector<std::uint8_t>(largest), std::vector<std::uint8_t>(largest)};
  std::future<double> pending_write;
  for (std::size_t k = 0; k < bricks.size(); ++k) {
    std::optional<io::Arrival> arrival;
    job.times.read += timed([&] { arrival = arrivals->next(); });
    if (!arrival) throw Error("read_any handed out " + std::to_string(k) + " of " + std::to_string(bricks.size()) + " bricks");
    const io::Extent& extent = extents[arrival->index];
    std::uint8_t* out = mask[k % 2].data();
    job.times.compute += timed([&] {
      for (const io::Run& run : arrival->values.runs())
        job.kernel.run(run.data, run.count, arrival->values.needs_swap(), out + run.index, job.stats);
    });
    job.times.read += timed([&] { arrival->values.release(); });
    if (pending_write.valid()) job.times.wait += timed([&] { job.times.write += pending_write.get(); });
    pending_write = std::async(std::launch::async, [&job, out, extent] {
      return timed([&] { job.writer.write(extent, out); });
    });
    ++job.times.bricks;
    job.progress.advance(1, input_bytes(job, extent));
  }
  if (pending_write.valid()) job.times.wait += timed([&] { job.times.write += pending_write.get(); });
  job.times.read += timed([&] { arrivals->close(); });
}

// Double-buffered: an I/O thread reads brick k+1 and writes the mask of
// brick k-1 while this thread thresholds brick k. Memory: two input bricks
// and two mask bricks, whatever the volume size.
void run_buffered(Job& job) {
  const auto& bricks = job.bricks;
  if (bricks.empty()) return;
  const std::size_t element = io::dtype_size(job.reader.info().dtype);
  const auto largest = static_cast<std::size_t>(job.layout.largest_brick_voxels());
  std::vector<std::byte> input[2] = {std::vector<std::byte>(largest * element),
                                     std::vector<std::byte>(largest * element)};
  std::vector<std::uint8_t> mask[2] = {std::vector<std::uint8_t>(largest), std::vector<std::uint8_t>(largest)};
  auto read_brick = [&](std::size_t k) {
    return std::async(std::launch::async, [&job, &input, &bricks, k] {
      return timed([&] { job.reader.read(job.layout.brick(bricks[k]), input[k % 2].data()); });
    });
  };
  std::future<double> pending_write;
  std::future<double> pending_read = read_brick(0);
  for (std::size_t k = 0; k < bricks.size(); ++k) {
    const io::Extent extent = job.layout.brick(bricks[k]);
    job.times.wait += timed([&] { job.times.read += pending_read.get(); });
    if (k + 1 < bricks.size()) pending_read = read_brick(k + 1);
    job.times.compute += timed([&] {
      job.kernel.run(input[k % 2].data(), extent.voxels(), false, mask[k % 2].data(), job.stats);
    });
    if (pending_write.valid()) job.times.wait += timed([&] { job.times.write += pending_write.get(); });
    pending_write = std::async(std::launch::async, [&job, &mask, extent, k] {
      return timed([&] { job.writer.write(extent, mask[k % 2].data()); });
    });
    ++job.times.bricks;
    job.progress.advance(1, input_bytes(job, extent));
  }
  job.times.wait += timed([&] { job.times.write += pending_write.get(); });
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

// Collective backends (MPI-IO, PnetCDF, netCDF-4, twophase): every rank
// joins every round of read_all/write_all, with an empty list once its own
// bricks are done. With MPI_THREAD_MULTIPLE the calls run on one I/O thread,
// reading round k+1 and writing round k-1 while round k is computed; the
// I/O library is only ever entered from that thread. Otherwise they run in
// turn on the thread that initialised MPI.
// Collective calls are joined by every rank, so each is a point where the
// ranks wait for one another: a call carries several bricks (up to
// SegmentOptions::collective_batch_bytes of input per rank), so a job makes
// few such points. Ranks with fewer rounds join the others' with nothing.
void run_collective(Job& job) {
  const auto& bricks = job.bricks;
  const std::size_t element = io::dtype_size(job.reader.info().dtype);
  const auto largest = static_cast<std::size_t>(job.layout.largest_brick_voxels());
  const std::size_t batch = std::max<std::size_t>(1, job.batch_bytes / (largest * element));
  long long mine = static_cast<long long>((bricks.size() + batch - 1) / batch), rounds = 0;
  check_mpi(MPI_Allreduce(&mine, &rounds, 1, MPI_LONG_LONG, MPI_MAX, job.comm.get()), "MPI_Allreduce");
  int threading = MPI_THREAD_SINGLE;
  MPI_Query_thread(&threading);
  const bool overlap = threading == MPI_THREAD_MULTIPLE;
  const int depth = overlap ? 2 : 1;
  std::vector<std::vector<std::byte>> input(static_cast<std::size_t>(depth),
                                            std::vector<std::byte>(batch * largest * element));
  std::vector<std::vector<std::uint8_t>> mask(static_cast<std::size_t>(depth), std::vector<std::uint8_t>(batch * largest));
  // The bricks of a round, in order, each at slot k * largest of the round's buffers.
  auto extents_of = [&](long long round) {
    std::vector<io::Extent> extents;
    const std::size_t first = static_cast<std::size_t>(round) * batch;
    for (std::size_t b = first; b < std::min(first + batch, bricks.size()); ++b)
      extents.push_back(job.layout.brick(bricks[b]));
    return extents;
  };
  auto slots = [&](auto* base, std::size_t count, std::size_t stride) {
    std::vector<decltype(base)> pointers(count);
    for (std::size_t k = 0; k < count; ++k) pointers[k] = base + k * stride;
    return pointers;
  };
  auto read = [&](long long round) {
    auto extents = extents_of(round);
    auto pointers = slots(input[static_cast<std::size_t>(round % depth)].data(), extents.size(), largest * element);
    std::vector<void*> memory(pointers.begin(), pointers.end());
    job.reader.read_all(extents, {memory.data(), memory.size()});
  };
  auto write = [&](long long round) {
    auto extents = extents_of(round);
    auto pointers = slots(mask[static_cast<std::size_t>(round % depth)].data(), extents.size(), largest);
    std::vector<const void*> memory(pointers.begin(), pointers.end());
    job.writer.write_all(extents, {memory.data(), memory.size()});
  };
  auto compute = [&](long long round) {
    const auto extents = extents_of(round);
    for (std::size_t k = 0; k < extents.size(); ++k) {
      job.times.compute += timed([&] {
        job.kernel.run(input[static_cast<std::size_t>(round % depth)].data() + k * largest * element,
                       extents[k].voxels(), false, mask[static_cast<std::size_t>(round % depth)].data() + k * largest,
                       job.stats);
      });
      ++job.times.bricks;
      job.progress.advance(1, input_bytes(job, extents[k]));
    }
  };
  if (!overlap) {
    for (long long round = 0; round < rounds; ++round) {
      job.times.read += timed([&] { read(round); });
      compute(round);
      job.times.write += timed([&] { write(round); });
    }
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
}

void reduce_stats(const Comm& comm, const Stats& local, Stats& global) {
  std::uint64_t counts[3] = {local.voxels, local.valid, local.in_range};
  std::uint64_t sums[3];
  check_mpi(MPI_Allreduce(counts, sums, 3, MPI_UINT64_T, MPI_SUM, comm.get()), "MPI_Allreduce");
  double low = local.valid ? local.min : INFINITY, high = local.valid ? local.max : -INFINITY;
  double min = 0, max = 0;
  check_mpi(MPI_Allreduce(&low, &min, 1, MPI_DOUBLE, MPI_MIN, comm.get()), "MPI_Allreduce");
  check_mpi(MPI_Allreduce(&high, &max, 1, MPI_DOUBLE, MPI_MAX, comm.get()), "MPI_Allreduce");
  check_mpi(MPI_Allreduce(local.histogram.data(), global.histogram.data(), Stats::bins, MPI_UINT64_T, MPI_SUM,
                          comm.get()),
            "MPI_Allreduce");
  global.voxels = sums[0];
  global.valid = sums[1];
  global.in_range = sums[2];
  global.min = global.valid ? min : 0;
  global.max = global.valid ? max : 0;
}

// Every rank's list of two-phase call timings, on rank 0.
std::vector<std::vector<io::twophase::Timing>> gather_calls(const Comm& comm,
                                                             const std::vector<io::twophase::Timing>& mine) {
  constexpr int fields = 12;
  std::vector<double> flat;
  for (const auto& t : mine)
    flat.insert(flat.end(), {t.requests, t.exchange, t.io, t.total, static_cast<double>(t.calls),
                             static_cast<double>(t.rounds), static_cast<double>(t.io_calls),
                             static_cast<double>(t.file_bytes), static_cast<double>(t.sieved),
                             static_cast<double>(t.naive), static_cast<double>(t.contiguous),
                             static_cast<double>(t.independent)});
  int count = static_cast<int>(flat.size());
  std::vector<int> counts(static_cast<std::size_t>(comm.size())), displs(static_cast<std::size_t>(comm.size()));
  check_mpi(MPI_Gather(&count, 1, MPI_INT, counts.data(), 1, MPI_INT, 0, comm.get()), "MPI_Gather");
  int total = 0;
  for (int r = 0; r < comm.size(); ++r) {
    displs[static_cast<std::size_t>(r)] = total;
    total += counts[static_cast<std::size_t>(r)];
  }
  std::vector<double> all(comm.rank() == 0 ? static_cast<std::size_t>(total) : 0);
  check_mpi(MPI_Gatherv(flat.data(), count, MPI_DOUBLE, all.data(), counts.data(), displs.data(), MPI_DOUBLE, 0,
                        comm.get()),
            "MPI_Gatherv");
  std::vector<std::vector<io::twophase::Timing>> result(comm.rank() == 0 ? static_cast<std::size_t>(comm.size()) : 0);
  for (std::size_t r = 0; r < result.size(); ++r)
    for (int i = 0; i < counts[r]; i += fields) {
      const double* v = &all[static_cast<std::size_t>(displs[r] + i)];
      auto u = [](double x) { return static_cast<std::uint64_t>(x); };
      result[r].push_back(io::twophase::Timing{v[0], v[1], v[2], v[3], u(v[4]), u(v[5]), u(v[6]), u(v[7]), u(v[8]),
                                               u(v[9]), u(v[10]), u(v[11])});
    }
  return result;
}

std::vector<RankTimes> gather_times(const Comm& comm, const RankTimes& mine) {
  constexpr int fields = 10;
  double values[fields] = {mine.open,    mine.read,  mine.compute, mine.write,
                           mine.wait,    mine.close, mine.total,   static_cast<double>(mine.bytes_read),
                           static_cast<double>(mine.bytes_written), static_cast<double>(mine.bricks)};
  std::vector<double> all(comm.rank() == 0 ? static_cast<std::size_t>(fields * comm.size()) : 0);
  check_mpi(MPI_Gather(values, fields, MPI_DOUBLE, all.data(), fields, MPI_DOUBLE, 0, comm.get()), "MPI_Gather");
  std::vector<RankTimes> result;
  for (int r = 0; comm.rank() == 0 && r < comm.size(); ++r) {
    const double* v = &all[static_cast<std::size_t>(r * fields)];
    result.push_back(RankTimes{v[0], v[1], v[2], v[3], v[4], v[5], v[6], static_cast<std::uint64_t>(v[7]),
                               static_cast<std::uint64_t>(v[8]), static_cast<std::int64_t>(v[9]), {}, {}});
  }
  return result;
}

}  // namespace

SegmentResult run_segment(const Comm& comm, const SegmentOptions& options) {
  const auto job_start = Clock::now();
  SegmentResult result;
  result.comm_size = comm.size();
  RankTimes times;
  if (std::isnan(options.lo) || std::isnan(options.hi)) throw Error("thresholds must not be NaN");
  if (options.lo > options.hi)
    throw Error("lo > hi: --lo " + std::to_string(options.lo) + " is above --hi " + std::to_string(options.hi));
  TraceSession tracing(comm, !options.trace.empty());
  auto open_start = Clock::now();
  const io::FileFormat input_format = io::detect_format(comm, options.input);
  result.backend = options.backend == "auto" ? io::reading_backend(input_format) : options.backend;
  const io::FileFormat output_format = choose_output_format(options, input_format);
  result.output_format = io::format_name(output_format);
  io::Writing writing = io::writing_backend(output_format, result.backend);
  if (!options.output_backend.empty()) writing.backend = options.output_backend;
  result.output_backend = writing.backend;
  const io::Hints input_hints = io::Hints::parse(joined(options.hints, options.input_hints));

  std::unique_ptr<io::VolumeReader> reader;
  std::unique_ptr<io::VolumeWriter> writer;
  reader = io::open_reader(result.backend, options.input, comm, input_hints);
  refuse_output_over_input(options.output, reader->files());
  check_side_output(options.report, "report", options, reader->files());
  {
    auto taken = reader->files();
    if (!options.report.empty()) taken.push_back(options.report);
    check_side_output(options.trace, "trace", options, std::move(taken));
  }
  result.input_info = reader->info();
  // Thresholds are in unpacked units (CF: value = stored * scale_factor +
  // add_offset); the kernel compares stored values, so convert once. Fill,
  // missing and valid range are in stored units already (CF).
  const Packing packing{result.input_info.scale_factor.value_or(1.0), result.input_info.add_offset.value_or(0.0)};
  if (packing.scale == 0) throw Error(options.input + ": scale_factor is 0");
  const auto [stored_lo, stored_hi] = packing.to_stored(options.lo, options.hi);
  Threshold threshold{stored_lo, stored_hi, result.input_info.fill_value, result.input_info.valid_range,
                      result.input_info.missing_value};
  const ThresholdKernel kernel(result.input_info.dtype, threshold);
  const io::Index3 shape = options.brick_shape.value_or(
      BrickLayout::default_shape(result.input_info.dims, io::dtype_size(result.input_info.dtype)));
  const BrickLayout layout(result.input_info.dims, shape);
  result.brick_shape = layout.shape();
  result.brick_grid = layout.grid();
  result.brick_count = layout.count();
  // chunks=brick (netcdf4) means chunks of this job's brick shape.
  auto writer_hints = joined(joined(options.hints, writing.hints), options.output_hints);
  for (auto& hint : writer_hints)
    if (hint == "chunks=brick")
      hint = "chunks=" + std::to_string(shape[0]) + "," + std::to_string(shape[1]) + "," + std::to_string(shape[2]);
  writer = io::create_writer(result.output_backend, {options.output, mask_info(options, result.input_info), options.force},
                             comm, io::Hints::parse(writer_hints));
  times.open = since(open_start);

  const auto bricks = assign_bricks(layout.count(), comm.rank(), comm.size(), options.assignment, options.seed);
  const bool collective = reader->collective() || writer->collective();
  const bool any_order = !collective && reader->can_read_any();
  const bool mapped = !collective && !any_order && reader->can_map();
  result.pipeline = collective ? "collective" : any_order ? "any-order" : mapped ? "mapped" : "buffered";

  Stats local;
  {
    Progress progress(comm, "segment", layout.count(), options.progress);
    Job job{comm, *reader, *writer, layout, bricks, kernel, progress, local, times, options.collective_batch_bytes};
    std::exception_ptr error;
    try {
      if (collective) run_collective(job);
      else if (any_order) run_any_order(job);
      else if (mapped) run_mapped(job);
      else run_buffered(job);
    } catch (...) {
      error = std::current_exception();
    }
    progress.finish();
    agree(comm, error);
  }

  times.close = timed([&] {
    writer->close();
    reader->close();
  });
  times.bytes_read = reader->bytes_read();
  times.bytes_written = writer->bytes_written();
  times.total = since(job_start);
  result.implementation = reader->implementation();  // metadata for the report, after the timed job
  reduce_stats(comm, local, result.stats);
  if (packing.packed()) {  // report min and max in the units of the thresholds
    auto [low, high] = packing.to_values(result.stats.min, result.stats.max);
    result.stats.min = low;
    result.stats.max = high;
  }
  if (const auto* calls = reader->collective_calls()) times.read_calls = *calls;
  if (const auto* calls = writer->collective_calls()) times.write_calls = *calls;
  result.ranks = gather_times(comm, times);
  const bool any_calls = !times.read_calls.empty() || !times.write_calls.empty();
  bool calls_anywhere = false;
  check_mpi(MPI_Allreduce(&any_calls, &calls_anywhere, 1, MPI_CXX_BOOL, MPI_LOR, comm.get()), "MPI_Allreduce");
  if (calls_anywhere) {
    auto reads = gather_calls(comm, times.read_calls);
    auto writes = gather_calls(comm, times.write_calls);
    for (std::size_t r = 0; r < result.ranks.size(); ++r) {
      result.ranks[r].read_calls = std::move(reads[r]);
      result.ranks[r].write_calls = std::move(writes[r]);
    }
  }
  double total = times.total;
  check_mpi(MPI_Allreduce(&total, &result.seconds, 1, MPI_DOUBLE, MPI_MAX, comm.get()), "MPI_Allreduce");
  if (!options.report.empty()) collectively(comm, [&] {
      if (comm.rank() == 0) write_report(options.report, options, result);
    });
  if (!options.trace.empty()) {
    io::trace::disable();
    io::trace::write_gathered(comm, options.trace);
  }
  return result;
}

}  // namespace volseg::segment
