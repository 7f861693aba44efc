// SPDX-License-Identifier: MIT
// The overhead governor: keeps the hook's time within a share of the
// simulation's. Each in-situ step it picks the richest level of work whose
// expected cost fits the credit earned so far (budget x simulation time -
// hook time, the lowest over ranks), learning the cost of each part from the
// steps that ran it. Work that does not fit is coarsened (a smaller image,
// no image, no scripts, statistics only) or skipped, never queued: a
// skipped step's credit pays for a later one.
#pragma once

#include <optional>
#include <string>

namespace volseg::insitu::detail {

enum class Level { full, small_image, no_image, no_scripts, stats_only, skipped };
std::string level_name(Level level);

// What the options ask for at this step.
struct Wants {
  bool segment = false;  // threshold + statistics
  bool write = false;    // a mask file
  bool image = false;
  bool scripts = false;
};

// Seconds one run of each part took (max over ranks).
struct PartCosts {
  double segment = 0, write = 0, render = 0, scripts = 0;
};

class Governor {
 public:
  explicit Governor(std::optional<double> budget) : budget_(budget) {}
  // credit: budget x simulation seconds - hook seconds so far (agreed).
  Level choose(const Wants& wants, double credit) const;
  // After a step that ran at level: what its parts cost.
  void learn(Level level, const PartCosts& measured);
  double expected(Level level, const Wants& wants) const;
  std::optional<double> budget() const { return budget_; }

 private:
  std::optional<double> budget_;
  std::optional<double> segment_, write_, render_, small_render_, scripts_;
};

}  // namespace volseg::insitu::detail
