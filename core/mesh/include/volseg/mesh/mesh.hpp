// SPDX-License-Identifier: MIT
// A triangle surface for every object of a label volume, made brick by
// brick on every rank (docs/viewers.md):
//   surface_nets  one object's surface over one brick's cells, from its
//                 voxels smoothed as `volseg render` smooths a mask (or not)
//   run_mesh      the job over files: `volseg mesh`, `volseg label --mesh`
// Each brick owns the grid edges that start in it, and reads three voxels
// more on every side, so the pieces of an object that crosses bricks meet
// vertex for vertex, without cracks: Neuroglancer's precomputed legacy
// mesh format keeps them as fragments of one mesh with a manifest per id.
// No VTK: the surfaces are naive surface nets (Gibson's constrained
// elastic surface nets without the relaxation), closed and crack free.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "volseg/io/comm.hpp"
#include "volseg/io/selection.hpp"
#include "volseg/io/types.hpp"
#include "volseg/segment/progress.hpp"

namespace volseg::mesh {

// One object's piece of surface: vertices in voxel-index coordinates
// (x, y, z: voxel centres at integers), triangles counter-clockwise seen
// from outside.
struct Fragment {
  std::vector<float> vertices;           // x, y, z per vertex
  std::vector<std::uint32_t> triangles;  // 3 indices per triangle
  std::size_t vertex_count() const { return vertices.size() / 3; }
  std::size_t triangle_count() const { return triangles.size() / 3; }
};

// The voxels around a brick, as surface_nets reads them.
struct BrickLabels {
  io::Extent region;               // what `ids` holds: the brick and up to `ghost` voxels around it
  std::vector<std::uint64_t> ids;  // region's voxels, x fastest
  io::Extent brick;                // the brick itself (inside region)
  io::Index3 dims{};               // the whole volume's
  std::uint64_t at(std::int64_t z, std::int64_t y, std::int64_t x) const;  // 0 outside the region
};

// Voxels read around each brick: the smoothing's two and one more for the
// cells past its faces.
constexpr int ghost = 3;

struct ObjectBox {
  std::uint64_t id = 0;
  io::Index3 lo{}, hi{};  // inclusive, in volume voxels, inside the region
};
// The objects with voxels in the region, ascending by id.
std::vector<ObjectBox> objects_in(const BrickLabels& labels);

// The surface of `object` over the cells whose grid edges the brick owns.
// smooth: the object's 0/1 voxels filtered by [1 4 6 4 1]/16 along each
// axis (`volseg render`'s smooth surface); else the voxels' own.
Fragment surface_nets(const BrickLabels& labels, const ObjectBox& object, bool smooth);

struct MeshOptions {
  std::string input, output;  // labels; the mesh folder
  io::Selection selection;    // the labels' variable (--var) and step
  std::vector<std::string> input_hints;
  std::string backend = "auto";
  std::vector<std::uint64_t> ids;  // empty: every object
  bool smooth = true;
  // Mesh the labels halved this many times, by the mode (the multiscale
  // outputs' level `simplify`, which Neuroglancer shows as it zooms out):
  // about 4^simplify fewer triangles, the surface rounder (smoothed over
  // halved voxels) and a few percent off the voxels' volume either way.
  int simplify = 0;
  bool ply = false, vtp = false;  // also a .ply / .vtp per object (a .vtm of all for ParaView)
  bool as_labels = false;         // mesh an integer volume that does not say it holds labels
  std::optional<io::Index3> brick_shape;
  bool force = false;
  segment::ProgressMode progress = segment::ProgressMode::automatic;
  std::string command_line;
};

struct MeshResult {
  std::uint64_t objects = 0, fragments = 0, triangles = 0, vertices = 0;
  std::uint64_t bytes = 0;  // written, all ranks
  io::Index3 brick_shape{};
  std::int64_t brick_count = 0;
  double seconds = 0;
  std::uint64_t max_rss = 0;  // the largest rank's peak
  int comm_size = 1;
};

// Collective. Throws volseg::Error on every rank when any fails, leaving no
// mesh folder behind.
MeshResult run_mesh(const Comm& comm, const MeshOptions& options);
std::string mesh_summary(const MeshOptions& options, const MeshResult& result);

// A mesh folder's objects: the ids that have a manifest, ascending.
std::vector<std::uint64_t> mesh_ids(const std::string& folder);
// Object id's surface from a mesh folder (its fragments joined, shared
// vertices merged), in the labels' own coordinates (origin + i x spacing,
// x, y, z) when the folder says them (volseg mesh's info), else as stored.
// Throws volseg::Error naming the folder when it has no mesh of id.
Fragment read_mesh(const std::string& folder, std::uint64_t id);

// "1,4,7-9" -> ids; throws volseg::Error.
std::vector<std::uint64_t> parse_ids(const std::string& text);

}  // namespace volseg::mesh
