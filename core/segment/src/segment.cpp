// SPDX-License-Identifier: MIT
#include "volseg/segment/segment.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <vector>

#include "volseg/io/auto_backend.hpp"
#include "volseg/io/error.hpp"
#include "volseg/io/files.hpp"
#include "volseg/io/format.hpp"
#include "volseg/io/hints.hpp"
#include "volseg/io/nrrd.hpp"
#include "volseg/io/registry.hpp"
#include "volseg/io/trace.hpp"
#include "volseg/io/watchdog.hpp"
#include "volseg/segment/journal.hpp"
#include "volseg/segment/progress.hpp"

#include "job_outputs.hpp"
#include "mask_chain.hpp"
#include "pipelines.hpp"
#include "volseg/segment/expression.hpp"

namespace volseg::segment {
namespace {

using detail::ChainInput;
using detail::check_side_output;
using detail::Clock;
using detail::joined;
using detail::MaskChain;
using detail::Packing;
using detail::refuse_output_over_input;
using detail::since;
using detail::timed;
using detail::TraceSession;

std::string exact(double value) {
  char text[64];
  std::snprintf(text, sizeof text, "%.17g", value);
  return text;
}

// What a resumed job must share with the one that left the partial output:
// the input (its files as they were: paths, sizes, modification times), the
// selection, the thresholds, the bricks and the output's format and place.
// The backends and the rank count may differ: they write the same bytes.
JournalIdentity job_identity(const SegmentOptions& options, const std::vector<std::string>& input_files,
                             const io::VolumeInfo& input, const io::Index3& brick, io::FileFormat output_format) {
  namespace fs = std::filesystem;
  std::string files, stamps;
  for (const auto& file : input_files) {
    std::error_code ec;
    const auto path = fs::weakly_canonical(file, ec);
    struct stat st {};
    if (::stat(file.c_str(), &st) != 0) throw_errno("stat", file);
    files += (files.empty() ? "" : ",") + (ec ? file : path.string());
    stamps += (stamps.empty() ? "" : ",") + std::to_string(st.st_size) + "@" + std::to_string(st.st_mtim.tv_sec) + "." +
              std::to_string(st.st_mtim.tv_nsec);
  }
  const std::string time = options.selection.step ? std::to_string(*options.selection.step) : "";
  std::error_code ec;
  const auto output = fs::weakly_canonical(options.output, ec);
  return {{"input", files},
          {"input_files", stamps},
          {"variable", input.variable},
          {"time", time},
          {"dims",
           std::to_string(input.dims[0]) + "," + std::to_string(input.dims[1]) + "," + std::to_string(input.dims[2])},
          {"dtype", std::string(io::dtype_name(input.dtype))},
          {"lo", exact(options.lo)},
          {"hi", exact(options.hi)},
          {"brick", std::to_string(brick[0]) + "," + std::to_string(brick[1]) + "," + std::to_string(brick[2])},
          {"histogram", options.histogram ? "yes" : "no"},  // journaled statistics must cover every brick alike
          {"format", io::format_name(output_format)},
          {"output", ec ? options.output : output.string()}};
}

// The bricks of this rank among those no earlier job finished.
std::vector<std::int64_t> bricks_to_do(const BrickLayout& layout, const Journal* journal, const Comm& comm,
                                       const SegmentOptions& options) {
  std::vector<std::int64_t> remaining;
  for (std::int64_t b = 0; b < layout.count(); ++b)
    if (!journal || !journal->done(b)) remaining.push_back(b);
  auto picks = assign_bricks(static_cast<std::int64_t>(remaining.size()), comm.rank(), comm.size(), options.assignment,
                             options.seed);
  for (auto& pick : picks) pick = remaining[static_cast<std::size_t>(pick)];
  return picks;
}

}  // namespace

io::VolumeInfo mask_info(const io::VolumeInfo& input, double lo, double hi, const std::string& source,
                         const std::string& history) {
  io::VolumeInfo mask;
  mask.dims = input.dims;
  mask.dtype = io::DType::u8;
  mask.byte_order = input.byte_order;
  mask.variable = "mask";
  mask.spacing = input.spacing;
  mask.origin = input.origin;
  mask.step = input.step;  // a series' record: its time
  mask.step_time = input.step_time;
  mask.time_units = input.time_units;
  mask.coordinates = input.coordinates;  // written back as coordinate variables: ParaView and xarray place the mask
  auto number = [](double value) {
    char text[64];
    std::snprintf(text, sizeof text, "%.17g", value);
    return std::string(text);
  };
  mask.attributes["threshold_lo"] = number(lo);
  mask.attributes["threshold_hi"] = number(hi);
  mask.attributes["source_file"] = source;
  if (!input.variable.empty()) mask.attributes["source_variable"] = input.variable;
  mask.attributes["long_name"] = "mask of " + (input.variable.empty() ? std::string("the input") : input.variable) +
                                 " in [" + number(lo) + ", " + number(hi) + "]";
  for (int a = 0; a < 3; ++a)  // keep the input's dimension names
    if (auto it = input.attributes.find("dim" + std::to_string(a)); it != input.attributes.end())
      mask.attributes[it->first] = it->second;
  // and its geometry beyond spacing and origin (a NIfTI input's affine)
  for (const char* key : {"nifti_affine", "nifti_affine_from", "units_xyz"})
    if (auto it = input.attributes.find(key); it != input.attributes.end()) mask.attributes[it->first] = it->second;
  mask.attributes["flag_values"] = "0 1";
  mask.attributes["flag_meanings"] = "outside inside";
  mask.attributes["history"] = history;
  return mask;
}

void reduce_stats(const Comm& comm, const Stats& local, Stats& global) {
  std::uint64_t counts[3] = {local.voxels, local.valid, local.in_range};
  std::uint64_t sums[3];
  check_mpi(MPI_Allreduce(counts, sums, 3, MPI_UINT64_T, MPI_SUM, comm.get()), "MPI_Allreduce");
  double low = local.valid ? local.min : INFINITY, high = local.valid ? local.max : -INFINITY;
  double min = 0, max = 0;
  check_mpi(MPI_Allreduce(&low, &min, 1, MPI_DOUBLE, MPI_MIN, comm.get()), "MPI_Allreduce");
  check_mpi(MPI_Allreduce(&high, &max, 1, MPI_DOUBLE, MPI_MAX, comm.get()), "MPI_Allreduce");
  check_mpi(
      MPI_Allreduce(local.histogram.data(), global.histogram.data(), Stats::bins, MPI_UINT64_T, MPI_SUM, comm.get()),
      "MPI_Allreduce");
  global.voxels = sums[0];
  global.valid = sums[1];
  global.in_range = sums[2];
  global.min = global.valid ? min : 0;
  global.max = global.valid ? max : 0;
}

namespace {

// Every rank's figures of a backend's own (io::Metrics), on rank 0. Every
// rank runs the same backend, so rank 0's names stand for every rank's.
std::vector<io::Metrics> gather_metrics(const Comm& comm, const io::Metrics& mine) {
  const std::size_t width = mine.per_call.empty() ? 0 : mine.per_call.front().size();
  std::vector<double> flat = {static_cast<double>(mine.totals.size()), static_cast<double>(width)};
  for (const auto& metric : mine.totals) flat.push_back(metric.value);
  for (const auto& row : mine.per_call) flat.insert(flat.end(), row.begin(), row.end());
  int count = static_cast<int>(flat.size());
  std::vector<int> counts(static_cast<std::size_t>(comm.size())), displs(static_cast<std::size_t>(comm.size()));
  check_mpi(MPI_Gather(&count, 1, MPI_INT, counts.data(), 1, MPI_INT, 0, comm.get()), "MPI_Gather");
  int total = 0;
  for (int r = 0; r < comm.size(); ++r) {
    displs[static_cast<std::size_t>(r)] = total;
    total += counts[static_cast<std::size_t>(r)];
  }
  std::vector<double> all(comm.rank() == 0 ? static_cast<std::size_t>(total) : 0);
  check_mpi(
      MPI_Gatherv(flat.data(), count, MPI_DOUBLE, all.data(), counts.data(), displs.data(), MPI_DOUBLE, 0, comm.get()),
      "MPI_Gatherv");
  std::vector<io::Metrics> result(comm.rank() == 0 ? static_cast<std::size_t>(comm.size()) : 0);
  for (std::size_t r = 0; r < result.size(); ++r) {
    const double* v = &all[static_cast<std::size_t>(displs[r])];
    const double* end = v + counts[r];
    const auto totals = static_cast<std::size_t>(v[0]), row = static_cast<std::size_t>(v[1]);
    v += 2;
    if (totals != mine.totals.size()) throw Error("internal error: ranks report different backend figures");
    io::Metrics& metrics = result[r];
    metrics.source = mine.source;
    metrics.per_call_name = mine.per_call_name;
    metrics.totals = mine.totals;
    for (auto& metric : metrics.totals) metric.value = *v++;
    for (; row > 0 && v < end; v += row) metrics.per_call.emplace_back(v, v + row);
  }
  return result;
}

std::vector<RankTimes> gather_times(const Comm& comm, const RankTimes& mine) {
  constexpr int fields = 11;
  double values[fields] = {mine.open,
                           mine.read,
                           mine.compute,
                           mine.write,
                           mine.wait,
                           mine.close,
                           mine.total,
                           static_cast<double>(mine.bytes_read),
                           static_cast<double>(mine.bytes_written),
                           static_cast<double>(mine.bricks),
                           static_cast<double>(mine.out_of_order)};
  std::vector<double> all(comm.rank() == 0 ? static_cast<std::size_t>(fields * comm.size()) : 0);
  check_mpi(MPI_Gather(values, fields, MPI_DOUBLE, all.data(), fields, MPI_DOUBLE, 0, comm.get()), "MPI_Gather");
  std::vector<RankTimes> result;
  for (int r = 0; comm.rank() == 0 && r < comm.size(); ++r) {
    const double* v = &all[static_cast<std::size_t>(r * fields)];
    result.push_back(RankTimes{v[0],
                               v[1],
                               v[2],
                               v[3],
                               v[4],
                               v[5],
                               v[6],
                               static_cast<std::uint64_t>(v[7]),
                               static_cast<std::uint64_t>(v[8]),
                               static_cast<std::int64_t>(v[9]),
                               static_cast<std::int64_t>(v[10]),
                               {},
                               {}});
  }
  return result;
}

void check_thresholds(const SegmentOptions& options) {
  if (std::isnan(options.lo) || std::isnan(options.hi)) throw Error("thresholds must not be NaN");
  if (options.lo > options.hi)
    throw Error("lo > hi: --lo " + std::to_string(options.lo) + " is above --hi " + std::to_string(options.hi));
  if (options.operators.any() && options.resume)
    throw Error("--resume: a job with operators (" + options.operators.describe() +
                ") is not resumable; run it again whole");
}

// The input's format and reading backend (auto: by access pattern and the
// page cache), the output's format and writing backend.
struct IoChoice {
  io::FileFormat input_format, output_format;
  io::Writing writing;
};

IoChoice choose_io(const Comm& comm, const SegmentOptions& options, SegmentResult& result) {
  const io::FileFormat input_format = io::detect_format(comm, options.input);
  const io::AutoChoice choice =
      io::resolve_backend(comm, options.backend, input_format, options.input, io::Access::stream);
  result.backend = choice.backend;
  result.backend_reason = choice.reason;
  result.input_resident = choice.resident;
  const io::FileFormat output_format = io::output_format(options.output, options.format, input_format);
  result.output_format = io::format_name(output_format);
  io::Writing writing = io::writing_backend(output_format, result.backend);
  if (!options.output_backend.empty()) writing.backend = options.output_backend;
  result.output_backend = writing.backend;
  return {input_format, output_format, std::move(writing)};
}

// The mask never over the input; report and trace over neither, nor each other.
void check_outputs(const SegmentOptions& options, const std::vector<std::string>& input_files) {
  refuse_output_over_input(options.output, input_files);
  check_side_output(options.report, "report", options.output, options.force, input_files);
  auto taken = input_files;
  if (!options.report.empty()) taken.push_back(options.report);
  check_side_output(options.trace, "trace", options.output, options.force, std::move(taken));
}

// Raw, CDF and Zarr masks are resumable: their data go to a partial file (a
// partial store for Zarr) that is kept, with a journal of the finished
// bricks, when the job fails. Null for a NetCDF-4, HDF5 or .nii.gz mask.
std::unique_ptr<Journal> open_journal(const Comm& comm, const SegmentOptions& options,
                                      const std::vector<std::string>& input_files, const BrickLayout& layout,
                                      io::FileFormat output_format, SegmentResult& result, Stats& resumed_stats) {
  if (options.operators.any()) return nullptr;  // not resumable (check_thresholds)
  if (!io::format_traits(output_format).resumable) {
    if (options.resume && output_format == io::FileFormat::nifti_gz)
      throw Error(
          "--resume works for raw, CDF and Zarr masks, not .nii.gz: its gzip members are placed only when "
          "the job ends (write NAME.nii to resume, then gzip it)");
    if (options.resume)
      throw Error(
          "--resume works for raw, CDF and Zarr masks, not NetCDF-4 or HDF5: an HDF5 file that HDF5 1.10 "
          "left when its writer was killed is often unreadable, so none is kept to resume");
    return nullptr;
  }
  // A record appended to a NetCDF series (--time A:B into one file) is
  // written in place; the series is renamed whole at its end, or removed.
  if (std::find(options.output_hints.begin(), options.output_hints.end(), "append=1") != options.output_hints.end()) {
    if (options.resume) throw Error("--resume: a record appended to a NetCDF series is not resumable");
    return nullptr;
  }
  const std::string data_file =
      output_format == io::FileFormat::raw ? io::data_path_for_header(options.output) : options.output;
  auto journal = std::make_unique<Journal>(
      comm, JournalRequest{options.output, io::partial_path(data_file),
                           job_identity(options, input_files, result.input_info, layout.shape(), output_format),
                           layout.count(), options.resume, options.force, options.journal_sync});
  result.bricks_resumed = journal->done_before();
  resumed_stats = journal->stats_before();
  return journal;
}

// What run_segment decides before it creates the mask: the input open with
// its backend, the output's format, backend and hints, the kernel in stored
// units, the bricks, and the journal of a resumable output.
struct SegmentPlan {
  Clock::time_point open_start;
  io::FileFormat output_format;
  std::unique_ptr<io::VolumeReader> reader;
  Packing packing;
  ThresholdKernel kernel;
  BrickLayout layout;
  std::vector<std::string> writer_hints;
  std::unique_ptr<Journal> journal;
  Stats resumed_stats;  // rank 0: of the bricks an earlier job finished
};

SegmentPlan plan_segment(const Comm& comm, const SegmentOptions& options, SegmentResult& result) {
  const auto open_start = Clock::now();
  const IoChoice io = choose_io(comm, options, result);
  // --hint goes to both roles, each taking the hints it knows (io::hints_for).
  auto reader = open_input(result.backend, {options.input, options.selection}, comm,
                           joined(io::hints_for(result.backend, io::Role::reader, options.hints), options.input_hints));
  check_outputs(options, reader->files());
  result.input_info = reader->info();
  const io::VolumeInfo& info = result.input_info;
  detail::check_levels(io.output_format, options.output_hints, info.dims);
  // Thresholds are in unpacked units (CF: value = stored * scale_factor +
  // add_offset); the kernel compares stored values, so convert once. Fill,
  // missing and valid range are in stored units already (CF).
  const Packing packing{info.scale_factor.value_or(1.0), info.add_offset.value_or(0.0)};
  if (packing.scale == 0) throw Error(options.input + ": scale_factor is 0");
  const auto [stored_lo, stored_hi] = packing.to_stored(options.lo, options.hi);
  const ThresholdKernel kernel(info.dtype,
                               Threshold{stored_lo, stored_hi, info.fill_value, info.valid_range, info.missing_value},
                               options.histogram);
  const bool chunked_output = io::format_traits(io.output_format).chunked;
  const io::Index3 shape = options.brick_shape.value_or(BrickLayout::job_shape(
      *reader, detail::chunks_for_bricks(reader->capabilities().chunks, io.output_format), chunked_output));
  const BrickLayout layout(info.dims, shape);
  check_operators(options.operators, layout.shape());
  result.brick_shape = layout.shape();
  result.brick_grid = layout.grid();
  result.brick_count = layout.count();
  auto hints = detail::writer_hints(io.writing, options.hints, options.output_hints, shape);
  Stats resumed_stats;
  auto journal = open_journal(comm, options, reader->files(), layout, io.output_format, result, resumed_stats);
  return SegmentPlan{open_start, io.output_format, std::move(reader),  packing,      kernel,
                     layout,     std::move(hints), std::move(journal), resumed_stats};
}

// What executing the plan leaves for the report.
struct Execution {
  std::unique_ptr<io::VolumeWriter> writer;
  RankTimes times;
  Stats local;
};

std::unique_ptr<io::VolumeWriter> create_mask(const Comm& comm, const SegmentOptions& options, const SegmentPlan& plan,
                                              const SegmentResult& result) {
  const io::VolumeInfo& info = result.input_info;
  io::CreateRequest request{options.output,
                            mask_info(info, options.lo, options.hi, options.input,
                                      options.command_line.empty() ? "volseg segment" : options.command_line),
                            options.force, plan.journal ? plan.journal->partial() : io::Partial::none};
  // Bricks of whole planes write whole planes (O_DIRECT masks, see RawOutput).
  const auto& shape = plan.layout.shape();
  request.whole_planes = shape[1] == info.dims[1] && shape[2] == info.dims[2];
  request.bricks = shape;
  return io::create_writer(result.output_backend, request, comm, io::Hints::parse(plan.writer_hints));
}

// The operators' pipeline: the chain's passes, then each brick's final mask
// written. The statistics are the input's (ghost layers left out) and the
// final mask's voxels.
void run_operators(detail::Job& job, MaskChain& chain, bool collective) {
  auto& driver = job.driver;
  job.times.compute += timed([&] { chain.prepare(driver.controls().progress); });
  chain.count_stats(true);
  std::uint64_t in_mask = 0;
  driver.run(collective || chain.collective(), [&](std::optional<std::size_t> k) {
    const io::Extent* extent = k ? &driver.extent(*k) : nullptr;
    const std::uint8_t* mask = nullptr;
    job.times.compute += timed([&] { mask = chain.brick(extent); });
    if (extent)
      for (std::int64_t i = 0, n = extent->voxels(); i < n; ++i) in_mask += mask[i];
    job.times.write += timed([&] { io::write_in_round(job.writer, extent, mask); });
  });
  job.stats.merge(chain.stats());
  job.stats.in_range = in_mask;
}

// The pipeline the backends allow, over this rank's bricks left to do.
void run_pipeline(const Comm& comm, const SegmentOptions& options, SegmentPlan& plan, Execution& run,
                  SegmentResult& result) {
  const auto& reader = plan.reader;
  const auto& writer = run.writer;
  const auto& journal = plan.journal;
  const BrickLayout& layout = plan.layout;
  const ThresholdKernel& kernel = plan.kernel;
  Stats& local = run.local;
  RankTimes& times = run.times;
  const auto bricks = bricks_to_do(layout, journal.get(), comm, options);
  const bool collective = reader->capabilities().collective || writer->capabilities().collective;
  const bool any_order = !collective && reader->capabilities().read_any;
  const bool mapped = !collective && !any_order && reader->capabilities().map;
  const bool operators = options.operators.any();
  result.pipeline = operators    ? "operators"
                    : collective ? "collective"
                    : any_order  ? "any-order"
                    : mapped     ? "mapped"
                                 : "buffered";
  std::optional<MaskChain> chain;
  const BrickMap map = BrickMap::from_layout(layout, comm.size(), options.assignment, options.seed);
  if (operators)
    chain.emplace(comm, map, ChainInput{*reader, false, options.lo, options.hi, options.input, options.output},
                  options.operators, false);

  {
    const io::watchdog::Phase phase("segment, the bricks");
    Progress progress(comm, "segment", (layout.count() - result.bricks_resumed) * (chain ? 1 + chain->passes() : 1),
                      options.progress);
    if (options.on_progress) progress.observe(options.on_progress);
    Stop stop(comm, options.cancel);
    BrickDriver driver(comm, layout, bricks,
                       {.progress = &progress,
                        .stop = &stop,
                        .interrupt = options.interrupt,
                        .journal = journal.get(),
                        .round_bytes = options.collective_batch_bytes,
                        .bytes_per_voxel = io::dtype_size(reader->info().dtype)});
    detail::Job job{comm, *reader, *writer, kernel, driver, local, times};
    std::exception_ptr error;
    try {
      if (chain)
        run_operators(job, *chain, collective);
      else if (collective)
        detail::run_collective(job);
      else if (any_order)
        detail::run_any_order(job);
      else if (mapped)
        detail::run_mapped(job);
      else
        detail::run_buffered(job);
    } catch (...) {
      error = std::current_exception();
    }
    times.bricks = driver.finished();
    progress.finish();
    stop.finish();
    agree(comm, error);
  }
}

// Never commit a mask with a brick missing.
void check_every_brick_done(const Comm& comm, std::int64_t mine_done, std::int64_t resumed, std::int64_t count) {
  long long mine = mine_done, done = 0;
  check_mpi(MPI_Allreduce(&mine, &done, 1, MPI_LONG_LONG, MPI_SUM, comm.get()), "MPI_Allreduce");
  if (done + resumed != count)
    throw Error("internal error: " + std::to_string(done) + " bricks thresholded and " + std::to_string(resumed) +
                " resumed, of " + std::to_string(count));
}

// Creates the mask, thresholds the bricks left and commits the mask. Every
// error from here to the commit is agreed, so every rank is in the handler
// together: a user's Cancel leaves no mask, any other error keeps what was
// done for --resume.
Execution execute_segment(const Comm& comm, const SegmentOptions& options, SegmentPlan& plan, SegmentResult& result) {
  Execution run;
  auto& journal = plan.journal;
  try {
    run.writer = create_mask(comm, options, plan, result);
    if (journal) journal->attach();
    run.times.open = since(plan.open_start);
    run_pipeline(comm, options, plan, run, result);
    check_every_brick_done(comm, run.times.bricks, result.bricks_resumed, plan.layout.count());
    run.times.close = timed([&] {
      const io::watchdog::Phase phase("segment, closing and committing the mask");
      run.writer->close();
      if (journal) {
        journal->complete();
        journal.reset();  // the output is whole: nothing to resume
      }
      plan.reader->close();
    });
  } catch (const Cancelled&) {
    if (journal) journal->discard();
    throw;
  } catch (const Interrupted& e) {
    throw Interrupted(e.what() + (journal ? journal->abandon() : std::string()));
  } catch (const Error& e) {
    throw Error(e.what() + (journal ? journal->abandon() : std::string()));
  }
  return run;
}

// Every rank's figures: statistics reduced, times and collective calls on rank 0.
void collect_figures(const Comm& comm, const SegmentPlan& plan, Execution& run, SegmentResult& result,
                     Clock::time_point job_start) {
  const auto& reader = plan.reader;
  const auto& writer = run.writer;
  RankTimes& times = run.times;
  Stats& local = run.local;
  times.bytes_read = reader->bytes_read();
  times.bytes_written = writer->bytes_written();
  times.total = since(job_start);
  result.implementation = reader->implementation();  // metadata for the report, after the timed job
  if (comm.rank() == 0 && result.bricks_resumed > 0) local.merge(plan.resumed_stats);
  reduce_stats(comm, local, result.stats);
  if (plan.packing.packed()) {  // report min and max in the units of the thresholds
    auto [low, high] = plan.packing.to_values(result.stats.min, result.stats.max);
    result.stats.min = low;
    result.stats.max = high;
  }
  times.read_metrics = reader->metrics();
  times.write_metrics = writer->metrics();
  result.ranks = gather_times(comm, times);
  const bool any_calls = !times.read_metrics.per_call.empty() || !times.write_metrics.per_call.empty();
  bool calls_anywhere = false;
  check_mpi(MPI_Allreduce(&any_calls, &calls_anywhere, 1, MPI_CXX_BOOL, MPI_LOR, comm.get()), "MPI_Allreduce");
  if (calls_anywhere) {
    auto reads = gather_metrics(comm, times.read_metrics);
    auto writes = gather_metrics(comm, times.write_metrics);
    for (std::size_t r = 0; r < result.ranks.size(); ++r) {
      result.ranks[r].read_metrics = std::move(reads[r]);
      result.ranks[r].write_metrics = std::move(writes[r]);
    }
  }
  double total = times.total;
  check_mpi(MPI_Allreduce(&total, &result.seconds, 1, MPI_DOUBLE, MPI_MAX, comm.get()), "MPI_Allreduce");
}

}  // namespace

// A job is planned (inputs checked, backends, formats, outputs and
// resumability decided), then executed, then reported.
SegmentResult run_segment(const Comm& comm, const SegmentOptions& options) {
  const auto job_start = Clock::now();
  SegmentResult result;
  result.comm_size = comm.size();
  check_thresholds(options);
  TraceSession tracing(comm, !options.trace.empty());
  SegmentPlan plan = plan_segment(comm, options, result);
  Execution run = execute_segment(comm, options, plan, result);
  collect_figures(comm, plan, run, result, job_start);
  if (!options.report.empty())
    collectively(comm, [&] {
      if (comm.rank() == 0) write_report(options.report, options, result);
    });
  if (!options.trace.empty()) {
    io::trace::disable();
    io::trace::write_gathered(comm, options.trace);
  }
  return result;
}

}  // namespace volseg::segment
