// SPDX-License-Identifier: MIT
// A published block's memory: the box the rank owns inside the extent its
// values cover (the ghost layers included).
#pragma once

#include <cstddef>
#include <cstdint>

#include "volseg/io/types.hpp"

namespace volseg::insitu::detail {

// Where global point (z, y, x) sits in an array over `stored` (x fastest).
inline std::int64_t index_in(const io::Extent& stored, std::int64_t z, std::int64_t y, std::int64_t x) {
  return ((z - stored.offset[0]) * stored.count[1] + (y - stored.offset[1])) * stored.count[2] + (x - stored.offset[2]);
}

// Copies `extent` of a block stored over `stored` (elements of `size`
// bytes) into `out`, packed x fastest.
void copy_extent(const void* values, std::size_t size, const io::Extent& stored, const io::Extent& extent,
                 std::byte* out);

}  // namespace volseg::insitu::detail
