// SPDX-License-Identifier: MIT
// The threshold kernel's loops, compiled once per instruction set
// (kernel_generic.cpp, kernel_avx2.cpp); threshold.cpp picks one at run time.
// Included only by those files and by decode.cpp (which shares make_bounds,
// so the decoder's validity rules are the kernel's), inside their own namespace;
// they include volseg/io/dtype_dispatch.hpp (run_kernel's visit_dtype) first.

constexpr std::int64_t kChunk = 4096;
constexpr int kSubHistograms = 8;

// Bounds in the data type such that, for every value v of T,
// v >= lo  <=>  double(v) >= threshold.lo  (and likewise for the others).
template <class T>
struct Bounds {
  T lo, hi, valid_min, valid_max, fill{}, missing{};
  bool empty = false;     // no value of T can be in range
  bool has_fill = false;  // the fill value is representable in T
  double bin_origin = 0, bin_scale = 0;
};

template <class T>
T at_least(double value, bool& above_all) {
  above_all = false;
  if constexpr (std::is_integral_v<T>) {
    double c = std::ceil(value);
    // 2^digits is the first double past T's range (max itself may round up).
    if (c >= std::ldexp(1.0, std::numeric_limits<T>::digits)) {
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
    if (f >= std::ldexp(1.0, std::numeric_limits<T>::digits)) return std::numeric_limits<T>::max();
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
  // Excluded values representable in T; a NaN needs no test (never valid).
  auto representable = [](long double value) {
    if (std::isnan(value)) return false;
    if constexpr (std::is_integral_v<T>)
      return value == std::floor(value) && value >= static_cast<long double>(std::numeric_limits<T>::lowest()) &&
             value < std::ldexp(1.0L, std::numeric_limits<T>::digits);
    else
      return static_cast<long double>(static_cast<T>(value)) == value;
  };
  std::optional<T> excluded[2];
  if (threshold.fill_value && representable(*threshold.fill_value)) excluded[0] = static_cast<T>(*threshold.fill_value);
  if (threshold.missing_value && representable(*threshold.missing_value))
    excluded[1] = static_cast<T>(*threshold.missing_value);
  if (excluded[0] || excluded[1]) {
    b.has_fill = true;
    b.fill = excluded[0] ? *excluded[0] : *excluded[1];
    b.missing = excluded[1] ? *excluded[1] : b.fill;
  }
  b.bin_origin = threshold.lo;
  b.bin_scale = threshold.hi > threshold.lo ? Stats::bins / (threshold.hi - threshold.lo) : 0.0;
  return b;
}

template <class T, bool Swap>
inline T load(const std::byte* input, std::int64_t i) {
  if constexpr (Swap && sizeof(T) > 1) {
    using U = std::conditional_t<sizeof(T) == 2, std::uint16_t,
                                 std::conditional_t<sizeof(T) == 4, std::uint32_t, std::uint64_t>>;
    U bits;
    std::memcpy(&bits, input + i * static_cast<std::int64_t>(sizeof(T)), sizeof(T));
    return std::bit_cast<T>(io::byteswap(bits));
  } else {
    T value;
    std::memcpy(&value, input + i * static_cast<std::int64_t>(sizeof(T)), sizeof(T));
    return value;
  }
}

// The value used for bin arithmetic: float for types a float holds exactly
// enough for binning, double for the wide ones.
template <class T>
using BinReal = std::conditional_t<(sizeof(T) <= 2 || std::is_same_v<T, float>), float, double>;

// One chunk, written so that gcc vectorises it: no branches, reductions
// declared to the compiler, invalid values replaced by the neutral element
// of min and max instead of skipped.
template <class T, bool Swap, bool HasFill>
void threshold_chunk(const std::byte* in, std::int64_t n, std::uint8_t* __restrict out, const Bounds<T>& b,
                     std::uint32_t& valid, std::uint32_t& inside_count, T& lowest_seen, T& highest_seen) {
  constexpr T top =
      std::numeric_limits<T>::has_infinity ? std::numeric_limits<T>::infinity() : std::numeric_limits<T>::max();
  constexpr T bottom =
      std::numeric_limits<T>::has_infinity ? -std::numeric_limits<T>::infinity() : std::numeric_limits<T>::lowest();
  const T lo = b.lo, hi = b.hi, valid_min = b.valid_min, valid_max = b.valid_max, fill = b.fill, missing = b.missing;
  T low = top, high = bottom;
  std::uint32_t n_valid = 0, n_inside = 0;
#pragma omp simd reduction(min : low) reduction(max : high) reduction(+ : n_valid, n_inside)
  for (std::int64_t i = 0; i < n; ++i) {
    const T v = load<T, Swap>(in, i);
    bool ok = (v >= valid_min) & (v <= valid_max);
    if constexpr (HasFill) ok = ok & (v != fill) & (v != missing);
    const bool inside = ok & (v >= lo) & (v <= hi);
    out[i] = static_cast<std::uint8_t>(inside);
    n_valid += ok;
    n_inside += inside;
    const T for_min = ok ? v : top, for_max = ok ? v : bottom;
    low = low < for_min ? low : for_min;
    high = high > for_max ? high : for_max;
  }
  valid = n_valid;
  inside_count = n_inside;
  lowest_seen = std::min(lowest_seen, low);
  highest_seen = std::max(highest_seen, high);
}

#ifdef VOLSEG_KERNEL_AVX2
// float32 in native order with no excluded values, the common case, by hand:
// 32 values a step, the mask packed from the comparisons in registers, and
// two chains of min and max so that their latency does not bound the loop
// (gcc's vectorisation of the generic loop ran at half of memcpy's speed,
// waiting on one min chain). Comparisons are ordered, so NaN is neither
// valid nor in range, as in the generic loop. Without a valid range, valid
// means "not NaN", and min/max skip NaN by operand order (minps returns its
// second operand when either is NaN).
template <bool AnyValue>
void threshold_f32_avx2(const float* v, std::int64_t n, std::uint8_t* __restrict out, const Bounds<float>& b,
                        std::uint32_t& valid, std::uint32_t& inside_count, float& lowest_seen, float& highest_seen) {
  const __m256 lo = _mm256_set1_ps(b.lo), hi = _mm256_set1_ps(b.hi);
  [[maybe_unused]] const __m256 vmin = _mm256_set1_ps(b.valid_min), vmax = _mm256_set1_ps(b.valid_max);
  const __m256 top = _mm256_set1_ps(std::numeric_limits<float>::infinity());
  const __m256 bottom = _mm256_set1_ps(-std::numeric_limits<float>::infinity());
  const __m256i order = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7), one = _mm256_set1_epi8(1);
  __m256 low[2] = {top, top}, high[2] = {bottom, bottom};
  __m256i n_valid = _mm256_setzero_si256(), n_inside = _mm256_setzero_si256();
  std::int64_t i = 0;
  for (; i + 32 <= n; i += 32) {
    __m256i in_range[4];
    for (int k = 0; k < 4; ++k) {
      const __m256 x = _mm256_loadu_ps(v + i + 8 * k);
      __m256 ok;
      if constexpr (AnyValue) {
        ok = _mm256_cmp_ps(x, x, _CMP_ORD_Q);
        low[k & 1] = _mm256_min_ps(x, low[k & 1]);
        high[k & 1] = _mm256_max_ps(x, high[k & 1]);
      } else {
        ok = _mm256_and_ps(_mm256_cmp_ps(x, vmin, _CMP_GE_OQ), _mm256_cmp_ps(x, vmax, _CMP_LE_OQ));
        low[k & 1] = _mm256_min_ps(low[k & 1], _mm256_blendv_ps(top, x, ok));
        high[k & 1] = _mm256_max_ps(high[k & 1], _mm256_blendv_ps(bottom, x, ok));
      }
      const __m256 inside =
          _mm256_and_ps(ok, _mm256_and_ps(_mm256_cmp_ps(x, lo, _CMP_GE_OQ), _mm256_cmp_ps(x, hi, _CMP_LE_OQ)));
      n_valid = _mm256_sub_epi32(n_valid, _mm256_castps_si256(ok));  // -1 per valid lane
      in_range[k] = _mm256_castps_si256(inside);
      n_inside = _mm256_sub_epi32(n_inside, in_range[k]);
    }
    const __m256i words =
        _mm256_packs_epi16(_mm256_packs_epi32(in_range[0], in_range[1]), _mm256_packs_epi32(in_range[2], in_range[3]));
    const __m256i bytes = _mm256_and_si256(_mm256_permutevar8x32_epi32(words, order), one);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + i), bytes);
  }
  alignas(32) float lows[8], highs[8];
  alignas(32) std::uint32_t valids[8], insides[8];
  _mm256_store_ps(lows, _mm256_min_ps(low[0], low[1]));
  _mm256_store_ps(highs, _mm256_max_ps(high[0], high[1]));
  _mm256_store_si256(reinterpret_cast<__m256i*>(valids), n_valid);
  _mm256_store_si256(reinterpret_cast<__m256i*>(insides), n_inside);
  float l = std::numeric_limits<float>::infinity(), h = -std::numeric_limits<float>::infinity();
  std::uint32_t nv = 0, ni = 0;
  for (int k = 0; k < 8; ++k) {
    l = std::min(l, lows[k]);
    h = std::max(h, highs[k]);
    nv += valids[k];
    ni += insides[k];
  }
  for (; i < n; ++i) {  // the tail
    const float x = v[i];
    const bool ok = x >= b.valid_min && x <= b.valid_max;
    const bool inside = ok && x >= b.lo && x <= b.hi;
    out[i] = static_cast<std::uint8_t>(inside);
    nv += ok;
    ni += inside;
    if (ok) l = std::min(l, x), h = std::max(h, x);
  }
  valid = nv;
  inside_count = ni;
  lowest_seen = std::min(lowest_seen, l);
  highest_seen = std::max(highest_seen, h);
}

