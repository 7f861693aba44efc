// SPDX-License-Identifier: MIT
#include "commands.hpp"

#include <csignal>

#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <iostream>
#include <sstream>

#include "volseg/datasets/generate.hpp"
#include "volseg/io/auto_backend.hpp"
#include "volseg/io/error.hpp"
#include "volseg/io/files.hpp"
#include "volseg/io/format.hpp"
#include "volseg/io/nrrd.hpp"
#include "volseg/io/registry.hpp"
#include "volseg/io/trace.hpp"
#include "volseg/trace_report/trace_report.hpp"

namespace volseg::cli {

void Commands::add_to(CLI::App& app) {
  add_info(app);
  add_backends(app);
  add_generate(app);
  add_segment(app);
  add_trace_report(app);
  add_pyramid(app);
  add_label(app);
  render_.add_to(app, comm_, chosen_);
  app.footer("Dimensions and brick shapes are given in file order Z,Y,X (x fastest), as ncdump lists them.\n"
             "Run 'volseg SUBCOMMAND --help' for the options of each.");
}

void Commands::run() {
  if (chosen_) chosen_();
}

void Commands::add_info(CLI::App& app) {
  auto* sub = app.add_subcommand("info", "Describe a volume: dimensions, type, byte order, attributes");
  sub->add_option("file", info_.path, "Volume: a raw volume's .nhdr header, or a NetCDF file")->required();
  sub->add_option("--backend", info_.backend, "Backend that opens it (auto: by format)")->capture_default_str();
  sub->add_option("--var", info_.variable, "NetCDF variable (default: the only 3D one)");
  sub->add_option("--time", info_.time, "Step of a 4D variable's first dimension");
  sub->callback([this] { chosen_ = [this] { run_info(); }; });
}

void Commands::add_backends(CLI::App& app) {
  auto* sub = app.add_subcommand("backends", "List the I/O backends and whether this build has them");
  sub->callback([this] { chosen_ = [this] { run_backends(); }; });
}

void Commands::add_generate(CLI::App& app) {
  auto* sub = app.add_subcommand("generate", "Write a synthetic volume with a known answer, in parallel");
  sub->add_option("output", generate_.path, "Output: NAME.nhdr (raw, data in NAME.raw) or NAME.nc")->required();
  sub->add_option("--format", generate_.format, "raw | cdf2 | cdf5 | netcdf4 (default: by extension)");
  sub->add_option("--var", generate_.variable, "NetCDF variable name (default: the field's name)");
  sub->add_option("--field", generate_.field, "shells | smooth | noise")->capture_default_str();
  sub->add_option("--dims", generate_.dims, "Z,Y,X or N for a cube")->capture_default_str();
  sub->add_option("--dtype", generate_.dtype, "i8 | u8 | i16 | u16 | i32 | u32 | i64 | u64 | f32 | f64")
      ->capture_default_str();
  sub->add_option("--endian", generate_.endian, "little | big")->capture_default_str();
  sub->add_option("--shell-width", generate_.shell_width, "Voxels per shell (shells)")->capture_default_str();
  sub->add_option("--seed", generate_.seed, "Seed (noise)")->capture_default_str();
  sub->add_option("--backend", generate_.backend, "Backend that writes it (default: by format)");
  sub->add_option("--hint", generate_.hints, "Backend hint key=value (repeatable)");
  sub->add_option("--trace", generate_.trace, "Record every I/O call into this CSV file (docs/trace.md)");
  sub->add_flag("--force", generate_.force, "Replace an existing output");
  sub->add_flag("--quiet", generate_.quiet, "No progress and no summary");
  sub->add_option("--progress", generate_.progress, "auto | bar | lines | none (under mpirun auto means lines)")
      ->capture_default_str();
  sub->callback([this] { chosen_ = [this] { run_generate(); }; });
}

namespace {

segment::Interrupt scheduler_signal{0};

extern "C" void on_scheduler_signal(int signal) { scheduler_signal.store(signal); }

// A batch job's warning that its time is nearly up: SIGUSR1 or SIGUSR2,
// which mpirun forwards to every rank (it turns SIGTERM into SIGKILL within
// seconds). While a segment job runs, each rank stops at its next brick,
// keeps what it finished, and the job ends with status 75 (EX_TEMPFAIL:
// rerun with --resume). Slurm: sbatch --signal=B:USR1@120 and, in the
// batch script, trap 'kill -USR1 $pid' USR1 around mpirun (docs/reliability.md).
class SchedulerSignals {
 public:
  SchedulerSignals() {
    scheduler_signal.store(0);
    struct sigaction action {};
    action.sa_handler = on_scheduler_signal;
    sigemptyset(&action.sa_mask);
    action.sa_flags = SA_RESTART;
    sigaction(SIGUSR1, &action, &old_[0]);
    sigaction(SIGUSR2, &action, &old_[1]);
  }
  ~SchedulerSignals() {
    sigaction(SIGUSR1, &old_[0], nullptr);
    sigaction(SIGUSR2, &old_[1], nullptr);
  }
  SchedulerSignals(const SchedulerSignals&) = delete;
  SchedulerSignals& operator=(const SchedulerSignals&) = delete;
  const segment::Interrupt& received() const { return scheduler_signal; }

