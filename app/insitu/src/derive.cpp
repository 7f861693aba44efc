// SPDX-License-Identifier: MIT
#include "derive.hpp"

#include <algorithm>

#include "volseg/io/error.hpp"
#include "volseg/segment/decode.hpp"

namespace volseg::insitu::detail {

// The expression's operands are the published arrays, named as published:
// the field by --var, the others by their names; NaN in any is missing.
Field derive_field(segment::Expression& expression, const std::string& variable, const Field& field,
                   std::vector<float>& derived) {
  const io::Extent stored = stored_extent(field);
  const std::int64_t count = stored.empty() ? 0 : stored.voxels();
  std::vector<const std::byte*> raw;
  std::vector<segment::Decoder> decoders;
  std::vector<std::size_t> sizes;
  bool single = true;
  for (const auto& name : expression.names()) {
    io::VolumeInfo info;
    info.dims = field.global_dims;
    const void* values = nullptr;
    if (name == variable) {
      info.dtype = field.dtype;
      values = field.values;
    } else {
      const auto it =
          std::find_if(field.arrays.begin(), field.arrays.end(), [&](const Field::Array& a) { return a.name == name; });
      if (it == field.arrays.end()) {
        std::string published = variable;
        for (const auto& a : field.arrays) published += ", " + a.name;
        throw Error("in-situ " + expression.option() + ": unknown variable '" + name + "' at column " +
                    std::to_string(expression.column_of(name)) + " (the simulation publishes " + published + ")");
      }
      info.dtype = it->dtype;
      values = it->values;
    }
    if (values == nullptr && count > 0)
      throw Error("in-situ publish: the array '" + name + "' of " + expression.option() + " is a null pointer");
    raw.push_back(static_cast<const std::byte*>(values));
    decoders.emplace_back(info);
    sizes.push_back(io::dtype_size(info.dtype));
    single = single && segment::in_single(info);
  }
  derived.resize(static_cast<std::size_t>(count));
  expression.evaluate(raw, decoders, sizes, single, count, derived.data());
  Field out = field;
  out.dtype = io::DType::f32;
  out.values = derived.data();
  out.arrays.clear();
  out.source = (field.source.empty() ? "in situ, step " + std::to_string(field.step) : field.source) + ": " +
               expression.option();
  return out;
}

}  // namespace volseg::insitu::detail
