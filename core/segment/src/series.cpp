// SPDX-License-Identifier: MIT
#include "volseg/segment/series.hpp"

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <unordered_map>

#include "job_outputs.hpp"
#include "volseg/io/auto_backend.hpp"
#include "volseg/io/collective_output.hpp"
#include "volseg/io/dtype_dispatch.hpp"
#include "volseg/io/error.hpp"
#include "volseg/io/files.hpp"
#include "volseg/io/format.hpp"
#include "volseg/io/hints.hpp"
#include "volseg/io/messages.hpp"
#include "volseg/io/registry.hpp"
#include "volseg/io/rounds.hpp"
#include "volseg/segment/brick_layout.hpp"
#include "volseg/segment/expression.hpp"
#include "volseg/segment/plot_script.hpp"
#include "volseg/version.hpp"

namespace volseg::segment {
namespace fs = std::filesystem;

namespace {

std::optional<std::int64_t> integer(const std::string& text, const std::string& whole) {
  if (text.empty()) return std::nullopt;
  std::int64_t value = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc() || end != text.data() + text.size())
    throw Error("--time '" + whole + "': '" + text + "' is not a whole number (give N, all, or A:B[:S])");
  return value;
}

double since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// Rank 0's answer, on every rank.
bool everyone(const Comm& comm, bool rank0) {
  int value = rank0 ? 1 : 0;
  check_mpi(MPI_Bcast(&value, 1, MPI_INT, 0, comm.get()), "MPI_Bcast");
  return value != 0;
}

}  // namespace

StepRange parse_time(const std::string& text) {
  StepRange selection;
  if (text == "all") return selection;
  const auto first = text.find(':');
  if (first == std::string::npos) {
    selection.single = integer(text, text);
    if (!selection.single) throw Error("--time: empty (give N, all, or A:B[:S])");
    if (*selection.single < 0) throw Error("--time " + text + ": steps are counted from 0");
    return selection;
  }
  const auto second = text.find(':', first + 1);
  if (second != std::string::npos && text.find(':', second + 1) != std::string::npos)
    throw Error("--time '" + text + "': at most A:B:S");
  selection.start = integer(text.substr(0, first), text);
  selection.stop =
      integer(text.substr(first + 1, second == std::string::npos ? std::string::npos : second - first - 1), text);
  if (second != std::string::npos) {
    const auto stride = integer(text.substr(second + 1), text);
    if (stride) selection.stride = *stride;
  }
  if (selection.stride <= 0) throw Error("--time '" + text + "': the stride S must be 1 or more");
  for (const auto& bound : {selection.start, selection.stop})
    if (bound && *bound < 0) throw Error("--time '" + text + "': steps are counted from 0");
  return selection;
}

std::vector<std::int64_t> steps_in(const StepRange& selection, std::int64_t count) {
  if (selection.single) {
    if (*selection.single >= count)
      throw Error("--time " + std::to_string(*selection.single) + " is past the last step " +
                  std::to_string(count - 1));
    return {*selection.single};
  }
  const std::int64_t start = selection.start.value_or(0), stop = selection.stop.value_or(count);
  if (start >= count)
    throw Error("--time: the first step " + std::to_string(start) + " is past the last step " +
                std::to_string(count - 1) + " (" + std::to_string(count) + " steps)");
  if (stop > count)
    throw Error("--time: the range ends at " + std::to_string(stop) + ", past the file's " + std::to_string(count) +
                " steps (A:B takes A to B-1)");
  std::vector<std::int64_t> steps;
  for (std::int64_t t = start; t < stop; t += selection.stride) steps.push_back(t);
  if (steps.empty())
    throw Error("--time " + std::to_string(start) + ":" + std::to_string(stop) + " names no step (A:B takes A to B-1)");
  return steps;
}

