// SPDX-License-Identifier: MIT
// The block evaluator behind --expr and --where gives what muparser gives,
// voxel for voxel: on a list of expressions that exercise each operator's
// precedence and associativity, each function and constant, and on
// thousands of random expressions over three variables.
#include "volseg/segment/expression_program.hpp"

#include <gtest/gtest.h>
#include <muParser.h>

#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "expression_ops.hpp"  // core/segment/src: both builds of the loops
#include "volseg/io/error.hpp"

namespace {

using volseg::segment::expression::kBlock;
using volseg::segment::expression::Program;

struct Inputs {
  std::vector<std::vector<double>> values;
  explicit Inputs(std::int64_t count, unsigned seed) : values(3, std::vector<double>(static_cast<std::size_t>(count))) {
    std::mt19937 random(seed);
    std::uniform_real_distribution<double> uniform(-3, 3);
    for (auto& v : values)
      for (std::size_t j = 0; j < v.size(); ++j) {
        // Whole numbers and zeros too, so that ==, sign and rint's halves are met.
        const int kind = static_cast<int>(random() % 8);
        v[j] = kind == 0 ? 0.0 : kind == 1 ? std::round(uniform(random)) : kind == 2 ? 0.5 : uniform(random);
      }
  }
};

// muparser's values of text at each voxel, one Eval each.
// Names k0, k1, ... stand for kConstants' values (see random_expression).
const double kConstants[] = {2, 0.5, 3.141592653589, 0.3, 0};

std::vector<double> muparser_values(const std::string& text, Inputs& inputs) {
  mu::Parser parser;
  double u = 0, v = 0, w = 0;
  parser.DefineVar("u", &u);
  parser.DefineVar("v", &v);
  parser.DefineVar("w", &w);
  double constants[std::size(kConstants)];
  for (std::size_t i = 0; i < std::size(kConstants); ++i) {
    constants[i] = kConstants[i];
    parser.DefineVar("k" + std::to_string(i), &constants[i]);
  }
  parser.SetExpr(text);
  std::vector<double> result(inputs.values[0].size());
  for (std::size_t j = 0; j < result.size(); ++j) {
    u = inputs.values[0][j];
    v = inputs.values[1][j];
    w = inputs.values[2][j];
    result[j] = parser.Eval();
  }
  return result;
}

std::vector<double> program_values(const std::string& text, Inputs& inputs) {
  mu::Parser parser;
  Program program(text, {"u", "v", "w"}, parser.GetConst());
  const auto count = static_cast<std::int64_t>(inputs.values[0].size());
  std::vector<double> result(static_cast<std::size_t>(count));
  for (std::int64_t at = 0; at < count; at += kBlock) {
    const double* pointers[3];
    for (int i = 0; i < 3; ++i) pointers[i] = inputs.values[static_cast<std::size_t>(i)].data() + at;
    program.evaluate(pointers, std::min(kBlock, count - at), result.data() + at);
  }
  return result;
}

// Equal, NaN for NaN, within a few ulps (muparser folds and reorders some
// constants: 2*u*3 may be 6*u there). reference is text for muparser, the
// same but with k0, k1, ... for the constants when given.
void expect_same(const std::string& text, Inputs& inputs, const std::string& reference = "") {
  const auto want = muparser_values(reference.empty() ? text : reference, inputs);
  const auto got = program_values(text, inputs);
  int shown = 0;
  for (std::size_t j = 0; j < want.size() && shown < 3; ++j) {
    const bool same = (std::isnan(want[j]) && std::isnan(got[j])) || want[j] == got[j] ||
                      std::fabs(want[j] - got[j]) <= 1e-12 * std::max(1.0, std::fabs(want[j]));
    if (!same) {
      ++shown;
      ADD_FAILURE() << text << " at u=" << inputs.values[0][j] << " v=" << inputs.values[1][j]
                    << " w=" << inputs.values[2][j] << ": muparser " << want[j] << ", program " << got[j];
    }
  }
}

TEST(ExpressionProgram, EachOperatorFunctionAndConstantAsMuparser) {
  Inputs inputs(3000, 1);  // past two blocks, the last one partial
  for (const char* text : {"u",
                           "u+v*w",
                           "(u+v)*w",
                           "u-v-w",
                           "u/v/w",
                           "u^2",
                           "2^3^u",
                           "-u^2",
                           "-2^-u",
                           "u*-v",
                           "+u",
                           "u^-v",
                           "u<v",
                           "u<=v",
                           "u>v",
                           "u>=v",
                           "u==v",
                           "u!=v",
                           "u<v<w",
                           "u>0==1",
                           "u && v",
                           "u || v && w",
                           "u>0 || v>0",
                           "u ? v : w",
                           "u>0 ? v : w>0 ? 1 : 2",
                           "(u>0 ? v : w)*2",
                           "sin(u)",
                           "cos(u)",
                           "tan(u)",
                           "asin(u)",
                           "acos(u)",
                           "atan(u)",
                           "atan2(u,v)",
                           "sinh(u)",
                           "cosh(u)",
                           "tanh(u)",
                           "asinh(u)",
                           "acosh(u)",
                           "atanh(u)",
                           "log2(u)",
                           "log10(u)",
                           "log(u)",
                           "ln(u)",
                           "exp(u)",
                           "sqrt(u)",
                           "sign(u)",
                           "rint(u)",
                           "abs(u)",
                           "sum(u,v,w)",
                           "avg(u,v)",
                           "min(u,v,w)",
                           "max(u,v,w)",
                           "min(u)",
                           "_pi*u",
                           "_e^u",
                           "2*_pi",
                           "1e3*u+.5",
                           "sqrt(u*u + v*v + w*w)",
                           "u > 1 && v < 0.5",
                           "sqrt(-1)*u",
                           "u/0",
                           "(0/0) && u",
                           "max(0/0, u)",
                           "min(u, 0/0)",
                           "3"})
    expect_same(text, inputs);
}

// A random expression over u, v, w of the given depth, from every operator
// and function, spaced or not. Constants are written "#i" for kConstants[i]:
// the program is given them as numbers, muparser as variables k0, k1, ...
// (muparser's own folding of constants takes && and || in integers, so that
// 0.5 || 0.5 is 0 there, while its evaluation takes them as C does, 0.5
// being true; the program does as muparser's evaluation does).
std::string random_expression(std::mt19937& random, int depth) {
  auto pick = [&](int n) { return static_cast<int>(random() % static_cast<unsigned>(n)); };
  if (depth == 0 || pick(4) == 0) {
    static const char* leaves[] = {"u", "v", "w", "#0", "#1", "#2", "#3", "#4"};
    return leaves[pick(8)];
  }
  static const char* binary[] = {"+", "-", "*", "/", "^", "<", "<=", ">", ">=", "==", "!=", "&&", "||"};
  static const char* unary[] = {"sin", "cos", "atan", "tanh", "exp", "sqrt", "sign", "rint", "abs", "log"};
  const std::string a = random_expression(random, depth - 1);
  const std::string b = random_expression(random, depth - 1);
  const char* space = pick(2) ? " " : "";
  switch (pick(8)) {
    case 0:
      return pick(2) ? "-(" + a + ")" : "-" + a;  // "--u" muparser refuses
    case 1:
      return std::string(unary[pick(10)]) + "(" + a + ")";
    case 2:
      return "(" + a + ")";
    case 3:
      return "min(" + a + "," + b + ")";
    case 4:
      return a + space + "?" + space + b + space + ":" + space + random_expression(random, depth - 1);
    case 5:
      return "atan2(" + a + ", " + b + ")";
    default:
      return a + space + binary[pick(13)] + space + b;
  }
}

TEST(ExpressionProgram, RandomExpressionsAsMuparser) {
  std::mt19937 random(2026);
  Inputs inputs(1500, 2);
  int compared = 0;
  for (int n = 0; n < 2000; ++n) {
    const std::string pattern = random_expression(random, 4);
    std::string text, reference;
    for (std::size_t at = 0; at < pattern.size(); ++at) {
      if (pattern[at] != '#') {
        text += pattern[at];
        reference += pattern[at];
        continue;
      }
      const int i = pattern[++at] - '0';
      static const char* literals[] = {"2", "0.5", "_pi", "3e-1", "0"};
      text += literals[i];
      reference += "k" + std::to_string(i);
    }
    try {
      mu::Parser check;
      check.SetExpr(text);
      check.GetUsedVar();  // parses: what muparser refuses is not compared
    } catch (const mu::Parser::exception_type&) {
      continue;
    }
    expect_same(text, inputs, reference);
    ++compared;
    if (HasFailure()) break;
  }
  EXPECT_GT(compared, 1500);
}

// Float32 operands are computed in float (as numpy computes float32 arrays):
// on well-conditioned expressions, within a few float ulps of the double
// result; comparisons and conditions the same wherever the double result is
// not within that of the boundary.
TEST(ExpressionProgram, FloatComputesWhatDoubleDoesToFloatPrecision) {
  Inputs inputs(2000, 3);
  std::vector<std::vector<float>> singles;
  for (const auto& v : inputs.values) singles.emplace_back(v.begin(), v.end());
  for (auto& v : inputs.values)  // the double inputs are the float ones, exactly
    for (double& x : v) x = static_cast<float>(x);
  mu::Parser parser;
  for (const char* text : {"sqrt(u*u + v*v + w*w)", "u + v*w", "exp(u) - 1", "abs(u) * _pi", "min(u, v, w)",
                           "u > 0.5 && v < 0", "u > 0 ? v : w", "atan2(u, v)", "rint(u * 3)", "sum(u, v, w) / 3"}) {
    Program program(text, {"u", "v", "w"}, parser.GetConst());
    const auto count = static_cast<std::int64_t>(singles[0].size());
    int mismatched = 0;
    for (std::int64_t at = 0; at < count; at += kBlock) {
      const std::int64_t n = std::min(kBlock, count - at);
      const float* fs[3] = {singles[0].data() + at, singles[1].data() + at, singles[2].data() + at};
      const double* ds[3] = {inputs.values[0].data() + at, inputs.values[1].data() + at, inputs.values[2].data() + at};
      std::vector<float> f(static_cast<std::size_t>(n));
      std::vector<double> d(static_cast<std::size_t>(n));
      program.evaluate(fs, n, f.data());
      program.evaluate(ds, n, d.data());
      for (std::int64_t j = 0; j < n; ++j) {
        const double want = d[static_cast<std::size_t>(j)], got = f[static_cast<std::size_t>(j)];
        if (!(std::fabs(want - got) <= 4e-7 * std::max(1.0, std::fabs(want))) && !(std::isnan(want) && std::isnan(got)))
          ++mismatched;
      }
    }
    // rint(u*3) and comparisons flip only at a tie: none among these inputs' few.
    EXPECT_LE(mismatched, 2) << text;
  }
}

// The AVX2 build of every operation gives, bit for bit, what the baseline
// build gives (this machine runs one of them in every other test).
TEST(ExpressionProgram, BothBuildsOfEveryOperationAgree) {
  if (!__builtin_cpu_supports("avx2")) GTEST_SKIP() << "no AVX2 here";
  using volseg::segment::expression::detail::apply_avx2;
  using volseg::segment::expression::detail::apply_generic;
  Inputs inputs(777, 4);
  for (auto& v : inputs.values) {  // the edges too
    v[1] = NAN;
    v[2] = INFINITY;
    v[3] = -0.0;
  }
  const double* sources[3] = {inputs.values[0].data(), inputs.values[1].data(), inputs.values[2].data()};
  for (int code = 0; code <= static_cast<int>(Program::Op::max); ++code) {
    const auto op = static_cast<Program::Op>(code);
    const std::size_t arity = op == Program::Op::select ? 3 : 2;
    std::vector<double> a(777), b(777);
    apply_generic(op, sources, arity, 777, a.data());
    apply_avx2(op, sources, arity, 777, b.data());
    EXPECT_EQ(std::memcmp(a.data(), b.data(), a.size() * sizeof(double)), 0) << "operation " << code;
  }
}

TEST(ExpressionProgram, FoldsConstantsAndKeepsOneStepAnOperation) {
  mu::Parser parser;
  EXPECT_EQ(Program("sqrt(u*u + v*v + w*w)", {"u", "v", "w"}, parser.GetConst()).describe(),
            "mul mul add mul add sqrt");
  EXPECT_EQ(Program("u * (2*_pi) + 3^2", {"u"}, parser.GetConst()).describe(), "mul add");
}

TEST(ExpressionProgram, RefusesWhatItCannotCompileWithTheColumn) {
  mu::Parser parser;
  try {
    Program("u + foo(v)", {"u", "v"}, parser.GetConst());
    FAIL() << "an unknown function was compiled";
  } catch (const volseg::Error& e) {
    EXPECT_NE(std::string(e.what()).find("unknown function 'foo' at column 5"), std::string::npos) << e.what();
  }
  EXPECT_THROW(Program("u +", {"u"}, parser.GetConst()), volseg::Error);
  EXPECT_THROW(Program("u v", {"u", "v"}, parser.GetConst()), volseg::Error);
}

}  // namespace
