// SPDX-License-Identifier: MIT
// A Zarr v2 array: its metadata (.zarray, as the v2 specification defines
// it) and its chunks' codecs. No C++ Zarr library is packaged in Debian 12,
// and the format is small: JSON metadata and one compressed file per chunk.
#pragma once

#include <cstddef>
#include <cstdint>
#include <limits>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "volseg/io/types.hpp"

namespace volseg::io::zarr {

struct Compressor {
  std::string id;     // "" (none), blosc, zlib, gzip, zstd
  std::string cname;  // blosc: lz4, lz4hc, zstd, zlib, blosclz
  int level = 5;
  int shuffle = 1;  // blosc: 0 none, 1 byte, 2 bit
  std::int64_t blocksize = 0;
};

struct ArrayMeta {
  Index3 shape{}, chunks{};  // z, y, x
  // A 4D array (t, z, y, x), a series of volumes: its steps along t (0: a
  // 3D array), its chunks' length along t, and the step read or written.
  std::int64_t steps = 0, step_chunk = 1, step = 0;
  DType dtype = DType::u8;
  ByteOrder byte_order = ByteOrder::little;
  std::optional<long double> fill_value;  // null: none
  bool fill_nan = false;                  // "NaN": a float fill that compares equal to nothing
  Compressor compressor;
  char separator = '.';
  std::string dtype_text;  // as written: "<f4"

  Index3 grid() const;                               // chunks along z, y, x
  std::size_t chunk_bytes() const;                   // a whole chunk of one step, decoded (edge chunks are padded)
  std::size_t stored_chunk_bytes() const;            // a chunk file decoded: step_chunk steps of chunk_bytes()
  std::string chunk_key(const Index3& chunk) const;  // "1.0.3" or "1/0/3"; 4D: step's chunk first, "7.1.0.3"
  Extent chunk_box(const Index3& chunk) const;       // its place in the array, padding included
};

// Copies the rows of `part` from values packed over the box `from` to values
// packed over the box `to` (both hold part), `size` bytes a value: between a
// chunk and a caller's extent, either way.
void copy_part(const Extent& part, const Extent& from, const std::byte* source, const Extent& to,
               std::byte* destination, std::size_t size);

// Parses a .zarray; throws volseg::Error naming `where` and the field.
ArrayMeta parse_array(const std::string& text, const std::string& where);

// A whole chunk of meta's fill_value (0 where there is none), native order,
// into data (chunk_bytes()).
void fill_values(const ArrayMeta& meta, std::byte* data);

// The .zarray text of meta (zarr_format 2, C order, no filters; 4 dimensions
// where meta.steps > 0).
std::string array_json(const ArrayMeta& meta);

// Encodes one chunk (chunk_bytes() of native values) as meta's compressor
// stores it.
std::vector<std::byte> encode_chunk(const ArrayMeta& meta, std::span<const std::byte> values);

// Parses a compressor as hints name it: none, zlib, gzip, zstd, blosc-lz4,
// blosc-lz4hc, blosc-zstd, blosc-zlib, blosc-blosclz; level (-1: the
// codec's default) and shuffle (blosc: byte, bit, none, or "" for bit on
// 1-byte types and byte otherwise).
Compressor compressor_from(const std::string& name, int level, const std::string& shuffle, DType dtype);

// The most bytes a chunk file of meta may hold: what its codec can make of
// stored_chunk_bytes() at worst, with room to spare. A larger file is not
// read into memory.
std::uint64_t max_stored_bytes(const ArrayMeta& meta);

// Checks the size that a chunk file's codec header declares (blosc's
// nbytes, cbytes and blocksize; zstd's frame content size) against `want`
// bytes decoded, before anything is allocated or decoded for it; throws
// naming `where` and the field. zlib and gzip declare no size: their
// decoding stops at `want`.
void check_declared_size(const ArrayMeta& meta, std::span<const std::byte> stored, std::size_t want,
                         const std::string& where);

// Decodes one chunk file into out (stored_chunk_bytes() of it), never
// writing past out; throws naming `where`.
void decode_chunk(const ArrayMeta& meta, std::span<const std::byte> stored, std::span<std::byte> out,
                  const std::string& where);

// The whole of a chunk file into `data`; false when it does not exist. A
// file of more than `limit` bytes is refused before it is read.
bool read_whole(const std::string& path, std::vector<std::byte>& data,
                std::uint64_t limit = std::numeric_limits<std::uint64_t>::max());

}  // namespace volseg::io::zarr
