// SPDX-License-Identifier: MIT
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "volseg/io/types.hpp"

namespace volseg::io {
class VolumeReader;
}

namespace volseg::segment {

// Splits a volume into bricks of one shape; the last brick on each axis may
// be short. Bricks are numbered z-major (x fastest), so consecutive numbers
// are neighbours in the file.
class BrickLayout {
 public:
  BrickLayout(const io::Index3& dims, const io::Index3& brick_shape);

  // A shape of about target_bytes: whole rows first, then whole planes, then
  // as many planes as fit, so a brick is as few contiguous runs as possible
  // (Fogal & Krüger advises reads of 10 MB and more).
  static io::Index3 default_shape(const io::Index3& dims, std::size_t element_size,
                                  std::size_t target_bytes = 12u << 20);
  // For a chunked input (Zarr): whole chunks, as many along x, then y, then
  // z as fit in target_bytes (at least one chunk; a whole axis up to twice
  // it), so each brick reads each of its chunks whole and no chunk is
  // decoded for two bricks.
  static io::Index3 chunk_aligned_shape(const io::Index3& dims, std::size_t element_size, const io::Index3& chunks,
                                        std::size_t target_bytes = 12u << 20);
  // A job's bricks unless --brick names them: default_shape for a contiguous
  // input, chunk_aligned_shape for a chunked one. With one_chunk (a chunked
  // output, whose chunks are the bricks), a chunk of at least 256 KiB is a
  // brick by itself: it decodes in place into the brick's buffer, which
  // stays in cache for the kernel (Zarr in, Zarr out: 1.7 s -> 0.9 s on
  // 1024^3 f32 in 64^3 chunks, docs/zarr.md); smaller chunks are grown to
  // about 1 MiB.
  //
  // A reader that computes its values from several stored ones (an
  // expression: reader.capabilities().extra_staged_bytes_per_voxel above 0) gets
  // bricks of about 4 MiB staged, so that the operands are still in cache
  // when it evaluates them (3 float32 variables from NetCDF-4, 256^3: 0.100 s
  // in 12 MiB bricks, 0.079 s in 4 MiB, against 0.042 s to read them).
  static io::Index3 job_shape(const io::Index3& dims, std::size_t element_size, const std::optional<io::Index3>& chunks,
                              bool one_chunk = false);
  static io::Index3 job_shape(const io::VolumeReader& reader, const std::optional<io::Index3>& chunks,
                              bool one_chunk = false);

  const io::Index3& dims() const { return dims_; }
  const io::Index3& shape() const { return shape_; }
  const io::Index3& grid() const { return grid_; }
  std::int64_t count() const { return grid_[0] * grid_[1] * grid_[2]; }
  io::Extent brick(std::int64_t index) const;
  std::int64_t largest_brick_voxels() const { return shape_[0] * shape_[1] * shape_[2]; }

 private:
  io::Index3 dims_, shape_, grid_;
};

enum class Assignment { block, cyclic, random };
Assignment parse_assignment(const std::string& name);

// The bricks a rank processes, in ascending order. Every rank computes the
// same partition; "random" shuffles with a seed all ranks share.
std::vector<std::int64_t> assign_bricks(std::int64_t brick_count, int rank, int size, Assignment assignment,
                                        std::uint64_t seed = 0);

// "64,64,64" or "64" (cubes), in z,y,x order; throws volseg::Error.
io::Index3 parse_shape(const std::string& text);

}  // namespace volseg::segment
