// SPDX-License-Identifier: MIT
// The block program's loops: included, inside namespace
// volseg::segment::expression::detail, by expression_ops_generic.cpp and
// expression_ops_avx2.cpp (built with -O3,
// -fno-math-errno, so that sqrt is one instruction, and -fno-trapping-math,
// so that a conversion may be made where its result is not kept).

namespace {

// What each operation does to n values. muparser's definitions: rint is
// floor(v + 0.5); sign of 0 (and NaN) is 0; && and || take NaN for true, as
// C does; min and max keep the first of equal or unordered values. Written
// with == rather than != (an unordered compare, a branch per value in GCC's
// eyes) so that every loop but the libm calls vectorises; the file is built
// with -fno-math-errno, so sqrt is one instruction.
template <class T>
void apply(Program::Op op, const T* const* s, std::size_t arity, std::int64_t n, T* __restrict out) {
  using O = Program::Op;
  constexpr T one = 1, zero = 0;
  const T* a = s[0];
  const T* b = arity > 1 ? s[1] : nullptr;
  auto unary = [&](auto f) {
    for (std::int64_t j = 0; j < n; ++j) out[j] = f(a[j]);
  };
  auto binary = [&](auto f) {
    for (std::int64_t j = 0; j < n; ++j) out[j] = f(a[j], b[j]);
  };
  switch (op) {
    case O::add:
      return binary([](T x, T y) { return x + y; });
    case O::sub:
      return binary([](T x, T y) { return x - y; });
    case O::mul:
      return binary([](T x, T y) { return x * y; });
    case O::div:
      return binary([](T x, T y) { return x / y; });
    case O::pow:
      return binary([](T x, T y) { return std::pow(x, y); });
    case O::lt:
      return binary([](T x, T y) { return x < y ? one : zero; });
    case O::le:
      return binary([](T x, T y) { return x <= y ? one : zero; });
    case O::gt:
      return binary([](T x, T y) { return x > y ? one : zero; });
    case O::ge:
      return binary([](T x, T y) { return x >= y ? one : zero; });
    case O::eq:
      return binary([](T x, T y) { return x == y ? one : zero; });
    case O::ne:
      return binary([](T x, T y) { return x == y ? zero : one; });
    case O::land:
      return binary([](T x, T y) { return ((x == 0) | (y == 0)) ? zero : one; });
    case O::lor:
      return binary([](T x, T y) { return ((x == 0) & (y == 0)) ? zero : one; });
    case O::neg:
      return unary([](T x) { return -x; });
    case O::select: {
      const T* c = s[2];
      for (std::int64_t j = 0; j < n; ++j) out[j] = a[j] == 0 ? c[j] : b[j];
      return;
    }
    case O::sin:
      return unary([](T x) { return std::sin(x); });
    case O::cos:
      return unary([](T x) { return std::cos(x); });
    case O::tan:
      return unary([](T x) { return std::tan(x); });
    case O::asin:
      return unary([](T x) { return std::asin(x); });
    case O::acos:
      return unary([](T x) { return std::acos(x); });
    case O::atan:
      return unary([](T x) { return std::atan(x); });
    case O::atan2:
      return binary([](T y, T x) { return std::atan2(y, x); });
    case O::sinh:
      return unary([](T x) { return std::sinh(x); });
    case O::cosh:
      return unary([](T x) { return std::cosh(x); });
    case O::tanh:
      return unary([](T x) { return std::tanh(x); });
    case O::asinh:
      return unary([](T x) { return std::asinh(x); });
    case O::acosh:
      return unary([](T x) { return std::acosh(x); });
    case O::atanh:
      return unary([](T x) { return std::atanh(x); });
    case O::log2:
      return unary([](T x) { return std::log2(x); });
    case O::log10:
      return unary([](T x) { return std::log10(x); });
    case O::ln:
      return unary([](T x) { return std::log(x); });
    case O::exp:
      return unary([](T x) { return std::exp(x); });
    case O::sqrt:
      return unary([](T x) { return std::sqrt(x); });
    case O::sign:
      return unary([](T x) { return x < 0 ? -one : x > 0 ? one : zero; });
    case O::rint:
      return unary([](T x) { return std::floor(x + T(0.5)); });
    case O::abs:
      return unary([](T x) { return x >= 0 ? x : -x; });  // -0 stays -0, as in muparser
    case O::sum:
    case O::avg:
      std::copy(a, a + n, out);
      for (std::size_t k = 1; k < arity; ++k)
        for (std::int64_t j = 0; j < n; ++j) out[j] += s[k][j];
      if (op == O::avg)
        for (std::int64_t j = 0; j < n; ++j) out[j] /= static_cast<T>(arity);
      return;
    case O::min:
    case O::max:
      std::copy(a, a + n, out);
      for (std::size_t k = 1; k < arity; ++k)
        for (std::int64_t j = 0; j < n; ++j)
          out[j] = op == O::min ? std::min(out[j], s[k][j]) : std::max(out[j], s[k][j]);
      return;
  }
}

// A voxel with any operand missing is missing, whatever the expression makes
// of it (a comparison is false, && takes NaN for true; a fill value read in
// place is any number). One pass for up to four inputs, then one more for
// each further input.
// 1 or 0: combined with & (no branch; && would be one per value).
template <class T>
int passes(T x, const Valid<T>& v) {
  return static_cast<int>(x >= v.lo) & static_cast<int>(x <= v.hi) & static_cast<int>(x != v.fill) &
         static_cast<int>(x != v.missing);
}

template <int Inputs, class T>
void finish_pass(const T* __restrict result, const T* const* inputs, const Valid<T>* valid, bool condition,
                 std::int64_t n, float* __restrict out) {
  const T* a = inputs[0];
  const T* b = Inputs > 1 ? inputs[1] : a;
  const T* c = Inputs > 2 ? inputs[2] : a;
  const T* d = Inputs > 3 ? inputs[3] : a;
  const Valid<T> va = valid[0], vb = valid[Inputs > 1 ? 1 : 0], vc = valid[Inputs > 2 ? 2 : 0],
                 vd = valid[Inputs > 3 ? 3 : 0];
  if (condition)
    for (std::int64_t j = 0; j < n; ++j) {
      const int ok = passes(a[j], va) & passes(b[j], vb) & passes(c[j], vc) & passes(d[j], vd);
      out[j] = ok ? (((result[j] < 0) | (result[j] > 0)) ? 1.0f : 0.0f) : NAN;
    }
  else
    for (std::int64_t j = 0; j < n; ++j) {
      const int ok = passes(a[j], va) & passes(b[j], vb) & passes(c[j], vc) & passes(d[j], vd);
      out[j] = ok ? static_cast<float>(result[j]) : NAN;
    }
}

template <class T>
void finish(const T* result, const T* const* inputs, const Valid<T>* valid, std::size_t count, std::int64_t n,
            bool condition, float* __restrict out) {
  switch (std::min<std::size_t>(count, 4)) {
    case 1:
      finish_pass<1>(result, inputs, valid, condition, n, out);
      break;
    case 2:
      finish_pass<2>(result, inputs, valid, condition, n, out);
      break;
    case 3:
      finish_pass<3>(result, inputs, valid, condition, n, out);
      break;
    default:
      finish_pass<4>(result, inputs, valid, condition, n, out);
      break;
  }
  for (std::size_t i = 4; i < count; ++i) {
    const T* in = inputs[i];
    const Valid<T> v = valid[i];
    for (std::int64_t j = 0; j < n; ++j) out[j] = passes(in[j], v) ? out[j] : NAN;
  }
}

}  // namespace

// The entry points of this build (VOLSEG_OPS_BUILD: generic or avx2, set by
// the file that includes this one).
#define VOLSEG_OPS_JOIN2(name, build) name##_##build
#define VOLSEG_OPS_JOIN(name, build) VOLSEG_OPS_JOIN2(name, build)
#define VOLSEG_OPS(name) VOLSEG_OPS_JOIN(name, VOLSEG_OPS_BUILD)

void VOLSEG_OPS(apply)(Program::Op op, const double* const* sources, std::size_t arity, std::int64_t n, double* out) {
  apply(op, sources, arity, n, out);
}

void VOLSEG_OPS(apply)(Program::Op op, const float* const* sources, std::size_t arity, std::int64_t n, float* out) {
  apply(op, sources, arity, n, out);
}

void VOLSEG_OPS(finish)(const double* result, const double* const* inputs, const Valid<double>* valid,
                        std::size_t count, std::int64_t n, bool condition, float* out) {
  finish(result, inputs, valid, count, n, condition, out);
}

void VOLSEG_OPS(finish)(const float* result, const float* const* inputs, const Valid<float>* valid, std::size_t count,
                        std::int64_t n, bool condition, float* out) {
  finish(result, inputs, valid, count, n, condition, out);
}
