// SPDX-License-Identifier: MIT
// The decoder's loops (decode.cpp), compiled once per instruction set
// (decode.cpp for the x86-64 baseline, decode_avx2.cpp); Decoder picks one
// at run time. Included inside a namespace after kernel_impl.inl (make_bounds,
// load) and the headers that one needs.

struct Packing {
  bool packed = false;
  double scale = 1, offset = 0;
};

template <class T, class Out, bool HasFill, bool Packed>
void decode_loop(const std::byte* in, std::int64_t count, Out* __restrict out, const Bounds<T>& b,
                 const Packing& packing) {
  const T valid_min = b.valid_min, valid_max = b.valid_max, fill = b.fill, missing = b.missing;
  const double scale = packing.scale, offset = packing.offset;
  constexpr Out nan = std::numeric_limits<Out>::quiet_NaN();
  if constexpr (std::is_floating_point_v<T> && sizeof(T) <= sizeof(Out) && !Packed) {
    // Floats widened (exactly) first and tested in Out, with x != fill as
    // (x < fill) | (x > fill) (fill and missing are never NaN here, and a
    // NaN x fails the range test): a loop GCC vectorises, where the form
    // below, mixing widths and != on floats, runs a voxel at a time (4x
    // slower; --expr decodes every operand this way).
    const Out lo = valid_min, hi = valid_max, f = fill, m = missing;
    for (std::int64_t i = 0; i < count; ++i) {
      const Out x = static_cast<Out>(load<T, false>(in, i));
      bool ok = (x >= lo) & (x <= hi);
      if constexpr (HasFill) ok = ok & ((x < f) | (x > f)) & ((x < m) | (x > m));
      out[i] = ok ? x : nan;
    }
    return;
  }
#pragma omp simd
  for (std::int64_t i = 0; i < count; ++i) {
    const T v = load<T, false>(in, i);
    bool ok = (v >= valid_min) & (v <= valid_max);  // false for NaN
    if constexpr (HasFill) ok = ok & (v != fill) & (v != missing);
    Out value;
    if constexpr (Packed)
      value = static_cast<Out>(static_cast<double>(v) * scale + offset);
    else
      value = static_cast<Out>(v);
    out[i] = ok ? value : nan;
  }
}

template <class T, class Out>
void decode_typed(const io::VolumeInfo& info, const void* values, std::int64_t count, Out* out) {
  const Threshold validity{0, 0, info.fill_value, info.valid_range, info.missing_value};
  const Bounds<T> b = make_bounds<T>(validity);
  if (b.empty) {  // a valid range no value of T reaches: nothing is valid
    std::fill(out, out + count, std::numeric_limits<Out>::quiet_NaN());
    return;
  }
  const Packing packing{info.scale_factor.has_value() || info.add_offset.has_value(), info.scale_factor.value_or(1.0),
                        info.add_offset.value_or(0.0)};
  const auto* in = static_cast<const std::byte*>(values);
  if (b.has_fill) {
    if (packing.packed)
      decode_loop<T, Out, true, true>(in, count, out, b, packing);
    else
      decode_loop<T, Out, true, false>(in, count, out, b, packing);
  } else {
    if (packing.packed)
      decode_loop<T, Out, false, true>(in, count, out, b, packing);
    else
      decode_loop<T, Out, false, false>(in, count, out, b, packing);
  }
}

template <class Out>
void decode(const io::VolumeInfo& info, const void* values, std::int64_t count, Out* out) {
  if (count < 0) throw Error("decode: negative count " + std::to_string(count));
  io::visit_dtype(info.dtype, [&]<class T>(std::type_identity<T>) { decode_typed<T>(info, values, count, out); });
}
