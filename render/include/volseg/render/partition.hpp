// SPDX-License-Identifier: MIT
// How ranks split a volume for rendering, and in which order their images
// blend. Ordered (visibility-sorted) compositing is exact only when every
// rank's part is convex and the parts can be ordered from the camera: here
// each part is an axis-aligned box, the boxes tile the volume, and
// neighbouring boxes share one plane of points (so no cell is left between
// two ranks, which would show as a seam).
#pragma once

#include <array>
#include <vector>

#include "volseg/io/types.hpp"

namespace volseg::render {

// The points of a level each rank owns: slabs across the volume's slowest
// axis (z, so a slab is one contiguous run of the file), cut on cell
// boundaries so neighbours share their boundary plane. Falls back to the
// axis with most cells when z has fewer cells than ranks; a rank with
// nothing gets an empty extent. Every rank computes the same list.
std::vector<io::Extent> partition(const io::Index3& dims, int parts);

using io::with_ghost;  // an extent grown by ghost layers, clipped (io/types.hpp)

// A box in world coordinates, x, y, z.
struct Box {
  std::array<double, 3> lo{}, hi{};
};

// What the camera needs to order parts: its position (perspective) or its
// view direction (orthographic), both x, y, z.
struct Viewpoint {
  std::array<double, 3> position{}, direction{0, 0, -1};
  bool parallel = false;
};

// Indices of boxes, front (nearest the camera) to back, for boxes that tile
// a region with shared faces. Orders by recursive splitting planes (a k-d
// tree found from the boxes themselves), which is exact for slabs, grids and
// k-d partitions; empty boxes (lo == hi on some axis is fine, but
// lo > hi marks "nothing") go last.
std::vector<int> visibility_order(const std::vector<Box>& boxes, const Viewpoint& viewpoint);

}  // namespace volseg::render
