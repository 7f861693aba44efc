// SPDX-License-Identifier: MIT
// volseg's in-situ hook: a simulation publishes its field every step; every
// `every` steps the hook thresholds it with segment's kernel and rules,
// reduces the statistics over ranks, writes the mask with the batch writers
// (identical files to `volseg segment` of the same data), renders an image
// through render/, and runs ParaView Catalyst Python scripts on the field
// and the mask, all inside legacy Catalyst (vtkCPProcessor). An optional
// budget keeps the hook's share of the run within a limit.
//
// Off the simulation's critical path: with --async a helper thread on each
// rank, with --analysis-ranks K the last K ranks of the communicator, run
// that same analysis on steps that publish hands off (a copy into a bounded
// queue, --queue Q) and returns; the results are the synchronous hook's.
//
// Every call is collective over the communicator given at construction.
// Errors are agreed: every rank throws the same volseg::Error, and the
// simulation may carry on without the hook (see volseg_insitu.h).
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <mpi.h>

#include "volseg/io/types.hpp"

namespace volseg::insitu {

struct Options {
  double lo = 0, hi = 0;
  bool have_range = false;  // --lo and --hi were given
  // --lo/--hi given as rules (otsu, multiotsu:K:I, pN), chosen each step
  // from that step's histogram as volseg segment chooses them; empty: the
  // number above.
  std::string lo_rule, hi_rule;
  // The operators after the threshold, as volseg segment's
  // (docs/operators.md): hysteresis (--seed-lo/--seed-hi, its components
  // by --connectivity), --open R, --close R, --fill-holes.
  std::optional<std::pair<double, double>> seed;
  int open = 0, close = 0;
  bool fill_holes = false;
  // Where the rules and the operators put a step's scratch volumes (a folder
  // every analysing rank sees); empty: beside --out, else the current one.
  std::string scratch;
  int every = 1;  // in-situ steps: step % every == 0
  // Mask per step: printf pattern with the step ("mask_%06d.nc"); without
  // %d, one CDF-2/CDF-5 file with a record appended per step; empty: none.
  std::string out;
  std::string format;              // raw | cdf2 | cdf5 | netcdf4; empty: from out's extension
  std::string backend;             // writer backend; empty: the format's
  std::vector<std::string> hints;  // writer hints (key=value)
  std::string series;              // ParaView's file-series index of NetCDF masks; empty: masks<ext>.series beside them
  std::string stats;               // time series: CSV (and JSON beside it, same stem); empty: none
  std::string image;               // PNG per rendered step: printf pattern; empty: no rendering
  int image_every = 1;             // of the in-situ steps, every image_every-th renders
  int width = 512, height = 512;
  std::string camera;                // render::parse_camera text; empty: default
  std::vector<std::string> scripts;  // ParaView Catalyst (5.11 "V2") Python scripts
  std::optional<double> budget;      // fraction of the simulation's time (0.1 = 10%)
  std::string variable = "field";    // the field's name in files and in Catalyst
  // --expr TEXT / --where COND: what is thresholded, written and drawn is
  // this expression of the published arrays (Field::values as `variable`,
  // Field::arrays by their names), as volseg segment --expr; empty: the field.
  std::string expression;
  bool condition = false;  // --where: 1 where it holds, else 0
  bool label = false;      // count the mask's connected components per step
  int connectivity = 26;   // of --label: 6 | 18 | 26
  // Of --label: axes z, y, x along which the domain wraps around (objects
  // across those faces are one).
  std::array<bool, 3> periodic{};
  // With --label: links the objects of consecutive labelled steps that
  // share voxels (as `volseg label --time A:B --track`): this CSV, and
  // NAME.steps.csv beside it, written at finalize; empty: none.
  std::string track;
  // Off the critical path (docs/insitu.md, "Modes"): the last K ranks of
  // the hook's communicator analyse (0: none); or a helper thread on every
  // rank does (needs MPI_THREAD_MULTIPLE).
  int analysis_ranks = 0;
  bool async = false;
  int queue = 0;                // steps handed off and not yet analysed, per simulation rank (0: 2)
  bool skip_when_full = false;  // --when-full skip: a step that finds the queue full is not analysed (else: wait)
  // --borrow: the caller does not write the published arrays until its next
  // publish returns (nor frees them before finalize), so the hook reads them
  // in place (no copy; the step must be taken in by then).
  bool borrow = false;
  bool force = false;    // replace existing outputs
  bool verbose = false;  // a line per in-situ step on rank 0
  std::string text;      // the options as given (the masks' history)
};

// Parses the hook's options (what follows --insitu in volseg-sim, or the
// string given to volseg_insitu_create). `--config FILE` reads more options
// from a file: one "option value" per line, '#' comments. Throws
// volseg::Error naming the first bad option.
Options parse_options(const std::vector<std::string>& args);
Options parse_options(
    const std::string& text);  // split on white space; "double" or 'single' quotes group, as in a shell
std::string options_help();

// One step of the simulation's field on this rank.
struct Field {
  std::int64_t step = 0;
  double time = 0;
  io::Index3 global_dims{};  // z, y, x
  io::Extent box;            // points this rank owns
  int ghost = 0;             // layers around box in memory (none beyond the grid's faces)
  io::DType dtype = io::DType::f32;
  const void* values = nullptr;  // (box grown by ghost, clipped to the grid).voxels() values, x fastest
  // More arrays over the same points (same box, ghost and layout), which
  // --expr and --where may name; the hook reads them during publish only.
  struct Array {
    std::string name;
    io::DType dtype = io::DType::f32;
    const void* values = nullptr;
  };
  std::vector<Array> arrays;
  std::array<double, 3> spacing{1, 1, 1}, origin{0, 0, 0};  // x, y, z
  // What the mask's source_file attribute names: the file the simulation
  // wrote this step's field to, if it did; else "in situ: <variable> step N".
  std::string source;
};

// The field as a volume (what a dump of it holds): dims, type, spacing,
// origin, dimension names z, y, x.
io::VolumeInfo volume_info(const Field& field, const std::string& variable);

// The memory extent of a field: box grown by ghost, clipped to the grid.
io::Extent stored_extent(const Field& field);

// What one in-situ call did (every rank the same).
struct StepRecord {
  std::int64_t step = 0;
  double time = 0;
  std::string action;  // "full", "small-image", "no-image", "no-scripts", "stats-only", "skipped", "off-step"
  std::uint64_t voxels = 0, valid = 0, in_range = 0;
  double min = 0, max = 0;
  double lo = 0, hi = 0;  // the step's thresholds (chosen, with --lo/--hi rules)
  std::array<std::uint64_t, 256> histogram{};
  // With --label: the mask's objects across every rank's block, and the
  // largest one's voxels.
  std::optional<std::uint64_t> objects;
  std::uint64_t largest = 0;
  double label = 0;                                                               // seconds, max over ranks
  double segment = 0, reduce = 0, write = 0, render = 0, scripts = 0, total = 0;  // seconds, max over ranks
  double simulation = 0;  // seconds the simulation ran since the previous call (max over ranks)
  double share = 0;       // hook time / simulation time, cumulative
  int script_errors = 0;
  std::string mask, image;  // files written this step
};

// What handing steps off cost this simulation rank (--async,
// --analysis-ranks; zeros for the synchronous hook).
struct HandOff {
  std::int64_t steps = 0;         // in-situ steps handed off
  std::int64_t skipped = 0;       // in-situ steps not analysed: the queue was full (--when-full skip)
  double seconds = 0;             // in publish for them: checks, agreement, the copy, waiting
  double longest = 0;             // the longest of those calls
  double waited = 0;              // of seconds, waiting for the queue (--when-full block, --borrow)
  double copy = 0;                // of seconds, copying the block into the queue
  std::uint64_t step_bytes = 0;   // what one step holds in the queue
  std::uint64_t peak_bytes = 0;   // the most the queue held at once
  std::uint64_t bound_bytes = 0;  // its bound: --queue steps
};

class Hook {
 public:
  // Collective over comm (duplicated). Checks the options on every rank,
  // the parallel netCDF library, the X display when rendering or scripts
  // are asked for, and loads the Catalyst scripts.
  //
  // With --analysis-ranks K the last K ranks of comm become analysis
  // ranks: on them the constructor serves the simulation's steps until the
  // simulation's ranks finalize, then returns (simulation_comm() is
  // MPI_COMM_NULL there: skip the simulation's loop). With --async the
  // constructor starts each rank's helper thread.
  Hook(MPI_Comm comm, Options options);
  ~Hook();
  Hook(const Hook&) = delete;
  Hook& operator=(const Hook&) = delete;

  // Collective. Runs the in-situ work for this step (or decides to skip it).
  const StepRecord& publish(const Field& field);
  // Collective: writes the series index and the time series, releases
  // Catalyst. Called by the destructor if not before (errors then are only
  // printed).
  void finalize();

  // The records of this rank's calls: what the analysis did, or with
  // --async and --analysis-ranks on a simulation rank, what publish did
  // ("handed-off", "queue-full"); the stats file has the analysis's.
  const std::vector<StepRecord>& records() const;
  double create_seconds() const;  // Catalyst and Python start-up at construction
  // The communicator the simulation runs on (owned by the hook): comm's
  // ranks, or with --analysis-ranks K the first N-K; MPI_COMM_NULL on an
  // analysis rank.
  MPI_Comm simulation_comm() const;
  bool analysis_rank() const;
  const HandOff& hand_off() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace volseg::insitu
