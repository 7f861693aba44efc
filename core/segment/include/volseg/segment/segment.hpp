// SPDX-License-Identifier: MIT
// The batch segmentation job: read a volume brick by brick, threshold every
// brick into a u8 {0,1} mask of the same shape, reduce statistics.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "volseg/io/comm.hpp"
#include "volseg/io/selection.hpp"
#include "volseg/io/types.hpp"
#include "volseg/io/volume.hpp"
#include "volseg/segment/brick_layout.hpp"
#include "volseg/segment/cancel.hpp"
#include "volseg/segment/operators.hpp"
#include "volseg/segment/progress.hpp"
#include "volseg/segment/threshold.hpp"

namespace volseg::segment {

struct SegmentOptions {
  std::string input, output;
  std::string report;                     // JSON report path; empty: none
  std::string trace;                      // I/O trace (CSV, docs/trace.md) path; empty: no tracing
  std::string backend = "auto";           // auto: io::choose_backend (format; raw: page-cache residency)
  std::string output_backend;             // empty: by the output format
  std::string format;                     // raw | cdf2 | cdf5 | netcdf4; empty: the input's (or the output's extension)
  std::vector<std::string> hints;         // to reader and writer
  io::Selection selection;                // which volume of input: --var, --time, --expr, ...
  std::vector<std::string> input_hints;   // to the reader only (cache=, access=)
  std::vector<std::string> output_hints;  // to the writer only
  double lo = 0, hi = 0;
  // The rules lo and hi were chosen by ("otsu", "p95"; empty: given as
  // numbers), for the report; the caller resolves them (resolve_thresholds).
  std::string lo_rule, hi_rule;
  // Hysteresis, open, close, fill holes, after the threshold. Bricks then
  // go through the operators' chain (pipeline "operators"), not resumable.
  MaskOperators operators;
  std::optional<io::Index3> brick_shape;  // default: BrickLayout::default_shape
  Assignment assignment = Assignment::block;
  std::uint64_t seed = 0;
  // Collective pipeline (twophase, mpiio): input bytes a rank reads in one
  // read_all, as whole bricks (at least one). Each call joins every rank, so
  // fewer, larger calls mean fewer points where the ranks wait for each other.
  std::size_t collective_batch_bytes = std::size_t{32} << 20;
  bool force = false;
  // Go on with the partial output an earlier job of the same input,
  // thresholds and brick shape left (raw and CDF masks); start one when
  // there is none. Without it, such a partial output is refused, and
  // --force throws it away.
  bool resume = false;
  // Flush each brick's data, then its journal record (docs/reliability.md).
  // Off, a journal still survives a killed process, not a crashed node.
  bool journal_sync = true;
  // Also bin the voxels in the mask into a 256-bin histogram over [lo, hi]
  // (the report's stats.histogram). Binning costs about as much as the rest
  // of the threshold pass where much is in range; `volseg segment` asks for
  // it with --histogram, the GUI and the in-situ hook always.
  bool histogram = true;
  ProgressMode progress = ProgressMode::automatic;
  std::string command_line;  // recorded in the mask's history attribute
  // Rank 0: a user's request to stop (the job then fails on every rank with
  // "cancelled" and leaves no mask), and who else watches the progress.
  const CancelFlag* cancel = nullptr;
  ProgressObserver on_progress;
  // Every rank: set by the caller's handler of a scheduler's signal (the
  // job then ends with Interrupted, its partial output kept for resume).
  const Interrupt* interrupt = nullptr;
};

// Seconds this rank spent in each phase, and what it moved. Reads (buffered
// pipeline) and mask writes run on I/O threads, overlapped with compute;
// `wait` is the time compute waited for them. For mapped input, page faults
// left after populating the window happen inside the kernel (compute).
struct RankTimes {
  double open = 0, read = 0, compute = 0, write = 0, wait = 0, close = 0, total = 0;
  std::uint64_t bytes_read = 0, bytes_written = 0;
  std::int64_t bricks = 0;
  // any-order pipeline: bricks handed out before one asked earlier (Fogal
  // & Krüger's readanyv reordering them; 0 when data arrive in the order asked).
  std::int64_t out_of_order = 0;
  // The reader's and the writer's own figures of their calls (the two-phase
  // engine's breakdown of every collective call); empty for most backends.
  io::Metrics read_metrics, write_metrics;
};

struct SegmentResult {
  io::VolumeInfo input_info;
  std::string backend, output_backend, output_format;
  // With --backend auto: why this backend, and the sampled share of a raw
  // input's pages in the page cache (-1: not sampled).
  std::string backend_reason;
  double input_resident = -1;
  std::string pipeline;        // "mapped", "buffered", "collective", "any-order" or "operators"
  std::string implementation;  // what did the reading ("OMPIO", "ROMIO", ...)
  io::Index3 brick_shape{}, brick_grid{};
  std::int64_t brick_count = 0;
  std::int64_t bricks_resumed = 0;  // finished by an earlier job (--resume)
  Stats stats;                      // reduced over ranks
  std::vector<RankTimes> ranks;     // every rank's, on rank 0 only
  double seconds = 0;               // wall time of the job, open to close
  int comm_size = 1;
};

// Collective over comm. Throws volseg::Error on every rank if any rank fails;
// then no mask is left behind. The report, if asked for, is written last by
// rank 0 (temporary name, renamed when complete); it may be neither the
// input's nor the mask's files, nor an existing file unless options.force.
SegmentResult run_segment(const Comm& comm, const SegmentOptions& options);

// The mask's description for an input: u8 {0,1}, the input's dims, spacing,
// origin and dimension names, and attributes saying what it is (thresholds,
// source file and variable, flag meanings, history). Batch and in-situ masks
// of the same data are described alike.
io::VolumeInfo mask_info(const io::VolumeInfo& input, double lo, double hi, const std::string& source,
                         const std::string& history);

// Collective: the sum of every rank's statistics (min and max over ranks), on every rank.
void reduce_stats(const Comm& comm, const Stats& local, Stats& global);

// Rank 0 only. Writes the JSON report (temporary name, renamed when complete).
void write_report(const std::string& path, const SegmentOptions& options, const SegmentResult& result);
// The report's JSON text (what write_report writes; the Python API's dict).
std::string report_json(const SegmentOptions& options, const SegmentResult& result);

// The summary printed after a job.
std::string summary(const SegmentOptions& options, const SegmentResult& result);

}  // namespace volseg::segment