template <>
void threshold_chunk<float, false, false>(const std::byte* in, std::int64_t n, std::uint8_t* __restrict out,
                                          const Bounds<float>& b, std::uint32_t& valid, std::uint32_t& inside_count,
                                          float& lowest_seen, float& highest_seen) {
  const float* v = reinterpret_cast<const float*>(in);
  const bool any_value =
      b.valid_min == -std::numeric_limits<float>::infinity() && b.valid_max == std::numeric_limits<float>::infinity();
  if (any_value)
    threshold_f32_avx2<true>(v, n, out, b, valid, inside_count, lowest_seen, highest_seen);
  else
    threshold_f32_avx2<false>(v, n, out, b, valid, inside_count, lowest_seen, highest_seen);
}
#endif

// Bin of every voxel of a chunk (vectorised; voxels outside the mask go to
// a discard bin), then a scatter that skips groups of 16 voxels with none
// in the mask, which real data, being smooth, has in long stretches.
template <class T, bool Swap>
void histogram_chunk(const std::byte* in, std::int64_t n, const std::uint8_t* mask, const Bounds<T>& b,
                     std::uint32_t (&histogram)[kSubHistograms][Stats::bins + 1]) {
  using Real = BinReal<T>;
  const Real origin = static_cast<Real>(b.bin_origin), scale = static_cast<Real>(b.bin_scale);
  alignas(64) std::int32_t bins[kChunk];
#pragma omp simd
  for (std::int64_t i = 0; i < n; ++i) {
    Real x = (static_cast<Real>(load<T, Swap>(in, i)) - origin) * scale;
    x = x > Real(0) ? x : Real(0);  // NaN lands here too
    x = x < Real(Stats::bins - 1) ? x : Real(Stats::bins - 1);
    bins[i] = mask[i] ? static_cast<std::int32_t>(x) : Stats::bins;
  }
  // Eight interleaved histograms keep increments of one bin (neighbours in
  // smooth data share bins) from waiting on each other through memory.
  std::int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    std::uint64_t first, second;
    std::memcpy(&first, mask + i, 8);
    std::memcpy(&second, mask + i + 8, 8);
    if ((first | second) == 0) continue;
    for (std::int64_t j = i; j < i + 16; j += kSubHistograms)
      for (int k = 0; k < kSubHistograms; ++k) ++histogram[k][bins[j + k]];
  }
  for (; i < n; ++i) ++histogram[0][bins[i]];
}

