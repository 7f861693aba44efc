// SPDX-License-Identifier: MIT
#include "volseg/segment/brick_layout.hpp"

#include "volseg/io/volume.hpp"

#include <algorithm>
#include <charconv>
#include <random>
#include <sstream>

#include "volseg/io/error.hpp"

namespace volseg::segment {

BrickLayout::BrickLayout(const io::Index3& dims, const io::Index3& brick_shape) : dims_(dims) {
  for (int a = 0; a < 3; ++a) {
    if (dims[a] <= 0) throw Error("volume dimensions must be positive");
    if (brick_shape[a] <= 0) throw Error("brick shape must be positive on every axis");
    shape_[a] = std::min(brick_shape[a], dims[a]);
    grid_[a] = (dims[a] + shape_[a] - 1) / shape_[a];
  }
}

io::Index3 BrickLayout::default_shape(const io::Index3& dims, std::size_t element_size, std::size_t target_bytes) {
  const auto target = static_cast<std::int64_t>(std::max<std::size_t>(target_bytes / element_size, 1));
  const auto [nz, ny, nx] = dims;
  if (nx >= target) return {1, 1, target};
  if (nx * ny >= target) return {1, std::max<std::int64_t>(target / nx, 1), nx};
  return {std::clamp<std::int64_t>(target / (nx * ny), 1, nz), ny, nx};
}

io::Index3 BrickLayout::chunk_aligned_shape(const io::Index3& dims, std::size_t element_size, const io::Index3& chunks,
                                            std::size_t target_bytes) {
  io::Index3 shape{};
  for (std::size_t a = 0; a < 3; ++a) shape[a] = std::clamp<std::int64_t>(chunks[a], 1, dims[a]);
  const auto target = static_cast<std::int64_t>(std::max<std::size_t>(target_bytes / element_size, 1));
  for (std::size_t a : {std::size_t{2}, std::size_t{1}, std::size_t{0}}) {
    const std::int64_t others = shape[0] * shape[1] * shape[2] / shape[a];
    std::int64_t fit = target / (others * shape[a]);  // chunks along a that fit
    if (fit == 0) break;                              // one chunk is past the target already
    const std::int64_t whole = (dims[a] + shape[a] - 1) / shape[a];
    // A whole axis is worth up to twice the target: a brick of whole rows
    // (planes) is one contiguous run per plane (per brick) of a raw output.
    if (2 * fit >= whole) fit = whole;
    shape[a] = std::min(dims[a], shape[a] * std::min(fit, whole));
    if (fit < whole) break;  // the target is reached: the axes before a stay one chunk
  }
  return shape;
}

io::Index3 BrickLayout::job_shape(const io::Index3& dims, std::size_t element_size,
                                  const std::optional<io::Index3>& chunks, bool one_chunk) {
  if (!chunks) return default_shape(dims, element_size);
  if (!one_chunk) return chunk_aligned_shape(dims, element_size, *chunks);
  io::Index3 shape{};
  for (std::size_t a = 0; a < 3; ++a) shape[a] = std::clamp<std::int64_t>((*chunks)[a], 1, dims[a]);
  if (static_cast<std::size_t>(shape[0] * shape[1] * shape[2]) * element_size >= (std::size_t{256} << 10)) return shape;
  return chunk_aligned_shape(dims, element_size, *chunks, std::size_t{1} << 20);
}

io::Index3 BrickLayout::job_shape(const io::VolumeReader& reader, const std::optional<io::Index3>& chunks,
                                  bool one_chunk) {
  const std::size_t element = io::dtype_size(reader.info().dtype);
  const std::size_t staged = element + reader.capabilities().extra_staged_bytes_per_voxel;
  if (staged == element || chunks) return job_shape(reader.info().dims, staged, chunks, one_chunk);
  return default_shape(reader.info().dims, staged, std::size_t{4} << 20);
}

io::Extent BrickLayout::brick(std::int64_t index) const {
  if (index < 0 || index >= count()) throw Error("brick index " + std::to_string(index) + " out of range");
  io::Index3 position{index / (grid_[1] * grid_[2]), (index / grid_[2]) % grid_[1], index % grid_[2]};
  io::Extent extent;
  for (int a = 0; a < 3; ++a) {
    extent.offset[a] = position[a] * shape_[a];
    extent.count[a] = std::min(shape_[a], dims_[a] - extent.offset[a]);
  }
  return extent;
}

Assignment parse_assignment(const std::string& name) {
  if (name == "block") return Assignment::block;
  if (name == "cyclic") return Assignment::cyclic;
  if (name == "random") return Assignment::random;
  throw Error("unknown assignment '" + name + "' (known: block, cyclic, random)");
}

std::vector<std::int64_t> assign_bricks(std::int64_t brick_count, int rank, int size, Assignment assignment,
                                        std::uint64_t seed) {
  std::vector<std::int64_t> mine;
  switch (assignment) {
    case Assignment::block: {
      std::int64_t base = brick_count / size, extra = brick_count % size;
      std::int64_t begin = rank * base + std::min<std::int64_t>(rank, extra);
      std::int64_t end = begin + base + (rank < extra ? 1 : 0);
      for (std::int64_t b = begin; b < end; ++b) mine.push_back(b);
      break;
    }
    case Assignment::cyclic:
      for (std::int64_t b = rank; b < brick_count; b += size) mine.push_back(b);
      break;
    case Assignment::random: {
      std::vector<std::int64_t> all(static_cast<std::size_t>(brick_count));
      for (std::int64_t b = 0; b < brick_count; ++b) all[static_cast<std::size_t>(b)] = b;
      std::mt19937_64 generator(seed);
      // Fisher-Yates with our own index draw: std::shuffle's use of the
      // generator is unspecified, and every rank must agree.
      for (std::size_t i = all.size(); i > 1; --i) std::swap(all[i - 1], all[generator() % i]);
      for (std::size_t i = static_cast<std::size_t>(rank); i < all.size(); i += static_cast<std::size_t>(size))
        mine.push_back(all[i]);
      std::sort(mine.begin(), mine.end());
      break;
    }
  }
  return mine;
}

io::Index3 parse_shape(const std::string& text) {
  std::vector<std::int64_t> values;
  std::stringstream stream(text);
  for (std::string part; std::getline(stream, part, ',');) {
    std::int64_t value = 0;
    auto [end, ec] = std::from_chars(part.data(), part.data() + part.size(), value);
    if (ec != std::errc() || end != part.data() + part.size() || value <= 0)
      throw Error("malformed shape '" + text + "': expected positive integers Z,Y,X");
    values.push_back(value);
  }
  if (values.size() == 1) return {values[0], values[0], values[0]};
  if (values.size() == 3) return {values[0], values[1], values[2]};
  throw Error("malformed shape '" + text + "': expected Z,Y,X or one number");
}

}  // namespace volseg::segment
