// SPDX-License-Identifier: MIT
// `volseg label`: connected components of a mask (or of lo <= v <= hi)
// across bricks and ranks, with an object table.
#include <cmath>
#include <cstdio>
#include <optional>

#include "command.hpp"
#include "volseg/io/error.hpp"
#include "volseg/io/files.hpp"
#include "volseg/io/hints.hpp"
#include "volseg/mesh/mesh.hpp"
#include "volseg/segment/distance.hpp"
#include "volseg/segment/label.hpp"
#include "volseg/segment/segment.hpp"

namespace volseg::cli {
namespace {

class LabelCommand final : public Command {
 public:
  CLI::App* add_to(CLI::App& app) override {
    auto* sub = app.add_subcommand(
        "label",
        "Label the connected components of a mask (or of lo <= v <= hi), across bricks and ranks, and "
        "measure every object");
    auto& o = options_;
    sub->add_option("input", o.input,
                    "A 0/1 mask (--mask-input) or a scalar volume (--lo/--hi). " + std::string(input_help))
        ->required();
    auto* out = sub->add_option("--out", o.output,
                                "Labels: NAME.nhdr (raw), NAME.nc, NAME.nc4, NAME.zarr (Zarr v2), NAME.ome.zarr or "
                                "NAME.precomputed (multiscale, also precomputed://PATH); 0 is background, object k "
                                "the k-th in file order (x fastest)")
                    ->required();
    accept_precomputed_url(*out, o.format);
    auto* mask = sub->add_flag("--mask-input", o.mask_input, "The input is a mask: every voxel 0 or 1");
    auto* classes = sub->add_flag("--classes", o.classes,
                                  "The input is a u8 class image: objects are the connected regions of one nonzero "
                                  "value, as skimage.measure.label(image) (0 the background)")
                        ->excludes(mask);
    thresholds_.add_to(*sub, false, mask);
    classes->excludes("--lo")->excludes("--hi");
    sub->add_option("--connectivity", o.connectivity,
                    "6 (faces) | 18 (and edges) | 26 (and corners), as scipy.ndimage's structures of rank 1, 2, 3")
        ->capture_default_str();
    sub->add_option("--label-type,--type", o.type,
                    "Label type: auto (u32, or u64 past 2^32 - 1 objects, with a line saying so) | u8 | u16 | u32 | "
                    "u64; refused when the objects do not fit")
        ->capture_default_str();
    auto* split = sub->add_flag("--split", o.split.on,
                                "Split touching objects: a watershed of the distance transform (volseg distance) from "
                                "markers, each connected component of the mask apart (docs/split.md)");
    sub->add_option("--markers", markers_,
                    "With --split: FILE[:VAR], a labels volume of the input's shape: each nonzero id a marker (ids "
                    "need not be contiguous)")
        ->needs(split);
    sub->add_option("--h", h_,
                    "With --split: markers are the h-maxima of the distance (regional maxima at least H above their "
                    "surroundings, in the distance's units), as skimage.morphology.h_maxima [0.5]")
        ->needs(split)
        ->excludes("--markers");
    sub->add_option("--split-on", split_on_,
                    "With --split: flood FIELD instead of the distance, as skimage.segmentation.watershed(FIELD, "
                    "markers) (lowest first: for images whose boundaries are bright); -FIELD floods its negation. "
                    "FIELD: input (the input's own values) or FILE[:VAR] of the input's shape; --h is then in its "
                    "units (its h-minima)")
        ->needs(split);
    sub->add_option("--spacing", spacing_,
                    "With --split: Z,Y,X units of the distance (default: the input's own spacing, else 1,1,1)")
        ->needs(split);
    sub->add_option("--stats", o.stats,
                    "Object table (CSV): id, voxels, volume, bounding box, centroid in voxels and "
                    "in physical units, touches_boundary, and with --values min/mean/max");
    sub->add_option(
        "--periodic", periodic_,
        "Axes along which the volume wraps around, any of z, y, x (x, z,y, zyx): an object across a periodic face "
        "is one object, numbered by its first voxel in file order (a simulation's periodic domain)");
    sub->add_option("--mask-out", o.mask_output,
                    "Also write the mask that is labelled (after the operators, before --min-voxels), from the same "
                    "read of the input: NAME.nhdr, .nc, .nc4, .zarr, .ome.zarr, .nii, .tif");
    sub->add_option("--min-voxels", o.min_voxels, "Drop objects smaller than this (they become 0; ids stay dense)")
        ->capture_default_str();
    sub->add_option_function<std::uint64_t>(
           "--cache", [&o](std::uint64_t mib) { o.cache_bytes = mib << 20; },
           "MiB per rank that keep pass 1's bricks (runs and labels, 6 to 12 bytes a run of foreground) for "
           "pass 2, which paints them without reading the input again; bricks past it are read and labelled "
           "again [all that --memory leaves]")
        ->check(CLI::Range(std::uint64_t{0}, std::uint64_t{1} << 30));
    sub->add_option("--memory", memory_,
                    "Memory per rank the job may use (512MiB, 4GiB; default: this node's available memory shared "
                    "by its ranks). Refused before it starts when bricks and buffers do not fit; stopped in pass 1 "
                    "when its objects outgrow it. Also the most one strip, tile or chunk of the input may take "
                    "decoded (default: VOLSEG_MEMORY, else 1GiB)");
    sub->add_option("--values", values_,
                    "FILE[:VAR] (repeatable): a field measured per object in the same passes, voxel for voxel the "
                    "input's: columns NAME_min, _mean, _max, _sum and the value-weighted centroid _centroid_z/y/x, "
                    "NAME the VAR (else the file's name; value_* for one field not named). With --values-expr, a "
                    "FILE without :VAR is where the expressions' variables are");
    sub->add_option("--values-var", values_variable_, "NetCDF variable of the one --values FILE");
    sub->add_option("--values-time", values_time_, "Step of the fields' 4D variables");
    sub->add_option("--values-expr", expressions_,
                    "[NAME=]EXPR (repeatable): a field computed from the variables of --values FILE (else of the "
                    "input), as --expr: 'speed=sqrt(u*u + v*v)'")
        ->excludes("--values-var");
    selection_.add_to(*sub, true, true);
    sub->add_option("--format", o.format,
                    "Labels format: raw | cdf5 | netcdf4 | hdf5 | zarr | ome-zarr | precomputed (default: by --out, "
                    "else the input's; "
                    "CDF-2 holds no u32, so a CDF-1/2 input gives CDF-5)");
    sub->add_option("--backend", o.backend, "Backend that reads (auto: as segment)")->capture_default_str();
    sub->add_option("--out-backend", o.output_backend, "Backend that writes (default: by format)");
    sub->add_option("--hint", o.hints, "Backend hint key=value (repeatable)");
    sub->add_option("--in-hint", o.input_hints, "Hint for the reader only (repeatable)");
    sub->add_option("--out-hint", o.output_hints, "Hint for the writer only (repeatable)");
    add_levels_option(*sub, o.output_hints);
    sub->add_option("--brick", brick_,
                    "Brick shape Z,Y,X (default: 16 whole planes or 16 Mi voxels, whichever is more, within an eighth "
                    "of the memory bound; docs/label.md)");
    sub->add_option("--assign", assign_, "Bricks to ranks: block | cyclic | random")->capture_default_str();
    sub->add_option("--seed", o.seed, "Seed of --assign random")->capture_default_str();
    sub->add_option("--report", o.report, "JSON report: counts, per-rank times and peak memory, the object table");
    sub->add_flag("--force", o.force, "Replace existing labels, table, report and mesh folder");
    sub->add_option("--mesh", mesh_,
                    "Also mesh every object into this folder, as `volseg mesh LABELS --out DIR` (smooth surfaces, "
                    "Neuroglancer precomputed)");
    sub->add_option("--track", track_,
                    "With --time A:B: link the objects of consecutive steps that share voxels into this CSV "
                    "(t,id,next_id,overlap_voxels), with TRACK.steps.csv (births, deaths, merges, splits per step) "
                    "and a plot TRACK.png");
    sub->add_flag("!--no-plot", plot_, "With --track: no PNG (no matplotlib needed)");
    verbosity_.add_to(*sub);
    return sub;
  }

