// SPDX-License-Identifier: MIT
#include "governor.hpp"

namespace volseg::insitu::detail {
namespace {

// Recent steps weigh most: a field that grows more complex costs more later.
void blend(std::optional<double>& estimate, double measured) {
  estimate = estimate ? 0.5 * *estimate + 0.5 * measured : measured;
}

}  // namespace

std::string level_name(Level level) {
  switch (level) {
    case Level::full:
      return "full";
    case Level::small_image:
      return "small-image";
    case Level::no_image:
      return "no-image";
    case Level::no_scripts:
      return "no-scripts";
    case Level::stats_only:
      return "stats-only";
    case Level::skipped:
      return "skipped";
  }
  return "?";
}

double Governor::expected(Level level, const Wants& wants) const {
  if (level == Level::skipped) return 0;
  // A part never run yet is expected to cost nothing: it runs once, and its
  // measured cost decides from then on.
  double cost = wants.segment ? segment_.value_or(0) : 0;
  if (level <= Level::no_scripts && wants.write) cost += write_.value_or(0);
  if (level <= Level::no_image && wants.scripts) cost += scripts_.value_or(0);
  if (level == Level::full && wants.image) cost += render_.value_or(0);
  if (level == Level::small_image && wants.image)
    cost += small_render_.value_or(render_ ? *render_ / 4 : 0);  // a quarter of the pixels
  return cost;
}

Level Governor::choose(const Wants& wants, double credit) const {
  if (!budget_) return Level::full;
  for (Level level : {Level::full, Level::small_image, Level::no_image, Level::no_scripts, Level::stats_only}) {
    // Levels that drop nothing this step asks for are the same as the one above.
    if (level == Level::small_image && !wants.image) continue;
    if (level == Level::no_image && !wants.image) continue;
    if (level == Level::no_scripts && !wants.scripts) continue;
    if (level == Level::stats_only && !wants.segment) continue;
    if (expected(level, wants) <= credit) return level;
  }
  return Level::skipped;
}

void Governor::learn(Level level, const PartCosts& measured) {
  if (level == Level::skipped) return;
  if (measured.segment > 0) blend(segment_, measured.segment);
  if (measured.write > 0) blend(write_, measured.write);
  if (measured.scripts > 0) blend(scripts_, measured.scripts);
  if (measured.render > 0) blend(level == Level::small_image ? small_render_ : render_, measured.render);
}

}  // namespace volseg::insitu::detail
