// SPDX-License-Identifier: MIT
// libFuzzer target: a Zarr v2 array's metadata and one chunk
// (io/backends/zarr). An input is the .zarray text, a NUL byte, then the
// bytes of a chunk file. What follows a successful parse is what the zarr
// backend does: decode the chunk with the array's compressor into a chunk's
// bytes (or refuse it with an Error naming it), and what its writer does:
// write the metadata back, which must parse to the same array, and encode
// the decoded chunk, which must decode to the same bytes when it encodes.
// A parsed array's chunk must fit the memory budget for one piece, and a
// chunk file past zarr::max_stored_bytes is not decoded (the reader refuses
// it before reading it); a chunk volseg encodes must fit under that bound.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "fuzz_support.hpp"
#include "volseg/io/error.hpp"
#include "volseg/io/memory.hpp"
#include "zarr/zarr_array.hpp"

using namespace volseg::io;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const auto* end = data + size;
  const auto* nul = std::find(data, end, std::uint8_t{0});
  const std::string text(reinterpret_cast<const char*>(data), static_cast<std::size_t>(nul - data));
  zarr::ArrayMeta meta;
  try {
    meta = zarr::parse_array(text, "fuzz.zarr/.zarray");
  } catch (const volseg::Error&) {
    return 0;
  }
  if (meta.stored_chunk_bytes() > piece_budget().bytes)
    volseg::fuzz::invariant_broken(".zarray parsed with a chunk past the memory budget for one piece");
  zarr::ArrayMeta again;
  try {
    again = zarr::parse_array(zarr::array_json(meta), "fuzz.zarr/.zarray (written)");
  } catch (const volseg::Error& e) {
    volseg::fuzz::invariant_broken(std::string(".zarray volseg wrote does not parse: ") + e.what());
  }
  if (again.shape != meta.shape || again.chunks != meta.chunks || again.steps != meta.steps ||
      again.step_chunk != meta.step_chunk || again.dtype != meta.dtype || again.byte_order != meta.byte_order ||
      again.separator != meta.separator || again.compressor.id != meta.compressor.id ||
      again.compressor.cname != meta.compressor.cname || again.fill_value.has_value() != meta.fill_value.has_value())
    volseg::fuzz::invariant_broken(".zarray volseg wrote parses to another array");
  // Chunks past 1 MiB would only measure the allocator; the decoders' checks
  // do not depend on the size.
  if (meta.stored_chunk_bytes() > (std::size_t{1} << 20) || nul == end) return 0;
  const std::span<const std::byte> stored(reinterpret_cast<const std::byte*>(nul + 1),
                                          static_cast<std::size_t>(end - nul - 1));
  if (stored.size() > zarr::max_stored_bytes(meta)) return 0;
  std::vector<std::byte> chunk(meta.stored_chunk_bytes());  // a 4D array's chunk: its steps' along t
  try {
    zarr::decode_chunk(meta, stored, chunk, "fuzz.zarr: chunk 0.0.0");
  } catch (const volseg::Error&) {
    return 0;
  }
  // Encoding may refuse settings no writer of volseg makes (a level past
  // the codec's); what it does encode must decode to the same bytes.
  std::vector<std::byte> encoded;
  try {
    encoded = zarr::encode_chunk(meta, chunk);
  } catch (const volseg::Error&) {
    return 0;
  }
  if (encoded.size() > zarr::max_stored_bytes(meta))
    volseg::fuzz::invariant_broken("a chunk volseg encoded is larger than the reader accepts a chunk file");
  std::vector<std::byte> back(meta.stored_chunk_bytes());
  try {
    zarr::decode_chunk(meta, encoded, back, "fuzz.zarr: chunk 0.0.0 (written)");
  } catch (const volseg::Error& e) {
    volseg::fuzz::invariant_broken(std::string("a chunk volseg encoded does not decode: ") + e.what());
  }
  if (back != chunk) volseg::fuzz::invariant_broken("a chunk volseg encoded decodes to other bytes");
  return 0;
}
