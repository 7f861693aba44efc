// SPDX-License-Identifier: MIT
// `volseg distance`: the exact Euclidean distance of every foreground voxel
// to the nearest background voxel, across bricks and ranks.
#include <cstdio>

#include "command.hpp"
#include "volseg/io/error.hpp"
#include "volseg/io/hints.hpp"
#include "volseg/segment/distance.hpp"
#include "volseg/segment/label.hpp"

namespace volseg::cli {
namespace {

class DistanceCommand final : public Command {
 public:
  CLI::App* add_to(CLI::App& app) override {
    auto* sub =
        app.add_subcommand("distance",
                           "The exact Euclidean distance of every foreground voxel to the nearest background voxel, as "
                           "scipy.ndimage.distance_transform_edt, across bricks and ranks in bounded memory");
    auto& o = options_;
    sub->add_option(
           "input", o.input,
           "A mask (--mask-input: foreground nonzero) or a scalar volume (--lo/--hi). " + std::string(input_help))
        ->required();
    auto* out = sub->add_option("--out", o.output,
                                "Distances: NAME.nhdr (raw), NAME.nc, NAME.nc4, NAME.zarr, NAME.ome.zarr, "
                                "NAME.precomputed; 0 on the background")
                    ->required();
    accept_precomputed_url(*out, o.format);
    auto* mask = sub->add_flag("--mask-input", o.mask_input, "The input is a mask: foreground where nonzero");
    thresholds_.add_to(*sub, false, mask);
    sub->add_option("--connectivity", connectivity_, "Of hysteresis' components (--seed-lo/--seed-hi): 6 | 18 | 26")
        ->capture_default_str();
    sub->add_option("--spacing", spacing_,
                    "Z,Y,X: distances in these units, anisotropic (default: the input's own spacing where its "
                    "format carries one, else 1,1,1)");
    sub->add_flag("--black-border", o.black_border,
                  "Outside the volume is background (seung-lab edt's black_border); by default it is not, as in "
                  "scipy");
    sub->add_option("--type", type_, "f32 | f64 (f32: scipy's f64 distance rounded once)")->capture_default_str();
    selection_.add_to(*sub, true);
    sub->add_option("--format", o.format,
                    "raw | cdf5 | netcdf4 | hdf5 | zarr | ome-zarr | precomputed (default: by --out, else the "
                    "input's)");
    sub->add_option("--backend", o.backend, "Backend that reads (auto: as segment)")->capture_default_str();
    sub->add_option("--out-backend", o.output_backend, "Backend that writes (default: by format)");
    sub->add_option("--hint", o.hints, "Backend hint key=value (repeatable)");
    sub->add_option("--in-hint", o.input_hints, "Hint for the reader only (repeatable)");
    sub->add_option("--out-hint", o.output_hints, "Hint for the writer only (repeatable)");
    add_levels_option(*sub, o.output_hints);
    sub->add_option("--memory", memory_,
                    "Memory per rank the job may use (512MiB, 4GiB; default: this node's available memory shared "
                    "by its ranks); refused before it starts when one row of slabs or one plane does not fit");
    sub->add_option("--slab-rows", o.slab_rows,
                    "Rows of y in a slab of the first sweep (slabs whole along z and x; default: within a quarter of "
                    "--memory, at most 64 MiB)");
    sub->add_option("--plane-group", o.plane_group,
                    "Planes read, finished and written at a time by the second sweep (default: as --slab-rows)");
    sub->add_flag("--force", o.force, "Replace an existing output");
    verbosity_.add_to(*sub);
    return sub;
  }

  void run(const Context& context) override {
    auto& o = options_;
    if (!o.mask_input && (thresholds_.lo.empty() || thresholds_.hi.empty()))
      throw Error("distance: give --lo and --hi to threshold the input, or --mask-input for a mask");
    o.operators = thresholds_.operators(connectivity_);
    if (!spacing_.empty()) o.spacing = segment::parse_spacing(spacing_);
    if (type_ == "f32")
      o.type = io::DType::f32;
    else if (type_ == "f64")
      o.type = io::DType::f64;
    else
      throw Error("--type " + type_ + ": distances are f32 or f64");
    if (!memory_.empty()) {
      io::Hints parsed;
      parsed.set("memory", memory_);
      const std::int64_t bytes = parsed.get_size("memory", 0);
      if (bytes <= 0) throw Error("--memory must be positive, not " + memory_);
      o.memory_bytes = static_cast<std::uint64_t>(bytes);
    }
    o.selection = selection_.selection();
    o.progress = verbosity_.mode();
    o.command_line = context.command_line;
    if (!o.mask_input) {
      const auto chosen =
          thresholds_.resolve(context.comm, o.input, o.backend, o.selection, o.input_hints, verbosity_.quiet);
      chosen.apply_to(o);
    }
    const auto result = segment::run_distance(context.comm, o);
    if (context.comm.rank() == 0 && !verbosity_.quiet) {
      std::fputs(segment::distance_summary(o, result).c_str(), stdout);
      std::fflush(stdout);
    }
  }

 private:
  segment::DistanceOptions options_;
  int connectivity_ = 26;
  std::string spacing_, type_ = "f32", memory_;
  SelectionOptions selection_;
  ThresholdOptions thresholds_;
  Verbosity verbosity_;
};

}  // namespace

std::unique_ptr<Command> make_distance_command() { return std::make_unique<DistanceCommand>(); }

}  // namespace volseg::cli
