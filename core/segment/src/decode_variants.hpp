// SPDX-License-Identifier: MIT
#pragma once

#include <cstdint>

#include "volseg/io/types.hpp"

namespace volseg::segment::detail {

// The decoder's loops (decode_impl.inl) built for AVX2; decode.cpp has the
// baseline build and picks.
void decode_avx2(const io::VolumeInfo& info, const void* values, std::int64_t count, float* out);
void decode_avx2(const io::VolumeInfo& info, const void* values, std::int64_t count, double* out);

}  // namespace volseg::segment::detail
