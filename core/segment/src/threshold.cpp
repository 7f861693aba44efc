// SPDX-License-Identifier: MIT
#include "volseg/segment/threshold.hpp"

#include "kernel_variants.hpp"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <limits>

#include "volseg/io/byteswap.hpp"
#include "volseg/io/error.hpp"

namespace volseg::segment {

ThresholdKernel::ThresholdKernel(io::DType dtype, const Threshold& threshold, bool histogram)
    : dtype_(dtype), threshold_(threshold), histogram_(histogram) {
  if (std::isnan(threshold.lo) || std::isnan(threshold.hi)) throw Error("thresholds must not be NaN");
  if (threshold.lo > threshold.hi)
    throw Error("lo > hi: the threshold range [" + std::to_string(threshold.lo) + ", " + std::to_string(threshold.hi) +
                "] is empty");
}

void ThresholdKernel::run(const std::byte* input, std::int64_t count, bool swapped, std::uint8_t* mask,
                          Stats& stats) const {
  // One check, made once: the AVX2 build of the loops where the CPU has it.
  static const bool avx2 = __builtin_cpu_supports("avx2");
  if (avx2)
    detail::run_kernel_avx2(dtype_, input, count, swapped, mask, threshold_, histogram_, stats);
  else
    detail::run_kernel_generic(dtype_, input, count, swapped, mask, threshold_, histogram_, stats);
}

}  // namespace volseg::segment
