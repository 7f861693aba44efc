// SPDX-License-Identifier: MIT
#pragma once

#include <cstdint>

namespace volseg::io {

// std::byteswap is C++23; gcc 12 does not have it.
inline std::uint16_t byteswap(std::uint16_t v) { return __builtin_bswap16(v); }
inline std::uint32_t byteswap(std::uint32_t v) { return __builtin_bswap32(v); }
inline std::uint64_t byteswap(std::uint64_t v) { return __builtin_bswap64(v); }

}  // namespace volseg::io
