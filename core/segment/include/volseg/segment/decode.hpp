// SPDX-License-Identifier: MIT
// Values as users see them: any stored type unpacked to floating point (CF
// scale_factor / add_offset), with every invalid voxel (NaN, equal to the
// fill or missing value, outside valid_range; the same rules as the threshold
// kernel) turned into NaN. The pyramid, the histograms and the renderer read
// volumes through this one decoder.
#pragma once

#include <cstdint>
#include <optional>

#include "volseg/io/types.hpp"

namespace volseg::segment {

class Decoder {
 public:
  explicit Decoder(const io::VolumeInfo& info);

  // count values of info.dtype, packed in native byte order (what
  // VolumeReader::read hands out), to unpacked values or NaN.
  void to_float(const void* values, std::int64_t count, float* out) const;
  void to_double(const void* values, std::int64_t count, double* out) const;

  // The unpacked range valid voxels can have, when the file says it
  // (valid_range); otherwise false.
  bool declared_range(double& min, double& max) const;

  // Where stored values are their own decoded values (float32 or float64,
  // not packed), the test a valid one passes, so that a caller may use them
  // in place: v is valid when lo <= v <= hi, v != fill and v != missing
  // (fill and missing NaN where there are none; lo > hi where nothing is
  // valid). The same rules as to_float's, in the stored type's own values.
  struct InPlace {
    double lo, hi, fill, missing;
  };
  std::optional<InPlace> in_place() const;

 private:
  io::VolumeInfo info_;
};

}  // namespace volseg::segment