template <class T, bool Swap, bool HasFill>
void threshold_loop(const std::byte* input, std::int64_t count, std::uint8_t* mask, const Bounds<T>& b, bool binned,
                    Stats& stats) {
  T lowest_seen =
      std::numeric_limits<T>::has_infinity ? std::numeric_limits<T>::infinity() : std::numeric_limits<T>::max();
  T highest_seen =
      std::numeric_limits<T>::has_infinity ? -std::numeric_limits<T>::infinity() : std::numeric_limits<T>::lowest();
  std::uint64_t valid = 0, in_range = 0;
  std::uint32_t histogram[kSubHistograms][Stats::bins + 1] = {};
  for (std::int64_t begin = 0; begin < count; begin += kChunk) {
    const std::int64_t n = std::min(kChunk, count - begin);
    const std::byte* in = input + begin * static_cast<std::int64_t>(sizeof(T));
    std::uint32_t chunk_valid = 0, chunk_in = 0;
    threshold_chunk<T, Swap, HasFill>(in, n, mask + begin, b, chunk_valid, chunk_in, lowest_seen, highest_seen);
    valid += chunk_valid;
    in_range += chunk_in;
    if (binned && chunk_in > 0) histogram_chunk<T, Swap>(in, n, mask + begin, b, histogram);
    // Keep the 32-bit sub-histograms far from overflow.
    if ((begin / kChunk) % 256 == 255) {
      for (auto& sub : histogram)
        for (int bin = 0; bin < Stats::bins; ++bin) {
          stats.histogram[static_cast<std::size_t>(bin)] += sub[bin];
          sub[bin] = 0;
        }
    }
  }
  stats.voxels += static_cast<std::uint64_t>(count);
  stats.valid += valid;
  stats.in_range += in_range;
  for (auto& sub : histogram)
    for (int bin = 0; bin < Stats::bins; ++bin) stats.histogram[static_cast<std::size_t>(bin)] += sub[bin];
  if (valid > 0) {
    const bool first = stats.valid == valid;
    stats.min = first ? static_cast<double>(lowest_seen) : std::min(stats.min, static_cast<double>(lowest_seen));
    stats.max = first ? static_cast<double>(highest_seen) : std::max(stats.max, static_cast<double>(highest_seen));
  }
}

template <class T, bool Swap>
void run_typed(const std::byte* input, std::int64_t count, std::uint8_t* mask, const Threshold& threshold, bool binned,
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
  if (b.has_fill)
    threshold_loop<T, Swap, true>(input, count, mask, b, binned, stats);
  else
    threshold_loop<T, Swap, false>(input, count, mask, b, binned, stats);
}

template <class T>
void run_dispatch(const std::byte* input, std::int64_t count, bool swapped, std::uint8_t* mask,
                  const Threshold& threshold, bool binned, Stats& stats) {
  if (swapped)
    run_typed<T, true>(input, count, mask, threshold, binned, stats);
  else
    run_typed<T, false>(input, count, mask, threshold, binned, stats);
}

inline void run_kernel(io::DType dtype, const std::byte* input, std::int64_t count, bool swapped, std::uint8_t* mask,
                       const Threshold& threshold, bool binned, Stats& stats) {
  io::visit_dtype(dtype, [&]<class T>(std::type_identity<T>) {
    // A one-byte value has no byte order to swap.
    run_dispatch<T>(input, count, sizeof(T) > 1 && swapped, mask, threshold, binned, stats);
  });
}
