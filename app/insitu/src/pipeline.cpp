// SPDX-License-Identifier: MIT
// The analysis of one published step: agree that the ranks describe the
// same grid, let the governor pick the work, run it inside Catalyst (volseg's
// pipeline: threshold with segment's kernel -> reduce statistics -> write the
// mask with the batch writers -> render; then the Python scripts), record it.
#include "pipeline.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <tuple>

#include "block.hpp"
#include "catalyst.hpp"
#include "derive.hpp"
#include "governor.hpp"
#include "image.hpp"
#include "labels.hpp"
#include "operators.hpp"
#include "outputs.hpp"
#include "volseg/io/comm.hpp"
#include "volseg/io/error.hpp"
#include "volseg/io/files.hpp"
#include "volseg/io/format.hpp"
#include "volseg/io/registry.hpp"
#include "volseg/io/rounds.hpp"
#include "volseg/segment/brick_driver.hpp"
#include "volseg/segment/decode.hpp"
#include "volseg/segment/expression.hpp"
#include "volseg/segment/segment.hpp"
#include "volseg/segment/series.hpp"
#include "volseg/segment/threshold.hpp"

namespace volseg::insitu {
namespace {

using Clock = std::chrono::steady_clock;
double since(Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); }

// The field as a file of `format` describes it once written (what batch
// segmentation of a dump sees): a raw volume keeps no variable name.
io::VolumeInfo as_written(const Field& field, const std::string& variable, io::FileFormat format) {
  io::VolumeInfo info = volume_info(field, variable);
  if (format == io::FileFormat::raw) info.variable.clear();
  return info;
}

bool inside(const io::Extent& e, const io::Index3& dims) {
  for (int a = 0; a < 3; ++a)
    if (e.offset[a] < 0 || e.count[a] < 0 || e.offset[a] + e.count[a] > dims[a]) return false;
  return true;
}

// The mask of the points this rank owns (packed) and its statistics, row by
// row through the ghost layers.
void threshold_owned(const segment::ThresholdKernel& kernel, const Field& field, const io::Extent& stored,
                     std::vector<std::uint8_t>& mask, segment::Stats& stats) {
  const auto& b = field.box;
  mask.resize(static_cast<std::size_t>(b.voxels()));
  const auto size = static_cast<std::int64_t>(io::dtype_size(field.dtype));
  const auto* base = static_cast<const std::byte*>(field.values);
  // The owned points are one run when the ghost layers lie only along z (a
  // slab decomposition), a run per plane when only along z and y, else a
  // run per row.
  const bool whole_planes = b.count[1] == stored.count[1] && b.count[2] == stored.count[2];
  const bool whole_rows = b.count[2] == stored.count[2];
  const std::int64_t run = whole_planes ? b.voxels() : whole_rows ? b.count[1] * b.count[2] : b.count[2];
  const std::int64_t runs_y = whole_planes || whole_rows ? 1 : b.count[1];
  const std::int64_t runs_z = whole_planes ? 1 : b.count[0];
  for (std::int64_t z = 0; z < runs_z; ++z)
    for (std::int64_t y = 0; y < runs_y; ++y) {
      const std::int64_t in = detail::index_in(stored, b.offset[0] + z, b.offset[1] + y, b.offset[2]);
      kernel.run(base + in * size, run, false, mask.data() + (z * b.count[1] + y) * b.count[2], stats);
    }
}

}  // namespace