std::vector<std::int64_t> input_steps(const Comm& comm, const std::string& backend, const io::OpenRequest& input,
                                      const std::vector<std::string>& hints, const StepRange& range) {
  const std::string& path = input.path;
  std::int64_t count = 0;
  {
    std::unique_ptr<io::VolumeReader> reader;
    try {
      const std::string chosen = io::resolve_backend(comm, backend, path, io::Access::stream).backend;
      reader = open_input(chosen, {path, input.selection.at_step(0)}, comm, hints);
    } catch (const Error& e) {
      const std::string text = e.what();
      if (text.find("is 3D; --time does not apply") != std::string::npos)
        throw Error(path + ": the variable is 3D, with no time steps; --time does not apply");
      throw;
    }
    count = reader->info().steps;
    reader->close();
  }
  return steps_in(range, count);
}

namespace {

// The step's number in place of the pattern's %d conversions (flags 0 and a
// width allowed; %% is %); how many there are.
std::pair<std::string, int> formatted(const std::string& pattern, std::int64_t step) {
  std::string out;
  int conversions = 0;
  for (std::size_t i = 0; i < pattern.size(); ++i) {
    if (pattern[i] != '%') {
      out += pattern[i];
      continue;
    }
    if (i + 1 < pattern.size() && pattern[i + 1] == '%') {
      out += '%';
      ++i;
      continue;
    }
    std::size_t j = i + 1;
    bool zero = false;
    if (j < pattern.size() && pattern[j] == '0') zero = true, ++j;
    std::size_t width = 0;
    while (j < pattern.size() && pattern[j] >= '0' && pattern[j] <= '9' && width < 64)
      width = width * 10 + static_cast<std::size_t>(pattern[j++] - '0');
    if (j >= pattern.size() || (pattern[j] != 'd' && pattern[j] != 'i'))
      throw Error("'" + pattern + "': the only conversion allowed is one %d for the step (say %06d)");
    std::string digits = std::to_string(step < 0 ? -step : step);
    const std::size_t sign = step < 0 ? 1 : 0;
    if (digits.size() + sign < width) digits.insert(0, width - digits.size() - sign, zero ? '0' : ' ');
    out += (step < 0 ? "-" : "") + digits;
    ++conversions;
    i = j;
  }
  return {out, conversions};
}

}  // namespace

bool names_steps(const std::string& path) {
  const int conversions = formatted(path, 0).second;
  if (conversions > 1)
    throw Error("'" + path + "' needs exactly one %d for the step, not " + std::to_string(conversions));
  return conversions == 1;
}

std::string step_path(const std::string& pattern, std::int64_t step) {
  auto [path, conversions] = formatted(pattern, step);
  if (conversions != 1)
    throw Error("'" + pattern + "' needs exactly one %d for the step, not " + std::to_string(conversions));
  return path;
}

// --- segment -------------------------------------------------------------

namespace {

void write_segment_report(const SegmentOptions& options, const SegmentSeriesResult& result) {
  nlohmann::json rows = nlohmann::json::array();
  for (std::size_t k = 0; k < result.per_step.size(); ++k) {
    SegmentOptions step = options;
    step.output = result.outputs[std::min(k, result.outputs.size() - 1)];
    auto row = nlohmann::json::parse(report_json(step, result.per_step[k]));
    row["step"] = result.steps[k];
    row["next_step_announced_bytes"] = result.next_announced[k];
    rows.push_back(std::move(row));
  }
  nlohmann::json report{{"tool", "volseg segment"},  {"volseg_version", version()},
                        {"input", options.input},    {"output", options.output},
                        {"steps", result.steps},     {"steps_resumed", result.steps_resumed},
                        {"seconds", result.seconds}, {"per_step", std::move(rows)}};
  io::write_file_atomically(options.report, report.dump(2) + "\n");
}

}  // namespace

