// SPDX-License-Identifier: MIT
// render --time all | A:B[:S]: a frame per step, every frame with one camera
// and one colour range (the series' range, from each step's histogram, or
// --range-lo/--range-hi), and, with a movie path, the frames encoded into
// one AVI by VTK's FFMPEG writer (the ParaView SDK's vtkIOFFMPEG).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "volseg/io/comm.hpp"
#include "volseg/render/job.hpp"

namespace volseg::render {

struct RenderSeriesResult {
  std::vector<std::int64_t> steps;
  std::vector<std::string> frames;  // one PNG per step
  double lo = 0, hi = 0;            // the colour range of every frame
  std::string movie;                // empty: none
  double seconds = 0;
};

// Collective. options.output names the frames with %d (frame_%04d.png); a
// mask path with %d is each step's mask, else the one mask of every step; a
// pyramid directory with %d each step's pyramid (volseg pyramid --time).
RenderSeriesResult run_render_series(const Comm& comm, RenderOptions options, const std::vector<std::int64_t>& steps,
                                     const std::string& movie, int frames_per_second = 10);

}  // namespace volseg::render
