// SPDX-License-Identifier: MIT
#include "precomputed/compressed_segmentation.hpp"

#include <algorithm>
#include <cstring>
#include <unordered_map>

#include "volseg/io/error.hpp"

namespace volseg::io::precomputed {

namespace {

constexpr std::int64_t kBlock = 8;

template <class T>
std::vector<std::uint32_t> encode(const T* values, const Index3& n) {
  constexpr int words_per_value = sizeof(T) / 4;
  const Index3 grid{(n[0] + kBlock - 1) / kBlock, (n[1] + kBlock - 1) / kBlock, (n[2] + kBlock - 1) / kBlock};
  const std::int64_t blocks = grid[0] * grid[1] * grid[2];
  // One channel: its offset (1 word), then 2 header words per block.
  std::vector<std::uint32_t> out(1 + 2 * static_cast<std::size_t>(blocks));
  out[0] = 1;
  std::vector<T> table;
  std::vector<std::uint32_t> index(kBlock * kBlock * kBlock);
  std::unordered_map<T, std::uint32_t> position;
  std::int64_t b = 0;
  for (std::int64_t bz = 0; bz < grid[0]; ++bz)
    for (std::int64_t by = 0; by < grid[1]; ++by)
      for (std::int64_t bx = 0; bx < grid[2]; ++bx, ++b) {
        table.clear();
        position.clear();
        // Voxels past the chunk's edge take the table's first entry.
        for (std::int64_t z = 0; z < kBlock; ++z)
          for (std::int64_t y = 0; y < kBlock; ++y)
            for (std::int64_t x = 0; x < kBlock; ++x) {
              const std::int64_t vz = bz * kBlock + z, vy = by * kBlock + y, vx = bx * kBlock + x;
              std::uint32_t k = 0;
              if (vz < n[0] && vy < n[1] && vx < n[2]) {
                const T v = values[(vz * n[1] + vy) * n[2] + vx];
                auto [it, added] = position.emplace(v, static_cast<std::uint32_t>(table.size()));
                if (added) table.push_back(v);
                k = it->second;
              }
              index[static_cast<std::size_t>((z * kBlock + y) * kBlock + x)] = k;
            }
        if (table.empty()) table.push_back(0);
        int bits = 0;
        while ((std::size_t{1} << bits) < table.size()) bits = bits == 0 ? 1 : bits * 2;
        const auto channel_offset = static_cast<std::uint32_t>(out.size() - 1);
        if (bits > 0) {
          const std::size_t words = (index.size() * static_cast<std::size_t>(bits) + 31) / 32;
          const std::size_t start = out.size();
          out.resize(start + words, 0);
          for (std::size_t i = 0; i < index.size(); ++i) {
            const std::size_t bit = i * static_cast<std::size_t>(bits);
            out[start + bit / 32] |= index[i] << (bit % 32);
          }
        }
        const auto table_offset = static_cast<std::uint32_t>(out.size() - 1);
        if (table_offset >= (1u << 24)) throw Error("compressed_segmentation: a chunk past 64 MiB of tables");
        for (const T v : table)
          for (int w = 0; w < words_per_value; ++w)
            out.push_back(static_cast<std::uint32_t>(static_cast<std::uint64_t>(v) >> (32 * w)));
        out[1 + 2 * static_cast<std::size_t>(b)] = table_offset | (static_cast<std::uint32_t>(bits) << 24);
        out[2 + 2 * static_cast<std::size_t>(b)] = channel_offset;
      }
  return out;
}

template <class T>
void decode(const std::vector<std::byte>& stored, const Index3& n, T* values, const std::string& where) {
  constexpr std::size_t words_per_value = sizeof(T) / 4;
  const std::size_t words = stored.size() / 4;
  std::vector<std::uint32_t> w(words);
  std::memcpy(w.data(), stored.data(), words * 4);
  const Index3 grid{(n[0] + kBlock - 1) / kBlock, (n[1] + kBlock - 1) / kBlock, (n[2] + kBlock - 1) / kBlock};
  const auto bad = [&](const std::string& what) {
    return Error(where + ": not a compressed_segmentation chunk (" + what + ")");
  };
  if (words < 1 || w[0] != 1) throw bad("one channel expected");
  const std::size_t base = 1;
  std::int64_t b = 0;
  for (std::int64_t bz = 0; bz < grid[0]; ++bz)
    for (std::int64_t by = 0; by < grid[1]; ++by)
      for (std::int64_t bx = 0; bx < grid[2]; ++bx, ++b) {
        const std::size_t header = base + 2 * static_cast<std::size_t>(b);
        if (header + 1 >= words) throw bad("block headers past the end");
        const std::size_t table = base + (w[header] & 0xffffffu), bits = w[header] >> 24;
        const std::size_t encoded = base + w[header + 1];
        if (bits != 0 && bits != 1 && bits != 2 && bits != 4 && bits != 8 && bits != 16 && bits != 32)
          throw bad("a block of " + std::to_string(bits) + " bits");
        if (bits > 0 && encoded + (kBlock * kBlock * kBlock * bits + 31) / 32 > words) throw bad("values past the end");
        for (std::int64_t z = 0; z < kBlock; ++z)
          for (std::int64_t y = 0; y < kBlock; ++y)
            for (std::int64_t x = 0; x < kBlock; ++x) {
              const std::int64_t vz = bz * kBlock + z, vy = by * kBlock + y, vx = bx * kBlock + x;
              if (vz >= n[0] || vy >= n[1] || vx >= n[2]) continue;
              std::size_t k = 0;
              if (bits > 0) {
                const std::size_t bit = static_cast<std::size_t>((z * kBlock + y) * kBlock + x) * bits;
                k = (w[encoded + bit / 32] >> (bit % 32)) & ((bits == 32) ? 0xffffffffu : ((1u << bits) - 1));
              }
              const std::size_t at = table + k * words_per_value;
              if (at + words_per_value > words) throw bad("a table index past the end");
              std::uint64_t v = w[at];
              if (words_per_value == 2) v |= static_cast<std::uint64_t>(w[at + 1]) << 32;
              values[(vz * n[1] + vy) * n[2] + vx] = static_cast<T>(v);
            }
      }
}

}  // namespace

void decode_compressed_segmentation(const std::vector<std::byte>& stored, DType dtype, const Index3& count,
                                    void* values, const std::string& where) {
  if (dtype == DType::u32) return decode(stored, count, static_cast<std::uint32_t*>(values), where);
  if (dtype == DType::u64) return decode(stored, count, static_cast<std::uint64_t*>(values), where);
  throw Error(where + ": compressed_segmentation holds uint32 or uint64 labels, not " + std::string(dtype_name(dtype)));
}

std::vector<std::byte> encode_compressed_segmentation(const void* values, DType dtype, const Index3& count) {
  std::vector<std::uint32_t> words;
  if (dtype == DType::u32) {
    words = encode(static_cast<const std::uint32_t*>(values), count);
  } else if (dtype == DType::u64) {
    words = encode(static_cast<const std::uint64_t*>(values), count);
  } else {
    throw Error("compressed_segmentation encodes uint32 and uint64 labels, not " + std::string(dtype_name(dtype)));
  }
  std::vector<std::byte> bytes(words.size() * 4);
  std::memcpy(bytes.data(), words.data(), bytes.size());
  return bytes;
}

}  // namespace volseg::io::precomputed
