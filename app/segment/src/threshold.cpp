// SPDX-License-Identifier: MIT
#include "volseg/segment/threshold.hpp"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <limits>

#include "volseg/io/byteswap.hpp"
#include "volseg/io/error.hpp"

namespace volseg::segment {
namespace {

// Bounds in the data type such that, for every value v of T,
// v >= lo  <=>  double(v) >= threshold.lo  (and likewise for the others).
template <class T>
struct Bounds {
  T lo, hi, valid_min, valid_max, fill{};
  bool empty = false;     // no value of T can be in range
  bool has_fill = false;  // the fill value is representable in T
  double bin_origin = 0, bin_scale = 0;
};

template <class T>
T at_least(double value, bool& above_all) {
  above_all = false;
  if constexpr (std::is_integral_v<T>) {
    double c = std::ceil(value);
    if (c > static_cast<double>(std::numeric_limits<T>::max())) {
      above_all = true;
      return std::numeric_limits<T>::max();
    }
    if (c < static_cast<double>(std::numeric_limits<T>::lowest())) return std::numeric_limits<T>::lowest();
    return static_cast<T>(c);
  } else {
    T t = static_cast<T>(value);
    if (static_cast<double>(t) < value) t = std::nextafter(t, std::numeric_limits<T>::infinity());
    return t;
  }
}

template <class T>
T at_most(double value, bool& below_all) {
  below_all = false;
  if constexpr (std::is_integral_v<T>) {
    double f = std::floor(value);
    if (f < static_cast<double>(std::numeric_limits<T>::lowest())) {
      below_all = true;
      return std::numeric_limits<T>::lowest();
    }
    if (f > static_cast<double>(std::numeric_limits<T>::max())) return std::numeric_limits<T>::max();
    return static_cast<T>(f);
  } else {
    T t = static_cast<T>(value);
    if (static_cast<double>(t) > value) t = std::nextafter(t, -std::numeric_limits<T>::infinity());
    return t;
  }
}

template <class T>
Bounds<T> make_bounds(const Threshold& threshold) {
  Bounds<T> b;
  bool above = false, below = false;
  b.lo = at_least<T>(threshold.lo, above);
  b.hi = at_most<T>(threshold.hi, below);
  b.empty = above || below || b.hi < b.lo;
  if (threshold.valid_range) {
    bool valid_above = false, valid_below = false;
    b.valid_min = at_least<T>((*threshold.valid_range)[0], valid_above);
    b.valid_max = at_most<T>((*threshold.valid_range)[1], valid_below);
    if (valid_above || valid_below) b.empty = true;
  } else if constexpr (std::is_integral_v<T>) {
    b.valid_min = std::numeric_limits<T>::lowest();
    b.valid_max = std::numeric_limits<T>::max();
  } else {
    b.valid_min = -std::numeric_limits<T>::infinity();
    b.valid_max = std::numeric_limits<T>::infinity();
  }
  if (threshold.fill_value) {
    double fill = *threshold.fill_value;
    bool representable = std::is_integral_v<T>
                             ? fill == std::floor(fill) && fill >= static_cast<double>(std::numeric_limits<T>::lowest()) &&
                                   fill <= static_cast<double>(std::numeric_limits<T>::max())
                             : static_cast<double>(static_cast<T>(fill)) == fill || std::isnan(fill);
    // A NaN fill needs no test: NaN is never valid.
    if (representable && !std::isnan(fill)) {
      b.has_fill = true;
      b.fill = static_cast<T>(fill);
    }
  }
  b.bin_origin = threshold.lo;
  b.bin_scale = threshold.hi > threshold.lo ? Stats::bins / (threshold.hi - threshold.lo) : 0.0;
  return b;
}

template <class T, bool Swap>
inline T load(const std::byte* input, std::int64_t i) {
  if constexpr (Swap && sizeof(T) > 1) {
    using U = std::conditional_t<sizeof(T) == 2, std::uint16_t, std::conditional_t<sizeof(T) == 4, std::uint32_t, std::uint64_t>>;
    U bits;
    std::memcpy(&bits, input + i * static_cast<std::int64_t>(sizeof(T)), sizeof(T));
    return std::bit_cast<T>(io::byteswap(bits));
  } else {
    T value;
    std::memcpy(&value, input + i * static_cast<std::int64_t>(sizeof(T)), sizeof(T));
    return value;
  }
}

template <class T, bool Swap, bool HasFill>
void threshold_loop(const std::byte* input, std::int64_t count, std::uint8_t* mask, const Bounds<T>& b,
                    Stats& stats) {
  T lowest_seen = std::numeric_limits<T>::has_infinity ? std::numeric_limits<T>::infinity() : std::numeric_limits<T>::max();
  T highest_seen = std::numeric_limits<T>::has_infinity ? -std::numeric_limits<T>::infinity() : std::numeric_limits<T>::lowest();
  std::uint64_t valid = 0, in_range = 0;
  // Four interleaved histograms (plus a discard bin) keep repeated
  // increments of one bin from serialising on store-to-load forwarding.
  std::uint32_t histogram[4][Stats::bins + 1] = {};
  constexpr std::int64_t chunk = 4096;
  for (std::int64_t begin = 0; begin < count; begin += chunk) {
    const std::int64_t n = std::min(chunk, count - begin);
    const std::byte* in = input + begin * static_cast<std::int64_t>(sizeof(T));
    std::uint8_t* out = mask + begin;
    std::uint32_t chunk_valid = 0, chunk_in = 0;
    T chunk_min = lowest_seen, chunk_max = highest_seen;
    for (std::int64_t i = 0; i < n; ++i) {
      const T v = load<T, Swap>(in, i);
      bool ok = (v >= b.valid_min) & (v <= b.valid_max);
      if constexpr (HasFill) ok &= (v != b.fill);
      const bool inside = ok & (v >= b.lo) & (v <= b.hi);
      out[i] = static_cast<std::uint8_t>(inside);
      chunk_valid += ok;
      chunk_in += inside;
      chunk_min = (ok & (v < chunk_min)) ? v : chunk_min;
      chunk_max = (ok & (v > chunk_max)) ? v : chunk_max;
    }
    valid += chunk_valid;
    in_range += chunk_in;
    lowest_seen = std::min(lowest_seen, chunk_min);
    highest_seen = std::max(highest_seen, chunk_max);
    if (chunk_in == 0) continue;
    for (std::int64_t i = 0; i < n; ++i) {
      const double offset = (static_cast<double>(load<T, Swap>(in, i)) - b.bin_origin) * b.bin_scale;
      int bin = std::clamp(static_cast<int>(offset), 0, Stats::bins - 1);
      bin = out[i] ? bin : Stats::bins;
      ++histogram[i & 3][bin];
    }
  }
  if (b.empty) in_range = 0;
  stats.voxels += static_cast<std::uint64_t>(count);
  stats.valid += valid;
  stats.in_range += in_range;
  for (int bin = 0; bin < Stats::bins; ++bin)
    stats.histogram[static_cast<std::size_t>(bin)] +=
        std::uint64_t{histogram[0][bin]} + histogram[1][bin] + histogram[2][bin] + histogram[3][bin];
  if (valid > 0) {
    const bool first = stats.valid == valid;
    stats.min = first ? static_cast<double>(lowest_seen) : std::min(stats.min, static_cast<double>(lowest_seen));
    stats.max = first ? static_cast<double>(highest_seen) : std::max(stats.max, static_cast<double>(highest_seen));
  }
}

template <class T, bool Swap>
void run_typed(const std::byte* input, std::int64_t count, std::uint8_t* mask, const Threshold& threshold,
               Stats& stats) {
  Bounds<T> b = make_bounds<T>(threshold);
  if (b.empty) {
    // Nothing can be in range: make lo > hi in the type so the loop's
    // comparisons say so, while min/max/valid are still counted.
    if constexpr (std::is_integral_v<T>) {
      b.lo = std::numeric_limits<T>::max();
      b.hi = std::numeric_limits<T>::lowest();
    } else {
      b.lo = std::numeric_limits<T>::infinity();
      b.hi = -std::numeric_limits<T>::infinity();
    }
  }
  if (b.has_fill) threshold_loop<T, Swap, true>(input, count, mask, b, stats);
  else threshold_loop<T, Swap, false>(input, count, mask, b, stats);
}

template <class T>
void run_dispatch(const std::byte* input, std::int64_t count, bool swapped, std::uint8_t* mask,
                  const Threshold& threshold, Stats& stats) {
  if (swapped) run_typed<T, true>(input, count, mask, threshold, stats);
  else run_typed<T, false>(input, count, mask, threshold, stats);
}

}  // namespace

void Stats::merge(const Stats& other) {
  if (other.valid > 0) {
    min = valid > 0 ? std::min(min, other.min) : other.min;
    max = valid > 0 ? std::max(max, other.max) : other.max;
  }
  voxels += other.voxels;
  valid += other.valid;
  in_range += other.in_range;
  for (std::size_t i = 0; i < histogram.size(); ++i) histogram[i] += other.histogram[i];
}

ThresholdKernel::ThresholdKernel(io::DType dtype, const Threshold& threshold) : dtype_(dtype), threshold_(threshold) {
  if (std::isnan(threshold.lo) || std::isnan(threshold.hi)) throw Error("thresholds must not be NaN");
  if (threshold.lo > threshold.hi)
    throw Error("lo > hi: the threshold range [" + std::to_string(threshold.lo) + ", " + std::to_string(threshold.hi) +
                "] is empty");
}

void ThresholdKernel::run(const std::byte* input, std::int64_t count, bool swapped, std::uint8_t* mask,
                          Stats& stats) const {
  switch (dtype_) {
    case io::DType::u8: return run_dispatch<std::uint8_t>(input, count, false, mask, threshold_, stats);
    case io::DType::i16: return run_dispatch<std::int16_t>(input, count, swapped, mask, threshold_, stats);
    case io::DType::u16: return run_dispatch<std::uint16_t>(input, count, swapped, mask, threshold_, stats);
    case io::DType::i32: return run_dispatch<std::int32_t>(input, count, swapped, mask, threshold_, stats);
    case io::DType::f32: return run_dispatch<float>(input, count, swapped, mask, threshold_, stats);
    case io::DType::f64: return run_dispatch<double>(input, count, swapped, mask, threshold_, stats);
  }
}

}  // namespace volseg::segment
