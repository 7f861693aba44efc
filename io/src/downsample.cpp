// SPDX-License-Identifier: MIT
#include "volseg/io/downsample.hpp"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>

#include "volseg/io/error.hpp"

namespace volseg::io {

namespace {

// Calls block(values, n, coarse_index) for every 2x2x2 block of `fine` (fewer
// values at odd edges): the values below one coarse voxel, each fine voxel
// once.
template <class T, class Block>
void for_each_block(const T* fine, const Index3& n, Block&& block) {
  const Index3 c = level_dims(n, 1);
  T values[8];
  std::int64_t out = 0;
  for (std::int64_t z = 0; z < c[0]; ++z)
    for (std::int64_t y = 0; y < c[1]; ++y) {
      const T* rows[4];
      int row_count = 0;
      for (std::int64_t fz = 2 * z; fz < std::min(2 * z + 2, n[0]); ++fz)
        for (std::int64_t fy = 2 * y; fy < std::min(2 * y + 2, n[1]); ++fy)
          rows[row_count++] = fine + (fz * n[1] + fy) * n[2];
      for (std::int64_t x = 0; x < c[2]; ++x, ++out) {
        const std::int64_t fx = 2 * x;
        const bool pair = fx + 1 < n[2];
        int count = 0;
        for (int r = 0; r < row_count; ++r) {
          values[count++] = rows[r][fx];
          if (pair) values[count++] = rows[r][fx + 1];
        }
        block(values, count, out);
      }
    }
}

// The most frequent non-zero value, ties to the smaller; 0 when all are 0.
template <class T>
T mode_of(const T* v, int n) {
  bool same = true;
  for (int i = 1; i < n; ++i) same = same && v[i] == v[0];
  if (same) return v[0];
  T best = 0;
  int best_count = 0;
  for (int i = 0; i < n; ++i) {
    if (v[i] == 0) continue;
    int count = 0;
    for (int j = 0; j < n; ++j) count += v[j] == v[i];
    if (count > best_count || (count == best_count && v[i] < best)) {
      best = v[i];
      best_count = count;
    }
  }
  return best;
}

template <class T>
void mode_level(const T* fine, const Index3& n, T* coarse) {
  for_each_block(fine, n, [&](const T* v, int count, std::int64_t out) { coarse[out] = mode_of(v, count); });
}

template <class T>
void mean_level(const T* fine, const Index3& n, T* coarse, std::optional<long double> missing) {
  const bool has_missing = missing.has_value();
  const T marker = has_missing ? static_cast<T>(*missing) : T{};
  T none = has_missing ? marker : T{};
  if constexpr (std::is_floating_point_v<T>)
    if (!has_missing) none = std::numeric_limits<T>::quiet_NaN();
  for_each_block(fine, n, [&](const T* v, int count, std::int64_t out) {
    double sum = 0;
    int valid = 0;
    for (int i = 0; i < count; ++i) {
      if constexpr (std::is_floating_point_v<T>)
        if (std::isnan(v[i])) continue;
      if (has_missing && v[i] == marker) continue;
      sum += static_cast<double>(v[i]);
      ++valid;
    }
    if (valid == 0) {
      coarse[out] = none;
    } else if constexpr (std::is_floating_point_v<T>) {
      coarse[out] = static_cast<T>(sum / valid);
    } else {
      coarse[out] = static_cast<T>(std::llround(sum / valid));
    }
  });
}

template <class T>
void level_of(Downsampling how, const void* fine, const Index3& count, void* coarse,
              std::optional<long double> missing) {
  const T* in = static_cast<const T*>(fine);
  T* out = static_cast<T*>(coarse);
  if constexpr (std::is_floating_point_v<T>) {
    mean_level(in, count, out, missing);  // a float volume is no mask: its mean
    (void)how;
  } else {
    if (how == Downsampling::mode) {
      mode_level(in, count, out);
    } else {
      mean_level(in, count, out, missing);
    }
  }
}

}  // namespace

Downsampling downsampling_for(const VolumeInfo& info) {
  const bool mask_or_labels = info.attributes.count("flag_values") > 0 || info.attributes.count("numbering") > 0;
  return mask_or_labels && !dtype_is_float(info.dtype) ? Downsampling::mode : Downsampling::mean;
}

const char* downsampling_name(Downsampling how) { return how == Downsampling::mode ? "mode" : "mean"; }

Index3 level_dims(const Index3& dims, int level) {
  Index3 out{};
  for (std::size_t a = 0; a < 3; ++a) out[a] = level >= 62 ? 1 : (dims[a] + (std::int64_t{1} << level) - 1) >> level;
  return out;
}

int level_count(const Index3& dims, const Index3& chunks, int asked, const std::string& option) {
  const std::int64_t smallest = *std::min_element(dims.begin(), dims.end());
  if (asked < 0) throw Error(option + " " + std::to_string(asked) + ": a level count is 1 or more (0: automatic)");
  if (asked > 0) {
    if (asked > 62 || (std::int64_t{1} << (asked - 1)) > smallest)
      throw Error(option + " " + std::to_string(asked) + ": level " + std::to_string(asked - 1) +
                  " would halve the volume's shortest axis (" + std::to_string(smallest) + " voxels) " +
                  std::to_string(asked - 1) + " times, below one voxel; at most " +
                  std::to_string(std::bit_width(static_cast<std::uint64_t>(smallest))) + " levels");
    return asked;
  }
  int levels = 1;
  for (;;) {
    const Index3 d = level_dims(dims, levels - 1);
    bool fits = true;
    for (std::size_t a = 0; a < 3; ++a) fits = fits && d[a] <= chunks[a];
    if (fits || (std::int64_t{1} << levels) > smallest) return levels;
    ++levels;
  }
}

void downsample(Downsampling how, DType dtype, const void* fine, const Index3& count, void* coarse,
                std::optional<long double> missing) {
  switch (dtype) {
    case DType::i8:
      return level_of<std::int8_t>(how, fine, count, coarse, missing);
    case DType::u8:
      return level_of<std::uint8_t>(how, fine, count, coarse, missing);
    case DType::i16:
      return level_of<std::int16_t>(how, fine, count, coarse, missing);
    case DType::u16:
      return level_of<std::uint16_t>(how, fine, count, coarse, missing);
    case DType::i32:
      return level_of<std::int32_t>(how, fine, count, coarse, missing);
    case DType::u32:
      return level_of<std::uint32_t>(how, fine, count, coarse, missing);
    case DType::i64:
      return level_of<std::int64_t>(how, fine, count, coarse, missing);
    case DType::u64:
      return level_of<std::uint64_t>(how, fine, count, coarse, missing);
    case DType::f32:
      return level_of<float>(how, fine, count, coarse, missing);
    case DType::f64:
      return level_of<double>(how, fine, count, coarse, missing);
  }
}

}  // namespace volseg::io
