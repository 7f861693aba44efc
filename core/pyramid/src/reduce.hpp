// SPDX-License-Identifier: MIT
// One brick's pieces of every pyramid level, from its full-resolution
// voxels: level 1 from the decoded voxels, level k+1 from level k's sums and
// valid counts (so a level-k mean is the mean over the valid level-0 voxels
// of its 2^k cube, not a mean of means).
#pragma once

#include <cstdint>
#include <vector>

#include "volseg/io/types.hpp"
#include "volseg/pyramid/pyramid.hpp"

namespace volseg::pyramid::detail {

struct Piece {
  io::Index3 count{};                // voxels of the piece, z, y, x
  std::vector<double> value;         // sum (mean) or largest value (max) of the valid voxels below
  std::vector<std::uint32_t> valid;  // valid level-0 voxels below each voxel
};

// values: count voxels (NaN invalid) -> the next level's piece.
Piece reduce_voxels(const double* values, const io::Index3& count, Reduction reduction);
Piece reduce_piece(const Piece& fine, Reduction reduction);

// The piece as stored: f32 means (NaN: no valid voxel) or u8 maxima (0).
std::vector<float> piece_means(const Piece& piece);
std::vector<std::uint8_t> piece_maxima(const Piece& piece);

}  // namespace volseg::pyramid::detail
