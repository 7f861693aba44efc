// SPDX-License-Identifier: MIT
// The block program's loops built for AVX2 (see expression_ops.inl).
#include <algorithm>
#include <cmath>

#include "expression_ops.hpp"

namespace volseg::segment::expression::detail {
#define VOLSEG_OPS_BUILD avx2
#include "expression_ops.inl"
}  // namespace volseg::segment::expression::detail
