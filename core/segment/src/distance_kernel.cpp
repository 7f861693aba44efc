// SPDX-License-Identifier: MIT
// The distance transform's passes (distance_kernel.hpp).
#include "distance_kernel.hpp"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <limits>

#include "volseg/io/error.hpp"

namespace volseg::segment::detail {

namespace {
constexpr std::int32_t kNone = std::numeric_limits<std::int32_t>::min();
constexpr double kInf = std::numeric_limits<double>::infinity();

// (k s)^2 as scipy forms it: the offset times the spacing, squared.
inline double square(std::uint16_t k, double s) {
  const double t = static_cast<double>(k) * s;
  return t * t;
}
}  // namespace

// Two sweeps a column, each over whole planes of the slab at a time: the
// inner loop runs along x, contiguous, and vectorises.
void column_offsets(const std::uint8_t* mask, const io::Index3& shape, bool black_border, std::uint16_t* kz) {
  const std::int64_t depth = shape[0];
  const auto plane = static_cast<std::size_t>(shape[1] * shape[2]);
  const std::uint16_t outside = black_border ? 1 : kFar;  // the offset of a foreground voxel on a face
  // Forward: the nearest background at or before z.
  for (std::size_t i = 0; i < plane; ++i) kz[i] = mask[i] ? outside : 0;
  for (std::int64_t z = 1; z < depth; ++z) {
    const std::uint8_t* m = mask + static_cast<std::size_t>(z) * plane;
    const std::uint16_t* before = kz + static_cast<std::size_t>(z - 1) * plane;
    std::uint16_t* k = kz + static_cast<std::size_t>(z) * plane;
    for (std::size_t i = 0; i < plane; ++i) {
      const std::uint16_t grown = static_cast<std::uint16_t>(before[i] + (before[i] != kFar));
      k[i] = m[i] ? grown : 0;
    }
  }
  // Backward: the nearest after z, where nearer.
  std::vector<std::uint16_t> after(plane);
  const std::uint8_t* last = mask + static_cast<std::size_t>(depth - 1) * plane;
  for (std::size_t i = 0; i < plane; ++i) after[i] = last[i] ? outside : 0;
  std::uint16_t* k_last = kz + static_cast<std::size_t>(depth - 1) * plane;
  for (std::size_t i = 0; i < plane; ++i) k_last[i] = std::min(k_last[i], after[i]);
  for (std::int64_t z = depth - 2; z >= 0; --z) {
    const std::uint8_t* m = mask + static_cast<std::size_t>(z) * plane;
    std::uint16_t* k = kz + static_cast<std::size_t>(z) * plane;
    for (std::size_t i = 0; i < plane; ++i) {
      const std::uint16_t grown = static_cast<std::uint16_t>(after[i] + (after[i] != kFar));
      after[i] = m[i] ? grown : 0;
      k[i] = std::min(k[i], after[i]);
    }
  }
}

PlaneDistance::PlaneDistance(std::int64_t height, std::int64_t width, const std::array<double, 3>& spacing,
                             bool black_border)
    : height_(height), width_(width), spacing_(spacing), black_border_(black_border) {
  if (height > kMostAlongAxis || width > kMostAlongAxis)
    throw Error("distance: at most " + std::to_string(kMostAlongAxis) + " voxels along an axis");
  const auto plane = static_cast<std::size_t>(height * width);
  ky_.resize(plane);
  kz_.resize(plane);
  const auto longest = static_cast<std::size_t>(std::max(height, width));
  f_.resize(longest);
  boundary_.resize(longest + 3);
  sites_.resize(longest + 3);
  winner_.resize(longest);
  for (auto* tile : {&tile_, &tile_y_, &tile_z_}) tile->resize(static_cast<std::size_t>(kColumns * height));
}

// Felzenszwalb and Huttenlocher's lower envelope, over the finite heights
// only. Where two parabolas meet exactly at a voxel, the earlier site wins.
// A background voxel (height 0) is its own nearest site, and no site beyond
// it is nearer than it to the voxels past it: each run of foreground
// between two background voxels (or the line's ends) is an envelope of its
// own, over its sites and the two background voxels that bound it. Work
// follows the foreground, as in seung-lab's edt.
void PlaneDistance::envelope(const double* f, std::int64_t n, double step, std::int32_t* winner) {
  std::int64_t a = 0;
  while (a < n) {
    if (f[a] == 0) {
      winner[a] = static_cast<std::int32_t>(a);
      ++a;
      continue;
    }
    std::int64_t b = a + 1;
    while (b < n && f[b] != 0) ++b;
    run_envelope(f, n, a, b, step, winner);
    a = b;
  }
}

// The envelope of the foreground run [a, b): its finite sites, and the
// background voxels (or, with a black border, the outside) just before and
// after it.
void PlaneDistance::run_envelope(const double* f, std::int64_t n, std::int64_t a, std::int64_t b, double step,
                                 std::int32_t* winner) {
  const double w2 = step * step;
  std::int64_t k = -1;
  auto height = [&](std::int32_t q) { return q < 0 || q >= n ? 0.0 : f[q]; };
  auto push = [&](std::int32_t q) {
    const double fq = height(q) + w2 * static_cast<double>(q) * static_cast<double>(q);
    while (k >= 0) {
      const std::int32_t p = sites_[static_cast<std::size_t>(k)];
      const double fp = height(p) + w2 * static_cast<double>(p) * static_cast<double>(p);
      const double s = (fq - fp) / (2 * w2 * static_cast<double>(q - p));
      if (s <= boundary_[static_cast<std::size_t>(k)]) {
        --k;
        continue;
      }
      ++k;
      sites_[static_cast<std::size_t>(k)] = q;
      boundary_[static_cast<std::size_t>(k)] = s;
      return;
    }
    k = 0;
    sites_[0] = q;
    boundary_[0] = -kInf;
  };
  if (a > 0 || black_border_) push(static_cast<std::int32_t>(a - 1));
  for (std::int64_t q = a; q < b; ++q)
    if (f[q] != kInf) push(static_cast<std::int32_t>(q));
  if (b < n || black_border_) push(static_cast<std::int32_t>(b));
  if (k < 0) {
    std::fill(winner + a, winner + b, kNone);
    return;
  }
  std::int64_t j = 0;
  for (std::int64_t i = a; i < b; ++i) {
    while (j < k && boundary_[static_cast<std::size_t>(j + 1)] < static_cast<double>(i)) ++j;
    winner[i] = sites_[static_cast<std::size_t>(j)];
  }
}

template <class T>
void PlaneDistance::run(const std::uint16_t* kz, T* out) {
  const double sz = spacing_[0], sy = spacing_[1], sx = spacing_[2];
  const std::int64_t h = height_, w = width_;
  // Along y, kColumns columns at a time: they are copied out of the plane
  // row by row (kColumns neighbours share a cache line), transformed one by
  // one, and copied back the same way.
  for (std::int64_t x0 = 0; x0 < w; x0 += kColumns) {
    const std::int64_t columns = std::min<std::int64_t>(kColumns, w - x0);
    for (std::int64_t y = 0; y < h; ++y)
      for (std::int64_t b = 0; b < columns; ++b) tile_[static_cast<std::size_t>(b * h + y)] = kz[y * w + x0 + b];
    for (std::int64_t b = 0; b < columns; ++b) {
      const std::uint16_t* column = tile_.data() + b * h;
      std::uint16_t* ky = tile_y_.data() + b * h;
      std::uint16_t* kzy = tile_z_.data() + b * h;
      bool any_foreground = false;
      for (std::int64_t y = 0; y < h; ++y) {
        const std::uint16_t k = column[y];
        f_[static_cast<std::size_t>(y)] = k == kFar ? kInf : square(k, sz);
        any_foreground |= k != 0;
      }
      if (!any_foreground) {  // all background: offsets 0
        std::fill(ky, ky + h, 0);
        std::fill(kzy, kzy + h, 0);
        continue;
      }
      envelope(f_.data(), h, sy, winner_.data());
      for (std::int64_t y = 0; y < h; ++y) {
        const std::int32_t v = winner_[static_cast<std::size_t>(y)];
        if (v == kNone) {
          ky[y] = kzy[y] = kFar;
        } else {
          ky[y] = static_cast<std::uint16_t>(std::abs(y - v));
          kzy[y] = v < 0 || v >= h ? 0 : column[v];
        }
      }
    }
    for (std::int64_t y = 0; y < h; ++y)
      for (std::int64_t b = 0; b < columns; ++b) {
        const auto at = static_cast<std::size_t>(y * w + x0 + b);
        ky_[at] = tile_y_[static_cast<std::size_t>(b * h + y)];
        kz_[at] = tile_z_[static_cast<std::size_t>(b * h + y)];
      }
  }
  // Along x, a row at a time, and the distance from the three offsets.
  for (std::int64_t y = 0; y < h; ++y) {
    const std::uint16_t* ky = ky_.data() + y * w;
    const std::uint16_t* kzy = kz_.data() + y * w;
    T* row = out + y * w;
    bool any_foreground = false;
    for (std::int64_t x = 0; x < w; ++x) {
      f_[static_cast<std::size_t>(x)] = ky[x] == kFar ? kInf : square(kzy[x], sz) + square(ky[x], sy);
      any_foreground |= ky[x] != 0 || kzy[x] != 0;
    }
    if (!any_foreground) {
      std::fill(row, row + w, T(0));
      continue;
    }
    // Background is 0; each run of foreground is an envelope of its own.
    std::int64_t a = 0;
    while (a < w) {
      if (f_[static_cast<std::size_t>(a)] == 0) {
        row[a++] = T(0);
        continue;
      }
      std::int64_t b = a + 1;
      while (b < w && f_[static_cast<std::size_t>(b)] != 0) ++b;
      run_envelope(f_.data(), w, a, b, sx, winner_.data());
      for (std::int64_t x = a; x < b; ++x) {
        const std::int32_t v = winner_[static_cast<std::size_t>(x)];
        double d2;
        if (v == kNone) {
          d2 = kInf;
        } else {
          const auto kx = static_cast<std::uint16_t>(std::abs(x - v));
          const double inner = v < 0 || v >= w ? 0.0 : f_[static_cast<std::size_t>(v)];
          d2 = inner + square(kx, sx);
        }
        const double d = std::sqrt(d2);
        if (d != kInf) largest_ = std::max(largest_, d);
        row[x] = static_cast<T>(d);
      }
      a = b;
    }
  }
}

template void PlaneDistance::run<float>(const std::uint16_t*, float*);
template void PlaneDistance::run<double>(const std::uint16_t*, double*);

}  // namespace volseg::segment::detail
