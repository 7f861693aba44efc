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

#include "decode_variants.hpp"
#include "volseg/io/byteswap.hpp"
#include "volseg/io/dtype_dispatch.hpp"
#include "volseg/io/error.hpp"
#include "volseg/segment/threshold.hpp"

namespace volseg::segment {
namespace decode_detail {

#include "kernel_impl.inl"

#include "decode_impl.inl"

}  // namespace decode_detail

Decoder::Decoder(const io::VolumeInfo& info) : info_(info) {
  if (info.scale_factor && *info.scale_factor == 0) throw Error("scale_factor is 0: the values cannot be unpacked");
  // Only what the decoder uses: the attribute map can be large.
  info_.attributes.clear();
}

namespace {
// One check, made once: the AVX2 build of the loops where the CPU has it.
bool avx2() {
  static const bool supported = __builtin_cpu_supports("avx2");
  return supported;
}
}  // namespace

void Decoder::to_float(const void* values, std::int64_t count, float* out) const {
  if (avx2())
    detail::decode_avx2(info_, values, count, out);
  else
    decode_detail::decode(info_, values, count, out);
}

void Decoder::to_double(const void* values, std::int64_t count, double* out) const {
  if (avx2())
    detail::decode_avx2(info_, values, count, out);
  else
    decode_detail::decode(info_, values, count, out);
}

std::optional<Decoder::InPlace> Decoder::in_place() const {
  if (info_.scale_factor || info_.add_offset) return std::nullopt;
  auto test = [&]<class T>(std::type_identity<T>) {
    const Threshold validity{0, 0, info_.fill_value, info_.valid_range, info_.missing_value};
    const decode_detail::Bounds<T> b = decode_detail::make_bounds<T>(validity);
    constexpr double nan = std::numeric_limits<double>::quiet_NaN();
    if (b.empty) return InPlace{1, 0, nan, nan};
    return InPlace{b.valid_min, b.valid_max, b.has_fill ? double{b.fill} : nan, b.has_fill ? double{b.missing} : nan};
  };
  if (info_.dtype == io::DType::f32) return test(std::type_identity<float>{});
  if (info_.dtype == io::DType::f64) return test(std::type_identity<double>{});
  return std::nullopt;
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
