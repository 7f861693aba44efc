// SPDX-License-Identifier: MIT
// `volseg render`: one call from options to PNG files, the same calls the GUI
// and the in-situ hook make (load_piece, Renderer::render, write_png).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "volseg/io/comm.hpp"
#include "volseg/io/selection.hpp"
#include "volseg/render/render.hpp"
#include "volseg/segment/progress.hpp"

namespace volseg::render {

// A level as the command line, Python and the GUI's script give it: "auto"
// (none: the finest level that fits the memory budget) or a level number.
// Throws volseg::Error naming the text.
std::optional<int> parse_level(const std::string& text);

struct RenderOptions {
  std::string input, backend = "auto";
  io::Selection selection;                    // which volume of input: --var, --time, --expr
  std::vector<std::string> input_hints;       // the reader's tuning hints
  std::string mask;                           // a mask volume of the same shape; empty: none
  std::string pyramid_dir, mask_pyramid_dir;  // empty: beside each volume
  std::string output;                         // PNG; with orbit or progressive, NAME-KKK.png per frame
  // Rank 0 keeps the last frame in RenderResult::image (Python's
  // volseg.render); output may then be empty: no PNG is written.
  bool keep_image = false;
  FrameSettings frame;
  std::string opacity = "ramp";                     // ramp | shells | v:a,...
  std::optional<double> lo, hi;                     // the threshold (mask surface of the scalar, slice overlay)
  std::optional<int> level;                         // none: auto, the finest that fits memory
  std::uint64_t memory = std::uint64_t{512} << 20;  // per rank, for --level auto
  int orbit = 0;                                    // frames around the volume (0: one image)
  bool progressive = false;                         // a coarse image first, then finer ones
  bool cull = true;                                 // skip bricks that draw nothing (needs a pyramid)
  std::string report;                               // JSON with per-rank times
  bool force = false;
  segment::ProgressMode progress = segment::ProgressMode::automatic;
};

struct RankRenderTimes {
  double read = 0, scene = 0, render = 0, composite = 0, annotate = 0, write = 0;
  std::uint64_t bytes_read = 0;
  std::int64_t bricks = 0, bricks_skipped = 0;
};

struct FrameRecord {
  std::string path;
  int level = 0;
  double seconds_since_start = 0;  // when the PNG was written
};

struct RenderResult {
  std::vector<FrameRecord> frames;
  Image image;                             // rank 0, with keep_image: the last frame drawn
  std::vector<RankRenderTimes> ranks;      // rank 0 only
  CameraState camera;                      // of the last frame
  io::Index3 dims{};                       // of the last level drawn
  std::vector<std::uint64_t> level_bytes;  // estimated bytes per rank of each level (estimated_bytes)
  std::string backend, backend_reason;     // the input's reader; why --backend auto chose it (empty: named)
  double seconds = 0;
  int comm_size = 1;
};

// Collective over comm. Throws volseg::Error on every rank if any rank
// fails; no PNG is left under a name it was asked for.
RenderResult run_render(const Comm& comm, const RenderOptions& options);

}  // namespace volseg::render
