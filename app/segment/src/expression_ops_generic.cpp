// SPDX-License-Identifier: MIT
// The block program's loops built for the x86-64 baseline (see expression_ops.inl).
#include <algorithm>
#include <cmath>

#include "expression_ops.hpp"

namespace volseg::segment::expression::detail {
namespace {
#include "expression_ops.inl"
}  // namespace

void apply_generic(Program::Op op, const double* const* sources, std::size_t arity, std::int64_t n, double* out) {
  apply(op, sources, arity, n, out);
}

void apply_generic(Program::Op op, const float* const* sources, std::size_t arity, std::int64_t n, float* out) {
  apply(op, sources, arity, n, out);
}

void finish_generic(const double* result, const double* const* inputs, const Valid<double>* valid,
                    std::size_t count, std::int64_t n, bool condition,
                    float* out) {
  finish(result, inputs, valid, count, n, condition, out);
}

void finish_generic(const float* result, const float* const* inputs, const Valid<float>* valid,
                    std::size_t count, std::int64_t n, bool condition,
                    float* out) {
  finish(result, inputs, valid, count, n, condition, out);
}

}  // namespace volseg::segment::expression::detail
