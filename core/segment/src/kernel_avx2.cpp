// SPDX-License-Identifier: MIT
#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <type_traits>

#include <immintrin.h>

#include "kernel_variants.hpp"
#include "volseg/io/byteswap.hpp"
#include "volseg/io/dtype_dispatch.hpp"

namespace volseg::segment::detail {
namespace {
#define VOLSEG_KERNEL_AVX2 1
#include "kernel_impl.inl"
}  // namespace

void run_kernel_avx2(io::DType dtype, const std::byte* input, std::int64_t count, bool swapped, std::uint8_t* mask,
                     const Threshold& threshold, bool histogram, Stats& stats) {
  run_kernel(dtype, input, count, swapped, mask, threshold, histogram, stats);
}

}  // namespace volseg::segment::detail
