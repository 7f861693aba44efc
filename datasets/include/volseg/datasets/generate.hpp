// SPDX-License-Identifier: MIT
// Synthetic volumes with known answers, generated in parallel.
//   shells: v = shell index k = floor(r / width), r the distance of the voxel
//           from the volume's centre (clamped to the type's range); integer
//           valued, so the in-range count is an exact lattice count.
//   smooth: a sum of sines of several frequencies, in [0, 1] (floats) or
//           scaled to [0, scale] (integers).
//   noise:  independent uniform values from a counter-based hash of the
//           voxel index, so the result does not depend on the rank count.
#pragma once

#include <cstdint>
#include <string>

#include "volseg/io/comm.hpp"
#include "volseg/io/types.hpp"
#include "volseg/io/volume.hpp"
#include "volseg/segment/progress.hpp"

namespace volseg::datasets {

enum class Field { shells, smooth, noise };
Field parse_field(const std::string& name);

struct FieldSpec {
  Field field = Field::shells;
  std::int64_t shell_width = 8;  // voxels per shell
  std::uint64_t seed = 1;        // noise
};

// Fills values of extent (packed, native order, dtype of info) with the field.
void fill(const FieldSpec& spec, const io::VolumeInfo& info, const io::Extent& extent, void* values);

// Collective. Each rank generates a slab of planes, in pieces of at most
// about 16 MiB, and writes them through writer.
void generate(const Comm& comm, const FieldSpec& spec, io::VolumeWriter& writer, segment::ProgressMode progress);

// The exact number of voxels of the shells field with lo <= v <= hi, counted
// on the lattice row by row with integer square roots (no voxel loop).
std::uint64_t shells_in_range(const io::Index3& dims, io::DType dtype, std::int64_t width, double lo, double hi);

}  // namespace volseg::datasets
