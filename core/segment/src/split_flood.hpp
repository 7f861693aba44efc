// SPDX-License-Identifier: MIT
// The split of one connected component, in its box (private to the segment
// library; split_flood.cpp, used by split_job.cpp; docs/split.md): its
// markers (h-maxima of the distance, or a file's ids), the watershed flood
// of the negated distance from them, and the colours of the regions that
// the class image carries to the labeling.
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "volseg/io/types.hpp"

namespace volseg::segment::detail {

// A component's box, padded by one voxel on every side (outside: not in
// the component), so that no step to a neighbour needs a bound check.
struct ComponentBox {
  io::Index3 shape{};                // padded: the box's plus 2 on each axis
  std::vector<float> height;         // what floods: the distance (or a field), per padded voxel
  std::vector<std::uint8_t> inside;  // 1: a voxel of the component
  std::size_t index(std::int64_t z, std::int64_t y, std::int64_t x) const {
    return static_cast<std::size_t>(((z + 1) * shape[1] + (y + 1)) * shape[2] + (x + 1));
  }
};

// The flat steps to a connectivity's neighbours in a padded box, nearest
// first (faces, edges, corners), each group in raster order.
std::vector<std::int64_t> neighbour_steps(const io::Index3& shape, int connectivity);

// Marks inside the voxels of the component that holds `seed` (a padded
// index) among the voxels whose `foreground` byte is set; returns its voxels.
std::uint64_t isolate(ComponentBox& box, const std::vector<std::uint8_t>& foreground, std::size_t seed,
                      int connectivity);

// skimage.morphology.h_maxima(height, h) within the component, labelled as
// skimage.measure.label labels it (26-connected): markers[i] 1..M in the
// file order of each maximum's first voxel, 0 elsewhere. With
// zero_background (a distance, whose background is 0 and lifts skimage's
// reconstruction), a component whose highest voxel is below h has none;
// without it (a field, --split-on), the component stands alone, below
// everything outside it, and its highest region is always a marker.
// Returns M.
std::uint32_t h_maxima(const ComponentBox& box, double h, std::vector<std::uint32_t>& markers,
                       bool zero_background = true);

// The watershed of -height from markers (1..M, 0 elsewhere) over the
// component: skimage.segmentation.watershed(-height, markers, mask,
// connectivity) with compactness 0. The flood takes the lowest (value,
// age) first, as scikit-image's heap does; markers all have age 0 and go
// in file order, and so does a tie between them. Every voxel of the
// component that a marker reaches gets its id.
void flood(const ComponentBox& box, std::vector<std::uint32_t>& markers, int connectivity);

// A colour (1..255) per region (index 0: region 1) so that regions that
// touch (by the connectivity) differ: greedy, in region order. Throws when
// a region touches 255 others of distinct colours.
std::vector<std::uint8_t> colour_regions(const ComponentBox& box, const std::vector<std::uint32_t>& regions,
                                         std::uint32_t count, int connectivity);

}  // namespace volseg::segment::detail
