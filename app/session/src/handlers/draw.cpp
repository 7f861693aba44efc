// SPDX-License-Identifier: MIT
// render: a frame drawn by every rank and composited (IceT) to rank 0, from
// the pieces of the volume (and mask) the ranks keep between frames.
#include <algorithm>
#include <cmath>

#include "../state.hpp"
#include "volseg/io/error.hpp"

namespace volseg::session::detail {
namespace {

// The frame's settings from the request and the open volume.
render::FrameSettings frame_of(const State& state, const DrawRequest& request) {
  render::FrameSettings frame;
  frame.width = request.width;
  frame.height = request.height;
  frame.camera.azimuth = request.azimuth;
  frame.camera.elevation = request.elevation;
  frame.camera.zoom = request.zoom;
  frame.modes.volume = request.volume;
  frame.modes.slices = request.slices;
  frame.modes.mask = request.mask && (!state.mask.empty() || request.threshold);
  if (!frame.modes.any()) frame.modes.volume = true;
  frame.slice_at = request.slice_at;
  frame.annotations = request.annotations;
  frame.transfer.lo = state.range[0];
  frame.transfer.hi = state.range[1];
  frame.transfer.opacity = render::parse_opacity(request.opacity.value_or("ramp"), state.range[0], state.range[1]);
  // With a mask (or the threshold surface) drawn, the volume is its context:
  // faint enough that the surface inside it shows through.
  if (frame.modes.volume && frame.modes.mask && !request.opacity)
    for (auto& point : frame.transfer.opacity) point.alpha *= 0.03;
  frame.mask_opacity = request.mask_opacity;
  frame.mask_surface = render::parse_mask_surface(request.mask_surface);
  for (const double v : request.scale)
    if (!(v > 0) || !std::isfinite(v)) throw Error("scale: each factor must be positive and finite");
  frame.scale = request.scale;
  frame.title = request.title;
  const auto& variable = state.pyramid->source_info().variable;
  frame.scalar_name = variable.empty() ? "value" : variable;
  return frame;
}

// The objects' meshes of a `volseg mesh` folder drawn in their colours;
// each rank reads each once (its box's part is drawn).
void add_meshes(State& state, const DrawRequest& request, render::FrameSettings& frame) {
  if (request.meshes.empty()) return;
  for (const std::uint64_t id : request.mesh_ids) {
    auto& surface = state.surfaces[{request.meshes, id}];
    if (!surface) surface = render::object_surface(request.meshes, id);
    frame.surfaces.push_back(surface);
  }
}

// The level drawn: the one asked for, or the finest that fits the memory.
int level_of(const State& state, const DrawRequest& request, const render::FrameSettings& frame) {
  const int levels = static_cast<int>(state.pyramid->levels().size());
  const bool with_mask = !state.mask.empty();
  int level = request.level ? std::clamp(*request.level, 0, levels - 1)
                            : render::choose_level(*state.pyramid, state.comm.size(), with_mask, frame.width,
                                                   frame.height, request.memory);
  if (with_mask && (!state.mask_pyramid || static_cast<int>(state.mask_pyramid->levels().size()) <= level))
    level = state.mask_pyramid ? static_cast<int>(state.mask_pyramid->levels().size()) - 1 : 0;
  return level;
}

// The renderer given the piece of this level (and mask); returns the
// seconds loading it took (0: it was kept from an earlier frame).
double show_piece(State& state, int level, bool resampled, const std::optional<std::array<double, 2>>& threshold) {
  const std::pair<int, std::string> key{level, state.mask};
  // Without a mask, the mask mode draws the threshold surface of the scalar.
  const auto surface = state.mask.empty() ? threshold : std::nullopt;
  if (key == state.shown && surface == state.shown_threshold) return 0;
  double seconds = 0;
  auto cached = state.pieces.find(key);
  if (cached == state.pieces.end()) {
    std::optional<render::Source> mask;
    if (!state.mask.empty()) mask = state.mask_source(!resampled);
    render::Culling culling;
    culling.enabled = false;                             // one piece serves every transfer function and threshold
    culling.modes.volume = culling.modes.slices = true;  // and every mode: the field is loaded
    render::LoadStats load;
    render::Piece piece = render::load_piece(state.comm, state.field(!resampled), mask, level, culling, load);
    seconds = load.seconds;
    // Two pieces at most: a camera drag's coarse one and the latest finer one.
    while (state.pieces.size() >= 2) state.pieces.erase(state.pieces.begin());  // the finest level
    cached = state.pieces.emplace(key, std::move(piece)).first;
  }
  render::Piece copy = cached->second;
  copy.threshold = surface;
  state.renderer->set_piece(std::move(copy));
  state.shown = key;
  state.shown_threshold = surface;
  return seconds;
}

}  // namespace

void handle(State& state, const DrawRequest& request, const Hooks&, Reply& reply) {
  state.require_volume();
  render::FrameSettings frame = frame_of(state, request);
  add_meshes(state, request, frame);
  if (!state.renderer) {
    render::check_display(state.comm);
    state.renderer = std::make_unique<render::Renderer>(state.comm);
  }
  const int largest = state.renderer->max_size();
  if (frame.width < 1 || frame.height < 1 || frame.width > largest || frame.height > largest)
    throw Error("view size " + std::to_string(frame.width) + "x" + std::to_string(frame.height) + " is outside 1.." +
                std::to_string(largest));
  int level = level_of(state, request, frame);
  // An uneven coordinate axis (ocean levels) is drawn in its coordinates
  // from level 0, resampled as it is read (render/src/rectilinear.hpp), when
  // that fits the memory budget; pyramid levels are in index space.
  const bool resampled =
      state.resampled_dims && render::estimated_bytes(*state.resampled_dims, state.comm.size(), !state.mask.empty(),
                                                      frame.width, frame.height, true) <= request.memory;
  if (resampled) level = 0;
  const double load_seconds = show_piece(state, level, resampled, request.threshold);
  reply.image = state.renderer->render(frame);
  const auto& t = state.renderer->last_times();
  reply.data = {{"level", level},   {"width", frame.width}, {"height", frame.height},  {"load", load_seconds},
                {"scene", t.scene}, {"render", t.render},   {"composite", t.composite}};
}

}  // namespace volseg::session::detail
