// SPDX-License-Identifier: MIT
// surface: a coarse surface for a page to turn itself (the mask's, the
// band's before a mask exists, or one labelled object's), read by rank 0
// alone from one pyramid level.
#include <algorithm>
#include <cmath>
#include <cstring>

#include "../state.hpp"
#include "volseg/io/auto_backend.hpp"
#include "volseg/io/error.hpp"
#include "volseg/io/label_ids.hpp"
#include "volseg/io/registry.hpp"

namespace volseg::session::detail {
namespace {

// The finest level of a pyramid whose largest side is at most max_side.
int coarse_level(const pyramid::Pyramid& pyramid, std::int64_t max_side) {
  const auto& levels = pyramid.levels();
  int level = 0;
  while (level + 1 < static_cast<int>(levels.size()) &&
         *std::max_element(levels[static_cast<std::size_t>(level)].dims.begin(),
                           levels[static_cast<std::size_t>(level)].dims.end()) > max_side)
    ++level;
  return level;
}

// A whole piece's mask at half the resolution: a voxel is in where at least
// half of the 2x2x2 it covers is (the level stays `level`: its voxel size is
// what the spacing says).
render::Piece halved(const render::Piece& piece) {
  render::Piece h;
  const io::Index3& n = piece.dims;
  h.dims = {(n[0] + 1) / 2, (n[1] + 1) / 2, (n[2] + 1) / 2};
  h.owned = h.stored = io::Extent{{0, 0, 0}, h.dims};
  h.level = piece.level;
  h.display_scale = piece.display_scale;
  for (int a = 0; a < 3; ++a) {
    h.spacing[a] = 2 * piece.spacing[a];
    h.origin[a] = piece.origin[a] + 0.5 * piece.spacing[a];
  }
  h.mask.assign(static_cast<std::size_t>(h.dims[0] * h.dims[1] * h.dims[2]), 0);
  for (std::int64_t z = 0; z < h.dims[0]; ++z)
    for (std::int64_t y = 0; y < h.dims[1]; ++y)
      for (std::int64_t x = 0; x < h.dims[2]; ++x) {
        int in = 0, all = 0;
        for (std::int64_t k = 2 * z; k < std::min(2 * z + 2, n[0]); ++k)
          for (std::int64_t j = 2 * y; j < std::min(2 * y + 2, n[1]); ++j)
            for (std::int64_t i = 2 * x; i < std::min(2 * x + 2, n[2]); ++i, ++all)
              in += piece.mask[static_cast<std::size_t>((k * n[1] + j) * n[2] + i)] != 0;
        h.mask[static_cast<std::size_t>((z * h.dims[1] + y) * h.dims[2] + x)] = 2 * in >= all;
      }
  return h;
}

Surface surface_of(const render::Piece& piece) {
  render::Mesh mesh = render::mask_mesh(piece);
  Surface s;
  s.level = piece.level;
  s.points = std::move(mesh.points);
  s.normals = std::move(mesh.normals);
  s.triangles = std::move(mesh.triangles);
  return s;
}

// The level-0 volume's box in world coordinates as drawn, from a piece of
// any level (its voxels are 2^level wide and centred on theirs).
std::array<double, 6> full_bounds(const render::Piece& piece, const io::Index3& dims) {
  std::array<double, 6> b{};
  const double factor = std::pow(2.0, piece.level);
  for (int a = 0; a < 3; ++a) {
    const double s0 = piece.spacing[a] / factor;
    const double lo = piece.origin[a] - 0.5 * (factor - 1) * s0;
    const double hi = lo + s0 * static_cast<double>(dims[static_cast<std::size_t>(2 - a)] - 1);
    const double d = piece.display_scale[a];
    b[2 * a] = std::min(lo * d, hi * d);
    b[2 * a + 1] = std::max(lo * d, hi * d);
  }
  return b;
}

// One object alone: the labels in its box (one voxel around it), every
// stride-th voxel so the box's longest side is at most max_side, read a
// plane at a time.
Surface object_surface(const State& state, std::int64_t id, std::int64_t max_side) {
  if (state.labels.empty()) throw Error("label first: there are no labels");
  const auto found = state.boxes.find(id);
  if (found == state.boxes.end()) throw Error("no object " + std::to_string(id) + " in the table");
  const Comm self(MPI_COMM_SELF);
  const render::Source field = state.field();
  render::Culling culling;
  culling.enabled = false;
  culling.modes.volume = culling.modes.mask = true;  // load the field and the mask whole
  render::LoadStats load;
  const int top = static_cast<int>(state.pyramid->levels().size()) - 1;
  // The coarsest level places the volume as render does (origin, spacing, axes).
  render::Piece coarse = render::load_piece(self, field, std::nullopt, top, culling, load);
  const io::Index3 dims0 = state.pyramid->levels().front().dims;
  const auto& b = found->second;
  io::Extent box;
  std::int64_t longest = 1;
  for (int a = 0; a < 3; ++a) {
    const std::int64_t lo = std::max<std::int64_t>(0, b[a] - 1),
                       hi = std::min<std::int64_t>(dims0[a] - 1, b[3 + a] + 1);
    box.offset[a] = lo;
    box.count[a] = hi - lo + 1;
    longest = std::max(longest, box.count[a]);
  }
  const std::int64_t stride = (longest + max_side - 1) / max_side;
  io::Index3 sampled{};
  for (int a = 0; a < 3; ++a) sampled[a] = (box.count[a] + stride - 1) / stride;
  render::Piece piece;
  piece.dims = sampled;
  piece.owned = piece.stored = io::Extent{{0, 0, 0}, sampled};
  piece.display_scale = coarse.display_scale;
  piece.mask.assign(static_cast<std::size_t>(sampled[0] * sampled[1] * sampled[2]), 0);
  const double factor = std::pow(2.0, coarse.level);
  for (int a = 0; a < 3; ++a) {  // x, y, z
    const double s0 = coarse.spacing[a] / factor;
    const double o0 = coarse.origin[a] - 0.5 * (factor - 1) * s0;
    piece.spacing[a] = s0 * static_cast<double>(stride);
    piece.origin[a] = o0 + s0 * static_cast<double>(box.offset[static_cast<std::size_t>(2 - a)]);
  }
  const std::string reading = io::resolve_backend(self, "auto", state.labels, io::Access::copy).backend;
  auto reader = io::open_reader(reading, {state.labels, {}}, self);
  const io::DType type = reader->info().dtype;
  const std::size_t element = io::dtype_size(type);
  io::Extent plane{{0, box.offset[1], box.offset[2]}, {1, box.count[1], box.count[2]}};
  std::vector<std::byte> raw(static_cast<std::size_t>(plane.voxels()) * element);
  auto label_at = [&](std::size_t i) {
    return static_cast<std::int64_t>(io::label_id(raw.data() + i * element, type, state.labels));
  };
  for (std::int64_t z = 0; z < sampled[0]; ++z) {
    plane.offset[0] = box.offset[0] + z * stride;
    reader->read(plane, raw.data());
    for (std::int64_t y = 0; y < sampled[1]; ++y)
      for (std::int64_t x = 0; x < sampled[2]; ++x) {
        const auto i = static_cast<std::size_t>((y * stride) * box.count[2] + x * stride);
        piece.mask[static_cast<std::size_t>((z * sampled[1] + y) * sampled[2] + x)] = label_at(i) == id;
      }
  }
  reader->close();
  Surface s = surface_of(piece);
  s.bounds = full_bounds(coarse, dims0);
  s.object = id;
  return s;
}

}  // namespace

// A coarse surface for the page to turn itself: rank 0 alone reads one
// pyramid level of at most max_side^3 voxels.
void handle(State& state, const SurfaceRequest& request, const Hooks&, Reply& reply) {
  state.require_volume();
  if (state.comm.rank() != 0) return;
  const std::int64_t max_side = std::clamp<std::int64_t>(request.max_side, 16, 256);
  const std::size_t budget = request.max_triangles;
  const Comm self(MPI_COMM_SELF);
  const render::Source field = state.field();
  render::Culling culling;
  culling.enabled = false;
  culling.modes.volume = culling.modes.mask = true;  // load the field and the mask whole
  render::LoadStats load;
  const io::Index3 dims0 = state.pyramid->levels().front().dims;
  if (request.object) {
    for (std::int64_t side = max_side;; side /= 2) {
      auto s = std::make_shared<Surface>(object_surface(state, *request.object, side));
      reply.surface = std::move(s);
      if (reply.surface->triangles.size() / 3 <= budget || side <= 16) return;
    }
  }
  std::optional<render::Source> mask;
  int level = coarse_level(*state.pyramid, max_side);
  if (!state.mask.empty()) {
    mask = state.mask_source();
    level = std::min(coarse_level(*state.mask_pyramid, max_side), static_cast<int>(state.pyramid->levels().size()) - 1);
  } else if (!request.band) {
    throw Error("no mask yet: give lo and hi");
  }
  // A level coarser while the surface is over the triangle budget: the page
  // turns it at screen speed on any GPU (or none: a software renderer).
  const int coarsest =
      static_cast<int>((state.mask.empty() ? *state.pyramid : *state.mask_pyramid).levels().size()) - 1;
  for (;; ++level) {
    render::Piece piece = render::load_piece(self, field, mask, level, culling, load);
    if (piece.field.size() != static_cast<std::size_t>(piece.stored.voxels()))
      throw Error("surface: level " + std::to_string(level) + " was not read whole");
    if (state.mask.empty()) {  // the band, from the field's levels
      const auto [lo, hi] = *request.band;
      const render::Quantizer q = render::quantizer(piece);
      piece.mask.resize(piece.field.size());
      for (std::size_t i = 0; i < piece.field.size(); ++i) {
        const double v = q.value(piece.field[i]);
        piece.mask[i] = piece.field[i] != render::Quantizer::invalid && v >= lo && v <= hi;
      }
    }
    const std::array<double, 6> bounds = full_bounds(piece, dims0);
    auto surface = std::make_shared<Surface>(surface_of(piece));
    if (surface->triangles.size() / 3 > budget && level < coarsest) continue;
    // Past the pyramid's coarsest level: halve the mask itself.
    while (surface->triangles.size() / 3 > budget && *std::min_element(piece.dims.begin(), piece.dims.end()) >= 8) {
      piece = halved(piece);
      surface = std::make_shared<Surface>(surface_of(piece));
    }
    surface->bounds = bounds;
    reply.surface = std::move(surface);
    reply.data = {{"level", piece.level}};
    return;
  }
}

}  // namespace volseg::session::detail