namespace detail {

std::vector<io::Extent> check_tiling(const Comm& comm, const Field& field) {
  std::int64_t mine[6];
  for (int a = 0; a < 3; ++a) mine[a] = field.box.offset[a], mine[3 + a] = field.box.count[a];
  std::vector<std::int64_t> all(static_cast<std::size_t>(6 * comm.size()));
  check_mpi(MPI_Allgather(mine, 6, MPI_INT64_T, all.data(), 6, MPI_INT64_T, comm.get()), "MPI_Allgather");
  std::vector<io::Extent> boxes(static_cast<std::size_t>(comm.size()));
  std::int64_t points = 0;
  for (std::size_t r = 0; r < boxes.size(); ++r) {
    for (int a = 0; a < 3; ++a) boxes[r].offset[a] = all[6 * r + a], boxes[r].count[a] = all[6 * r + 3 + a];
    points += boxes[r].voxels();
  }
  const io::Extent whole{{0, 0, 0}, field.global_dims};
  const auto grid = "the grid " + io::to_string(whole);
  for (std::size_t r = 0; r < boxes.size(); ++r) {
    if (!inside(boxes[r], field.global_dims))
      throw Error("in-situ publish: rank " + std::to_string(r) + "'s block " + io::to_string(boxes[r]) +
                  " is not inside " + grid);
    // Pairwise overlap: quadratic in ranks, cheap next to a step, and only
    // when the decomposition changes.
    for (std::size_t q = r + 1; q < boxes.size(); ++q)
      if (!io::intersect(boxes[r], boxes[q]).empty())
        throw Error("in-situ publish: the blocks of ranks " + std::to_string(r) + " " + io::to_string(boxes[r]) +
                    " and " + std::to_string(q) + " " + io::to_string(boxes[q]) + " overlap");
  }
  if (points != whole.voxels())
    throw Error("in-situ publish: the ranks' blocks hold " + std::to_string(points) + " points but " + grid + " has " +
                std::to_string(whole.voxels()) + ": they do not tile it");
  return boxes;
}

void check_field(const Field& field) {
  for (int a = 0; a < 3; ++a)
    if (field.global_dims[a] <= 0)
      throw Error("in-situ publish: global dims " + io::to_string(io::Extent{{0, 0, 0}, field.global_dims}) +
                  " must all be positive");
  if (!inside(field.box, field.global_dims))
    throw Error("in-situ publish: this rank's block " + io::to_string(field.box) + " is not inside the grid " +
                io::to_string(io::Extent{{0, 0, 0}, field.global_dims}));
  if (field.ghost < 0) throw Error("in-situ publish: ghost layers must be >= 0, not " + std::to_string(field.ghost));
  if (!field.values && !field.box.empty()) throw Error("in-situ publish: the field's values are a null pointer");
  if (field.box.empty()) return;
  for (int a = 0; a < 3; ++a)
    if (field.box.count[a] < field.ghost && field.box.count[a] < field.global_dims[a])
      throw Error("in-situ publish: a block " + std::to_string(field.box.count[a]) + " points thick cannot carry " +
                  std::to_string(field.ghost) + " ghost layers");
}

std::vector<double> agree_step(const Comm& comm, const Field& field, std::vector<double> maxima) {
  const double given[5] = {double(field.global_dims[0]), double(field.global_dims[1]), double(field.global_dims[2]),
                           double(field.dtype), double(field.step)};
  std::vector<double> mine(10 + maxima.size());
  for (int i = 0; i < 5; ++i) mine[i] = given[i], mine[i + 5] = -given[i];
  std::copy(maxima.begin(), maxima.end(), mine.begin() + 10);
  std::vector<double> agreed(mine.size());
  check_mpi(MPI_Allreduce(mine.data(), agreed.data(), static_cast<int>(mine.size()), MPI_DOUBLE, MPI_MAX, comm.get()),
            "MPI_Allreduce");
  collectively(comm, [&] {
    for (int i = 0; i < 5; ++i)
      if (agreed[i] != -agreed[i + 5]) {
        static const char* what[] = {"global dims", "global dims", "global dims", "data type", "step"};
        throw Error(std::string("in-situ publish: the ranks disagree on the ") + what[i] + " (a rank passed " +
                    std::to_string(given[i]) + "; they range over " + std::to_string(-agreed[i + 5]) + ".." +
                    std::to_string(agreed[i]) + ")");
      }
  });
  return {agreed.begin() + 10, agreed.end()};
}

StepRecord unanalysed(const Field& field, const std::string& action) {
  StepRecord record;
  record.step = field.step;
  record.time = field.time;
  record.action = action;
  return record;
}

}  // namespace detail

