// SPDX-License-Identifier: MIT
// The decoder's loops built for AVX2 (see decode_impl.inl).
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

namespace volseg::segment::detail {
namespace {
#include "kernel_impl.inl"

#include "decode_impl.inl"
}  // namespace

void decode_avx2(const io::VolumeInfo& info, const void* values, std::int64_t count, float* out) {
  decode(info, values, count, out);
}

void decode_avx2(const io::VolumeInfo& info, const void* values, std::int64_t count, double* out) {
  decode(info, values, count, out);
}

}  // namespace volseg::segment::detail