 private:
  struct sigaction old_[2] {};
};

}  // namespace

void Commands::add_segment(CLI::App& app) {
  auto* sub = app.add_subcommand("segment", "Threshold a volume into a u8 {0,1} mask: lo <= v <= hi");
  auto& o = segment_;
  o.histogram = false;  // the batch job bins only when asked (--histogram)
  sub->add_option("input", o.input, "Input volume: a raw volume's .nhdr header, or a NetCDF file")->required();
  sub->add_option("--lo", o.lo, "Lowest value in the mask")->required();
  sub->add_option("--hi", o.hi, "Highest value in the mask")->required();
  sub->add_option("--out", o.output, "Output mask: NAME.nhdr (raw) or NAME.nc")->required();
  sub->add_option("--var", segment_variable_, "NetCDF variable (default: the only 3D one; 'volseg info' lists them)");
  sub->add_option("--time", segment_time_, "Step of a 4D variable's first (record/time) dimension");
  sub->add_option("--format", o.format,
                  "Mask format: raw | cdf2 | cdf5 | netcdf4 (default: the input's, or by the --out extension)");
  sub->add_option("--backend", o.backend,
                  "Backend that reads (auto: by format and, for a raw volume, by how much of it is in the page "
                  "cache: mmap-advise warm, ranged-uring cold; see 'volseg backends')")
      ->capture_default_str();
  sub->add_option("--out-backend", o.output_backend, "Backend that writes (default: by format)");
  sub->add_option("--hint", o.hints, "Backend hint key=value (repeatable); an unknown key is an error");
  sub->add_option("--in-hint", segment_input_hints_, "Hint for the reader only (repeatable)");
  sub->add_option("--out-hint", o.output_hints, "Hint for the writer only (repeatable)");
  sub->add_option("--brick", segment_brick_, "Brick shape Z,Y,X (default: about 12 MiB of whole rows/planes)");
  sub->add_option("--batch-bytes", o.collective_batch_bytes,
                  "Collective backends: input bytes a rank reads per collective call, as whole bricks (at least one)")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  sub->add_option("--assign", segment_assign_, "Bricks to ranks: block | cyclic | random")->capture_default_str();
  sub->add_option("--seed", o.seed, "Seed of --assign random")->capture_default_str();
  sub->add_option("--report", segment_report_, "Write a JSON report with per-rank timings here");
  sub->add_option("--trace", o.trace, "Record every I/O call into this CSV file (docs/trace.md; see trace-report)");
  sub->add_flag("--force", o.force,
                "Replace an existing mask and report (and pyramid, with --pyramid), and an unfinished job's partial mask");
  sub->add_flag("--resume", o.resume,
                "Finish the mask an interrupted job of the same input, thresholds and brick shape left (raw and CDF; "
                "any rank count); start one if there is none");
  sub->add_flag("--journal-sync,!--no-journal-sync", o.journal_sync,
                "Flush each brick's data, then its journal record (default); without, a journal survives a killed "
                "job but not a crashed node");
  sub->add_flag("--histogram", o.histogram,
                "Also count the mask's voxels in 256 bins over [lo, hi] (the report's stats.histogram; costs about "
                "as much as the threshold pass where much is in range)");
  sub->add_option("--label", segment_label_,
                  "Then label the mask's connected components into this volume (as 'volseg label --mask-input')");
  sub->add_option("--label-stats", segment_label_stats_, "With --label: the object table (CSV)");
  sub->add_option("--connectivity", segment_connectivity_, "With --label: 6 | 18 | 26")->capture_default_str();
  sub->add_flag("--pyramid", segment_pyramid_, "Then build the mask's brick pyramid (reduction max; see 'volseg pyramid')");
  sub->add_option("--pyramid-dir", segment_pyramid_dir_, "Pyramid directory (default: beside the mask, NAME.pyramid)");
  sub->add_flag("--quiet", segment_quiet_, "No progress and no summary");
  sub->add_option("--progress", segment_progress_, "auto | bar | lines | none (under mpirun auto means lines)")
      ->capture_default_str();
  sub->callback([this] { chosen_ = [this] { run_segment(); }; });
}

void Commands::add_trace_report(CLI::App& app) {
  auto* sub = app.add_subcommand("trace-report", "Summarise an I/O trace written by --trace (docs/trace.md)");
  sub->add_option("file", trace_report_.path, "Trace CSV written by 'segment --trace' or 'generate --trace'")
      ->required();
  sub->add_option("--plots", trace_report_.plots, "Also draw PNGs (histogram, CDFs, per-rank timeline) into DIR");
  sub->callback([this] { chosen_ = [this] { run_trace_report(); }; });
}

void Commands::add_pyramid(CLI::App& app) {
  auto* sub = app.add_subcommand("pyramid", "Build a volume's brick pyramid: coarse levels, per-brick statistics and "
                                            "histograms, for coarse-first views and brick culling");
  auto& o = pyramid_;
  sub->add_option("input", o.input, "Input volume: a raw volume's .nhdr header, or a NetCDF file")->required();
  sub->add_option("--var", pyramid_variable_, "NetCDF variable (default: the only 3D one)");
  sub->add_option("--time", pyramid_time_, "Step of a 4D variable's first (record/time) dimension");
  sub->add_option("--backend", o.backend, "Backend that reads (auto: by format)")->capture_default_str();
  sub->add_option("--hint", o.input_hints, "Reader hint key=value (repeatable)");
  sub->add_option("--pyramid-dir", o.directory, "Where to write it (default: beside the input, NAME.pyramid)");
  sub->add_option("--brick", o.brick, "Level-0 brick edge, a power of two from 2 to 1024")->capture_default_str();
  sub->add_option("--levels", o.levels, "Coarse levels, 1 to log2(brick) (0: until the coarsest fits one brick)")
      ->capture_default_str();
  sub->add_option("--bins", o.bins, "Histogram bins")->capture_default_str();
  sub->add_option("--reduce", pyramid_reduce_, "mean | max (default: max for a mask, else mean)");
  sub->add_flag("--force", o.force, "Replace an existing pyramid");
  sub->add_flag("--quiet", pyramid_quiet_, "No progress and no summary");
  sub->add_option("--progress", pyramid_progress_, "auto | bar | lines | none (under mpirun auto means lines)")
      ->capture_default_str();
  sub->callback([this] { chosen_ = [this] { run_pyramid(); }; });
}

std::vector<std::string> selection_hints(const std::string& variable, const std::optional<std::int64_t>& time) {
  std::vector<std::string> hints;
  if (!variable.empty()) hints.push_back("var=" + variable);
  if (time) hints.push_back("time=" + std::to_string(*time));
  return hints;
}

void Commands::run_info() {
  std::string backend = info_.backend;
  const io::FileFormat format = io::detect_format(comm_, info_.path);
  if (backend == "auto") backend = io::choose_backend(comm_, format, info_.path, io::Access::stream).backend;
  const auto& entry = io::builtin_registry().get(backend);
  if (entry.list_variables) {
    const auto variables = entry.list_variables(info_.path, comm_);
    if (comm_.rank() == 0) {
      std::printf("%s (%s): variables with 3 or more dimensions\n", info_.path.c_str(), io::format_name(format).c_str());
      for (const auto& line : variables) std::printf("  %s\n", line.c_str());
    }
    if (variables.size() > 1 && info_.variable.empty()) {
      if (comm_.rank() == 0) std::printf("name one with --var to see its details\n");
      return;
    }
  }
  auto reader = io::open_reader(backend, info_.path, comm_, io::Hints::parse(selection_hints(info_.variable, info_.time)));
  const auto& info = reader->info();
  if (comm_.rank() == 0) std::fputs(io::describe(info_.path, format, backend, info).c_str(), stdout);
  reader->close();
}

void Commands::run_backends() {
  if (comm_.rank() != 0) return;
  for (const auto& backend : io::builtin_registry().all()) {
    std::printf("%-12s %-28s %s%s\n", backend.name.c_str(), backend.formats.c_str(), backend.description.c_str(),
                backend.open ? "" : ("  [unavailable: " + backend.unavailable + "]").c_str());
  }
}

void Commands::run_generate() {
  auto& g = generate_;
  io::VolumeInfo info;
  auto dtype = io::parse_dtype(g.dtype);
  if (!dtype) throw Error("unknown dtype '" + g.dtype + "' (known: i8, u8, i16, u16, i32, u32, i64, u64, f32, f64)");
  info.dtype = *dtype;
  if (g.endian != "little" && g.endian != "big") throw Error("unknown byte order '" + g.endian + "' (little or big)");
  info.byte_order = g.endian == "little" ? io::ByteOrder::little : io::ByteOrder::big;
  info.dims = segment::parse_shape(g.dims);
  io::check_volume_size(info.dims, info.dtype, "--dims " + g.dims);
  datasets::FieldSpec spec{datasets::parse_field(g.field), g.shell_width, g.seed};
  info.variable = g.variable.empty() ? g.field : g.variable;
  info.attributes["field"] = g.field;
  info.attributes["history"] = command_line_;
  if (spec.field == datasets::Field::shells) info.attributes["shell_width"] = std::to_string(g.shell_width);
  if (spec.field == datasets::Field::noise) info.attributes["seed"] = std::to_string(g.seed);
  io::FileFormat format = io::output_format(g.path, g.format, std::nullopt, false, "output");
  io::Writing writing = io::writing_backend(format, "posix");
  if (!g.backend.empty()) writing.backend = g.backend;
  auto hint_list = g.hints;
  hint_list.insert(hint_list.end(), writing.hints.begin(), writing.hints.end());
  const io::Hints hints = io::Hints::parse(hint_list);
  if (!g.trace.empty()) {  // as segment's: never over the volume, nor an existing file without --force
    namespace fs = std::filesystem;
    std::vector<std::string> outputs{g.path};
    if (fs::path(g.path).extension() == ".nhdr") outputs.push_back(io::data_path_for_header(g.path));
    std::error_code ec;
    for (const auto& output : outputs)
      if (fs::weakly_canonical(g.trace, ec) == fs::weakly_canonical(output, ec))
        throw Error("trace " + g.trace + " would overwrite the volume's " + output);
    if (fs::is_directory(g.trace)) throw Error("trace " + g.trace + " is a directory");
    if (!g.force && fs::exists(g.trace) && !io::is_stream(g.trace)) throw Error(g.trace + " exists (use --force to replace it)");
    io::trace::enable(comm_);
  }
  auto writer = io::create_writer(writing.backend, {g.path, info, g.force}, comm_, hints);
  auto progress = g.quiet ? segment::ProgressMode::none : segment::parse_progress_mode(g.progress);
  datasets::generate(comm_, spec, *writer, progress);
  writer->close();
  if (!g.trace.empty()) {
    io::trace::disable();
    io::trace::write_gathered(comm_, g.trace);
  }
  if (comm_.rank() == 0 && !g.quiet)
    std::printf("wrote %s (%lld x %lld x %lld %s, %.3f GB)\n", g.path.c_str(), static_cast<long long>(info.dims[2]),
                static_cast<long long>(info.dims[1]), static_cast<long long>(info.dims[0]),
                std::string(io::dtype_name(info.dtype)).c_str(), static_cast<double>(info.bytes()) / 1e9);
}

void Commands::run_segment() {
  auto& o = segment_;
  if (!segment_brick_.empty()) o.brick_shape = segment::parse_shape(segment_brick_);
  o.assignment = segment::parse_assignment(segment_assign_);
  o.progress = segment_quiet_ ? segment::ProgressMode::none : segment::parse_progress_mode(segment_progress_);
  // A resumed job's mask records the command that made it, less --resume,
  // so an interrupted and resumed job's header is an uninterrupted one's.
  o.command_line = command_line_;
  for (std::size_t at; (at = o.command_line.find(" --resume")) != std::string::npos;)
    o.command_line.erase(at, 9);
  o.report = segment_report_;
  o.input_hints = selection_hints(segment_variable_, segment_time_);
  o.input_hints.insert(o.input_hints.end(), segment_input_hints_.begin(), segment_input_hints_.end());
  if (segment_pyramid_ && !segment_pyramid_dir_.empty() && std::filesystem::exists(segment_pyramid_dir_) &&
      !std::filesystem::is_directory(segment_pyramid_dir_))  // refused before the job, not after it
    throw Error("--pyramid-dir " + segment_pyramid_dir_ + " exists and is not a directory");
  if (!segment_label_.empty()) {  // refused before the job, not after it
    segment::check_connectivity(segment_connectivity_);
    namespace fs = std::filesystem;
    std::error_code ec;
    if (fs::weakly_canonical(segment_label_, ec) == fs::weakly_canonical(o.output, ec) ||
        fs::weakly_canonical(segment_label_, ec) == fs::weakly_canonical(o.input, ec))
      throw Error("--label " + segment_label_ + " is the mask or the input");
    if (!o.force && fs::exists(segment_label_)) throw Error(segment_label_ + " exists (use --force to replace it)");
  } else if (!segment_label_stats_.empty()) {
    throw Error("--label-stats needs --label");
  }
  SchedulerSignals signals;
  o.interrupt = &signals.received();
  auto result = segment::run_segment(comm_, o);
  if (comm_.rank() == 0 && !segment_quiet_) {
    std::fputs(segment::summary(o, result).c_str(), stdout);
    if (!segment_report_.empty()) std::printf("  report: %s\n", segment_report_.c_str());
    std::fflush(stdout);
  }
  if (!segment_label_.empty()) label_segment_mask();
  if (!segment_pyramid_) return;
  // The mask's pyramid, for coarse-first views of the result (max: a coarse
  // voxel is inside when any of its voxels is).
  pyramid::BuildOptions options;
  options.input = o.output;
  options.directory = segment_pyramid_dir_;
  options.reduction = pyramid::Reduction::max;
  options.force = o.force;
  options.progress = o.progress;
  options.command_line = command_line_;
  const auto built = pyramid::build(comm_, options);
  if (comm_.rank() == 0 && !segment_quiet_)
    std::printf("  pyramid: %s (%zu levels)\n", built.directory().c_str(), built.levels().size());
}

void Commands::run_pyramid() {
  auto& o = pyramid_;
  if (!pyramid_reduce_.empty()) {
    if (pyramid_reduce_ != "mean" && pyramid_reduce_ != "max")
      throw Error("--reduce " + pyramid_reduce_ + ": known reductions are mean and max");
    o.reduction = pyramid_reduce_ == "max" ? pyramid::Reduction::max : pyramid::Reduction::mean;
  }
  auto selection = selection_hints(pyramid_variable_, pyramid_time_);
  o.input_hints.insert(o.input_hints.begin(), selection.begin(), selection.end());
  o.progress = pyramid_quiet_ ? segment::ProgressMode::none : segment::parse_progress_mode(pyramid_progress_);
  o.command_line = command_line_;
  const auto p = pyramid::build(comm_, o);
  if (comm_.rank() != 0 || pyramid_quiet_) return;
  std::printf("wrote %s (reduction %s)\n", p.directory().c_str(), pyramid::reduction_name(p.reduction()).c_str());
  for (const auto& level : p.levels())
    std::printf("  level %d: %lld x %lld x %lld (z,y,x)  %s\n", level.level, static_cast<long long>(level.dims[0]),
                static_cast<long long>(level.dims[1]), static_cast<long long>(level.dims[2]), level.header.c_str());
  const auto& shape = p.brick_shape();
  const auto& grid = p.brick_grid();
  std::printf("  bricks: %lld of %lld^3 (grid %lld x %lld x %lld)\n", static_cast<long long>(p.brick_count()),
              static_cast<long long>(shape[0]), static_cast<long long>(grid[0]), static_cast<long long>(grid[1]),
              static_cast<long long>(grid[2]));
  std::printf("  histogram: %d %sbins over [%.17g, %.17g]\n", p.edges().bins, p.edges().integers ? "integer " : "",
              p.edges().lo, p.edges().hi);
}

// Rank 0 alone reads the trace; the others have nothing to do.
void Commands::run_trace_report() {
  if (comm_.rank() != 0) return;
  const auto summary = trace_report::summarize(trace_report::read(trace_report_.path));
  std::fputs(trace_report::format(summary, trace_report_.path).c_str(), stdout);
  if (trace_report_.plots.empty()) return;
  std::fflush(stdout);
  for (const auto& png : trace_report::write_plots(summary, trace_report_.path, trace_report_.plots))
    std::printf("wrote %s\n", png.c_str());
}

}  // namespace volseg::cli