std::uint64_t announce_step(const Comm& comm, const std::string& backend, const io::OpenRequest& input,
                            const std::vector<std::string>& hints, std::int64_t t) {
  if (const char* off = std::getenv("VOLSEG_SERIES_PREFETCH"); off != nullptr && std::string(off) == "0") return 0;
  const std::string reading = io::resolve_backend(comm, backend, input.path, io::Access::stream).backend;
  auto reader = open_input(reading, {input.path, input.selection.at_step(t)}, comm, hints);
  const io::Index3 dims = reader->info().dims;
  const std::int64_t z0 = dims[0] * comm.rank() / comm.size(), z1 = dims[0] * (comm.rank() + 1) / comm.size();
  std::uint64_t bytes = 0;
  std::exception_ptr error;
  try {
    if (z1 > z0 && reader->capabilities().reads_ahead) {
      const io::Extent slab{{z0, 0, 0}, {z1 - z0, dims[1], dims[2]}};
      reader->will_need(slab);
      bytes = static_cast<std::uint64_t>(slab.voxels()) *
              (io::dtype_size(reader->info().dtype) + reader->capabilities().extra_staged_bytes_per_voxel);
    }
  } catch (...) {
    error = std::current_exception();
  }
  agree(comm, error);
  reader->close();
  io::sum_in_place(comm.get(), std::span<std::uint64_t>(&bytes, 1));
  return bytes;
}

namespace {

// A series' one output with the time dimension (segment's or label's
// options): the format and writer its name gives where none was named, and
// checked by rank 0 for every rank: not over the input, nor over an
// existing output without --force.
template <class Options>
void settle_one_file(const Comm& comm, Options& options, const io::FormatTraits& traits) {
  if (options.format.empty()) options.format = io::format_name(traits.format);
  if (options.output_backend.empty()) options.output_backend = traits.writer;
  if (comm.rank() == 0) {
    detail::refuse_output_over_input(options.output, {options.input});
    io::refuse_existing(options.output, options.force, io::Streams::written_in_place);
  }
  agree(comm, nullptr);
}

}  // namespace

SegmentSeriesResult run_segment_series(const Comm& comm, SegmentOptions options,
                                       const std::vector<std::int64_t>& steps) {
  const auto start = std::chrono::steady_clock::now();
  SegmentSeriesResult result;
  const bool per_step = names_steps(options.output);
  std::string temp;
  // The one output's file or folder, removed unless every step is written
  // (a Zarr folder replaced with --force is swapped: io::AtomicCommit).
  std::optional<io::CollectiveOutput> series;
  if (!per_step) {
    // One output with the time dimension: CDF-5 (or CDF-2) records by
    // PnetCDF, a NetCDF-4 (HDF5) record variable chunked a record at a time,
    // or a 4D Zarr array (OME-Zarr: axes t, z, y, x) a step a chunk.
    const io::FileFormat format = io::output_format(options.output, options.format);
    const io::FormatTraits& traits = io::format_traits(format);
    if (!traits.appendable)
      throw Error(
          "--time with several steps: name each step's mask with %d in --out (mask_%03d.nhdr), or write "
          "one mask that keeps the time dimension (NAME.nc: CDF-5; NAME.nc4, NAME.h5 or --format netcdf4: "
          "NetCDF-4; NAME.zarr or NAME.ome.zarr: a 4D Zarr array)");
    if (options.resume)
      throw Error("--resume over steps needs a mask per step (%d in --out): a NetCDF series is written whole");
    settle_one_file(comm, options, traits);
    series.emplace(comm, options.output, io::CollectiveOutput::Start::nothing);  // the steps append to it
    temp = series->temporary();
  }
  const std::string report = options.report;
  options.report.clear();  // the series writes one, with a row per step
  for (std::size_t k = 0; k < steps.size(); ++k) {
    const std::int64_t t = steps[k];
    SegmentOptions step = options;
    step.selection = options.selection.at_step(t);
    if (per_step) {
      step.output = step_path(options.output, t);
      if (options.resume && everyone(comm, comm.rank() == 0 && fs::exists(step.output))) {
        ++result.steps_resumed;
        continue;
      }
    } else {
      step.output = temp;
      step.force = true;
      step.output_hints.push_back("append=1");  // its record's time: the input's (or the step number)
    }
    result.steps.push_back(t);
    result.outputs.push_back(step.output);
    // The next step read ahead while this one runs.
    result.next_announced.push_back(k + 1 < steps.size()
                                        ? announce_step(comm, options.backend, {options.input, options.selection},
                                                        options.input_hints, steps[k + 1])
                                        : 0);
    result.per_step.push_back(run_segment(comm, step));
  }
  if (!temp.empty()) {
    series->commit(comm, true);
    result.outputs.assign(1, options.output);
  }
  result.seconds = since(start);
  options.report = report;
  if (!report.empty() && comm.rank() == 0) write_segment_report(options, result);
  return result;
}

