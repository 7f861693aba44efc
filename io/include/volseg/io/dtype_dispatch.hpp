// SPDX-License-Identifier: MIT
// The one place where a run-time DType becomes the C++ type of its values.
// Every typed loop (threshold kernel, decoder, generator, labels, Catalyst
// arrays) dispatches through visit_dtype instead of its own switch. Include
// this header only from the .cpp files that dispatch: it is a template, and
// types.hpp, which everything includes, stays free of it (STYLE habit 8).
#pragma once

#include <cstdint>
#include <type_traits>
#include <utility>

#include "volseg/io/types.hpp"

namespace volseg::io {

// Throws volseg::Error naming the value: a DType outside the enumerators
// (a bad cast or corrupted memory), never a type a file declared.
[[noreturn]] void throw_unknown_dtype(DType dtype);

// Calls f(std::type_identity<T>{}) with T the C++ type of dtype's values
// (i8 -> std::int8_t, ..., f32 -> float, f64 -> double) and returns what f
// returns, which must be the same type for every T. Write f as
//   [&]<class T>(std::type_identity<T>) { ... }
// A file built with other instruction-set flags (kernel_avx2.cpp) must pass a
// lambda from its anonymous namespace, so that its instantiations stay its own
// and the linker never picks them for another file.
template <class F>
decltype(auto) visit_dtype(DType dtype, F&& f) {
  switch (dtype) {
    case DType::i8:
      return std::forward<F>(f)(std::type_identity<std::int8_t>{});
    case DType::u8:
      return std::forward<F>(f)(std::type_identity<std::uint8_t>{});
    case DType::i16:
      return std::forward<F>(f)(std::type_identity<std::int16_t>{});
    case DType::u16:
      return std::forward<F>(f)(std::type_identity<std::uint16_t>{});
    case DType::i32:
      return std::forward<F>(f)(std::type_identity<std::int32_t>{});
    case DType::u32:
      return std::forward<F>(f)(std::type_identity<std::uint32_t>{});
    case DType::i64:
      return std::forward<F>(f)(std::type_identity<std::int64_t>{});
    case DType::u64:
      return std::forward<F>(f)(std::type_identity<std::uint64_t>{});
    case DType::f32:
      return std::forward<F>(f)(std::type_identity<float>{});
    case DType::f64:
      return std::forward<F>(f)(std::type_identity<double>{});
  }
  throw_unknown_dtype(dtype);
}

}  // namespace volseg::io
