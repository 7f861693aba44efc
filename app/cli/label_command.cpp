// SPDX-License-Identifier: MIT
// `volseg label` and `segment --label`.
#include <cstdio>
#include <filesystem>

#include "commands.hpp"
#include "volseg/io/error.hpp"

namespace volseg::cli {

void Commands::add_label(CLI::App& app) {
  auto* sub = app.add_subcommand(
      "label", "Label the connected components of a mask (or of lo <= v <= hi), across bricks and ranks, and "
               "measure every object");
  auto& o = label_;
  sub->add_option("input", o.input, "A 0/1 mask (--mask-input) or a scalar volume (--lo/--hi): .nhdr or NetCDF")
      ->required();
  sub->add_option("--out", o.output, "Labels: NAME.nhdr (raw) or NAME.nc; 0 is background, object k the k-th in "
                                     "file order (x fastest)")
      ->required();
  auto* mask = sub->add_flag("--mask-input", o.mask_input, "The input is a mask: every voxel 0 or 1");
  sub->add_option("--lo", label_lo_, "Lowest value of the foreground (with --hi)")->excludes(mask);
  sub->add_option("--hi", label_hi_, "Highest value of the foreground (with --lo)")->excludes(mask);
  sub->add_option("--connectivity", o.connectivity,
                  "6 (faces) | 18 (and edges) | 26 (and corners), as scipy.ndimage's structures of rank 1, 2, 3")
      ->capture_default_str();
  sub->add_option("--type", o.type, "Label type: auto (u32, or u64 past 2^32 - 1 objects) | u8 | u16 | u32 | u64")
      ->capture_default_str();
  sub->add_option("--stats", o.stats, "Object table (CSV): id, voxels, volume, bounding box, centroid in voxels and "
                                      "in physical units, touches_boundary, and with --values min/mean/max");
  sub->add_option("--min-voxels", o.min_voxels, "Drop objects smaller than this (they become 0; ids stay dense)")
      ->capture_default_str();
  sub->add_option_function<std::uint64_t>(
         "--cache", [&o](std::uint64_t mib) { o.cache_bytes = mib << 20; },
         "MiB per rank that keep the first pass's labels for the second (4 bytes a run of foreground); "
         "bricks past it are labelled twice [128]")
      ->check(CLI::Range(std::uint64_t{0}, std::uint64_t{1} << 30));
  sub->add_option("--values", o.values, "Source scalar volume, voxel for voxel, for the table's min/mean/max");
  sub->add_option("--values-var", label_values_variable_, "NetCDF variable of --values");
  sub->add_option("--values-time", label_values_time_, "Step of --values' 4D variable");
  sub->add_option("--var", label_variable_, "NetCDF variable of the input (default: the only 3D one)");
  sub->add_option("--time", label_time_, "Step of a 4D input variable's first dimension");
  sub->add_option("--format", o.format, "Labels format: raw | cdf5 | netcdf4 (default: by --out, else the input's; "
                                        "CDF-2 holds no u32, so a CDF-1/2 input gives CDF-5)");
  sub->add_option("--backend", o.backend, "Backend that reads (auto: as segment)")->capture_default_str();
  sub->add_option("--out-backend", o.output_backend, "Backend that writes (default: by format)");
  sub->add_option("--hint", o.hints, "Backend hint key=value (repeatable)");
  sub->add_option("--in-hint", o.input_hints, "Hint for the reader only (repeatable)");
  sub->add_option("--out-hint", o.output_hints, "Hint for the writer only (repeatable)");
  sub->add_option("--brick", label_brick_, "Brick shape Z,Y,X (default: about 12 MiB of u32 labels, whole rows/planes)");
  sub->add_option("--assign", label_assign_, "Bricks to ranks: block | cyclic | random")->capture_default_str();
  sub->add_option("--seed", o.seed, "Seed of --assign random")->capture_default_str();
  sub->add_option("--report", o.report, "JSON report: counts, per-rank times and peak memory, the object table");
  sub->add_flag("--force", o.force, "Replace existing labels, table and report");
  sub->add_flag("--quiet", label_quiet_, "No progress and no summary");
  sub->add_option("--progress", label_progress_, "auto | bar | lines | none (under mpirun auto means lines)")
      ->capture_default_str();
  sub->callback([this] { chosen_ = [this] { run_label(); }; });
}

void Commands::run_label() {
  auto& o = label_;
  if (!o.mask_input) {
    if (!label_lo_ || !label_hi_)
      throw Error("label: give --lo and --hi to threshold the input, or --mask-input for a 0/1 mask");
    o.lo = *label_lo_;
    o.hi = *label_hi_;
  }
  if (!label_brick_.empty()) o.brick_shape = segment::parse_shape(label_brick_);
  o.assignment = segment::parse_assignment(label_assign_);
  o.progress = label_quiet_ ? segment::ProgressMode::none : segment::parse_progress_mode(label_progress_);
  o.command_line = command_line_;
  auto selection = selection_hints(label_variable_, label_time_);
  o.input_hints.insert(o.input_hints.begin(), selection.begin(), selection.end());
  if ((!label_values_variable_.empty() || label_values_time_) && o.values.empty())
    throw Error("--values-var and --values-time need --values");
  o.values_hints = selection_hints(label_values_variable_, label_values_time_);
  const auto result = segment::run_label(comm_, o);
  if (comm_.rank() == 0 && !label_quiet_) {
    std::fputs(segment::label_summary(o, result).c_str(), stdout);
    if (!o.report.empty()) std::printf("  report: %s\n", o.report.c_str());
    std::fflush(stdout);
  }
}

void Commands::label_segment_mask() {
  segment::LabelOptions o;
  o.input = segment_.output;
  o.output = segment_label_;
  o.mask_input = true;
  o.connectivity = segment_connectivity_;
  o.stats = segment_label_stats_;
  o.force = segment_.force;
  o.brick_shape = segment_.brick_shape;
  o.assignment = segment_.assignment;
  o.seed = segment_.seed;
  o.progress = segment_.progress;
  o.command_line = command_line_;
  const auto result = segment::run_label(comm_, o);
  if (comm_.rank() == 0 && !segment_quiet_) {
    std::fputs(segment::label_summary(o, result).c_str(), stdout);
    std::fflush(stdout);
  }
}

}  // namespace volseg::cli
