// SPDX-License-Identifier: MIT
// Backend "zarr": Zarr v2 arrays (a directory of one JSON .zarray and a
// file per chunk). Reads are independent: each rank decodes the chunks its
// extents touch, and keeps the latest decoded chunks up to a byte budget
// (hint cache=, default 64 MiB) so a chunk that straddles a rank's bricks is
// decoded once. A missing chunk is all fill_value, as the specification says.
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <list>
#include <map>
#include <memory>

#include "volseg/io/byteswap.hpp"
#include "volseg/io/error.hpp"
#include "volseg/io/registry.hpp"
#include "zarr/zarr_array.hpp"

namespace volseg::io {
namespace {

// The whole of a small file; nullopt when it does not exist.
std::optional<std::vector<std::byte>> read_file(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ENOENT) return std::nullopt;
    throw_errno("open", path);
  }
  std::vector<std::byte> data;
  std::byte block[1 << 16];
  int saved = 0;
  for (;;) {
    const ssize_t n = ::read(fd, block, sizeof block);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) saved = errno;
    if (n <= 0) break;
    data.insert(data.end(), block, block + n);
  }
  if (::close(fd) != 0 && saved == 0) saved = errno;
  if (saved != 0) throw_errno("read", path, saved);
  return data;
}

template <class T>
void swap_all(std::byte* data, std::size_t count) {
  auto* values = reinterpret_cast<T*>(data);
  for (std::size_t i = 0; i < count; ++i) values[i] = byteswap(values[i]);
}

void to_native(std::byte* data, std::size_t count, std::size_t size) {
  if (size == 2) swap_all<std::uint16_t>(data, count);
  if (size == 4) swap_all<std::uint32_t>(data, count);
  if (size == 8) swap_all<std::uint64_t>(data, count);
}

class ZarrReader final : public VolumeReader {
 public:
  ZarrReader(const std::string& path, const Comm& comm, std::uint64_t cache_bytes)
      : path_(path), cache_bytes_(cache_bytes) {
    std::string text;
    collectively(comm, [&] {
      if (comm.rank() != 0) return;
      auto bytes = read_file(path + "/.zarray");
      if (!bytes) throw Error(path + ": not a Zarr v2 array (no .zarray)");
      text.assign(reinterpret_cast<const char*>(bytes->data()), bytes->size());
      zarr::parse_array(text, path + "/.zarray");  // refused on every rank, before any broadcast
    });
    text = comm.broadcast(text);
    meta_ = zarr::parse_array(text, path + "/.zarray");
    info_.dims = meta_.shape;
    info_.dtype = meta_.dtype;
    info_.byte_order = meta_.byte_order;
    info_.fill_value = meta_.fill_nan ? std::nullopt : meta_.fill_value;
    info_.attributes["zarr_dtype"] = meta_.dtype_text;
    info_.attributes["zarr_chunks"] = std::to_string(meta_.chunks[0]) + "," + std::to_string(meta_.chunks[1]) + "," +
                                      std::to_string(meta_.chunks[2]);
    info_.attributes["zarr_compressor"] =
        meta_.compressor.id.empty() ? "none"
        : meta_.compressor.id == "blosc"
            ? "blosc (" + meta_.compressor.cname + ", level " + std::to_string(meta_.compressor.level) +
                  ", shuffle " + std::to_string(meta_.compressor.shuffle) + ")"
            : meta_.compressor.id + " (level " + std::to_string(meta_.compressor.level) + ")";
    info_.attributes["zarr_dimension_separator"] = std::string(1, meta_.separator);
    fill_chunk_.resize(meta_.chunk_bytes());
    fill(fill_chunk_.data());
  }

  const VolumeInfo& info() const override { return info_; }
  std::string backend_name() const override { return "zarr"; }
  std::uint64_t bytes_read() const override { return bytes_read_; }
  std::vector<std::string> files() const override { return {path_, path_ + "/.zarray"}; }

 protected:
  void do_read(const Extent& extent, void* buffer) override {
    const std::size_t size = dtype_size(meta_.dtype);
    const Index3& c = meta_.chunks;
    Index3 first{}, last{};
    for (std::size_t a = 0; a < 3; ++a) {
      first[a] = extent.offset[a] / c[a];
      last[a] = (extent.offset[a] + extent.count[a] - 1) / c[a];
    }
    auto* out = static_cast<std::byte*>(buffer);
    for (std::int64_t cz = first[0]; cz <= last[0]; ++cz)
      for (std::int64_t cy = first[1]; cy <= last[1]; ++cy)
        for (std::int64_t cx = first[2]; cx <= last[2]; ++cx) {
          const Index3 chunk{cz, cy, cx};
          const std::byte* data = decoded(chunk);
          // The part of the extent inside this chunk, row by row.
          Index3 lo{}, hi{};
          for (std::size_t a = 0; a < 3; ++a) {
            lo[a] = std::max(extent.offset[a], chunk[a] * c[a]);
            hi[a] = std::min(extent.offset[a] + extent.count[a], (chunk[a] + 1) * c[a]);
          }
          const auto row = static_cast<std::size_t>(hi[2] - lo[2]) * size;
          for (std::int64_t z = lo[0]; z < hi[0]; ++z)
            for (std::int64_t y = lo[1]; y < hi[1]; ++y) {
              const std::int64_t in = ((z - chunk[0] * c[0]) * c[1] + (y - chunk[1] * c[1])) * c[2] + (lo[2] - chunk[2] * c[2]);
              const std::int64_t at = ((z - extent.offset[0]) * extent.count[1] + (y - extent.offset[1])) * extent.count[2] +
                                      (lo[2] - extent.offset[2]);
              std::memcpy(out + at * static_cast<std::int64_t>(size), data + in * static_cast<std::int64_t>(size), row);
            }
        }
  }
  void do_close() override { cache_.clear(); }

