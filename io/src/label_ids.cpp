// SPDX-License-Identifier: MIT
#include "volseg/io/label_ids.hpp"

#include <cstring>
#include <string>
#include <type_traits>

#include "volseg/io/dtype_dispatch.hpp"
#include "volseg/io/error.hpp"

namespace volseg::io {

void widen_labels(DType dtype, const void* in, std::uint64_t* out, std::size_t n, std::string_view what) {
  visit_dtype(dtype, [&]<class T>(std::type_identity<T>) {
    if constexpr (std::is_integral_v<T>) {
      const auto* bytes = static_cast<const std::byte*>(in);
      for (std::size_t i = 0; i < n; ++i) {
        T v;
        std::memcpy(&v, bytes + i * sizeof(T), sizeof(T));  // any alignment: a voxel inside a strided plane
        if constexpr (std::is_signed_v<T>)
          if (v < 0)
            throw Error(std::string(what) + " holds a negative label (" + std::to_string(v) + "): ids are >= 0");
        out[i] = static_cast<std::uint64_t>(v);
      }
    } else {
      throw Error(std::string(what) + " is " + std::string(dtype_name(dtype)) + ": labels are of an integer type");
    }
  });
}

std::uint64_t label_id(const std::byte* value, DType dtype, std::string_view what) {
  std::uint64_t id = 0;
  widen_labels(dtype, value, &id, 1, what);
  return id;
}

void narrow_labels(DType dtype, const std::uint64_t* in, void* out, std::size_t n) {
  visit_dtype(dtype, [&]<class T>(std::type_identity<T>) {
    if constexpr (std::is_integral_v<T>) {
      T* v = static_cast<T*>(out);
      for (std::size_t i = 0; i < n; ++i) v[i] = static_cast<T>(in[i]);
    } else {
      throw Error("labels of " + std::string(dtype_name(dtype)) + ": labels are of an integer type");
    }
  });
}

}  // namespace volseg::io