  void run(const Context& context) override {
    plan(context.command_line);
    if (!options_.mask_input && !options_.classes) {
      const auto chosen = thresholds_.resolve(context.comm, options_.input, options_.backend, options_.selection,
                                              options_.input_hints, verbosity_.quiet);
      chosen.apply_to(options_);
    }
    const auto time = selection_.step_range();
    if (time && time->range()) {
      const auto steps = segment::input_steps(context.comm, options_.backend, {options_.input, options_.selection},
                                              options_.input_hints, *time);
      const auto series = segment::run_label_series(context.comm, options_, steps, track_, plot_);
      if (context.comm.rank() == 0 && !verbosity_.quiet) {
        std::fputs(segment::series_summary(series, track_).c_str(), stdout);
        std::fflush(stdout);
      }
      return;
    }
    if (!track_.empty()) throw Error("--track links the objects of several steps: give --time all or A:B[:S]");
    if (!mesh_.empty()) io::refuse_existing(mesh_, options_.force);
    const auto result = segment::run_label(context.comm, options_);
    if (context.comm.rank() == 0 && !verbosity_.quiet) {
      std::fputs(segment::label_summary(options_, result).c_str(), stdout);
      if (!options_.report.empty()) std::printf("  report: %s\n", options_.report.c_str());
      std::fflush(stdout);
    }
    if (!mesh_.empty()) {
      mesh::MeshOptions m;
      m.input = options_.output;
      m.output = mesh_;
      m.force = options_.force;
      m.progress = options_.progress;
      m.command_line = context.command_line;
      const auto meshed = mesh::run_mesh(context.comm, m);
      if (context.comm.rank() == 0 && !verbosity_.quiet) {
        std::fputs(mesh::mesh_summary(m, meshed).c_str(), stdout);
        std::fflush(stdout);
      }
    }
  }

