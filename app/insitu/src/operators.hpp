// SPDX-License-Identifier: MIT
// Thresholds chosen per step (--lo/--hi otsu, multiotsu:K:I, pN) and the
// mask operators (hysteresis, --open, --close, --fill-holes) in situ, with
// batch's own code: the step's field (each rank its owned points) is written
// to a scratch raw volume that every analysing rank sees; the thresholds are
// chosen from its exact histogram (pyramid::choose_thresholds) and the
// operators run as `volseg segment` runs them (segment::run_segment, the
// operators' chain: labelings merged across ranks, morphology read with
// ghost layers); each rank reads its box of the result back. So the mask is
// the one `volseg segment` makes of a dump of the step, on any rank count.
// The scratch volumes are rewritten each step and removed at the end.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "volseg/insitu/insitu.hpp"
#include "volseg/io/comm.hpp"

namespace volseg::insitu::detail {

class StepOperators {
 public:
  // Collective. Nothing to do (active() false) without rules or operators.
  StepOperators(const Comm& comm, const Options& options);
  ~StepOperators();  // removes the scratch volumes (rank 0)
  StepOperators(const StepOperators&) = delete;
  StepOperators& operator=(const StepOperators&) = delete;

  bool active() const { return active_; }
  bool chain() const { return chain_; }  // operators after the threshold

  // Collective: writes the field's owned points to the scratch volume and
  // returns the step's thresholds (the options' numbers, or chosen).
  std::pair<double, double> thresholds(const Field& field);
  // Collective, after thresholds(): the operators' mask of this rank's box.
  void apply(const Field& field, double lo, double hi, std::vector<std::uint8_t>& mask);

 private:
  const Comm& comm_;
  const Options& options_;
  bool active_ = false, chain_ = false;
  std::string field_path_, mask_path_;  // the scratch volumes (.nhdr)
};

}  // namespace volseg::insitu::detail