io::VolumeInfo volume_info(const Field& field, const std::string& variable) {
  io::VolumeInfo info;
  info.dims = field.global_dims;
  info.dtype = field.dtype;
  info.byte_order = io::native_byte_order();
  info.variable = variable;
  info.spacing = field.spacing;
  info.origin = field.origin;
  // NetCDF's default names, said explicitly so files in every format carry them.
  info.attributes["dim0"] = "z";
  info.attributes["dim1"] = "y";
  info.attributes["dim2"] = "x";
  return info;
}

io::Extent stored_extent(const Field& field) {
  if (field.box.empty()) return field.box;
  return io::with_ghost(field.box, field.global_dims, field.ghost);
}

namespace detail {

struct Pipeline::Impl {
  Comm comm;
  Options options;
  std::string history;
  std::optional<io::FileFormat> format;
  bool appending = false;  // --out names one file; a record per step
  std::int64_t records_written = 0;
  std::unique_ptr<detail::Catalyst> catalyst;
  std::unique_ptr<detail::ImageOutput> image;
  detail::Governor governor;
  std::unique_ptr<detail::TimeSeries> series;  // rank 0, with --stats
  std::unique_ptr<StepOperators> operators;    // thresholds chosen per step, operators after them
  double step_lo = 0, step_hi = 0;             // this step's thresholds
  // Off the critical path: the hook's share of the simulation's time, as
  // the simulation's ranks measured it (their publish, not this analysis).
  std::optional<double> given_share;
  std::vector<StepRecord> records;
  StepRecord off_step;
  double create_seconds = 0;
  double hook_seconds = 0;        // this rank, every call, creation included
  double simulation_seconds = 0;  // this rank, between calls
  Clock::time_point last_exit;
  // What the hook's work costs the simulation after the call (caches and
  // memory bandwidth it took, objects it left running): the simulation's
  // interval after a call that worked, against its usual interval.
  std::optional<double> usual_interval;
  bool last_call_worked = false;
  void account(double interval);
  std::optional<io::Extent> last_box;
  io::Index3 last_dims{};
  bool warned_seams = false;
  bool finalized = false;

  // Per step
  std::vector<std::uint8_t> mask, ghosted_mask;
  // --track: this rank's block's labels of this step and of the last one
  // labelled; rank 0 keeps the tables.
  std::vector<std::uint64_t> ids, previous_ids;
  std::optional<io::Extent> previous_box;
  std::int64_t previous_step = 0;
  std::vector<segment::TrackPair> track_pairs;
  std::vector<segment::TrackStep> track_steps;
  void track(const Field& field, const StepRecord& record);
  // --expr / --where: compiled at creation; the field it computes, per step.
  std::unique_ptr<segment::Expression> expression;
  std::vector<float> derived_values;
  Field derive(const Field& field);

  Impl(MPI_Comm parent, const Options& o) : comm(parent), options(o), governor(options.budget) {}

