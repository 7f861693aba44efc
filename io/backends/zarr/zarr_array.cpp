// SPDX-License-Identifier: MIT
#include "zarr/zarr_array.hpp"

#include <blosc.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>
#define ZSTD_STATIC_LINKING_ONLY  // ZSTD_findDecompressedSize
#include <zstd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <limits>
#include <nlohmann/json.hpp>

#include "volseg/io/error.hpp"
#include "volseg/io/memory.hpp"

namespace volseg::io::zarr {
namespace {

using nlohmann::json;

DType parse_dtype(const std::string& text, ByteOrder& order, const std::string& where) {
  if (text.size() < 3 || (text[0] != '<' && text[0] != '>' && text[0] != '|'))
    throw Error(where + ": dtype \"" + text + "\" is not a NumPy type string like \"<f4\"");
  const std::string kind = text.substr(1);
  static const std::pair<const char*, DType> types[] = {{"u1", DType::u8},  {"i1", DType::i8},  {"b1", DType::u8},
                                                        {"u2", DType::u16}, {"i2", DType::i16}, {"u4", DType::u32},
                                                        {"i4", DType::i32}, {"u8", DType::u64}, {"i8", DType::i64},
                                                        {"f4", DType::f32}, {"f8", DType::f64}};
  for (const auto& [name, dtype] : types)
    if (kind == name) {
      if (dtype_size(dtype) > 1 && text[0] == '|')
        throw Error(where + ": dtype \"" + text + "\" has no byte order ('<' or '>')");
      order = text[0] == '>' ? ByteOrder::big : ByteOrder::little;
      return dtype;
    }
  throw Error(where + ": dtype \"" + text + "\" is not one volseg reads (u1, i1, b1, u2, i2, u4, i4, u8, i8, f4, f8)");
}

// "shape" or "chunks": 3 dimensions (z, y, x), or 4 (t, z, y, x).
std::vector<std::int64_t> parse_dims(const json& value, const char* field, const std::string& where) {
  if (!value.is_array() || (value.size() != 3 && value.size() != 4))
    throw Error(where + ": \"" + field + "\" must list 3 dimensions (z, y, x) or 4 (t, z, y, x)" +
                (value.is_array() ? ", not " + std::to_string(value.size()) : ""));
  std::vector<std::int64_t> out;
  for (const auto& v : value) {
    if (!v.is_number_integer() || v.get<std::int64_t>() <= 0)
      throw Error(where + ": \"" + field + "\" must hold positive integers, not " + value.dump());
    out.push_back(v.get<std::int64_t>());
  }
  return out;
}

Compressor parse_compressor(const json& value, const std::string& where) {
  Compressor c;
  if (value.is_null()) return c;
  if (!value.is_object() || !value.contains("id") || !value["id"].is_string())
    throw Error(where + ": \"compressor\" must be null or an object with an \"id\"");
  c.id = value["id"].get<std::string>();
  auto integer = [&](const char* key, int fallback) {
    if (!value.contains(key)) return fallback;
    if (!value[key].is_number_integer())
      throw Error(where + ": compressor " + c.id + "'s " + key + " is not an integer");
    return value[key].get<int>();
  };
  if (c.id == "blosc") {
    c.cname = value.value("cname", std::string("lz4"));
    static const char* names[] = {"lz4", "lz4hc", "zstd", "zlib", "blosclz", "snappy"};
    bool known = false;
    for (const char* n : names) known = known || c.cname == n;
    if (!known) throw Error(where + ": blosc compressor \"" + c.cname + "\" is unknown");
    c.level = integer("clevel", 5);
    c.shuffle = integer("shuffle", 1);
    if (c.shuffle < -1 || c.shuffle > 2)
      throw Error(where + ": blosc shuffle " + std::to_string(c.shuffle) + " is unknown");
  } else if (c.id == "zlib" || c.id == "gzip" || c.id == "zstd") {
    c.level = integer("level", c.id == "zstd" ? 1 : 1);
  } else {
    throw Error(where + ": compressor \"" + c.id + "\" is not one volseg reads (blosc, zlib, gzip, zstd, or null)");
  }
  return c;
}

std::optional<long double> parse_fill(const json& value, DType dtype, bool& nan, const std::string& where) {
  nan = false;
  if (value.is_null()) return std::nullopt;
  const bool floating = dtype == DType::f32 || dtype == DType::f64;
  if (value.is_string()) {
    const auto text = value.get<std::string>();
    if (floating && text == "NaN") return nan = true, std::numeric_limits<long double>::quiet_NaN();
    if (floating && text == "Infinity") return std::numeric_limits<long double>::infinity();
    if (floating && text == "-Infinity") return -std::numeric_limits<long double>::infinity();
    throw Error(where + ": fill_value \"" + text + "\" is not a value of " + std::string(dtype_name(dtype)));
  }
  if (value.is_boolean()) return value.get<bool>() ? 1 : 0;
  if (value.is_number_unsigned()) return static_cast<long double>(value.get<std::uint64_t>());
  if (value.is_number_integer()) return static_cast<long double>(value.get<std::int64_t>());
  if (value.is_number_float()) return static_cast<long double>(value.get<double>());
  throw Error(where + ": fill_value " + value.dump() + " is not a number");
}

}  // namespace

Index3 ArrayMeta::grid() const {
  Index3 g{};
  for (int a = 0; a < 3; ++a)
    g[static_cast<std::size_t>(a)] = (shape[static_cast<std::size_t>(a)] + chunks[static_cast<std::size_t>(a)] - 1) /
                                     chunks[static_cast<std::size_t>(a)];
  return g;
}

std::size_t ArrayMeta::chunk_bytes() const {
  return static_cast<std::size_t>(chunks[0] * chunks[1] * chunks[2]) * dtype_size(dtype);
}

std::size_t ArrayMeta::stored_chunk_bytes() const { return static_cast<std::size_t>(step_chunk) * chunk_bytes(); }

std::string ArrayMeta::chunk_key(const Index3& chunk) const {
  const std::string key =
      std::to_string(chunk[0]) + separator + std::to_string(chunk[1]) + separator + std::to_string(chunk[2]);
  return steps > 0 ? std::to_string(step / step_chunk) + separator + key : key;
}

Extent ArrayMeta::chunk_box(const Index3& chunk) const {
  return {{chunk[0] * chunks[0], chunk[1] * chunks[1], chunk[2] * chunks[2]}, chunks};
}

void copy_part(const Extent& part, const Extent& from, const std::byte* source, const Extent& to,
               std::byte* destination, std::size_t size) {
  auto at = [&](const Extent& box, std::int64_t z, std::int64_t y) {
    const std::int64_t i =
        ((z - box.offset[0]) * box.count[1] + (y - box.offset[1])) * box.count[2] + (part.offset[2] - box.offset[2]);
    return static_cast<std::size_t>(i) * size;
  };
  const auto row = static_cast<std::size_t>(part.count[2]) * size;
  for (std::int64_t z = part.offset[0]; z < part.offset[0] + part.count[0]; ++z)
    for (std::int64_t y = part.offset[1]; y < part.offset[1] + part.count[1]; ++y)
      std::memcpy(destination + at(to, z, y), source + at(from, z, y), row);
}

ArrayMeta parse_array(const std::string& text, const std::string& where) {
  json doc;
  try {
    doc = json::parse(text);
  } catch (const json::exception& e) {
    throw Error(where + ": not JSON (" + std::string(e.what()) + ")");
  }
  if (!doc.is_object()) throw Error(where + ": not a JSON object");
  for (const char* key : {"zarr_format", "shape", "chunks", "dtype", "compressor", "fill_value", "order"})
    if (!doc.contains(key)) throw Error(where + ": no \"" + std::string(key) + "\"");
  if (doc["zarr_format"] != 2) throw Error(where + ": zarr_format " + doc["zarr_format"].dump() + " (volseg reads 2)");
  ArrayMeta m;
  const auto shape = parse_dims(doc["shape"], "shape", where), chunks = parse_dims(doc["chunks"], "chunks", where);
  if (shape.size() != chunks.size())
    throw Error(where + ": \"shape\" has " + std::to_string(shape.size()) + " dimensions and \"chunks\" " +
                std::to_string(chunks.size()));
  const std::size_t first = shape.size() - 3;  // a 4D array's t comes first
  if (first == 1) m.steps = shape[0], m.step_chunk = chunks[0];
  for (std::size_t a = 0; a < 3; ++a) m.shape[a] = shape[first + a], m.chunks[a] = chunks[first + a];
  if (!doc["dtype"].is_string())
    throw Error(where + ": dtype " + doc["dtype"].dump() + " is not a type string (structured types are not read)");
  m.dtype_text = doc["dtype"].get<std::string>();
  m.dtype = parse_dtype(m.dtype_text, m.byte_order, where);
  if (doc["order"] != "C") throw Error(where + ": order " + doc["order"].dump() + " (volseg reads \"C\" only)");
  m.compressor = parse_compressor(doc["compressor"], where);
  m.fill_value = parse_fill(doc["fill_value"], m.dtype, m.fill_nan, where);
  if (doc.contains("filters") && !doc["filters"].is_null() && !(doc["filters"].is_array() && doc["filters"].empty())) {
    std::string names;
    if (doc["filters"].is_array())
      for (const auto& f : doc["filters"])
        names += (names.empty() ? "" : ", ") + (f.is_object() && f.contains("id") ? f["id"].dump() : f.dump());
    throw Error(where + ": filters (" + (names.empty() ? doc["filters"].dump() : names) +
                ") are not read by volseg; rewrite the array without them");
  }
  if (doc.contains("dimension_separator")) {
    const auto& sep = doc["dimension_separator"];
    if (sep != "." && sep != "/")
      throw Error(where + ": dimension_separator " + sep.dump() + " is neither \".\" nor \"/\"");
    m.separator = sep.get<std::string>()[0];
  }
  // A chunk is decoded whole: its size, as the header claims it, is checked
  // against the budget before anything allocates it.
  std::string dims;
  for (const auto d : chunks) dims += (dims.empty() ? "" : " x ") + std::to_string(d);
  check_piece(where + ": chunk " + dims + " of " + m.dtype_text.substr(1),
              saturating_product({static_cast<std::uint64_t>(m.step_chunk), static_cast<std::uint64_t>(m.chunks[0]),
                                  static_cast<std::uint64_t>(m.chunks[1]), static_cast<std::uint64_t>(m.chunks[2]),
                                  dtype_size(m.dtype)}));
  return m;
}

// A whole chunk of fill_value (0 where there is none), native order.
void fill_values(const ArrayMeta& meta, std::byte* data) {
  const std::size_t size = dtype_size(meta.dtype), count = meta.chunk_bytes() / size;
  if (!meta.fill_value || (*meta.fill_value == 0 && !meta.fill_nan)) {
    std::memset(data, 0, meta.chunk_bytes());
    return;
  }
  std::byte value[8] = {};
  const long double v = *meta.fill_value;
  switch (meta.dtype) {
    case DType::i8: {
      auto x = static_cast<std::int8_t>(v);
      std::memcpy(value, &x, 1);
      break;
    }
    case DType::u8: {
      auto x = static_cast<std::uint8_t>(v);
      std::memcpy(value, &x, 1);
      break;
    }
    case DType::i16: {
      auto x = static_cast<std::int16_t>(v);
      std::memcpy(value, &x, 2);
      break;
    }
    case DType::u16: {
      auto x = static_cast<std::uint16_t>(v);
      std::memcpy(value, &x, 2);
      break;
    }
    case DType::i32: {
      auto x = static_cast<std::int32_t>(v);
      std::memcpy(value, &x, 4);
      break;
    }
    case DType::u32: {
      auto x = static_cast<std::uint32_t>(v);
      std::memcpy(value, &x, 4);
      break;
    }
    case DType::i64: {
      auto x = static_cast<std::int64_t>(v);
      std::memcpy(value, &x, 8);
      break;
    }
    case DType::u64: {
      auto x = static_cast<std::uint64_t>(v);
      std::memcpy(value, &x, 8);
      break;
    }
    case DType::f32: {
      auto x = static_cast<float>(v);
      std::memcpy(value, &x, 4);
      break;
    }
    case DType::f64: {
      auto x = static_cast<double>(v);
      std::memcpy(value, &x, 8);
      break;
    }
  }
  for (std::size_t i = 0; i < count; ++i) std::memcpy(data + i * size, value, size);
}

std::string array_json(const ArrayMeta& meta) {
  json doc;
  doc["zarr_format"] = 2;
  doc["shape"] = {meta.shape[0], meta.shape[1], meta.shape[2]};
  doc["chunks"] = {meta.chunks[0], meta.chunks[1], meta.chunks[2]};
  if (meta.steps > 0) {
    doc["shape"].insert(doc["shape"].begin(), meta.steps);
    doc["chunks"].insert(doc["chunks"].begin(), meta.step_chunk);
  }
  doc["dtype"] = meta.dtype_text;
  doc["order"] = "C";
  doc["filters"] = nullptr;
  doc["dimension_separator"] = std::string(1, meta.separator);
  const auto& c = meta.compressor;
  if (c.id.empty())
    doc["compressor"] = nullptr;
  else if (c.id == "blosc")
    doc["compressor"] = {
        {"id", "blosc"}, {"cname", c.cname}, {"clevel", c.level}, {"shuffle", c.shuffle}, {"blocksize", c.blocksize}};
  else
    doc["compressor"] = {{"id", c.id}, {"level", c.level}};
  if (!meta.fill_value) {
    doc["fill_value"] = nullptr;
  } else if (meta.dtype == DType::f32 || meta.dtype == DType::f64) {
    const long double v = *meta.fill_value;
    if (std::isnan(v))
      doc["fill_value"] = "NaN";
    else if (std::isinf(v))
      doc["fill_value"] = v > 0 ? "Infinity" : "-Infinity";
    else
      doc["fill_value"] = static_cast<double>(v);
  } else if (meta.dtype == DType::u64) {
    doc["fill_value"] = static_cast<std::uint64_t>(*meta.fill_value);
  } else {
    doc["fill_value"] = static_cast<std::int64_t>(*meta.fill_value);
  }
  return doc.dump(4) + "\n";
}

Compressor compressor_from(const std::string& name, int level, const std::string& shuffle, DType dtype) {
  Compressor c;
  if (name == "none") return c;
  if (name == "zlib" || name == "gzip" || name == "zstd") {
    c.id = name;
    c.level = level >= 0 ? level : (name == "zstd" ? 3 : 5);
    const int top = name == "zstd" ? ZSTD_maxCLevel() : 9;
    if (c.level > top)
      throw Error("hint level=" + std::to_string(level) + " is past " + name + "'s " + std::to_string(top));
    return c;
  }
  if (name.rfind("blosc-", 0) == 0) {
    c.id = "blosc";
    c.cname = name.substr(6);
    static const char* names[] = {"lz4", "lz4hc", "zstd", "zlib", "blosclz"};
    bool known = false;
    for (const char* n : names) known = known || c.cname == n;
    if (!known) throw Error("hint compressor=" + name + ": blosc's compressors are lz4, lz4hc, zstd, zlib, blosclz");
    c.level = level >= 0 ? level : 5;
    if (c.level > 9) throw Error("hint level=" + std::to_string(level) + " is past blosc's 9");
    if (shuffle.empty())
      c.shuffle = dtype_size(dtype) == 1 ? 2 : 1;
    else if (shuffle == "none")
      c.shuffle = 0;
    else if (shuffle == "byte")
      c.shuffle = 1;
    else if (shuffle == "bit")
      c.shuffle = 2;
    else
      throw Error("hint shuffle=" + shuffle + " is none of byte, bit, none");
    return c;
  }
  throw Error("hint compressor=" + name +
              " is none of blosc-lz4, blosc-lz4hc, blosc-zstd, blosc-zlib, blosc-blosclz, zstd, zlib, gzip, none");
}

std::vector<std::byte> encode_chunk(const ArrayMeta& meta, std::span<const std::byte> values) {
  const auto& c = meta.compressor;
  const std::size_t n = values.size();
  std::vector<std::byte> out;
  if (c.id.empty()) {
    out.assign(values.begin(), values.end());
  } else if (c.id == "blosc") {
    out.resize(n + BLOSC_MAX_OVERHEAD);
    const int shuffle = c.shuffle >= 0 ? c.shuffle : dtype_size(meta.dtype) == 1 ? 2 : 1;  // -1: numcodecs' auto
    const int got = blosc_compress_ctx(c.level, shuffle, dtype_size(meta.dtype), n, values.data(), out.data(),
                                       out.size(), c.cname.c_str(), 0, 1);
    if (got <= 0) throw Error("blosc failed to compress a chunk (" + std::to_string(got) + ")");
    out.resize(static_cast<std::size_t>(got));
  } else if (c.id == "zlib" || c.id == "gzip") {
    z_stream z{};
    if (deflateInit2(&z, c.level, Z_DEFLATED, c.id == "gzip" ? 16 + MAX_WBITS : MAX_WBITS, 8, Z_DEFAULT_STRATEGY) !=
        Z_OK)
      throw Error("deflateInit2 failed");
    out.resize(deflateBound(&z, static_cast<uLong>(n)) + 32);
    z.next_in = reinterpret_cast<Bytef*>(const_cast<std::byte*>(values.data()));
    z.avail_in = static_cast<uInt>(n);
    z.next_out = reinterpret_cast<Bytef*>(out.data());
    z.avail_out = static_cast<uInt>(out.size());
    const int status = deflate(&z, Z_FINISH);
    const std::size_t got = out.size() - z.avail_out;
    deflateEnd(&z);
    if (status != Z_STREAM_END) throw Error(c.id + " failed to compress a chunk (" + std::to_string(status) + ")");
    out.resize(got);
  } else if (c.id == "zstd") {
    out.resize(ZSTD_compressBound(n));
    const std::size_t got = ZSTD_compress(out.data(), out.size(), values.data(), n, c.level);
    if (ZSTD_isError(got)) throw Error(std::string("zstd failed to compress a chunk (") + ZSTD_getErrorName(got) + ")");
    out.resize(got);
  } else {
    throw Error("compressor \"" + c.id + "\" is unknown");
  }
  return out;
}

std::uint64_t max_stored_bytes(const ArrayMeta& meta) {
  const std::uint64_t n = meta.stored_chunk_bytes();
  if (meta.compressor.id.empty()) return n;
  // The codecs' worst cases are a few bytes per block over n (deflate: 5
  // per 16 KiB, zstd: ZSTD_compressBound, blosc: 16 in all); n/64 and
  // 64 KiB more leave room for a gzip header's name and for several frames.
  return n + n / 64 + (std::uint64_t{64} << 10);
}

void check_declared_size(const ArrayMeta& meta, std::span<const std::byte> stored, std::size_t want,
                         const std::string& where) {
  const auto& id = meta.compressor.id;
  if (id == "blosc") {
    if (stored.size() < BLOSC_MIN_HEADER_LENGTH)
      throw Error(where + ": too short for a blosc chunk (" + std::to_string(stored.size()) + " bytes)");
    std::size_t nbytes = 0, cbytes = 0, blocksize = 0;
    blosc_cbuffer_sizes(stored.data(), &nbytes, &cbytes, &blocksize);
    // 32-bit fields that blosc reads as signed: past 2^31 they come back sign-extended.
    nbytes = static_cast<std::uint32_t>(nbytes), cbytes = static_cast<std::uint32_t>(cbytes);
    blocksize = static_cast<std::uint32_t>(blocksize);
    if (nbytes != want)
      throw Error(where + ": blosc header declares nbytes " + std::to_string(nbytes) + ", not the chunk's " +
                  std::to_string(want) + " bytes");
    if (cbytes != stored.size())
      throw Error(where + ": blosc header declares cbytes " + std::to_string(cbytes) + ", the file has " +
                  std::to_string(stored.size()));
    // blosc allocates a block's worth of scratch per thread from this field.
    if (blocksize > nbytes)
      throw Error(where + ": blosc header declares blocksize " + std::to_string(blocksize) + ", more than its nbytes " +
                  std::to_string(nbytes));
  } else if (id == "zstd") {
    // The sum over its frames (one, as numcodecs writes), from their headers.
    const unsigned long long declared = ZSTD_findDecompressedSize(stored.data(), stored.size());
    if (declared == ZSTD_CONTENTSIZE_ERROR) throw Error(where + ": not a sequence of zstd frames");
    if (declared != ZSTD_CONTENTSIZE_UNKNOWN && declared != want)
      throw Error(where + ": zstd frame declares a content size of " + std::to_string(declared) +
                  " bytes, not the chunk's " + std::to_string(want));
  }
}

namespace {

// zlib or gzip into out, stopping where out is full: a stream that decodes
// past the chunk's size is refused there, never followed.
void inflate_chunk(const std::string& id, std::span<const std::byte> stored, std::span<std::byte> out,
                   const std::string& where) {
  const std::size_t want = out.size();
  z_stream z{};
  if (inflateInit2(&z, id == "gzip" ? 16 + MAX_WBITS : MAX_WBITS) != Z_OK) throw Error(where + ": inflateInit2 failed");
  z.next_in = reinterpret_cast<Bytef*>(const_cast<std::byte*>(stored.data()));
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  // avail_in and avail_out are 32-bit: a chunk past 4 GiB (--memory allows
  // one) is fed in turns.
  const std::size_t turn = std::numeric_limits<uInt>::max();
  std::size_t in_left = stored.size(), out_left = want;
  std::byte probe{};  // once out is full: one more byte means the stream is longer than the chunk
  bool longer = false;
  int status = Z_OK;
  while (status == Z_OK || status == Z_BUF_ERROR) {
    const bool full = out_left == 0;
    if (full) z.next_out = reinterpret_cast<Bytef*>(&probe);
    z.avail_out = full ? 1 : static_cast<uInt>(std::min(out_left, turn));
    z.avail_in = static_cast<uInt>(std::min(in_left, turn));
    const uInt in_turn = z.avail_in, out_turn = z.avail_out;
    status = inflate(&z, Z_NO_FLUSH);
    in_left -= in_turn - z.avail_in;
    if (full && z.avail_out == 0) {
      longer = true;
      break;
    }
    if (!full) out_left -= out_turn - z.avail_out;
    if (status != Z_STREAM_END && in_turn == z.avail_in && out_turn == z.avail_out) break;  // no progress: input ended
  }
  const std::string message = z.msg ? z.msg : std::to_string(status);
  inflateEnd(&z);
  const std::size_t got = want - out_left;
  if (longer)
    throw Error(where + ": " + id + " stream decodes to more than the chunk's " + std::to_string(want) + " bytes");
  if (status == Z_OK || status == Z_BUF_ERROR)
    throw Error(where + ": " + id + " failed to decompress it (the stream stops after " + std::to_string(got) +
                " bytes, before its end)");
  if (status != Z_STREAM_END) throw Error(where + ": " + id + " failed to decompress it (" + message + ")");
  if (got != want)
    throw Error(where + ": decodes to " + std::to_string(got) + " bytes, not the chunk's " + std::to_string(want));
  if (in_left != 0) throw Error(where + ": " + std::to_string(in_left) + " bytes after the " + id + " stream");
}

}  // namespace

void decode_chunk(const ArrayMeta& meta, std::span<const std::byte> stored, std::span<std::byte> out,
                  const std::string& where) {
  const std::size_t want = out.size();
  const auto& id = meta.compressor.id;
  if (id.empty()) {
    if (stored.size() != want)
      throw Error(where + ": " + std::to_string(stored.size()) + " bytes, not the chunk's " + std::to_string(want));
    std::memcpy(out.data(), stored.data(), want);
  } else if (id == "blosc") {
    check_declared_size(meta, stored, want, where);
    std::size_t validated = 0;
    if (blosc_cbuffer_validate(stored.data(), stored.size(), &validated) < 0 || validated != want)
      throw Error(where + ": blosc header is not valid");
    const int got = blosc_decompress_ctx(stored.data(), out.data(), want, 1);
    if (got < 0 || static_cast<std::size_t>(got) != want)
      throw Error(where + ": blosc failed to decompress it (" + std::to_string(got) + ")");
  } else if (id == "zlib" || id == "gzip") {
    inflate_chunk(id, stored, out, where);
  } else if (id == "zstd") {
    check_declared_size(meta, stored, want, where);
    const std::size_t got = ZSTD_decompress(out.data(), want, stored.data(), stored.size());
    if (ZSTD_isError(got)) throw Error(where + ": zstd failed to decompress it (" + ZSTD_getErrorName(got) + ")");
    if (got != want)
      throw Error(where + ": decodes to " + std::to_string(got) + " bytes, not the chunk's " + std::to_string(want));
  } else {
    throw Error(where + ": compressor \"" + id + "\" is unknown");
  }
}

// The whole of a file into `data` (sized by fstat, read until its end);
// false when it does not exist. A file of more than `limit` bytes is refused
// before it is read: a chunk file cannot be larger than its codec makes a
// chunk (zarr::max_stored_bytes).
bool read_whole(const std::string& path, std::vector<std::byte>& data, std::uint64_t limit) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ENOENT) return false;
    throw_errno("open", path);
  }
  struct stat st {};
  int saved = ::fstat(fd, &st) == 0 ? 0 : errno;
  if (saved == 0 && static_cast<std::uint64_t>(st.st_size) > limit) {
    ::close(fd);
    throw Error(path + ": " + std::to_string(st.st_size) + " bytes, more than a chunk can be stored in (" +
                std::to_string(limit) + ")");
  }
  std::size_t got = 0;
  if (saved == 0) {
    data.resize(static_cast<std::size_t>(st.st_size) + 1);  // one more: a file that grew is read to its end
    for (;;) {
      if (got == data.size()) {
        if (got > limit) break;  // grew past the limit while read: refused below
        data.resize(data.size() * 2);
      }
      const ssize_t n = ::read(fd, data.data() + got, data.size() - got);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) saved = errno;
      if (n <= 0) break;
      got += static_cast<std::size_t>(n);
    }
  }
  if (::close(fd) != 0 && saved == 0) saved = errno;
  if (saved != 0) throw_errno("read", path, saved);
  if (got > limit) throw Error(path + ": more than a chunk can be stored in (" + std::to_string(limit) + " bytes)");
  data.resize(got);
  return true;
}

}  // namespace volseg::io::zarr
