// SPDX-License-Identifier: MIT
#pragma once

#include "volseg/segment/threshold.hpp"

namespace volseg::segment::detail {

// The same loops (kernel_impl.inl) built for two instruction sets.
void run_kernel_generic(io::DType dtype, const std::byte* input, std::int64_t count, bool swapped, std::uint8_t* mask,
                        const Threshold& threshold, bool histogram, Stats& stats);
void run_kernel_avx2(io::DType dtype, const std::byte* input, std::int64_t count, bool swapped, std::uint8_t* mask,
                     const Threshold& threshold, bool histogram, Stats& stats);

}  // namespace volseg::segment::detail
