// SPDX-License-Identifier: MIT
// What a session holds between requests, on every rank, and the handler of
// each request kind (handlers/<kind>.cpp). Private to the session library.
#pragma once

#include <algorithm>
#include <array>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "volseg/io/comm.hpp"
#include "volseg/io/selection.hpp"
#include "volseg/pyramid/pyramid.hpp"
#include "volseg/render/load.hpp"
#include "volseg/render/render.hpp"
#include "volseg/segment/edit.hpp"
#include "volseg/session/session.hpp"

namespace volseg::session::detail {

// An object's box as rank 0 keeps them: z, y, x lo, then hi (inclusive).
using Box = std::array<std::int64_t, 6>;
inline io::Extent extent_of(const Box& b) {
  io::Extent e;
  for (std::size_t a = 0; a < 3; ++a) e.offset[a] = b[a], e.count[a] = b[3 + a] - b[a] + 1;
  return e;
}
inline Box box_of(const io::Extent& e) {
  return {e.offset[0],
          e.offset[1],
          e.offset[2],
          e.offset[0] + e.count[0] - 1,
          e.offset[1] + e.count[1] - 1,
          e.offset[2] + e.count[2] - 1};
}
// A table row's box ({"box": [[x, y, z lo], [x, y, z hi]]}).
inline Box box_of_row(const Json& row) {
  const auto& b = row.at("box");
  return {b[0][2], b[0][1], b[0][0], b[1][2], b[1][1], b[1][0]};
}
// The box of a paint's or erase's ball (centre z, y, x; radius in voxels)
// clipped to the volume.
inline io::Extent ball_extent(const std::array<std::int64_t, 3>& center, double radius, const io::Index3& dims) {
  const auto reach = static_cast<std::int64_t>(std::floor(radius));
  io::Extent e;
  for (std::size_t a = 0; a < 3; ++a) {
    e.offset[a] = std::max<std::int64_t>(0, center[a] - reach);
    e.count[a] = std::min<std::int64_t>(dims[a] - 1, center[a] + reach) - e.offset[a] + 1;
  }
  return e;
}

// The regions of the edited labels an edit changed, before and after it
// (the file's bytes), and the largest id ever held before and after.
struct Patch {
  io::Extent box;
  std::vector<std::byte> before, after;
};
struct Patches {
  std::vector<Patch> regions;
  std::uint64_t max_before = 0, max_after = 0;
};

// Rank 0's last planes (slices), kept so that the next request reads only
// what changed: a plane whose level and index are the same keeps its
// values while the volume is the same, its mask while the mask is, and its
// labels while the labels are, but for the regions edits wrote in place
// since, which are read again where they meet it. A generation counts each
// change of what it names (0: never read).
struct PlaneCache {
  std::shared_ptr<const Planes> planes;
  std::uint64_t volume = 0, mask = 0, labels = 0;  // the generations the planes were read at
  std::vector<io::Extent> written;                 // label regions written in place since (full resolution)
};

struct State {
  explicit State(const Comm& c) : comm(c.duplicate()) {}

