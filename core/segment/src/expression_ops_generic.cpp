// SPDX-License-Identifier: MIT
// The block program's loops built for the x86-64 baseline (see expression_ops.inl).
#include <algorithm>
#include <cmath>

#include "expression_ops.hpp"

namespace volseg::segment::expression::detail {
#define VOLSEG_OPS_BUILD generic
#include "expression_ops.inl"
}  // namespace volseg::segment::expression::detail
