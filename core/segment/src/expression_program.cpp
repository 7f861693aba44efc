// SPDX-License-Identifier: MIT
#include "volseg/segment/expression_program.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>

#include "expression_ops.hpp"
#include "volseg/io/error.hpp"

namespace volseg::segment::expression {
namespace {

struct Function {
  const char* name;
  Program::Op op;
  int arguments;  // -1: one or more
};

constexpr Function kFunctions[] = {
    {"sin", Program::Op::sin, 1},     {"cos", Program::Op::cos, 1},     {"tan", Program::Op::tan, 1},
    {"asin", Program::Op::asin, 1},   {"acos", Program::Op::acos, 1},   {"atan", Program::Op::atan, 1},
    {"atan2", Program::Op::atan2, 2}, {"sinh", Program::Op::sinh, 1},   {"cosh", Program::Op::cosh, 1},
    {"tanh", Program::Op::tanh, 1},   {"asinh", Program::Op::asinh, 1}, {"acosh", Program::Op::acosh, 1},
    {"atanh", Program::Op::atanh, 1}, {"log2", Program::Op::log2, 1},   {"log10", Program::Op::log10, 1},
    {"log", Program::Op::ln, 1},      {"ln", Program::Op::ln, 1},       {"exp", Program::Op::exp, 1},
    {"sqrt", Program::Op::sqrt, 1},   {"sign", Program::Op::sign, 1},   {"rint", Program::Op::rint, 1},
    {"abs", Program::Op::abs, 1},     {"sum", Program::Op::sum, -1},    {"avg", Program::Op::avg, -1},
    {"min", Program::Op::min, -1},    {"max", Program::Op::max, -1},
};

const char* op_name(Program::Op op) {
  using O = Program::Op;
  switch (op) {
    case O::add:
      return "add";
    case O::sub:
      return "sub";
    case O::mul:
      return "mul";
    case O::div:
      return "div";
    case O::pow:
      return "pow";
    case O::lt:
      return "lt";
    case O::le:
      return "le";
    case O::gt:
      return "gt";
    case O::ge:
      return "ge";
    case O::eq:
      return "eq";
    case O::ne:
      return "ne";
    case O::land:
      return "and";
    case O::lor:
      return "or";
    case O::neg:
      return "neg";
    case O::select:
      return "select";
    default:
      break;
  }
  for (const auto& f : kFunctions)
    if (f.op == op) return f.name;
  return "?";
}

}  // namespace

// A recursive descent over muparser's grammar, lowest precedence first:
// ?: (right to left), ||, &&, comparisons, + -, * /, a sign, ^ (right to
// left, above a sign: -2^2 is -4), then numbers, names and parentheses.
struct Program::Parser {
  Program& program;
  const std::string& text;
  const std::vector<std::string>& names;
  const std::map<std::string, double>& constants;
  std::size_t at = 0;

  [[noreturn]] void fail(const std::string& what) const {
    throw Error("expression '" + text + "': " + what + " at column " + std::to_string(at + 1));
  }
  void skip() {
    while (at < text.size() && std::isspace(static_cast<unsigned char>(text[at]))) ++at;
  }
  bool take(const char* token) {
    skip();
    const std::size_t n = std::char_traits<char>::length(token);
    if (text.compare(at, n, token) != 0) return false;
    at += n;
    return true;
  }

