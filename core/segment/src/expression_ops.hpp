// SPDX-License-Identifier: MIT
// The block program's operations (expression_program.hpp), and their loops
// built for two instruction sets (expression_ops.inl, in
// expression_ops_generic.cpp and expression_ops_avx2.cpp); Program picks one
// at run time, as the threshold kernel does.
#pragma once

#include <cstddef>
#include <cstdint>

#include "volseg/segment/expression_program.hpp"

namespace volseg::segment::expression {

enum class Program::Op : std::uint8_t {
  add,
  sub,
  mul,
  div,
  pow,
  lt,
  le,
  gt,
  ge,
  eq,
  ne,
  land,
  lor,
  neg,
  select,  // operators
  sin,
  cos,
  tan,
  asin,
  acos,
  atan,
  atan2,
  sinh,
  cosh,
  tanh,
  asinh,
  acosh,
  atanh,
  log2,
  log10,
  ln,
  exp,
  sqrt,
  sign,
  rint,
  abs,
  sum,
  avg,
  min,
  max,
};

namespace detail {

// out[j] = op(sources[0][j], ..., sources[arity-1][j]) for j < n.
void apply_generic(Program::Op op, const double* const* sources, std::size_t arity, std::int64_t n, double* out);
void apply_generic(Program::Op op, const float* const* sources, std::size_t arity, std::int64_t n, float* out);
void apply_avx2(Program::Op op, const double* const* sources, std::size_t arity, std::int64_t n, double* out);
void apply_avx2(Program::Op op, const float* const* sources, std::size_t arity, std::int64_t n, float* out);

// out[j] = result[j] as float (condition: 1 where it is neither 0 nor NaN,
// else 0), or NaN where any input fails its test valid[i].
void finish_generic(const double* result, const double* const* inputs, const Valid<double>* valid, std::size_t count,
                    std::int64_t n, bool condition, float* out);
void finish_generic(const float* result, const float* const* inputs, const Valid<float>* valid, std::size_t count,
                    std::int64_t n, bool condition, float* out);
void finish_avx2(const double* result, const double* const* inputs, const Valid<double>* valid, std::size_t count,
                 std::int64_t n, bool condition, float* out);
void finish_avx2(const float* result, const float* const* inputs, const Valid<float>* valid, std::size_t count,
                 std::int64_t n, bool condition, float* out);

}  // namespace detail
}  // namespace volseg::segment::expression
