// SPDX-License-Identifier: MIT
// The analysis of a published step (volseg's pipeline inside Catalyst:
// threshold, statistics, labels, mask writes, images, Python scripts) on one
// communicator, and the checks every mode makes of what the simulation's
// ranks publish. The synchronous hook runs a Pipeline on the simulation's
// ranks inside publish; --async runs one on a helper thread of each rank,
// --analysis-ranks K on K ranks of their own (offload.hpp), with the same
// code and so the same results.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include <mpi.h>

#include "volseg/insitu/insitu.hpp"
#include "volseg/io/comm.hpp"

namespace volseg::insitu::detail {

// What one rank published is usable: positive dims, its block inside the
// grid, ghost layers it can hold, values present. Throws volseg::Error.
void check_field(const Field& field);

// Collective: the ranks' boxes tile the grid (inside it, no overlap, every
// point owned once). Returns every rank's box, by rank.
std::vector<io::Extent> check_tiling(const Comm& comm, const Field& field);

// Collective, one reduction: throws on every rank unless the ranks agree on
// the grid's dims, the data type and the step; returns the maxima over ranks
// of `maxima` (flags and amounts the caller needs agreed in the same call).
std::vector<double> agree_step(const Comm& comm, const Field& field, std::vector<double> maxima);

// Of a step published on this rank and agreed by all: a record of a step
// that no analysis ran (action says why).
StepRecord unanalysed(const Field& field, const std::string& action);

class Pipeline {
 public:
  // Collective over comm (duplicated): checks the options, the parallel
  // netCDF library and the display, loads Catalyst's scripts, opens the
  // time series.
  Pipeline(MPI_Comm comm, const Options& options);
  ~Pipeline();
  Pipeline(const Pipeline&) = delete;
  Pipeline& operator=(const Pipeline&) = delete;

  // Collective: the synchronous hook's step (checks, agreement, the
  // governor's choice, the analysis).
  const StepRecord& publish(const Field& field);
  // Collective: the analysis of a step that the simulation's ranks have
  // checked and agreed on, every part of it (no governor). simulation: the
  // seconds the simulation ran since its last publish; share: the hook's
  // share of the simulation's time so far, as the simulation measured it.
  const StepRecord& analyse(const Field& field, double simulation, double share);
  // Collective: a step that was not analysed (the queue was full), recorded.
  void record(const StepRecord& record);
  void finalize();

  const std::vector<StepRecord>& records() const;
  double create_seconds() const;
  const Comm& comm() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace volseg::insitu::detail
