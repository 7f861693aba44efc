// SPDX-License-Identifier: MIT
#include "volseg/render/series.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>

#include "movie.hpp"
#include "volseg/io/error.hpp"
#include "volseg/io/files.hpp"
#include "volseg/io/hints.hpp"
#include "volseg/pyramid/pyramid.hpp"
#include "volseg/segment/series.hpp"

namespace volseg::render {

RenderSeriesResult run_render_series(const Comm& comm, RenderOptions options, const std::vector<std::int64_t>& steps,
                                     const std::string& movie, int frames_per_second) {
  const auto start = std::chrono::steady_clock::now();
  if (!segment::names_steps(options.output))
    throw Error("render --time with several steps: name the frames with %d in --out (frame_%04d.png)");
  if (options.orbit > 0 || options.progressive)
    throw Error("render --time with several steps draws one frame a step: --orbit and --progressive take one step");
  if (!movie.empty()) {
    check_movie_name(movie);
    if (frames_per_second < 1) throw Error("--fps must be at least 1, not " + std::to_string(frames_per_second));
    if (comm.rank() == 0) io::refuse_existing(movie, options.force);
    agree(comm, nullptr);
  }
  RenderSeriesResult result;
  result.steps = steps;
  // One colour range for the series: the steps' ranges, from their
  // histograms (a pyramid's when there is one, else a pass over the step).
  auto& transfer = options.frame.transfer;
  if (!transfer.lo || !transfer.hi) {
    double lo = INFINITY, hi = -INFINITY;
    for (const std::int64_t t : steps) {
      pyramid::HistogramOptions h;
      h.input = options.input;
      h.backend = options.backend;
      h.selection = options.selection.at_step(t);
      h.input_hints = options.input_hints;
      if (!options.pyramid_dir.empty() && segment::names_steps(options.pyramid_dir))
        h.directory = segment::step_path(options.pyramid_dir, t);
      const auto histogram = pyramid::histogram(comm, h);
      lo = std::min(lo, histogram.edges().lo);
      hi = std::max(hi, histogram.edges().hi);
    }
    if (!transfer.lo) transfer.lo = lo;
    if (!transfer.hi) transfer.hi = hi;
  }
  result.lo = *transfer.lo;
  result.hi = *transfer.hi;
  const std::string frames = options.output, mask = options.mask, pyramids = options.pyramid_dir;
  const bool mask_per_step = !mask.empty() && segment::names_steps(mask);
  const bool pyramid_per_step = !pyramids.empty() && segment::names_steps(pyramids);
  for (const std::int64_t t : steps) {
    RenderOptions step = options;
    step.selection = options.selection.at_step(t);
    step.output = segment::step_path(frames, t);
    if (mask_per_step) step.mask = segment::step_path(mask, t);
    if (pyramid_per_step) step.pyramid_dir = segment::step_path(pyramids, t);
    run_render(comm, step);
    result.frames.push_back(step.output);
  }
  if (!movie.empty()) {
    std::exception_ptr error;
    if (comm.rank() == 0) try {
        encode_movie(result.frames, movie, frames_per_second);
      } catch (...) {
        error = std::current_exception();
      }
    agree(comm, error);
    result.movie = movie;
  }
  result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return result;
}

}  // namespace volseg::render
