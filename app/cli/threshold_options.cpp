// SPDX-License-Identifier: MIT
// --lo/--hi as numbers or rules, and the operators' options (command.hpp).
#include <cmath>
#include <cstdio>
#include <tuple>

#include "command.hpp"
#include "volseg/io/error.hpp"
#include "volseg/pyramid/pyramid.hpp"

namespace volseg::cli {

void ThresholdOptions::add_to(CLI::App& sub, bool required, CLI::Option* excludes) {
  const std::string rules =
      ": a number, or chosen from the input's histogram (1024 bins over [min, max], or one per integer): otsu, "
      "multiotsu:K:I (the I-th of the K-1 multi-Otsu thresholds), pN (the N-th percentile)";
  auto* lo_option = sub.add_option("--lo", lo, "Lowest value of the foreground" + rules);
  auto* hi_option = sub.add_option("--hi", hi, "Highest value of the foreground" + rules);
  if (required) {
    lo_option->required();
    hi_option->required();
  }
  if (excludes) {
    lo_option->excludes(excludes);
    hi_option->excludes(excludes);
  }
  sub.add_option("--seed-lo", seed_lo,
                 "Hysteresis: keep only the components (--connectivity) of the [lo, hi] mask that hold a voxel with "
                 "seed-lo <= v <= seed-hi");
  sub.add_option("--seed-hi", seed_hi, "Hysteresis: the seed range's top (with --seed-lo)");
  sub.add_option("--open", open,
                 "Open the mask with a ball of this radius in voxels (erosion, then dilation; scikit-image's ball(R) "
                 "and border rule)")
      ->capture_default_str();
  sub.add_option("--close", close, "Close the mask with a ball of this radius (dilation, then erosion), after --open")
      ->capture_default_str();
  sub.add_flag("--fill-holes", fill_holes,
               "Fill the mask's holes: background components (6-connected) that touch no face of the volume; after "
               "--open and --close");
}

segment::MaskOperators ThresholdOptions::operators(int connectivity) const {
  segment::MaskOperators o;
  if (seed_lo.has_value() != seed_hi.has_value()) throw Error("hysteresis takes both --seed-lo and --seed-hi");
  if (seed_lo) o.seed = std::pair{*seed_lo, *seed_hi};
  o.connectivity = segment::check_connectivity(connectivity);
  o.open = segment::parse_radius("--open", open);
  o.close = segment::parse_radius("--close", close);
  o.fill_holes = fill_holes;
  return o;
}

ThresholdOptions::Resolved ThresholdOptions::resolve(const Comm& comm, const std::string& input,
                                                     const std::string& backend, const io::Selection& selection,
                                                     const std::vector<std::string>& input_hints, bool quiet) const {
  pyramid::HistogramOptions options;
  options.input = input;
  options.backend = backend;
  options.selection = selection;
  options.input_hints = input_hints;
  const Resolved chosen = pyramid::choose_thresholds(comm, options, lo, hi);
  if (chosen.edges && comm.rank() == 0 && !quiet) {
    const auto& edges = *chosen.edges;
    for (const auto& [option, rule, value] :
         {std::tuple{"--lo", chosen.lo_rule, chosen.lo}, std::tuple{"--hi", chosen.hi_rule, chosen.hi}})
      if (!rule.empty())
        std::printf("%s %s = %.17g (from the histogram of %d bins over [%.9g, %.9g])\n", option, rule.c_str(), value,
                    edges.bins, edges.lo, edges.hi);
    std::fflush(stdout);
  }
  note_seeds(comm, chosen, quiet);
  return chosen;
}

void ThresholdOptions::note_seeds(const Comm& comm, const Resolved& thresholds, bool quiet) const {
  if (!seed_lo || !seed_hi || comm.rank() != 0 || quiet) return;
  if (*seed_lo >= thresholds.lo && *seed_hi <= thresholds.hi) return;
  std::printf(
      "note: the seed range [%.17g, %.17g] reaches outside [lo, hi] = [%.17g, %.17g]: only seeds inside the "
      "band can be in a component\n",
      *seed_lo, *seed_hi, thresholds.lo, thresholds.hi);
  std::fflush(stdout);
}

}  // namespace volseg::cli
