// SPDX-License-Identifier: MIT
// libFuzzer target: the NRRD header parser (io/src/nrrd.cpp). An input is
// header text, as a raw reader reads it from a .nhdr or an attached .nrrd.
// What follows a successful parse is what volseg does with a header: size
// the data it describes (the reader's size check, against the input's own
// length as the data file's), describe it ('volseg
// info'), and write it back for an output (segment's mask header), which
// must parse again to the same volume.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

#include "fuzz_support.hpp"
#include "volseg/io/error.hpp"
#include "volseg/io/format.hpp"
#include "volseg/io/nrrd.hpp"

using namespace volseg::io;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  // The same header against a data file as long as the input: what parses
  // lies within it.
  try {
    const NrrdHeader sized =
        parse_nrrd(text, "fuzz/volume.nhdr", [size](const std::string&) { return std::optional<std::uint64_t>(size); });
    if (sized.byte_skip + sized.info.bytes() > size)
      volseg::fuzz::invariant_broken("data past the end of the data file");
  } catch (const volseg::Error&) {
  }
  NrrdHeader header;
  try {
    header = parse_nrrd(text, "fuzz/volume.nhdr");
  } catch (const volseg::Error&) {
    return 0;
  }
  // The reader's size check: byte skip + data size, neither of which may wrap.
  const VolumeInfo& info = header.info;
  if (!fits_in_a_file(info.dims, info.dtype)) volseg::fuzz::invariant_broken("the data's size wraps around");
  if (header.byte_skip + info.bytes() < header.byte_skip)
    volseg::fuzz::invariant_broken("byte skip + size wraps around");
  (void)describe("fuzz/volume.nhdr", FileFormat::raw, "posix", info);

  NrrdHeader again;
  try {
    again = parse_nrrd(format_nrrd(info, "volume.raw"), "fuzz/out.nhdr");
  } catch (const volseg::Error& e) {
    volseg::fuzz::invariant_broken(std::string("a header volseg wrote does not parse: ") + e.what());
  }
  if (again.info.dims != info.dims || again.info.dtype != info.dtype || again.info.byte_order != info.byte_order ||
      again.info.attributes.size() != info.attributes.size())
    volseg::fuzz::invariant_broken("a header volseg wrote parses to another volume");
  return 0;
}
