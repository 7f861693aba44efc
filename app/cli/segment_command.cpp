// SPDX-License-Identifier: MIT
// `volseg segment`: threshold a volume into a mask; then, when asked, label
// the mask (--label) and build its pyramid (--pyramid).
#include <csignal>
#include <cstdio>
#include <filesystem>

#include "command.hpp"
#include "volseg/io/error.hpp"
#include "volseg/io/files.hpp"
#include "volseg/pyramid/pyramid.hpp"
#include "volseg/segment/label.hpp"
#include "volseg/segment/segment.hpp"

namespace volseg::cli {
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
  struct sigaction old_[2]{};
};

class SegmentCommand final : public Command {
 public:
  CLI::App* add_to(CLI::App& app) override {
    auto* sub = app.add_subcommand("segment", "Threshold a volume into a u8 {0,1} mask: lo <= v <= hi");
    auto& o = options_;
    o.histogram = false;  // the batch job bins only when asked (--histogram)
    sub->add_option("input", o.input, input_help)->required();
    thresholds_.add_to(*sub, true);
    auto* out =
        sub->add_option(
               "--out", o.output,
               "Output mask: NAME.nhdr (raw), NAME.nii, NAME.vti, NAME.tif, NAME.nc, NAME.nc4, NAME.hdf5 or "
               "NAME.zarr (Zarr v2, compressed: --hint compressor=), NAME.ome.zarr or NAME.precomputed (multiscale)")
            ->required();
    accept_precomputed_url(*out, o.format);
    selection_.add_to(*sub, true, true);
    sub->add_option(
        "--format", o.format,
        "Mask format: raw | cdf2 | cdf5 | netcdf4 | hdf5 | zarr | ome-zarr | precomputed (default: by --out)");
    sub->add_option("--backend", o.backend,
                    "Backend that reads (auto: by format and, for a raw volume, by how much of it is in the page "
                    "cache: mmap-advise warm, ranged-uring cold; see 'volseg backends')")
        ->capture_default_str();
    sub->add_option("--out-backend", o.output_backend, "Backend that writes (default: by format)");
    sub->add_option("--hint", o.hints, "Backend hint key=value (repeatable); an unknown key is an error");
    sub->add_option("--in-hint", input_hints_, "Hint for the reader only (repeatable)");
    sub->add_option("--out-hint", o.output_hints, "Hint for the writer only (repeatable)");
    add_levels_option(*sub, o.output_hints);
    sub->add_option("--brick", brick_, "Brick shape Z,Y,X (default: about 12 MiB of whole rows/planes)");
    sub->add_option("--batch-bytes", o.collective_batch_bytes,
                    "Collective backends: input bytes a rank reads per collective call, as whole bricks (at least one)")
        ->capture_default_str()
        ->check(CLI::PositiveNumber);
    sub->add_option("--assign", assign_, "Bricks to ranks: block | cyclic | random")->capture_default_str();
    sub->add_option("--seed", o.seed, "Seed of --assign random")->capture_default_str();
    sub->add_option("--report", report_, "Write a JSON report with per-rank timings here");
    sub->add_option("--trace", o.trace, "Record every I/O call into this CSV file (docs/trace.md; see trace-report)");
    sub->add_flag(
        "--force", o.force,
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
    sub->add_option("--label", label_,
                    "Then label the mask's connected components into this volume (as 'volseg label --mask-input')");
    sub->add_option("--label-stats", label_stats_, "With --label: the object table (CSV)");
    sub->add_option("--connectivity", connectivity_, "Of hysteresis' components, and --label's objects: 6 | 18 | 26")
        ->capture_default_str();
    sub->add_flag("--pyramid", pyramid_, "Then build the mask's brick pyramid (reduction max; see 'volseg pyramid')");
    sub->add_option("--pyramid-dir", pyramid_dir_, "Pyramid directory (default: beside the mask, NAME.pyramid)");
    verbosity_.add_to(*sub);
    return sub;
  }

  void run(const Context& context) override {
    plan(context.command_line);
    const auto chosen = thresholds_.resolve(context.comm, options_.input, options_.backend, options_.selection,
                                            options_.input_hints, verbosity_.quiet);
    chosen.apply_to(options_);
    SchedulerSignals signals;
    options_.interrupt = &signals.received();
    if (const auto time = selection_.step_range(); time && time->range()) {
      if (!label_.empty() || pyramid_) throw Error("--time with several steps: --label and --pyramid take one step");
      const auto steps = segment::input_steps(context.comm, options_.backend, {options_.input, options_.selection},
                                              options_.input_hints, *time);
      const auto series = segment::run_segment_series(context.comm, options_, steps);
      if (context.comm.rank() == 0 && !verbosity_.quiet) {
        std::fputs(segment::series_summary(series).c_str(), stdout);
        if (!report_.empty()) std::printf("  report: %s\n", report_.c_str());
        std::fflush(stdout);
      }
      return;
    }
    auto result = segment::run_segment(context.comm, options_);
    if (context.comm.rank() == 0 && !verbosity_.quiet) {
      std::fputs(segment::summary(options_, result).c_str(), stdout);
      if (!report_.empty()) std::printf("  report: %s\n", report_.c_str());
      std::fflush(stdout);
    }
    if (!label_.empty()) label_mask(context);
    if (pyramid_) build_mask_pyramid(context);
  }

 private:
  // The options checked and completed; what would fail after the job is
  // refused before it.
  void plan(const std::string& command_line) {
    auto& o = options_;
    if (!brick_.empty()) o.brick_shape = segment::parse_shape(brick_);
    o.assignment = segment::parse_assignment(assign_);
    o.progress = verbosity_.mode();
    // A resumed job's mask records the command that made it, less --resume,
    // so an interrupted and resumed job's header is an uninterrupted one's.
    o.command_line = command_line;
    for (std::size_t at; (at = o.command_line.find(" --resume")) != std::string::npos;) o.command_line.erase(at, 9);
    o.report = report_;
    o.selection = selection_.selection();
    o.input_hints = input_hints_;
    o.operators = thresholds_.operators(connectivity_);
    if (pyramid_ && !pyramid_dir_.empty() && std::filesystem::exists(pyramid_dir_) &&
        !std::filesystem::is_directory(pyramid_dir_))
      throw Error("--pyramid-dir " + pyramid_dir_ + " exists and is not a directory");
    if (!label_.empty()) {
      segment::check_connectivity(connectivity_);
      namespace fs = std::filesystem;
      std::error_code ec;
      if (fs::weakly_canonical(label_, ec) == fs::weakly_canonical(o.output, ec) ||
          fs::weakly_canonical(label_, ec) == fs::weakly_canonical(o.input, ec))
        throw Error("--label " + label_ + " is the mask or the input");
      io::refuse_existing(label_, o.force);
    } else if (!label_stats_.empty()) {
      throw Error("--label-stats needs --label");
    }
  }

  // --label: the mask just written, labelled as 'volseg label --mask-input'.
  void label_mask(const Context& context) const {
    segment::LabelOptions o;
    o.input = options_.output;
    o.output = label_;
    o.mask_input = true;
    o.connectivity = connectivity_;
    o.stats = label_stats_;
    o.force = options_.force;
    o.brick_shape = options_.brick_shape;
    o.assignment = options_.assignment;
    o.seed = options_.seed;
    o.progress = options_.progress;
    o.command_line = context.command_line;
    const auto result = segment::run_label(context.comm, o);
    if (context.comm.rank() == 0 && !verbosity_.quiet) {
      std::fputs(segment::label_summary(o, result).c_str(), stdout);
      std::fflush(stdout);
    }
  }

  // --pyramid: the mask's pyramid, for coarse-first views of the result
  // (max: a coarse voxel is inside when any of its voxels is).
  void build_mask_pyramid(const Context& context) const {
    pyramid::BuildOptions options;
    options.input = options_.output;
    options.directory = pyramid_dir_;
    options.reduction = pyramid::Reduction::max;
    options.force = options_.force;
    options.progress = options_.progress;
    options.command_line = context.command_line;
    const auto built = pyramid::build(context.comm, options);
    if (context.comm.rank() == 0 && !verbosity_.quiet)
      std::printf("  pyramid: %s (%zu levels)\n", built.directory().c_str(), built.levels().size());
  }

  segment::SegmentOptions options_;
  ThresholdOptions thresholds_;
  std::string brick_, assign_ = "block", report_;
  SelectionOptions selection_;
  std::vector<std::string> input_hints_;
  Verbosity verbosity_;
  bool pyramid_ = false;     // --pyramid: build the mask's pyramid after a successful job
  std::string pyramid_dir_;  // --pyramid-dir
  // --label LABELS [--label-stats CSV] [--connectivity N]
  std::string label_, label_stats_;
  int connectivity_ = 26;
};

}  // namespace

std::unique_ptr<Command> make_segment_command() { return std::make_unique<SegmentCommand>(); }

}  // namespace volseg::cli
