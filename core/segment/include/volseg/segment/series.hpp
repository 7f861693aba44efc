// SPDX-License-Identifier: MIT
// Time series: --time all | A:B[:S] runs a job on every step named of a 4D
// (time, z, y, x) variable, one step after another on every rank, and
// `label --track` links the objects of consecutive steps that share voxels.
//
// Steps are counted as xarray's isel(time=slice(A, B, S)) counts them: A
// included, B not, every S-th; "all" is every step. A step's outputs are
// what one step's job writes (a mask or labels per step, %d in --out
// formatted with the step), or, for a NetCDF (CDF) mask, records of one
// file along its unlimited time dimension, written under a temporary name
// and renamed when every step is done.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "volseg/io/comm.hpp"
#include "volseg/segment/label.hpp"
#include "volseg/segment/segment.hpp"

namespace volseg::segment {

// What --time says: one step, or a range of them.
struct StepRange {
  std::optional<std::int64_t> single;  // --time N
  std::optional<std::int64_t> start, stop;
  std::int64_t stride = 1;
  bool range() const { return !single.has_value(); }
};

// "N", "all", "A:B", "A:B:S", "A:", ":B", "::S". Throws volseg::Error with
// one line naming what is wrong.
StepRange parse_time(const std::string& text);

// The steps a range names of a variable with `count` steps; throws when it
// names a step outside the file or none.
std::vector<std::int64_t> steps_in(const StepRange& selection, std::int64_t count);

// Collective. The steps of the input a range names: its first step opened
// (whatever step input.selection names) to learn how many it has. hints are
// the reader's tuning hints. Refuses a 3D input.
std::vector<std::int64_t> input_steps(const Comm& comm, const std::string& backend, const io::OpenRequest& input,
                                      const std::vector<std::string>& hints, const StepRange& range);

// Whether path holds one printf integer conversion (%d, %04d, %i; %% is a
// '%'), and the path of one step ("mask_%06d.nc", 42 -> "mask_000042.nc").
// Throws on any other conversion, or on several.
bool names_steps(const std::string& path);
std::string step_path(const std::string& pattern, std::int64_t step);

struct SegmentSeriesResult {
  std::vector<std::int64_t> steps;
  std::vector<std::string> outputs;     // one per step, or the one file
  std::vector<SegmentResult> per_step;  // on every rank; ranks' times on rank 0
  std::int64_t steps_resumed = 0;       // --resume: steps whose mask was there
  // The next step's bytes each step announced to the kernel before it ran
  // (announce_step), summed over ranks; 0 where the reader cannot tell.
  std::vector<std::uint64_t> next_announced;
  double seconds = 0;
};

// Collective. Opens step t of an input (whatever step its selection names) and asks the
// kernel to read its bytes ahead, each rank its slab of planes (the
// reader's will_need: posix_fadvise WILLNEED where it knows where the bytes
// are: CDF records, contiguous NetCDF-4 datasets), so that the disk reads
// the next step while this one computes. Returns the bytes announced,
// summed over ranks. VOLSEG_SERIES_PREFETCH=0 turns it off (benchmarks).
std::uint64_t announce_step(const Comm& comm, const std::string& backend, const io::OpenRequest& input,
                            const std::vector<std::string>& hints, std::int64_t t);

// Collective. segment on every step: options.output names the steps (%d)
// or is one NetCDF-3/5 file that gets a record per step. With --resume a
// step whose mask exists is not done again. The report (options.report) has
// a row per step.
SegmentSeriesResult run_segment_series(const Comm& comm, SegmentOptions options,
                                       const std::vector<std::int64_t>& steps);
std::string series_summary(const SegmentSeriesResult& result);

// How the objects of step t continue in t+1: pairs of labels that share
// voxels, and for each step what they make of its objects.
struct TrackPair {
  std::int64_t step = 0;
  std::uint64_t id = 0, next_id = 0, overlap = 0;
};
struct TrackStep {
  std::int64_t step = 0;
  std::uint64_t objects = 0, largest = 0;  // labelled in this step
  // Against the step before (none for the first): objects with no
  // predecessor, objects of the step before with no successor, objects
  // made from several, objects of the step before that became several, and
  // objects that continue one to one.
  std::uint64_t births = 0, deaths = 0, merges = 0, splits = 0, continuing = 0;
};

// Collective. This rank's counts of (id in step, id in the next step)
// pairs, summed on rank 0 (sorted by id, then next_id; empty elsewhere).
using PairCounts = std::map<std::pair<std::uint64_t, std::uint64_t>, std::uint64_t>;
std::vector<TrackPair> gather_pairs(const Comm& comm, const PairCounts& mine, std::int64_t step);
// Counts the pairs of two label arrays of one extent (both ids nonzero).
void count_pairs(std::span<const std::uint64_t> before, std::span<const std::uint64_t> after, PairCounts& counts);
// What the pairs from the step before (objects_before objects) make of the
// objects of `now` (now.objects set): births, deaths, merges, splits and
// those continuing one to one.
void summarize_track(TrackStep& now, std::uint64_t objects_before, const std::vector<TrackPair>& pairs);
// The tables as CSV: the pairs (t,id,next_id,overlap_voxels), with or
// without the header line; the steps (step,objects,largest,births,...).
std::string track_csv(const std::vector<TrackPair>& pairs, bool header = true);
std::string track_steps_csv(const std::vector<TrackStep>& steps);

struct LabelSeriesResult {
  std::vector<std::int64_t> steps;
  std::vector<std::string> outputs;
  std::vector<LabelResult> per_step;
  std::vector<TrackPair> pairs;               // rank 0, with track
  std::vector<TrackStep> track;               // rank 0, one per step
  std::vector<std::uint64_t> next_announced;  // as SegmentSeriesResult's
  double seconds = 0;
};

// Collective. label on every step, options.output naming the steps (%d);
// with a track path, the overlaps of consecutive steps' labels (each rank
// counts those of its bricks; rank 0 merges and writes them) as CSV
// (t,id,next_id,overlap_voxels), the per-step summary beside it
// (TRACK.steps.csv) and, with plot, a PNG of the counts over time drawn by
// scripts/track_plot.py (matplotlib).
LabelSeriesResult run_label_series(const Comm& comm, LabelOptions options, const std::vector<std::int64_t>& steps,
                                   const std::string& track, bool plot);
std::string series_summary(const LabelSeriesResult& result, const std::string& track);

}  // namespace volseg::segment
