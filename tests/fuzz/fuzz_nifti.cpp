// SPDX-License-Identifier: MIT
// libFuzzer target: the NIfTI-1/NIfTI-2 header parser (io/src/nifti.cpp).
// An input is the start of a file, as a raw reader reads it from a .nii or
// a .hdr. What follows a successful parse is what volseg does with a
// header: size the data it describes (the reader's size check, against the
// input's own length as the data file's, as a .nii holds its voxels) and
// describe it ('volseg info'); spacing and origin must be finite, spacing
// positive.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "fuzz_support.hpp"
#include "volseg/io/error.hpp"
#include "volseg/io/format.hpp"
#include "volseg/io/nifti.hpp"

using namespace volseg::io;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  if (!is_nifti(bytes)) return 0;
  // The same header against a data file as long as the input: what parses
  // lies within it.
  try {
    const NrrdHeader sized = parse_nifti(bytes, "fuzz/volume.nii",
                                         [size](const std::string&) { return std::optional<std::uint64_t>(size); });
    if (sized.byte_skip + sized.info.bytes() > size) volseg::fuzz::invariant_broken("voxels past the end of the file");
  } catch (const volseg::Error&) {
  }
  NrrdHeader header;
  try {
    header = parse_nifti(bytes, "fuzz/volume.nii");
  } catch (const volseg::Error&) {
    return 0;
  }
  const VolumeInfo& info = header.info;
  if (!fits_in_a_file(info.dims, info.dtype)) volseg::fuzz::invariant_broken("the data's size wraps around");
  if (header.byte_skip + info.bytes() < header.byte_skip)
    volseg::fuzz::invariant_broken("vox_offset + size wraps around");
  for (int a = 0; a < 3; ++a) {
    if (info.dims[a] < 1) volseg::fuzz::invariant_broken("a dimension below 1");
    if (!std::isfinite(info.spacing[a]) || info.spacing[a] <= 0)
      volseg::fuzz::invariant_broken("a spacing not positive");
    if (!std::isfinite(info.origin[a])) volseg::fuzz::invariant_broken("an origin not finite");
  }
  if (info.scale_factor && (!std::isfinite(*info.scale_factor) || *info.scale_factor == 0))
    volseg::fuzz::invariant_broken("a scale factor that is 0 or not finite");
  (void)describe("fuzz/volume.nii", FileFormat::raw, "posix", info);
  return 0;
}
