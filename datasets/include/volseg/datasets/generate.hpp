// SPDX-License-Identifier: MIT
// Synthetic volumes with known answers, generated in parallel.
//   shells: v = shell index k = floor(r / width), r the distance of the voxel
//           from the volume's centre (clamped to the type's range); integer
//           valued, so the in-range count is an exact lattice count.
//   smooth: a sum of sines of several frequencies, in [0, 1] (floats) or
//           scaled to [0, scale] (integers).
//   noise:  independent uniform values from a counter-based hash of the
//           voxel index, so the result does not depend on the rank count.
//   spheres: 1 inside any of `count` balls, 0 outside: v = 1 where
//           (z-cz)^2 + (y-cy)^2 + (x-cx)^2 <= r^2 for some ball (voxel centres
//           at integer indices; the centres are voxels, the radii whole
//           voxels). The balls (place_spheres, listed by spheres_csv) come
//           from a counter-based hash of the seed, the ball and the try, so
//           they too do not depend on the rank count. In id order they form
//           groups of 1, 2, 3, 4, 1, 2, 3, 4, ... balls; the known answers:
//           - every ball lies whole inside the volume, its centre at least
//             r+1 from every face, so no voxel of it is on the boundary;
//           - each ball after the first of its group shares a voxel with an
//             earlier ball of its group, so a group is one 6-connected object;
//           - balls of different groups are at least r1+r2+2 apart, centre to
//             centre: no voxel of one group touches a voxel of another, even
//             diagonally, so the objects under any connectivity are the groups;
//           - two balls of a group are at least 0.75*(r1+r2) apart, neither
//             centre lies inside the other ball, and the plane where their
//             spheres cross lies at least one voxel beyond the smaller ball's
//             centre: they overlap a little, but each centre keeps a peak of
//             the distance transform of its own (checked, not proven: on some
//             18,000 balls of radius 3 and more, always a strict local maximum
//             of the Euclidean one; balls of radius 1 and 2 are too coarse
//             for that, an odd one ties with a neighbour or falls below it).
//           Radii are uniform in [radius_min, radius_max]; by default
//           radius_max is the largest R >= 1 with
//             count * (4/3) pi R^3 <= 1/2 (nz-2R-2)(ny-2R-2)(nx-2R-2)
//           (count balls of radius R would fill half the box where the
//           centres of such balls may lie) and radius_min = ceil(R/2).
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "volseg/io/comm.hpp"
#include "volseg/io/types.hpp"
#include "volseg/io/volume.hpp"
#include "volseg/segment/progress.hpp"

namespace volseg::datasets {

enum class Field { shells, smooth, noise, spheres };
Field parse_field(const std::string& name);

// A ball of the spheres field: its centre (voxel indices) and radius (voxels).
struct Ball {
  std::int64_t z = 0, y = 0, x = 0, radius = 1;
};

struct FieldSpec {
  Field field = Field::shells;
  std::int64_t shell_width = 8;  // voxels per shell
  std::uint64_t seed = 1;        // noise, spheres
  std::int64_t count = 64;       // spheres: how many balls
  std::int64_t radius_min = 0;   // spheres: radii in voxels; both 0 for the default
  std::int64_t radius_max = 0;
  // spheres: the balls, when already placed (place_spheres); left empty,
  // fill and generate place them.
  std::vector<Ball> balls = {};
};

// Fills values of extent (packed, native order, dtype of info) with the field.
void fill(const FieldSpec& spec, const io::VolumeInfo& info, const io::Extent& extent, void* values);

// Collective. Each rank generates a slab of planes, in pieces of at most
// about 16 MiB, and writes them through writer.
void generate(const Comm& comm, const FieldSpec& spec, io::VolumeWriter& writer, segment::ProgressMode progress);

// The radii [min, max] the spheres field draws from: spec's, or both 0 for
// the default (see above). Throws volseg::Error, naming the options of
// `volseg generate`, when count is not positive, a radius is below 1, min is
// above max, a ball of radius max does not fit the volume (an axis shorter
// than 2*max+3), no default radius fits count balls, or an axis is longer
// than 2^24 voxels.
std::array<std::int64_t, 2> sphere_radii(const FieldSpec& spec, const io::Index3& dims);

// The balls of the spheres field, in id order (id = index + 1), placed by
// rejection: each ball has 1000 tries, each group 16 starts. The same on
// every rank and every rank count. Throws volseg::Error as sphere_radii, and
// "--count N: only K balls of radius MIN-MAX fit in XxYxZ ..." when the
// rules above leave no room for them all.
std::vector<Ball> place_spheres(const FieldSpec& spec, const io::Index3& dims);

// The balls as CSV: the header id,z,y,x,radius, then one row per ball, in
// id order from 1.
std::string spheres_csv(const std::vector<Ball>& balls);

// The exact number of voxels of the shells field with lo <= v <= hi, counted
// on the lattice row by row with integer square roots (no voxel loop).
std::uint64_t shells_in_range(const io::Index3& dims, io::DType dtype, std::int64_t width, double lo, double hi);

}  // namespace volseg::datasets
