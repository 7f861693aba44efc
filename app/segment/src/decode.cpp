// SPDX-License-Identifier: MIT
// The decoder shares the threshold kernel's validity bounds (make_bounds in
// kernel_impl.inl): a voxel is valid here exactly when the kernel would count
// it as valid, because both test the stored value in its own type against the
// same bounds (64-bit integers are never rounded through a double for the
// test; only the valid result is converted).
#include "volseg/segment/decode.hpp"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <type_traits>

#include "volseg/io/byteswap.hpp"
#include "volseg/io/dtype_dispatch.hpp"
#include "volseg/io/error.hpp"
#include "volseg/segment/threshold.hpp"

namespace volseg::segment {
namespace decode_detail {

#include "kernel_impl.inl"

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
#pragma omp simd
  for (std::int64_t i = 0; i < count; ++i) {
    const T v = load<T, false>(in, i);
    bool ok = (v >= valid_min) & (v <= valid_max);  // false for NaN
    if constexpr (HasFill) ok = ok & (v != fill) & (v != missing);
    Out value;
    if constexpr (Packed) value = static_cast<Out>(static_cast<double>(v) * scale + offset);
    else value = static_cast<Out>(v);
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
    if (packing.packed) decode_loop<T, Out, true, true>(in, count, out, b, packing);
    else decode_loop<T, Out, true, false>(in, count, out, b, packing);
  } else {
    if (packing.packed) decode_loop<T, Out, false, true>(in, count, out, b, packing);
    else decode_loop<T, Out, false, false>(in, count, out, b, packing);
  }
}

template <class Out>
void decode(const io::VolumeInfo& info, const void* values, std::int64_t count, Out* out) {
  if (count < 0) throw Error("decode: negative count " + std::to_string(count));
  io::visit_dtype(info.dtype, [&]<class T>(std::type_identity<T>) { decode_typed<T>(info, values, count, out); });
}

}  // namespace decode_detail

Decoder::Decoder(const io::VolumeInfo& info) : info_(info) {
  if (info.scale_factor && *info.scale_factor == 0) throw Error("scale_factor is 0: the values cannot be unpacked");
  // Only what the decoder uses: the attribute map can be large.
  info_.attributes.clear();
}

void Decoder::to_float(const void* values, std::int64_t count, float* out) const {
  decode_detail::decode(info_, values, count, out);
}

void Decoder::to_double(const void* values, std::int64_t count, double* out) const {
  decode_detail::decode(info_, values, count, out);
}

bool Decoder::declared_range(double& min, double& max) const {
  if (!info_.valid_range) return false;
  const double scale = info_.scale_factor.value_or(1.0), offset = info_.add_offset.value_or(0.0);
  double a = (*info_.valid_range)[0] * scale + offset, b = (*info_.valid_range)[1] * scale + offset;
  if (a > b) std::swap(a, b);
  min = a;
  max = b;
  return true;
}

}  // namespace volseg::segment
