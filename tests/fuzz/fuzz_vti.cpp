// SPDX-License-Identifier: MIT
// libFuzzer target: the VTK image data (.vti) header parser
// (io/src/vti.cpp). An input is the start of a file, as a raw reader reads
// it: the XML header up to the appended data's "_" and a few bytes after.
// What follows a successful parse is what volseg does with a header: size
// the data it describes (the reader's size check, against a file as long
// as the input) and describe it.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "fuzz_support.hpp"
#include "volseg/io/error.hpp"
#include "volseg/io/format.hpp"
#include "volseg/io/vti.hpp"

using namespace volseg::io;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  if (!is_vti(text)) return 0;
  (void)vti_header_length(text);
  // The same header against a data file as long as the input: what parses
  // lies within it.
  try {
    const NrrdHeader sized = parse_vti(text, "fuzz/volume.vti", {},
                                       [size](const std::string&) { return std::optional<std::uint64_t>(size); });
    if (sized.byte_skip + sized.info.bytes() > size) volseg::fuzz::invariant_broken("values past the end of the file");
  } catch (const volseg::Error&) {
  }
  NrrdHeader header;
  try {
    header = parse_vti(text, "fuzz/volume.vti");
  } catch (const volseg::Error&) {
    return 0;
  }
  const VolumeInfo& info = header.info;
  if (!fits_in_a_file(info.dims, info.dtype)) volseg::fuzz::invariant_broken("the data's size wraps around");
  if (header.byte_skip + info.bytes() < header.byte_skip) volseg::fuzz::invariant_broken("offset + size wraps around");
  if (header.byte_skip < vti_header_length(text)) volseg::fuzz::invariant_broken("the data start inside the header");
  for (int a = 0; a < 3; ++a) {
    if (info.dims[a] < 1) volseg::fuzz::invariant_broken("a dimension below 1");
    if (!std::isfinite(info.spacing[a]) || info.spacing[a] <= 0)
      volseg::fuzz::invariant_broken("a spacing not positive");
    if (!std::isfinite(info.origin[a])) volseg::fuzz::invariant_broken("an origin not finite");
  }
  (void)describe("fuzz/volume.vti", FileFormat::raw, "posix", info);
  return 0;
}