std::string series_summary(const SegmentSeriesResult& result) {
  std::string text = "volseg segment: " + std::to_string(result.steps.size()) + " step(s)";
  if (result.steps_resumed) text += " (" + std::to_string(result.steps_resumed) + " done before: resumed)";
  char line[160];
  std::snprintf(line, sizeof line, " in %.2f s\n", result.seconds);
  text += line;
  for (std::size_t k = 0; k < result.steps.size(); ++k) {
    const auto& r = result.per_step[k];
    const double share =
        r.stats.valid ? 100.0 * static_cast<double>(r.stats.in_range) / static_cast<double>(r.stats.valid) : 0;
    std::snprintf(line, sizeof line, "  step %lld: %llu voxels in range (%.2f%% of valid), %.2f s\n",
                  static_cast<long long>(result.steps[k]), static_cast<unsigned long long>(r.stats.in_range), share,
                  r.seconds);
    text += line;
  }
  text +=
      "  mask: " +
      (result.outputs.size() == 1 ? result.outputs.front() : result.outputs.front() + " ... " + result.outputs.back()) +
      "\n";
  return text;
}

// --- label and track ----------------------------------------------------------

namespace {

// Labels as 64-bit ids, whatever type they were written in.
void to_ids(io::DType dtype, const std::vector<std::byte>& raw, std::int64_t count, std::vector<std::uint64_t>& ids) {
  ids.resize(static_cast<std::size_t>(count));
  io::visit_dtype(dtype, [&]<class T>(std::type_identity<T>) {
    if constexpr (std::is_integral_v<T>) {
      for (std::int64_t i = 0; i < count; ++i) {
        T value;
        std::memcpy(&value, raw.data() + static_cast<std::size_t>(i) * sizeof(T), sizeof(T));
        ids[static_cast<std::size_t>(i)] = static_cast<std::uint64_t>(value);
      }
    } else {
      throw Error("labels of type " + std::string(io::dtype_name(dtype)) + ": expected integers");
    }
  });
}

// A step's labels: a file of their own, or (record >= 0) one record of a
// series' one output.
std::unique_ptr<io::VolumeReader> open_labels(const Comm& comm, const std::string& path, std::int64_t record) {
  const auto format = io::detect_format(comm, path);
  io::Selection selection;
  if (record >= 0) selection.step = record;
  return io::open_reader(io::choose_backend(comm, format, path, io::Access::stream).backend, {path, selection}, comm);
}

// Collective. The pairs of labels of two steps' label volumes that share
// voxels: each rank counts those of its bricks (every size-th), rank 0
// sums them (on rank 0 only; sorted by id, then next_id).
std::vector<TrackPair> overlaps(const Comm& comm, const std::string& before, const std::string& after,
                                std::int64_t step, std::int64_t record_before = -1) {
  auto a = open_labels(comm, before, record_before);
  auto b = open_labels(comm, after, record_before < 0 ? -1 : record_before + 1);
  if (a->info().dims != b->info().dims) throw Error("--track: " + before + " and " + after + " have different shapes");
  const BrickLayout layout(a->info().dims, BrickLayout::default_shape(a->info().dims, 16));
  PairCounts counts;
  std::vector<std::byte> raw;
  std::vector<std::uint64_t> ids_a, ids_b;
  // In rounds, every rank in each (a NetCDF-4 record variable is read
  // collectively): brick k of round r is r * size + rank, when there is one.
  const std::int64_t rounds = (layout.count() + comm.size() - 1) / comm.size();
  for (std::int64_t r = 0; r < rounds; ++r) {
    const std::int64_t k = r * comm.size() + comm.rank();
    const io::Extent extent = k < layout.count() ? layout.brick(k) : io::Extent{};
    for (auto* reader : {a.get(), b.get()}) {
      raw.resize(static_cast<std::size_t>(extent.voxels()) * io::dtype_size(reader->info().dtype));
      io::read_in_round(*reader, k < layout.count() ? &extent : nullptr, raw.data());
      to_ids(reader->info().dtype, raw, extent.voxels(), reader == a.get() ? ids_a : ids_b);
    }
    if (k < layout.count()) count_pairs(ids_a, ids_b, counts);
  }
  a->close();
  b->close();
  return gather_pairs(comm, counts, step);
}

std::string without_extension(const std::string& path) {
  const fs::path p(path);
  return (p.parent_path() / p.stem()).string();
}

}  // namespace

