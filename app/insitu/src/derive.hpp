// SPDX-License-Identifier: MIT
// --expr and --where in situ: the step's field as the expression of the
// published arrays computes it (segment's Expression, as volseg segment
// --expr runs it over a file's variables).
#pragma once

#include <string>
#include <vector>

#include "volseg/insitu/insitu.hpp"
#include "volseg/segment/expression.hpp"

namespace volseg::insitu::detail {

// The field whose values are the expression's over the published arrays
// (variable names field.values, field.arrays the others), float32 in derived
// (resized; the returned field points into it); NaN where an operand is
// NaN. Throws volseg::Error naming an unknown variable with its column.
Field derive_field(segment::Expression& expression, const std::string& variable, const Field& field,
                   std::vector<float>& derived);

}  // namespace volseg::insitu::detail