 private:
  void fill(std::byte* data) const {
    const std::size_t size = dtype_size(meta_.dtype), count = meta_.chunk_bytes() / size;
    if (!meta_.fill_value || (meta_.fill_value && *meta_.fill_value == 0 && !meta_.fill_nan)) {
      std::memset(data, 0, meta_.chunk_bytes());
      return;
    }
    std::byte value[8] = {};
    const long double v = *meta_.fill_value;
    switch (meta_.dtype) {
      case DType::i8: { auto x = static_cast<std::int8_t>(v); std::memcpy(value, &x, 1); break; }
      case DType::u8: { auto x = static_cast<std::uint8_t>(v); std::memcpy(value, &x, 1); break; }
      case DType::i16: { auto x = static_cast<std::int16_t>(v); std::memcpy(value, &x, 2); break; }
      case DType::u16: { auto x = static_cast<std::uint16_t>(v); std::memcpy(value, &x, 2); break; }
      case DType::i32: { auto x = static_cast<std::int32_t>(v); std::memcpy(value, &x, 4); break; }
      case DType::u32: { auto x = static_cast<std::uint32_t>(v); std::memcpy(value, &x, 4); break; }
      case DType::i64: { auto x = static_cast<std::int64_t>(v); std::memcpy(value, &x, 8); break; }
      case DType::u64: { auto x = static_cast<std::uint64_t>(v); std::memcpy(value, &x, 8); break; }
      case DType::f32: { auto x = static_cast<float>(v); std::memcpy(value, &x, 4); break; }
      case DType::f64: { auto x = static_cast<double>(v); std::memcpy(value, &x, 8); break; }
    }
    for (std::size_t i = 0; i < count; ++i) std::memcpy(data + i * size, value, size);
  }

  // A chunk's values, native order: from the cache, or read and decoded.
  const std::byte* decoded(const Index3& chunk) {
    const std::string key = meta_.chunk_key(chunk);
    if (auto it = cache_.find(key); it != cache_.end()) {
      order_.splice(order_.begin(), order_, it->second.at);
      return it->second.data.data();
    }
    const std::string file = path_ + "/" + key;
    auto stored = read_file(file);
    if (!stored) return fill_chunk_.data();
    bytes_read_ += stored->size();
    std::vector<std::byte> data(meta_.chunk_bytes());
    zarr::decode_chunk(meta_, *stored, data, path_ + ": chunk " + key);
    if (meta_.byte_order == ByteOrder::big && dtype_size(meta_.dtype) > 1)
      to_native(data.data(), data.size() / dtype_size(meta_.dtype), dtype_size(meta_.dtype));
    while (!order_.empty() && held_ + data.size() > cache_bytes_) {
      held_ -= cache_.at(order_.back()).data.size();
      cache_.erase(order_.back());
      order_.pop_back();
    }
    order_.push_front(key);
    held_ += data.size();
    auto& entry = cache_[key];
    entry.data = std::move(data);
    entry.at = order_.begin();
    return entry.data.data();
  }

  struct Entry {
    std::vector<std::byte> data;
    std::list<std::string>::iterator at;
  };
  std::string path_;
  zarr::ArrayMeta meta_;
  VolumeInfo info_;
  std::uint64_t cache_bytes_, held_ = 0, bytes_read_ = 0;
  std::vector<std::byte> fill_chunk_;
  std::map<std::string, Entry> cache_;
  std::list<std::string> order_;  // most recent first
};

}  // namespace

Backend make_zarr_backend() {
  Backend backend;
  backend.name = "zarr";
  backend.formats = "Zarr v2 arrays (a .zarr directory): blosc, zlib, gzip, zstd or no compressor";
  backend.extension = ".zarr";
  backend.description = "each rank decodes the chunks its bricks touch, keeping recent ones (hint cache=64MiB)";
  backend.hints = {{"cache", HintFor::readers}};
  backend.open = [](const std::string& path, const Comm& comm, const Hints& hints) -> std::unique_ptr<VolumeReader> {
    const auto cache = static_cast<std::uint64_t>(hints.get_size("cache", std::int64_t{64} << 20));
    hints.reject_unused("zarr");
    return std::make_unique<ZarrReader>(path, comm, cache);
  };
  backend.create = [](const CreateRequest&, const Comm&, const Hints&) -> std::unique_ptr<VolumeWriter> {
    throw Error("backend zarr reads only, for now: write the output as .nhdr, .nc or .nc4");
  };
  return backend;
}

}  // namespace volseg::io
