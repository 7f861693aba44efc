// SPDX-License-Identifier: MIT
#include "reduce.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

namespace volseg::pyramid::detail {

namespace {

Piece empty_piece(const io::Index3& fine, Reduction reduction) {
  Piece piece;
  for (std::size_t a = 0; a < 3; ++a) piece.count[a] = (fine[a] + 1) / 2;
  const auto n = static_cast<std::size_t>(piece.count[0] * piece.count[1] * piece.count[2]);
  piece.value.assign(n, reduction == Reduction::max ? -std::numeric_limits<double>::infinity() : 0.0);
  piece.valid.assign(n, 0);
  return piece;
}

// Calls add(fine_index, coarse_index) for every fine voxel, row by row.
template <class Add>
void for_each_voxel(const io::Index3& fine, const io::Index3& coarse, Add&& add) {
  for (std::int64_t z = 0; z < fine[0]; ++z)
    for (std::int64_t y = 0; y < fine[1]; ++y) {
      const std::int64_t row = (z * fine[1] + y) * fine[2];
      const std::int64_t coarse_row = ((z / 2) * coarse[1] + y / 2) * coarse[2];
      for (std::int64_t x = 0; x < fine[2]; ++x)
        add(static_cast<std::size_t>(row + x), static_cast<std::size_t>(coarse_row + x / 2));
    }
}

}  // namespace

Piece reduce_voxels(const double* values, const io::Index3& count, Reduction reduction) {
  Piece piece = empty_piece(count, reduction);
  const bool max = reduction == Reduction::max;
  for_each_voxel(count, piece.count, [&](std::size_t i, std::size_t c) {
    const double v = values[i];
    if (std::isnan(v)) return;
    piece.value[c] = max ? std::max(piece.value[c], v) : piece.value[c] + v;
    ++piece.valid[c];
  });
  return piece;
}

Piece reduce_piece(const Piece& fine, Reduction reduction) {
  Piece piece = empty_piece(fine.count, reduction);
  const bool max = reduction == Reduction::max;
  for_each_voxel(fine.count, piece.count, [&](std::size_t i, std::size_t c) {
    if (fine.valid[i] == 0) return;
    piece.value[c] = max ? std::max(piece.value[c], fine.value[i]) : piece.value[c] + fine.value[i];
    piece.valid[c] += fine.valid[i];
  });
  return piece;
}

std::vector<float> piece_means(const Piece& piece) {
  std::vector<float> out(piece.value.size());
  for (std::size_t i = 0; i < out.size(); ++i)
    out[i] = piece.valid[i] > 0 ? static_cast<float>(piece.value[i] / piece.valid[i])
                                : std::numeric_limits<float>::quiet_NaN();
  return out;
}

std::vector<std::uint8_t> piece_maxima(const Piece& piece) {
  std::vector<std::uint8_t> out(piece.value.size());
  for (std::size_t i = 0; i < out.size(); ++i)
    out[i] = piece.valid[i] > 0 ? static_cast<std::uint8_t>(std::clamp(piece.value[i], 0.0, 255.0)) : 0;
  return out;
}

}  // namespace volseg::pyramid::detail