std::vector<TrackPair> gather_pairs(const Comm& comm, const PairCounts& mine, std::int64_t step) {
  std::vector<TrackPair> local;
  for (const auto& [pair, overlap] : mine) local.push_back({step, pair.first, pair.second, overlap});
  const auto all = io::gather<TrackPair>(comm.get(), local);
  PairCounts merged;
  for (const auto& p : all) merged[{p.id, p.next_id}] += p.overlap;
  std::vector<TrackPair> result;
  for (const auto& [pair, overlap] : merged) result.push_back({step, pair.first, pair.second, overlap});
  return result;
}

void count_pairs(std::span<const std::uint64_t> before, std::span<const std::uint64_t> after, PairCounts& counts) {
  for (std::size_t i = 0; i < before.size(); ++i)
    if (before[i] != 0 && after[i] != 0) ++counts[{before[i], after[i]}];
}

void summarize_track(TrackStep& now, std::uint64_t objects_before, const std::vector<TrackPair>& pairs) {
  std::unordered_map<std::uint64_t, std::uint64_t> successors, predecessors;
  for (const auto& p : pairs) {
    ++successors[p.id];
    ++predecessors[p.next_id];
  }
  now.deaths = objects_before - successors.size();
  now.births = now.objects - predecessors.size();
  for (const auto& [id, n] : successors) now.splits += n > 1;
  for (const auto& [id, n] : predecessors) now.merges += n > 1;
  for (const auto& p : pairs) now.continuing += successors[p.id] == 1 && predecessors[p.next_id] == 1;
}

std::string track_csv(const std::vector<TrackPair>& pairs, bool header) {
  std::string text = header ? "t,id,next_id,overlap_voxels\n" : "";
  for (const auto& p : pairs)
    text += std::to_string(p.step) + "," + std::to_string(p.id) + "," + std::to_string(p.next_id) + "," +
            std::to_string(p.overlap) + "\n";
  return text;
}

std::string track_steps_csv(const std::vector<TrackStep>& steps) {
  std::string text = "step,objects,largest,births,deaths,merges,splits,continuing\n";
  for (const auto& s : steps)
    text += std::to_string(s.step) + "," + std::to_string(s.objects) + "," + std::to_string(s.largest) + "," +
            std::to_string(s.births) + "," + std::to_string(s.deaths) + "," + std::to_string(s.merges) + "," +
            std::to_string(s.splits) + "," + std::to_string(s.continuing) + "\n";
  return text;
}

