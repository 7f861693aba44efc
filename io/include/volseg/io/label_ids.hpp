// SPDX-License-Identifier: MIT
// A labels volume's values as ids: unsigned 64-bit, from and to any integer
// type. Every reader of labels (edit, mesh, the session's slices, surfaces
// and edits in place) goes through these, so all of them refuse what one
// refuses.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "volseg/io/types.hpp"

namespace volseg::io {

// Widens n labels of type dtype at `in` to ids at `out`. Throws
// volseg::Error naming `what` (the labels' file) for a float type or a
// negative label: ids are >= 0.
void widen_labels(DType dtype, const void* in, std::uint64_t* out, std::size_t n, std::string_view what);

// The id of the one label at `value` (host byte order), as widen_labels.
std::uint64_t label_id(const std::byte* value, DType dtype, std::string_view what);

// Narrows n ids to labels of type dtype (an integer type that holds them).
void narrow_labels(DType dtype, const std::uint64_t* in, void* out, std::size_t n);

}  // namespace volseg::io
