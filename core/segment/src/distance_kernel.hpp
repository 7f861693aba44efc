// SPDX-License-Identifier: MIT
// The exact Euclidean distance transform's passes (private to the segment
// library; distance_kernel.cpp, used by distance_job.cpp and the split's
// watershed; docs/split.md).
//
// The separable algorithm: the distance to the nearest background voxel
// along z first (a forward and a backward sweep of each column), then
// within each plane along y and along x, each a lower envelope of
// parabolas (Felzenszwalb and Huttenlocher). What a pass keeps of each
// voxel is not a distance but the offset to the background voxel it found,
// per axis, as integers: the last pass sums the squares of those offsets
// times the spacing in scipy.ndimage.distance_transform_edt's order,
// ((dz sz)^2 + (dy sy)^2) + (dx sx)^2, so a distance equals scipy's to the
// last bit wherever the two find the same nearest voxel (and differs in
// rounding only where two voxels tie).
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "volseg/io/types.hpp"

namespace volseg::segment::detail {

// An offset that found no background: the whole line is foreground (and
// the volume's outside is not background).
inline constexpr std::uint16_t kFar = 0xFFFF;
// The offsets are 16-bit: at most this many voxels along an axis.
inline constexpr std::int64_t kMostAlongAxis = 0xFFFE;

// Along z, for a slab of shape (z, y, x) whole along z: per voxel, the
// number of voxels to the nearest background voxel of its column (0 on
// background), kFar where the column has none. black_border: the planes
// z = -1 and z = Z are background.
void column_offsets(const std::uint8_t* mask, const io::Index3& shape, bool black_border, std::uint16_t* kz);

// The distance of every voxel of a plane from its column offsets, along y
// and then x. spacing: z, y, x. Holds the plane's working arrays, reused
// plane after plane.
class PlaneDistance {
 public:
  PlaneDistance(std::int64_t height, std::int64_t width, const std::array<double, 3>& spacing, bool black_border);
  // kz: the plane's column offsets (height x width); out: its distances,
  // +inf where the volume has no background at all. T: float or double
  // (the double rounded once).
  template <class T>
  void run(const std::uint16_t* kz, T* out);
  // The largest distance of the planes run so far.
  double largest() const { return largest_; }

 private:
  // The lower envelope along one line of n sites at positions 0..n-1 with
  // heights f (+inf: no site), sites at -1 and n of height 0 when the
  // border is background; winner[i]: the site nearest i (-1 and n the
  // border's), or kNone.
  void envelope(const double* f, std::int64_t n, double step, std::int32_t* winner);
  void run_envelope(const double* f, std::int64_t n, std::int64_t a, std::int64_t b, double step, std::int32_t* winner);

  std::int64_t height_, width_;
  std::array<double, 3> spacing_;
  bool black_border_;
  std::vector<std::uint16_t> ky_, kz_;  // after the y pass: offsets along y and z of each voxel's nearest
  std::vector<double> f_, boundary_;
  std::vector<std::int32_t> sites_, winner_;
  // The y pass's columns, kColumns at a time: offsets in, y and z offsets out.
  static constexpr std::int64_t kColumns = 16;
  std::vector<std::uint16_t> tile_, tile_y_, tile_z_;
  double largest_ = 0;
};

}  // namespace volseg::segment::detail