namespace {

// A label series into one output with the time dimension, as segment writes
// masks (CDF-5 records, a NetCDF-4 record variable, a 4D Zarr array a step a
// chunk): checked, and its temporary named (the steps append to it) and
// set to be committed by series (rank 0's). Returns the temporary.
std::string open_labels_series(const Comm& comm, LabelOptions& options, const std::vector<std::int64_t>& steps,
                               std::optional<io::CollectiveOutput>& series) {
  // One output with the time dimension, as segment writes: CDF-5 records,
  // a NetCDF-4 record variable, a 4D Zarr array a step a chunk (OME-Zarr:
  // a label image with axes t, z, y, x, one level).
  const io::FileFormat format = io::output_format(options.output, options.format, std::nullopt, true);
  const io::FormatTraits& traits = io::format_traits(format);
  if (!traits.appendable)
    throw Error(
        "label --time with several steps: name each step's labels with %d in --out (labels_%03d.nhdr), or write "
        "one file that keeps the time dimension (NAME.nc: CDF-5; NAME.nc4 or NAME.h5: NetCDF-4; NAME.zarr or "
        "NAME.ome.zarr: a 4D Zarr array)");
  settle_one_file(comm, options, traits);
  // The steps' own files (tables, masks) are refused here as they would
  // be per step: the steps run with force, to append to the temporary.
  std::exception_ptr taken;
  if (comm.rank() == 0) try {
      for (const std::int64_t t : steps)
        for (const auto& side : {options.stats, options.mask_output})
          if (!side.empty() && names_steps(side))
            for (const auto& file : detail::output_files(step_path(side, t)))
              io::refuse_existing(file.string(), options.force);
    } catch (...) {
      taken = std::current_exception();
    }
  agree(comm, taken);
  series.emplace(comm, options.output, io::CollectiveOutput::Start::nothing);  // the steps append to it
  return series->temporary();
}

}  // namespace

