// SPDX-License-Identifier: MIT
// The evaluator behind --expr and --where: muparser's language (its
// operators, precedence, functions and constants), checked by muparser and
// compiled into a short program of array operations that runs over blocks
// of a few thousand voxels in registers that stay in cache, as numexpr does.
// muparser's own bulk mode interprets its byte code voxel by voxel (about
// 15 ns a voxel for a 3-variable expression); each operation here is one
// loop the compiler vectorizes, so evaluating costs less than decoding the
// operands (docs/results/expression_bench.md).
//
// Internal to the segment library (expression.cpp); a header so that the
// tests can compare it with muparser on any expression.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace volseg::segment::expression {

// Voxels a block holds: 4 KiB a double register, so that the registers of
// a short expression stay in the first-level cache.
inline constexpr std::int64_t kBlock = 512;

// The test an input's valid values pass (Decoder::InPlace, in T): lo <= v
// <= hi, v != fill and v != missing; NaN never passes. A decoded input's
// test is {-inf, inf, NaN, NaN}: only NaN is missing.
template <class T>
struct Valid {
  T lo, hi, fill, missing;
};

class Program {
 public:
  // Compiles text, which muparser has accepted, over the variables `names`
  // (the order of evaluate's inputs) and muparser's constants. Throws
  // volseg::Error on text it cannot compile (none that muparser accepts,
  // as its tests show).
  Program(const std::string& text, const std::vector<std::string>& names,
          const std::map<std::string, double>& constants);

  // out[j] = the expression at inputs[i][j], for j < count (count <= kBlock),
  // computed in T: double as muparser does, or float, twice as fast, where
  // the operands are float32 (as numpy computes float32 arrays).
  template <class T>
  void evaluate(const T* const* inputs, std::int64_t count, T* out);
  // The same as float, NaN where any input is not valid[i] (a missing
  // operand makes the voxel missing, whatever the expression makes of it); a
  // condition's value is 1 where it is neither 0 nor NaN, else 0.
  template <class T>
  void run(const T* const* inputs, const Valid<T>* valid, std::int64_t count, bool condition, float* out);

  // The operations, as text: "mul add sqrt" (for the tests).
  std::string describe() const;

  enum class Op : std::uint8_t;  // the operations (expression_program.cpp)

 private:
  struct Step {
    Op op;
    int target;
    std::vector<int> sources;
  };
  struct Parser;

  int constant(double value);
  int emit(Op op, std::vector<int> sources);
  template <class T>
  const T* run_steps(const T* const* inputs, std::int64_t count);  // the result's block
  template <class T>
  std::vector<std::vector<T>>& registers();

  std::vector<std::vector<double>> registers_;  // after the inputs, in slot order
  std::vector<std::vector<float>> float_registers_;
  std::vector<bool> is_constant_;
  std::vector<double> constant_value_;
  std::vector<Step> steps_;
  int result_ = -1;
  std::size_t variables_ = 0;
};

}  // namespace volseg::segment::expression
