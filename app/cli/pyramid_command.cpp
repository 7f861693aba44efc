// SPDX-License-Identifier: MIT
// `volseg pyramid`: a volume's brick pyramid (coarse levels, per-brick statistics).
#include <cstdio>

#include "command.hpp"
#include "volseg/io/error.hpp"
#include "volseg/pyramid/pyramid.hpp"
#include "volseg/segment/segment.hpp"

namespace volseg::cli {
namespace {

class PyramidCommand final : public Command {
 public:
  CLI::App* add_to(CLI::App& app) override {
    auto* sub = app.add_subcommand("pyramid",
                                   "Build a volume's brick pyramid: coarse levels, per-brick statistics "
                                   "and histograms, for coarse-first views and brick culling");
    auto& o = options_;
    sub->add_option("input", o.input,
                    std::string(input_help) + " (an OME-Zarr image also gets its levels as its datasets 1, 2, ...)")
        ->required();
    selection_.add_to(*sub, true, true);
    sub->add_option("--backend", o.backend, "Backend that reads (auto: by format)")->capture_default_str();
    sub->add_option("--hint", o.input_hints, "Reader hint key=value (repeatable)");
    sub->add_option("--pyramid-dir", o.directory,
                    "Where to write it (default: beside the input, NAME.pyramid; --time A:B: one a step, "
                    "NAME_%d.pyramid)");
    sub->add_option("--brick", o.brick, "Level-0 brick edge, a power of two from 2 to 1024")->capture_default_str();
    sub->add_option("--levels", o.levels, "Coarse levels, 1 to log2(brick) (0: until the coarsest fits one brick)")
        ->capture_default_str();
    sub->add_option("--bins", o.bins, "Histogram bins")->capture_default_str();
    sub->add_option("--reduce", reduce_, "mean | max (default: max for a mask, else mean)");
    sub->add_flag("--force", o.force, "Replace an existing pyramid");
    verbosity_.add_to(*sub);
    return sub;
  }

  void run(const Context& context) override {
    auto& o = options_;
    if (!reduce_.empty()) {
      if (reduce_ != "mean" && reduce_ != "max")
        throw Error("--reduce " + reduce_ + ": known reductions are mean and max");
      o.reduction = reduce_ == "max" ? pyramid::Reduction::max : pyramid::Reduction::mean;
    }
    o.selection = selection_.selection();
    o.progress = verbosity_.mode();
    o.command_line = context.command_line;
    if (const auto time = selection_.step_range(); time && time->range()) {
      if (!segment::names_steps(o.directory))
        throw Error(
            "pyramid --time with several steps: name each step's pyramid with %d in --pyramid-dir "
            "(NAME_%d.pyramid)");
      const std::string pattern = o.directory;
      for (const std::int64_t t :
           segment::input_steps(context.comm, o.backend, {o.input, o.selection}, o.input_hints, *time)) {
        pyramid::BuildOptions step = o;
        step.selection = o.selection.at_step(t);
        step.directory = segment::step_path(pattern, t);
        const auto p = pyramid::build(context.comm, step);
        if (context.comm.rank() == 0 && !verbosity_.quiet) print_summary(p);
      }
      return;
    }
    const auto p = pyramid::build(context.comm, o);
    if (context.comm.rank() == 0 && !verbosity_.quiet) print_summary(p);
  }

 private:
  static void print_summary(const pyramid::Pyramid& p) {
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

  pyramid::BuildOptions options_;
  std::string reduce_;
  SelectionOptions selection_;
  Verbosity verbosity_;
};

}  // namespace

std::unique_ptr<Command> make_pyramid_command() { return std::make_unique<PyramidCommand>(); }

}  // namespace volseg::cli