  // What a step runs, by the governor's level.
  struct StepParts {
    bool segment, write, scripts, image;
  };
  StepRecord run(const Field& published, Level level, double simulation);
  void new_blocks(const Field& field);
  StepRecord run_step(const Field& field, detail::Level level, double simulation);
  const std::uint8_t* run_volseg(const Field& field, const io::Extent& stored, detail::Level level,
                                 const StepParts& parts, segment::Stats& stats, double (&seconds)[5],
                                 StepRecord& record);
  void write_mask(const Field& field, StepRecord& record);
  std::optional<io::Index3> block_grid(const Field& field) const;
  void record_slowest(const double (&seconds)[5], double total, double simulation, int script_errors,
                      detail::Level level, StepRecord& record);
  void report_script_error(const Field& field, const detail::ScriptsOutcome& scripts);
};

Pipeline::Pipeline(MPI_Comm comm, const Options& options) : impl_(std::make_unique<Impl>(comm, options)) {
  const auto start = Clock::now();
  auto& m = *impl_;
  const auto& o = m.options;
  collectively(m.comm, [&] {
    // The hook calls MPI only from the thread that calls it; under
    // MPI_THREAD_SINGLE or FUNNELED that must be the main thread.
    int level = MPI_THREAD_SINGLE, is_main = 1;
    check_mpi(MPI_Query_thread(&level), "MPI_Query_thread");
    check_mpi(MPI_Is_thread_main(&is_main), "MPI_Is_thread_main");
    if (level < MPI_THREAD_SERIALIZED && !is_main)
      throw Error(
          "volseg_insitu: MPI was initialised with thread level " + std::to_string(level) +
          " (below MPI_THREAD_SERIALIZED) and this is not the main thread: create and publish from the main thread");
    io::check_parallel_netcdf();
    if (!o.out.empty()) {
      m.format = io::output_format(o.out, o.format, std::nullopt, false, "in-situ option --out");
      if (!o.backend.empty()) io::builtin_registry().get(o.backend);
      m.appending = o.out.find('%') == std::string::npos;
      if (!m.appending)
        detail::format_step(o.out, 0);
      else if (!io::format_traits(*m.format).classic)
        throw Error("in-situ option --out: '" + o.out +
                    "' has no %d for the step; one file with a record per step "
                    "is written as CDF-2 or CDF-5 (.nc), not " +
                    io::format_name(*m.format));
      else if (m.comm.rank() == 0 && std::filesystem::exists(o.out)) {
        if (!o.force) throw Error("in-situ output " + o.out + " exists (--force replaces it)");
        std::filesystem::remove(o.out);  // the run's records start afresh
      }
    }
    detail::check_image_options(o);
    if (!o.expression.empty()) m.expression = std::make_unique<segment::Expression>(o.expression, o.condition);
  });
  detail::check_display_for(m.comm, o);
  m.catalyst = std::make_unique<detail::Catalyst>(m.comm, o.scripts, o.variable);
  if (!o.image.empty()) m.image = std::make_unique<detail::ImageOutput>(m.comm, m.options);
  collectively(m.comm, [&] {
    if (m.comm.rank() == 0 && !o.stats.empty()) m.series = std::make_unique<detail::TimeSeries>(o.stats, o.force);
    if (m.comm.rank() == 0 && !o.track.empty()) io::refuse_existing(o.track, o.force);
  });
  m.operators = std::make_unique<StepOperators>(m.comm, m.options);
  m.history = "volseg_insitu " + o.text;
  m.create_seconds = since(start);
  m.hook_seconds = m.create_seconds;
  m.last_exit = Clock::now();
}

Pipeline::~Pipeline() {
  if (!impl_ || impl_->finalized) return;
  try {
    finalize();
  } catch (const std::exception& e) {
    if (impl_->comm.rank() == 0) std::cerr << "volseg_insitu: finalize: " << e.what() << "\n";
  }
}

const std::vector<StepRecord>& Pipeline::records() const { return impl_->records; }
double Pipeline::create_seconds() const { return impl_->create_seconds; }
const Comm& Pipeline::comm() const { return impl_->comm; }

const StepRecord& Pipeline::publish(const Field& published) {
  auto& m = *impl_;
  if (m.finalized) throw Error("in-situ publish after finalize");
  const auto start = Clock::now();
  const double simulation = std::chrono::duration<double>(start - m.last_exit).count();
  m.account(simulation);
  if (published.step % m.options.every != 0) {  // not an in-situ step: no MPI, no work
    m.off_step = unanalysed(published, "off-step");
    m.last_exit = Clock::now();
    m.hook_seconds += since(start);
    m.last_call_worked = false;
    return m.off_step;
  }

  const Field& field = published;  // what the ranks agree on (with --expr, the arrays it reads)
  collectively(m.comm, [&] { check_field(field); });
  // One reduction agrees on the grid, the step and the budget's credit.
  const bool box_changed = !m.last_box || *m.last_box != field.box || m.last_dims != field.global_dims;
  const double credit = m.governor.budget() ? *m.governor.budget() * m.simulation_seconds - m.hook_seconds : 0;
  const auto agreed = agree_step(m.comm, field, {double(box_changed), -credit});
  if (agreed[0] != 0) {
    collectively(m.comm, [&] { check_tiling(m.comm, field); });
    m.new_blocks(field);
  }

  Wants wants;
  wants.segment = m.options.have_range;
  wants.write = !m.options.out.empty();
  wants.image = m.image && (field.step / m.options.every) % m.options.image_every == 0;
  wants.scripts = m.catalyst->has_scripts();
  const auto level = m.governor.choose(wants, -agreed[1]);
  StepRecord record = m.run(field, level, simulation);
  m.last_call_worked = level != Level::skipped;
  m.records.push_back(record);
  m.hook_seconds += since(start);
  m.last_exit = Clock::now();
  return m.records.back();
}

const StepRecord& Pipeline::analyse(const Field& field, double simulation, double share) {
  auto& m = *impl_;
  if (m.finalized) throw Error("in-situ publish after finalize");
  const auto start = Clock::now();
  if (!m.last_box || *m.last_box != field.box || m.last_dims != field.global_dims) m.new_blocks(field);
  m.given_share = share;
  StepRecord record = m.run(field, Level::full, simulation);
  m.records.push_back(record);
  m.hook_seconds += since(start);
  return m.records.back();
}

void Pipeline::record(const StepRecord& record) {
  auto& m = *impl_;
  m.records.push_back(record);
  collectively(m.comm, [&] {
    if (m.series) m.series->append(record);
  });
}

// With --expr or --where, a step that runs works on the expression's
// values, computed once it is known to run.
StepRecord Pipeline::Impl::run(const Field& published, Level level, double simulation) {
  const bool derive = expression && level != Level::skipped;
  Field derived;
  if (derive) collectively(comm, [&] { derived = this->derive(published); });
  return run_step(derive ? derived : published, level, simulation);
}

void Pipeline::Impl::new_blocks(const Field& field) {
  if (field.ghost == 0 && !warned_seams && comm.size() > 1 && (image || catalyst->has_scripts()) && comm.rank() == 0)
    std::cerr << "volseg_insitu: warning: no ghost layers: images and contours show a seam between ranks' blocks "
                 "(publish with ghost >= 1)\n";
  warned_seams = true;
  last_box = field.box;
  last_dims = field.global_dims;
}

Field Pipeline::Impl::derive(const Field& field) {
  return detail::derive_field(*expression, options.variable, field, derived_values);
}

void Pipeline::Impl::account(double interval) {
  if (last_call_worked && usual_interval) {
    // Signed, so noise averages out; what is charged to the hook is not the
    // simulation's.
    const double excess = std::clamp(interval - *usual_interval, -interval, interval);
    hook_seconds += excess;
    simulation_seconds += interval - excess;
    return;
  }
  simulation_seconds += interval;
  usual_interval = usual_interval ? 0.8 * *usual_interval + 0.2 * interval : interval;
}

StepRecord Pipeline::Impl::run_step(const Field& field, detail::Level level, double simulation) {
  const auto start = Clock::now();
  StepRecord record;
  record.step = field.step;
  record.time = field.time;
  record.action = detail::level_name(level);
  const StepParts parts{
      level != detail::Level::skipped && options.have_range, level <= detail::Level::no_scripts && !options.out.empty(),
      level <= detail::Level::no_image && catalyst->has_scripts(),
      level <= detail::Level::small_image && image && (field.step / options.every) % options.image_every == 0};
  const bool run_segment = parts.segment, run_scripts = parts.scripts;
  const io::Extent stored = stored_extent(field);
  segment::Stats stats;
  double seconds[5] = {0, 0, 0, 0, 0};  // segment, reduce, write, render, scripts

  detail::CatalystStep step;
  step.field = &field;
  step.stored = stored;
  step.run_volseg = parts.segment || parts.image;
  step.run_scripts = run_scripts;
  step.volseg = [&]() -> const std::uint8_t* {
    return run_volseg(field, stored, level, parts, stats, seconds, record);
  };

  detail::ScriptsOutcome scripts;
  if (level != detail::Level::skipped) {
    std::exception_ptr error;
    const auto t = Clock::now();
    try {
      scripts = catalyst->coprocess(step);
    } catch (...) {
      error = std::current_exception();
    }
    agree(comm, error);
    seconds[4] = std::max(0.0, since(t) - seconds[0] - seconds[1] - seconds[2] - seconds[3]);
    if (!run_scripts) seconds[4] = 0;
  }
  if (options.have_range && run_segment) {
    record.voxels = stats.voxels;
    record.valid = stats.valid;
    record.in_range = stats.in_range;
    record.min = stats.min;
    record.max = stats.max;
    record.histogram = stats.histogram;
  }

  record_slowest(seconds, since(start), simulation, scripts.errors, level, record);
  if (scripts.errors > 0 || record.script_errors > 0) report_script_error(field, scripts);
  const double hook_so_far = hook_seconds + since(start);
  record.share = given_share ? *given_share : simulation_seconds > 0 ? hook_so_far / simulation_seconds : 0;
  collectively(comm, [&] {
    if (series) series->append(record);
  });
  if (options.verbose && comm.rank() == 0)
    std::cerr << "volseg_insitu: step " << record.step << " " << record.action << ": " << record.in_range
              << " points in [" << record.lo << ", " << record.hi << "]"
              << (record.objects ? ", " + std::to_string(*record.objects) + " objects" : std::string()) << ", "
              << record.total << " s, share " << 100 * record.share << "%\n";
  return record;
}

// volseg's part of a step, when Catalyst calls for it: threshold the owned
// points (and the ghost layers when scripts or the image look at them),
// reduce the statistics, count objects, write the mask, draw the image.
// Returns the ghosted mask, or null.
const std::uint8_t* Pipeline::Impl::run_volseg(const Field& field, const io::Extent& stored, detail::Level level,
                                               const StepParts& parts, segment::Stats& stats, double (&seconds)[5],
                                               StepRecord& record) {
  auto t = Clock::now();
  step_lo = options.lo, step_hi = options.hi;
  if (options.have_range && parts.segment && operators->active())
    std::tie(step_lo, step_hi) = operators->thresholds(field);
  record.lo = step_lo, record.hi = step_hi;
  segment::Threshold threshold;
  if (options.have_range)
    threshold = {step_lo, step_hi, std::nullopt, std::nullopt, std::nullopt};
  else
    threshold = {io::dtype_lowest(field.dtype), io::dtype_highest(field.dtype), std::nullopt, std::nullopt,
                 std::nullopt};
  const segment::ThresholdKernel kernel(field.dtype, threshold);
  segment::Stats local;
  threshold_owned(kernel, field, stored, mask, local);
  // The scripts and the image see the mask on the ghost layers too.
  const bool ghosted = options.have_range && (parts.scripts || parts.image);
  if (ghosted) {
    segment::Stats unused;
    ghosted_mask.resize(static_cast<std::size_t>(stored.voxels()));
    kernel.run(static_cast<const std::byte*>(field.values), stored.voxels(), false, ghosted_mask.data(), unused);
  }
  // The statistics stay the threshold's (as volseg segment reports them);
  // the mask that is labelled and written is the operators'.
  if (options.have_range && parts.segment && operators->chain()) operators->apply(field, step_lo, step_hi, mask);
  seconds[0] = since(t);
  t = Clock::now();
  segment::reduce_stats(comm, local, stats);
  seconds[1] = since(t);
  if (options.label && parts.segment) {
    t = Clock::now();
    detail::count_objects(comm, field, mask, options.connectivity, options.periodic, record,
                          options.track.empty() ? nullptr : &ids);
    if (!options.track.empty()) track(field, record);
    record.label = since(t);
  }
  if (parts.write) {
    t = Clock::now();
    write_mask(field, record);
    seconds[2] = since(t);
  }
  if (parts.image) {
    t = Clock::now();
    record.image = image->render(field, stored, ghosted_mask, stats, level == detail::Level::small_image);
    seconds[3] = since(t);
  }
  return ghosted ? ghosted_mask.data() : nullptr;
}

// Every rank records the slowest rank's times (what the simulation waited
// for), and the governor learns what each part of the step cost.
void Pipeline::Impl::record_slowest(const double (&seconds)[5], double total, double simulation, int script_errors,
                                    detail::Level level, StepRecord& record) {
  double local[9] = {seconds[0],  seconds[1], seconds[2], seconds[3],
                     seconds[4],  total,      simulation, double(script_errors),
                     record.label};
  double slowest[9];
  check_mpi(MPI_Allreduce(local, slowest, 9, MPI_DOUBLE, MPI_MAX, comm.get()), "MPI_Allreduce");
  record.label = slowest[8];
  record.segment = slowest[0];
  record.reduce = slowest[1];
  record.write = slowest[2];
  record.render = slowest[3];
  record.scripts = slowest[4];
  record.total = slowest[5];
  record.simulation = slowest[6];
  record.script_errors = static_cast<int>(slowest[7]);
  detail::PartCosts costs{slowest[0] + slowest[1] + slowest[8], slowest[2], slowest[3], slowest[4]};
  governor.learn(level, costs);
}

// Collective: the failing rank's line, to every rank, once per step.
void Pipeline::Impl::report_script_error(const Field& field, const detail::ScriptsOutcome& scripts) {
  const std::string line = scripts.first_error;
  int has = line.empty() ? comm.size() : comm.rank(), first = 0;
  check_mpi(MPI_Allreduce(&has, &first, 1, MPI_INT, MPI_MIN, comm.get()), "MPI_Allreduce");
  const std::string text = comm.broadcast(line, first < comm.size() ? first : 0);
  if (comm.rank() == 0)
    std::cerr << "volseg_insitu: step " << field.step << ": a Catalyst script failed: " << text << "\n";
}

// Collective. The shape of the ranks' blocks when they are one grid (each
// block's offset a multiple of the largest, as a regular decomposition
// gives): Zarr chunks of that shape have one writer each. Otherwise none,
// and a Zarr writer on several ranks says so.
std::optional<io::Index3> Pipeline::Impl::block_grid(const Field& field) const {
  io::Index3 shape = field.box.count;
  check_mpi(MPI_Allreduce(MPI_IN_PLACE, shape.data(), 3, MPI_INT64_T, MPI_MAX, comm.get()), "MPI_Allreduce");
  int aligned = 1;
  for (std::size_t a = 0; a < 3; ++a)
    if (field.box.offset[a] % shape[a] != 0 ||
        (field.box.count[a] != shape[a] && field.box.offset[a] + field.box.count[a] != field.global_dims[a]))
      aligned = 0;
  check_mpi(MPI_Allreduce(MPI_IN_PLACE, &aligned, 1, MPI_INT, MPI_MIN, comm.get()), "MPI_Allreduce");
  return aligned ? std::optional<io::Index3>(shape) : std::nullopt;
}

void Pipeline::Impl::write_mask(const Field& field, StepRecord& record) {
  const std::string path = appending ? options.out : detail::format_step(options.out, field.step);
  const io::VolumeInfo input = as_written(field, options.variable, *format);
  const std::string source =
      field.source.empty() ? "in situ: " + options.variable + " step " + std::to_string(field.step) : field.source;
  io::CreateRequest request{path, segment::mask_info(input, step_lo, step_hi, source, history), options.force};
  const io::Writing writing = io::writing_backend(*format, "posix");
  const std::string backend = options.backend.empty() ? writing.backend : options.backend;
  std::vector<std::string> hints = writing.hints;
  hints.insert(hints.end(), options.hints.begin(), options.hints.end());
  if (appending) {
    char time[64];
    std::snprintf(time, sizeof time, "%.17g", field.time);
    hints.push_back("append=1");
    hints.push_back(std::string("record_time=") + time);
  }
  collectively(comm, [&] {
    const auto parent = std::filesystem::path(path).parent_path();
    if (comm.rank() == 0 && !parent.empty()) std::filesystem::create_directories(parent);
  });
  if (io::format_traits(*format).chunked) request.bricks = block_grid(field);
  auto writer = io::create_writer(backend, request, comm, io::Hints::parse(hints));
  // One brick, this rank's block, through the brick driver: every rank
  // agrees on the outcome.
  segment::BrickDriver driver(comm, {field.box}, {}, {});
  driver.run(writer->capabilities().collective, [&](std::optional<std::size_t> k) {
    io::write_in_round(*writer, k ? &driver.extent(*k) : nullptr, mask.data());
  });
  writer->close();
  record.mask = appending ? path + "[" + std::to_string(records_written++) + "]" : path;
}

// Collective. Links this step's objects to the last labelled step's, where
// every rank's block is the same box as then (else the track starts again).
void Pipeline::Impl::track(const Field& field, const StepRecord& record) {
  segment::TrackStep now;
  now.step = field.step;
  now.objects = record.objects.value_or(0);
  now.largest = record.largest;
  int same = previous_box && *previous_box == field.box ? 1 : 0;
  check_mpi(MPI_Allreduce(MPI_IN_PLACE, &same, 1, MPI_INT, MPI_MIN, comm.get()), "MPI_Allreduce");
  if (same) {
    segment::PairCounts counts;
    segment::count_pairs(previous_ids, ids, counts);
    auto pairs = segment::gather_pairs(comm, counts, previous_step);
    if (comm.rank() == 0) {
      segment::summarize_track(now, track_steps.back().objects, pairs);
      track_pairs.insert(track_pairs.end(), pairs.begin(), pairs.end());
    }
  }
  if (comm.rank() == 0) track_steps.push_back(now);
  previous_ids.swap(ids);
  previous_box = field.box;
  previous_step = field.step;
}

void Pipeline::finalize() {
  auto& m = *impl_;
  if (m.finalized) return;
  m.finalized = true;
  std::exception_ptr error;
  try {
    if (m.catalyst) m.catalyst->finalize();
  } catch (...) {
    error = std::current_exception();
  }
  m.image.reset();  // collective; before MPI_Finalize
  m.catalyst.reset();
  agree(m.comm, error);
  collectively(m.comm, [&] {
    if (m.comm.rank() != 0) return;
    if (m.series) m.series->finish(m.records, m.create_seconds, m.options);
    if (!m.options.track.empty()) {
      const std::filesystem::path track(m.options.track);
      io::write_file_atomically(m.options.track, segment::track_csv(m.track_pairs));
      io::write_file_atomically((track.parent_path() / (track.stem().string() + ".steps.csv")).string(),
                                segment::track_steps_csv(m.track_steps));
    }
    // ParaView's index of a mask per step (NetCDF: its readers take a file
    // series; one appended file is a series by itself).
    if (!m.options.out.empty() && !m.appending && *m.format != io::FileFormat::raw &&
        !io::format_traits(*m.format).zarr) {
      std::string index = m.options.series;
      if (index.empty()) {
        std::filesystem::path first(detail::format_step(m.options.out, 0));
        index = (first.parent_path() / ("masks" + first.extension().string() + ".series")).string();
      }
      detail::write_series_index(index, m.records);
    }
  });
}

}  // namespace detail
}  // namespace volseg::insitu