  int ternary() {
    const int condition = logical_or();
    if (!take("?")) return condition;
    const int yes = ternary();
    if (!take(":")) fail("':' expected");
    const int no = ternary();
    return program.emit(Op::select, {condition, yes, no});
  }
  int logical_or() {
    int left = logical_and();
    while (take("||")) left = program.emit(Op::lor, {left, logical_and()});
    return left;
  }
  int logical_and() {
    int left = comparison();
    while (take("&&")) left = program.emit(Op::land, {left, comparison()});
    return left;
  }
  int comparison() {
    int left = additive();
    for (;;) {
      Op op;
      if (take("<="))
        op = Op::le;
      else if (take(">="))
        op = Op::ge;
      else if (take("=="))
        op = Op::eq;
      else if (take("!="))
        op = Op::ne;
      else if (take("<"))
        op = Op::lt;
      else if (take(">"))
        op = Op::gt;
      else
        return left;
      left = program.emit(op, {left, additive()});
    }
  }
  int additive() {
    int left = multiplicative();
    for (;;) {
      if (take("+"))
        left = program.emit(Op::add, {left, multiplicative()});
      else if (take("-"))
        left = program.emit(Op::sub, {left, multiplicative()});
      else
        return left;
    }
  }
  int multiplicative() {
    int left = signed_power();
    for (;;) {
      if (take("*"))
        left = program.emit(Op::mul, {left, signed_power()});
      else if (take("/"))
        left = program.emit(Op::div, {left, signed_power()});
      else
        return left;
    }
  }
  int signed_power() {
    if (take("-")) return program.emit(Op::neg, {signed_power()});
    if (take("+")) return signed_power();
    return power();
  }
  int power() {
    const int base = primary();
    if (!take("^")) return base;
    return program.emit(Op::pow, {base, signed_power()});
  }
  int primary() {
    skip();
    if (at >= text.size()) fail("a value expected");
    const char c = text[at];
    if (c == '(') {
      ++at;
      const int inner = ternary();
      if (!take(")")) fail("')' expected");
      return inner;
    }
    if (std::isdigit(static_cast<unsigned char>(c)) || c == '.') {
      const char* begin = text.c_str() + at;
      char* end = nullptr;
      const double value = std::strtod(begin, &end);
      if (end == begin) fail("a number expected");
      at += static_cast<std::size_t>(end - begin);
      return program.constant(value);
    }
    auto word = [](char ch) { return std::isalnum(static_cast<unsigned char>(ch)) || ch == '_'; };
    const std::size_t begin = at;
    while (at < text.size() && word(text[at])) ++at;
    if (at == begin) fail("a value expected");
    const std::string name = text.substr(begin, at - begin);
    if (at < text.size() && text[at] == '(') {
      for (const auto& f : kFunctions)
        if (name == f.name) return call(f);
      at = begin;
      fail("unknown function '" + name + "'");
    }
    if (auto constant = constants.find(name); constant != constants.end()) return program.constant(constant->second);
    for (std::size_t i = 0; i < names.size(); ++i)
      if (names[i] == name) return static_cast<int>(i);
    at = begin;
    fail("unknown name '" + name + "'");
  }
  int call(const Function& f) {
    ++at;  // '('
    std::vector<int> arguments{ternary()};
    while (take(",")) arguments.push_back(ternary());
    if (!take(")")) fail("')' expected");
    if (f.arguments >= 0 && static_cast<int>(arguments.size()) != f.arguments)
      fail(std::string(f.name) + " takes " + std::to_string(f.arguments) + " argument(s)");
    return program.emit(f.op, std::move(arguments));
  }
};

Program::Program(const std::string& text, const std::vector<std::string>& names,
                 const std::map<std::string, double>& constants)
    : variables_(names.size()) {
  Parser parser{*this, text, names, constants};
  result_ = parser.ternary();
  parser.skip();
  if (parser.at != text.size()) parser.fail("unexpected '" + text.substr(parser.at, 1) + "'");
}

// Slots below variables_ are the inputs; the others are registers, constant
// ones filled once here.
int Program::constant(double value) {
  registers_.emplace_back(static_cast<std::size_t>(kBlock), value);
  float_registers_.emplace_back(static_cast<std::size_t>(kBlock), static_cast<float>(value));
  is_constant_.push_back(true);
  constant_value_.push_back(value);
  return static_cast<int>(variables_ + registers_.size() - 1);
}

int Program::emit(Op op, std::vector<int> sources) {
  const bool folds = std::all_of(sources.begin(), sources.end(), [&](int s) {
    return s >= static_cast<int>(variables_) && is_constant_[static_cast<std::size_t>(s) - variables_];
  });
  if (folds) {
    std::vector<const double*> values;
    for (int s : sources) values.push_back(&constant_value_[static_cast<std::size_t>(s) - variables_]);
    double value = 0;
    detail::apply_generic(op, values.data(), values.size(), 1, &value);
    return constant(value);
  }
  registers_.emplace_back(static_cast<std::size_t>(kBlock));
  float_registers_.emplace_back(static_cast<std::size_t>(kBlock));
  is_constant_.push_back(false);
  constant_value_.push_back(0);
  const int target = static_cast<int>(variables_ + registers_.size() - 1);
  steps_.push_back(Step{op, target, std::move(sources)});
  return target;
}

namespace {
// One check, made once: the AVX2 build of the loops where the CPU has it.
bool avx2() {
  static const bool supported = __builtin_cpu_supports("avx2");
  return supported;
}
}  // namespace

template <>
std::vector<std::vector<double>>& Program::registers<double>() {
  return registers_;
}

template <>
std::vector<std::vector<float>>& Program::registers<float>() {
  return float_registers_;
}

template <class T>
const T* Program::run_steps(const T* const* inputs, std::int64_t count) {
  const bool wide = avx2();
  auto& registers = this->registers<T>();
  auto slot = [&](int s) -> const T* {
    const auto index = static_cast<std::size_t>(s);
    return index < variables_ ? inputs[index] : registers[index - variables_].data();
  };
  std::vector<const T*> sources;
  for (const Step& step : steps_) {
    sources.clear();
    for (int s : step.sources) sources.push_back(slot(s));
    T* target = registers[static_cast<std::size_t>(step.target) - variables_].data();
    if (wide)
      detail::apply_avx2(step.op, sources.data(), sources.size(), count, target);
    else
      detail::apply_generic(step.op, sources.data(), sources.size(), count, target);
  }
  return slot(result_);
}

template <class T>
void Program::evaluate(const T* const* inputs, std::int64_t count, T* out) {
  const T* result = run_steps(inputs, count);
  std::copy(result, result + count, out);
}

template <class T>
void Program::run(const T* const* inputs, const Valid<T>* valid, std::int64_t count, bool condition, float* out) {
  const T* result = run_steps(inputs, count);
  if (avx2())
    detail::finish_avx2(result, inputs, valid, variables_, count, condition, out);
  else
    detail::finish_generic(result, inputs, valid, variables_, count, condition, out);
}

template void Program::evaluate(const float* const*, std::int64_t, float*);
template void Program::evaluate(const double* const*, std::int64_t, double*);
template void Program::run(const float* const*, const Valid<float>*, std::int64_t, bool, float*);
template void Program::run(const double* const*, const Valid<double>*, std::int64_t, bool, float*);

std::string Program::describe() const {
  std::string text;
  for (const Step& step : steps_) text += (text.empty() ? "" : " ") + std::string(op_name(step.op));
  return text;
}

}  // namespace volseg::segment::expression