  Comm comm;
  // The open volume.
  std::string path, backend = "auto", pyramid_dir;
  io::Selection selection;                                   // the field of the file shown
  std::array<std::optional<io::Coordinate>, 3> coordinates;  // the input's (CF), x, y, z
  std::optional<io::Index3> resampled_dims;                  // an uneven axis: the uniform grid it is drawn on
  std::optional<pyramid::Pyramid> pyramid;
  std::array<double, 2> range{0, 1};
  // The mask of the last segment request, and its pyramid.
  std::string mask;
  std::optional<pyramid::Pyramid> mask_pyramid;
  // The labels of the mask, and each listed object's box (z, y, x lo, then hi).
  std::string labels;
  std::map<std::int64_t, Box> boxes;
  // Rank 0's boxes that hold each object's voxels, tighter than boxes[id]
  // after merges and paints (two objects far apart merge into two boxes,
  // not the box of the space between them): the regions an edit in place
  // reads and writes.
  std::map<std::int64_t, std::vector<Box>> regions;
  // Adds `box` to id's regions and its union (boxes); past a few regions
  // an id's are joined into one.
  void add_region(std::int64_t id, const Box& box);
  // The edits applied to the labels (split requests): the labels a label
  // request wrote, the journal beside them, the edited labels it gives, and
  // the largest id they ever held.
  std::string labels_source, journal, edited;
  std::vector<std::string> edits;   // each edit's JSON, in order
  std::vector<std::string> undone;  // edits undone, the last undone last (redo takes it back)
  std::uint64_t max_id = 0;         // the largest id the labels ever held, after the journal
  // Each edit of the journal (and each undone one) as it was applied in
  // place: the regions of the edited labels it changed, before and after
  // (rank 0's), so undo and redo write them back; nullopt where it was
  // applied by writing all the labels again.
  std::vector<std::optional<Patches>> patches, undone_patches;
  // What the slice planes show, and when it last changed: the open volume
  // (open, close), the mask (segment, forget), the labels (label, an edit
  // that writes them all; an edit in place adds its regions instead).
  std::uint64_t volume_generation = 1, mask_generation = 1, labels_generation = 1;
  PlaneCache plane_cache;
  // The labels changed where the boxes lie (rank 0), or (none given) all of them.
  void labels_written(const std::vector<io::Extent>* boxes = nullptr);
  // The renderer and the pieces it has drawn (a coarse one for camera drags
  // and a fine one), keyed by level and mask.
  std::unique_ptr<render::Renderer> renderer;
  // Objects' meshes a frame draws, read once.
  std::map<std::pair<std::string, std::uint64_t>, std::shared_ptr<const render::ObjectSurface>> surfaces;
  std::map<std::pair<int, std::string>, render::Piece> pieces;
  std::pair<int, std::string> shown{-1, ""};
  std::optional<std::array<double, 2>> shown_threshold;

  // The open volume as render reads it: its file, selection, axes, and
  // (with_pyramid) its pyramid's levels.
  render::Source field(bool with_pyramid = true) const;
  // The mask as render reads it, on the field's grid.
  render::Source mask_source(bool with_pyramid = true) const;
  // Forgets the mask, its labels and the pieces drawn of them.
  void forget_mask();
  void close();
  void require_volume() const;
};

// One handler a kind, run on every rank with the same request.
void handle(State& state, const OpenRequest& request, const Hooks& hooks, Reply& reply);
void handle(State& state, const CheckRequest& request, const Hooks& hooks, Reply& reply);
void handle(State& state, const SegmentRequest& request, const Hooks& hooks, Reply& reply);
void handle(State& state, const DrawRequest& request, const Hooks& hooks, Reply& reply);
void handle(State& state, const SlicesRequest& request, const Hooks& hooks, Reply& reply);
void handle(State& state, const LabelRequest& request, const Hooks& hooks, Reply& reply);
void handle(State& state, const SurfaceRequest& request, const Hooks& hooks, Reply& reply);
void handle(State& state, const SplitRequest& request, const Hooks& hooks, Reply& reply);
void handle(State& state, const EditRequest& request, const Hooks& hooks, Reply& reply);
// Collective: the labels written again from `edits` (the journal beside the
// labels a label request wrote, committed with them), as `volseg edit`
// does; the state then holds the edits and the edited labels. With stats,
// their object table goes there too (volseg edit --stats). Returns rank 0's
// reply fields: output, journal, edits, command, seconds (and table_file, objects).
Json apply_journal(State& state, std::vector<std::string> edits, int connectivity, const std::string& stats = {});
// Collective: the edit (op: an edit's JSON entry, or "undo" / "redo")
// applied where it lands in the edited labels, when they are a raw NRRD
// this session wrote and the edit's regions are known (rank 0 decides for
// every rank); the journal then committed with `edits`. `split`: a split's
// parts, every rank's. Returns false, having changed nothing, where it
// cannot: the caller writes all the labels again.
bool apply_in_place(State& state, const std::string& op, const Json& entry, const segment::SplitPreview* split,
                    std::vector<std::string> edits, std::vector<std::string> undone, Json& applied);
// The regions kept for undo and redo follow an edit applied by writing all
// the labels again (op: "undo", "redo", or a new edit's).
void shift_patches(State& state, const std::string& op);
// Rank 0: the journal `edits` beside the labels, committed (written to a
// temporary name, synced, renamed).
void commit_journal(const State& state, const std::vector<std::string>& edits);
void handle(State& state, const CloseRequest& request, const Hooks& hooks, Reply& reply);
void handle(State& state, const QuitRequest& request, const Hooks& hooks, Reply& reply);

// A private temporary file named on rank 0 and known to every rank.
std::string shared_temporary(const Comm& comm, const std::string& what);

}  // namespace volseg::session::detail