 private:
  void plan(const std::string& command_line) {
    auto& o = options_;
    if (!o.mask_input && !o.classes && (thresholds_.lo.empty() || thresholds_.hi.empty()))
      throw Error(
          "label: give --lo and --hi to threshold the input, --mask-input for a 0/1 mask or --classes for a "
          "class image");
    o.operators = thresholds_.operators(o.connectivity);
    if (!brick_.empty()) o.brick_shape = segment::parse_shape(brick_);
    if (periodic_) o.periodic = segment::parse_periodic(*periodic_);
    if (!memory_.empty()) {
      io::Hints parsed;
      parsed.set("memory", memory_);
      const std::int64_t bytes = parsed.get_size("memory", 0);
      if (bytes <= 0) throw Error("--memory must be positive, not " + memory_);
      o.memory_bytes = static_cast<std::uint64_t>(bytes);
    }
    o.assignment = segment::parse_assignment(assign_);
    o.progress = verbosity_.mode();
    o.command_line = command_line;
    o.selection = selection_.selection();
    o.values = fields();
    if (!markers_.empty()) {
      const auto [file, variable] = segment::file_and_variable(markers_);
      o.split.markers = file;
      o.split.markers_selection.variable = variable;
    }
    if (h_) {
      const std::string& text = *h_;
      std::size_t used = 0;
      double h = 0;
      try {
        h = std::stod(text, &used);
      } catch (const std::exception&) {
        used = 0;
      }
      if (used == 0 || used != text.size()) throw Error("--h " + text + ": not a number");
      if (!(h > 0) || !std::isfinite(h)) throw Error("--h " + text + ": the height must be above 0");
      o.split.h = h;
    }
    if (!spacing_.empty()) o.split.spacing = segment::parse_spacing(spacing_);
    if (!split_on_.empty()) segment::parse_split_on(split_on_, o.split);
  }

  // --values FILE[:VAR] and --values-expr [NAME=]EXPR as the table's fields.
  std::vector<segment::ValueField> fields() const {
    io::Selection input = selection_.selection();
    input.variable.clear();
    input.expression.clear();
    input.operands.clear();
    return segment::value_fields({values_, expressions_, values_variable_, values_time_, options_.input, input});
  }

  segment::LabelOptions options_;
  std::optional<std::string> periodic_, h_;
  std::string markers_, spacing_, split_on_;
  std::string brick_, assign_ = "block", values_variable_, memory_;
  std::vector<std::string> values_, expressions_;
  std::optional<std::int64_t> values_time_;
  std::string track_, mesh_;
  bool plot_ = true;
  SelectionOptions selection_;
  ThresholdOptions thresholds_;
  Verbosity verbosity_;
};

}  // namespace

std::unique_ptr<Command> make_label_command() { return std::make_unique<LabelCommand>(); }

}  // namespace volseg::cli
