// SPDX-License-Identifier: MIT
// segment: the open volume thresholded into a mask file on every rank, as
// `volseg segment` does, then the mask's pyramid so coarse frames show it.
#include <filesystem>
#include <fstream>
#include <sstream>

#include "../state.hpp"
#include "volseg/segment/label.hpp"
#include "volseg/segment/segment.hpp"

namespace volseg::session::detail {
namespace {

// The trace's rows as [rank, op, start, duration] (at most `limit`: longer
// traces keep every k-th row, enough for a timeline).
Json trace_rows(const std::string& path, std::size_t limit = 20000) {
  std::ifstream in(path);
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);)
    if (!line.empty() && line[0] != '#' && line.rfind("rank,", 0) != 0) lines.push_back(line);
  const std::size_t step = std::max<std::size_t>(1, (lines.size() + limit - 1) / limit);
  Json rows = Json::array();
  for (std::size_t i = 0; i < lines.size(); i += step) {
    std::stringstream fields(lines[i]);
    std::string rank, op, start, duration;
    std::getline(fields, rank, ',');
    std::getline(fields, op, ',');
    std::getline(fields, start, ',');
    std::getline(fields, duration, ',');
    rows.push_back({std::stoi(rank), op, std::stod(start), std::stod(duration)});
  }
  return rows;
}

// What the reply says of a finished job (rank 0).
void describe(const segment::SegmentOptions& options, const segment::SegmentResult& result, Json& d) {
  d["output"] = options.output;
  d["lo"] = options.lo;
  d["hi"] = options.hi;
  const auto& ops = options.operators;
  if (ops.seed) d["seed"] = {ops.seed->first, ops.seed->second};
  d["open"] = ops.open;
  d["close"] = ops.close;
  d["fill_holes"] = ops.fill_holes;
  d["connectivity"] = ops.connectivity;
  d["operators"] = ops.describe();
  d["in_range"] = result.stats.in_range;
  d["valid"] = result.stats.valid;
  d["voxels"] = result.stats.voxels;
  d["seconds"] = result.seconds;
  d["backend"] = result.backend;
  d["pipeline"] = result.pipeline;
  d["summary"] = segment::summary(options, result);
  Json ranks = Json::array();
  for (const auto& r : result.ranks)
    ranks.push_back({{"open", r.open},
                     {"read", r.read},
                     {"compute", r.compute},
                     {"write", r.write},
                     {"wait", r.wait},
                     {"close", r.close},
                     {"total", r.total},
                     {"bricks", r.bricks},
                     {"bytes_read", r.bytes_read}});
  d["ranks"] = ranks;
}

}  // namespace

void handle(State& state, const SegmentRequest& request, const Hooks& hooks, Reply& reply) {
  state.require_volume();
  const Comm& comm = state.comm;
  if (request.output.empty()) throw Error("no output file named for the mask");
  segment::SegmentOptions options;
  options.input = state.path;
  options.selection = state.selection;
  options.output = request.output;
  options.backend = request.backend;
  options.format = request.format;
  options.hints = request.hints;
  options.lo = request.lo;
  options.hi = request.hi;
  options.operators = request.operators;
  segment::check_connectivity(options.operators.connectivity);
  options.force = request.force;
  options.progress = segment::ProgressMode::none;
  options.command_line = request.command_line.empty() ? "volseg-gui" : request.command_line;
  // The trace of the job, for the timeline: a private temporary file.
  options.trace = shared_temporary(comm, "trace.csv");
  if (comm.rank() == 0) {
    options.cancel = hooks.cancel;
    options.on_progress = hooks.progress;
  }
  // The old mask's pieces go first: the new mask may replace its file.
  state.forget_mask();
  const segment::SegmentResult result = segment::run_segment(comm, options);
  // The mask's pyramid, so coarse frames show the mask too.
  pyramid::BuildOptions build;
  build.input = options.output;
  build.force = true;
  build.progress = segment::ProgressMode::none;
  build.command_line = "volseg-gui";
  state.mask_pyramid = pyramid::build(comm, build);
  ++state.mask_generation;
  state.mask = options.output;
  if (comm.rank() != 0) return;
  describe(options, result, reply.data);
  reply.data["trace"] = trace_rows(options.trace);
  std::filesystem::remove(options.trace);
}

}  // namespace volseg::session::detail