LabelSeriesResult run_label_series(const Comm& comm, LabelOptions options, const std::vector<std::int64_t>& steps,
                                   const std::string& track, bool plot) {
  const auto start = std::chrono::steady_clock::now();
  const bool per_step = names_steps(options.output);
  std::string temp;
  std::optional<io::CollectiveOutput> series;  // the one output, removed unless every step is written
  if (!per_step) temp = open_labels_series(comm, options, steps, series);
  if (!options.stats.empty() && !names_steps(options.stats))
    throw Error("label --time with several steps: name each step's table with %d in --stats (objects_%03d.csv)");
  if (!options.report.empty())
    throw Error("label --time with several steps: --report takes one step (the summary and --track cover the series)");
  if (!options.mask_output.empty() && !names_steps(options.mask_output))
    throw Error("label --time with several steps: name each step's mask with %d in --mask-out (mask_%03d.nhdr)");
  const std::string steps_path = track.empty() ? "" : without_extension(track) + ".steps.csv";
  const std::string png = track.empty() || !plot ? "" : without_extension(track) + ".png";
  if (!track.empty()) {
    if (steps.size() < 2) throw Error("--track needs two steps or more (--time A:B)");
    if (comm.rank() == 0)
      for (const auto& path : {track, steps_path, png})
        if (!path.empty()) io::refuse_existing(path, options.force);
    agree(comm, nullptr);
  }
  LabelSeriesResult result;
  const std::string pattern = options.output, stats = options.stats;
  for (const std::int64_t t : steps) {
    LabelOptions step = options;
    step.selection = options.selection.at_step(t);
    if (per_step) {
      step.output = step_path(pattern, t);
    } else {
      // Its side outputs were checked above; force only lets the steps
      // append to the one output's temporary.
      step.output = temp;
      step.force = true;
      step.output_hints.push_back("append=1");  // its record's time: the input's (or the step number)
    }
    if (!stats.empty()) step.stats = step_path(stats, t);
    if (!options.mask_output.empty()) step.mask_output = step_path(options.mask_output, t);
    result.steps.push_back(t);
    result.outputs.push_back(step.output);
    const std::size_t k = result.steps.size();  // the next step read ahead while this one is labelled
    result.next_announced.push_back(
        k < steps.size()
            ? announce_step(comm, options.backend, {options.input, options.selection}, options.input_hints, steps[k])
            : 0);
    result.per_step.push_back(run_label(comm, step));
    TrackStep summary;
    summary.step = t;
    summary.objects = result.per_step.back().summary.objects;
    summary.largest = result.per_step.back().summary.largest;
    // One output's records are compared once it is whole: a NetCDF-4 file
    // read between two appends would be open twice at once.
    if (!track.empty() && per_step && result.outputs.size() > 1) {
      auto pairs =
          overlaps(comm, result.outputs[result.outputs.size() - 2], step.output, result.steps[result.steps.size() - 2]);
      if (comm.rank() == 0) {
        summarize_track(summary, result.track.back().objects, pairs);
        result.pairs.insert(result.pairs.end(), pairs.begin(), pairs.end());
      }
    }
    result.track.push_back(summary);
  }
  if (!temp.empty()) {
    series->commit(comm, true);
    result.outputs.assign(1, options.output);
    for (std::size_t k = 1; !track.empty() && k < result.steps.size(); ++k) {
      auto pairs =
          overlaps(comm, options.output, options.output, result.steps[k - 1], static_cast<std::int64_t>(k - 1));
      if (comm.rank() == 0) {
        summarize_track(result.track[k], result.track[k - 1].objects, pairs);
        result.pairs.insert(result.pairs.end(), pairs.begin(), pairs.end());
      }
    }
  }
  if (!track.empty()) {
    std::exception_ptr error;
    if (comm.rank() == 0) try {
        io::write_file_atomically(track, track_csv(result.pairs));
        io::write_file_atomically(steps_path, track_steps_csv(result.track));
        if (!png.empty()) segment::run_script("track_plot.py", {steps_path, png});
      } catch (...) {
        error = std::current_exception();
      }
    agree(comm, error);
  }
  result.seconds = since(start);
  return result;
}

std::string series_summary(const LabelSeriesResult& result, const std::string& track) {
  std::string text = "volseg label: " + std::to_string(result.steps.size()) + " step(s)";
  char line[200];
  std::snprintf(line, sizeof line, " in %.2f s\n", result.seconds);
  text += line;
  for (std::size_t k = 0; k < result.track.size(); ++k) {
    const auto& s = result.track[k];
    if (k == 0 || track.empty())
      std::snprintf(line, sizeof line, "  step %lld: %llu objects (largest %llu voxels)\n",
                    static_cast<long long>(s.step), static_cast<unsigned long long>(s.objects),
                    static_cast<unsigned long long>(s.largest));
    else
      std::snprintf(line, sizeof line,
                    "  step %lld: %llu objects (largest %llu voxels): %llu continuing, %llu born, %llu ended, %llu "
                    "merged, %llu split\n",
                    static_cast<long long>(s.step), static_cast<unsigned long long>(s.objects),
                    static_cast<unsigned long long>(s.largest), static_cast<unsigned long long>(s.continuing),
                    static_cast<unsigned long long>(s.births), static_cast<unsigned long long>(s.deaths),
                    static_cast<unsigned long long>(s.merges), static_cast<unsigned long long>(s.splits));
    text += line;
  }
  text += "  labels: " +
          (result.outputs.size() == 1 ? result.outputs.front() + " (a record per step)"
                                      : result.outputs.front() + " ... " + result.outputs.back()) +
          "\n";
  if (!track.empty()) text += "  track: " + track + " (and " + without_extension(track) + ".steps.csv, .png)\n";
  return text;
}

}  // namespace volseg::segment
