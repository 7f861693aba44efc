// SPDX-License-Identifier: MIT
// Backend "zarr": Zarr v2 arrays (a directory of one JSON .zarray and a
// file per chunk). Reads are independent: each rank decodes the chunks its
// extents touch, and keeps the latest decoded chunks up to a byte budget
// (hint cache=, default 64 MiB) so a chunk that straddles a rank's bricks is
// decoded once. A missing chunk is all fill_value, as the specification says.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <list>
#include <map>
#include <memory>
#include <span>

#include "volseg/io/byteswap.hpp"
#include "volseg/io/error.hpp"
#include "volseg/io/files.hpp"
#include "volseg/io/registry.hpp"
#include <nlohmann/json.hpp>
#include "zarr/zarr_array.hpp"

namespace volseg::io {
namespace {

// The whole of a file into `data` (sized by fstat, read until its end);
// false when it does not exist.
bool read_whole(const std::string& path, std::vector<std::byte>& data) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ENOENT) return false;
    throw_errno("open", path);
  }
  struct stat st {};
  int saved = ::fstat(fd, &st) == 0 ? 0 : errno;
  std::size_t got = 0;
  if (saved == 0) {
    data.resize(static_cast<std::size_t>(st.st_size) + 1);  // one more: a file that grew is read to its end
    for (;;) {
      if (got == data.size()) data.resize(data.size() * 2);
      const ssize_t n = ::read(fd, data.data() + got, data.size() - got);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) saved = errno;
      if (n <= 0) break;
      got += static_cast<std::size_t>(n);
    }
  }
  if (::close(fd) != 0 && saved == 0) saved = errno;
  if (saved != 0) throw_errno("read", path, saved);
  data.resize(got);
  return true;
}

std::optional<std::vector<std::byte>> read_file(const std::string& path) {
  std::vector<std::byte> data;
  if (!read_whole(path, data)) return std::nullopt;
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

// A whole chunk of fill_value (0 where there is none), native order.
void fill_values(const zarr::ArrayMeta& meta, std::byte* data) {
  const std::size_t size = dtype_size(meta.dtype), count = meta.chunk_bytes() / size;
  if (!meta.fill_value || (*meta.fill_value == 0 && !meta.fill_nan)) {
    std::memset(data, 0, meta.chunk_bytes());
    return;
  }
  std::byte value[8] = {};
  const long double v = *meta.fill_value;
  switch (meta.dtype) {
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

class ZarrReader final : public VolumeReader {
 public:
  ZarrReader(const std::string& path, const Comm& comm, std::uint64_t cache_bytes)
      : path_(path), array_(path), cache_bytes_(cache_bytes) {
    std::string text, attributes, group;
    collectively(comm, [&] {
      if (comm.rank() != 0) return;
      auto bytes = read_file(path + "/.zarray");
      if (!bytes) {
        // An OME-Zarr image: its first dataset is the full resolution.
        auto extra = read_file(path + "/.zattrs");
        if (!extra || !read_file(path + "/.zgroup")) throw Error(path + ": not a Zarr v2 array (no .zarray)");
        group.assign(reinterpret_cast<const char*>(extra->data()), extra->size());
        array_ = path + "/" + first_dataset(group, path);
        bytes = read_file(array_ + "/.zarray");
        if (!bytes) throw Error(array_ + ": the OME-Zarr image's first dataset is not a Zarr v2 array (no .zarray)");
      }
      text.assign(reinterpret_cast<const char*>(bytes->data()), bytes->size());
      zarr::parse_array(text, array_ + "/.zarray");  // refused on every rank, before any broadcast
      if (auto extra = read_file(array_ + "/.zattrs"))
        attributes.assign(reinterpret_cast<const char*>(extra->data()), extra->size());
    });
    text = comm.broadcast(text);
    attributes = comm.broadcast(attributes);
    group = comm.broadcast(group);
    array_ = comm.broadcast(array_);
    meta_ = zarr::parse_array(text, array_ + "/.zarray");
    read_attributes(attributes);
    if (!group.empty()) read_ome(group);
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
    fill_values(meta_, fill_chunk_.data());
  }

  const VolumeInfo& info() const override { return info_; }
  std::string backend_name() const override { return "zarr"; }
  std::optional<Index3> chunks() const override { return meta_.chunks; }
  std::uint64_t bytes_read() const override { return bytes_read_; }
  std::vector<std::string> files() const override { return {path_, array_ + "/.zarray"}; }

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
    if (first == last && extent.count == c && !cache_.count(meta_.chunk_key(first))) {
      decode_into(first, out);  // the extent is one whole chunk: decoded in place, neither kept nor copied
      return;
    }
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
  void do_close() override {
    cache_.clear();
    order_.clear();
    spare_.clear();
  }

 private:
  // What volseg wrote in .zattrs ("volseg": its attributes, spacing_xyz,
  // origin_xyz); other tools' attributes are left alone, and a .zattrs that
  // is not JSON is ignored like a missing one (the array is what is read).
  void read_attributes(const std::string& text) {
    if (text.empty()) return;
    const auto doc = nlohmann::json::parse(text, nullptr, false);
    if (doc.is_discarded() || !doc.is_object() || !doc.contains("volseg") || !doc["volseg"].is_object()) return;
    for (const auto& [key, value] : doc["volseg"].items()) {
      if (value.is_string()) info_.attributes[key] = value.get<std::string>();
      const bool triple = value.is_array() && value.size() == 3 &&
                          std::all_of(value.begin(), value.end(), [](const auto& v) { return v.is_number(); });
      if (triple && key == "spacing_xyz") info_.spacing = value.get<std::array<double, 3>>();
      if (triple && key == "origin_xyz") info_.origin = value.get<std::array<double, 3>>();
    }
  }

  // Reads and decodes a chunk into out (chunk_bytes()), native order; a
  // missing chunk is fill. Returns whether the chunk was stored.
  bool decode_into(const Index3& chunk, std::byte* out) {
    const std::string key = meta_.chunk_key(chunk);
    if (!read_whole(array_ + "/" + key, stored_)) {
      std::memcpy(out, fill_chunk_.data(), fill_chunk_.size());
      return false;
    }
    bytes_read_ += stored_.size();
    const std::size_t bytes = meta_.chunk_bytes();
    zarr::decode_chunk(meta_, stored_, {out, bytes}, path_ + ": chunk " + key);
    if (meta_.byte_order == ByteOrder::big && dtype_size(meta_.dtype) > 1)
      to_native(out, bytes / dtype_size(meta_.dtype), dtype_size(meta_.dtype));
    return true;
  }

  // The path of an OME-Zarr image's first dataset (its full resolution),
  // checked: NGFF 0.4 multiscales with 3 spatial axes.
  static std::string first_dataset(const std::string& text, const std::string& where) {
    const auto doc = nlohmann::json::parse(text, nullptr, false);
    const std::string at = where + "/.zattrs";
    if (doc.is_discarded() || !doc.is_object()) throw Error(at + ": not JSON");
    const auto& m = doc.value("multiscales", nlohmann::json());
    if (!m.is_array() || m.empty() || !m[0].is_object())
      throw Error(where + ": a Zarr group, not an array, and not an OME-Zarr image (no multiscales): name one of its "
                  "arrays (" + where + "/NAME)");
    const auto& axes = m[0].value("axes", nlohmann::json());
    if (axes.is_array() && axes.size() != 3)
      throw Error(at + ": an OME-Zarr image of " + std::to_string(axes.size()) +
                  " axes; volseg reads 3 spatial axes (z, y, x)");
    const auto& datasets = m[0].value("datasets", nlohmann::json());
    if (!datasets.is_array() || datasets.empty() || !datasets[0].is_object() || !datasets[0].contains("path") ||
        !datasets[0]["path"].is_string())
      throw Error(at + ": multiscales has no dataset with a path");
    const std::string path = datasets[0]["path"].get<std::string>();
    if (path.empty() || path.find("..") != std::string::npos || path[0] == '/')
      throw Error(at + ": dataset path \"" + path + "\" is not inside the image");
    return path;
  }

  // Spacing and origin from the first dataset's scale and translation (z, y, x).
  void read_ome(const std::string& text) {
    const auto doc = nlohmann::json::parse(text, nullptr, false);
    const auto& dataset = doc["multiscales"][0]["datasets"][0];
    info_.attributes["ome_zarr_dataset"] = dataset["path"].get<std::string>();
    if (doc.contains("image-label")) info_.attributes["ome_zarr_image_label"] = "yes";
    for (const auto& t : dataset.value("coordinateTransformations", nlohmann::json::array())) {
      const std::string type = t.value("type", std::string());
      const char* key = type == "scale" ? "scale" : type == "translation" ? "translation" : nullptr;
      if (!key || !t.contains(key) || !t[key].is_array() || t[key].size() != 3) continue;
      if (!std::all_of(t[key].begin(), t[key].end(), [](const auto& v) { return v.is_number(); })) continue;
      const std::array<double, 3> zyx = t[key].template get<std::array<double, 3>>();
      auto& target = type == "scale" ? info_.spacing : info_.origin;
      target = {zyx[2], zyx[1], zyx[0]};
    }
  }

  // A chunk's values, native order: from the cache, or read and decoded.
  const std::byte* decoded(const Index3& chunk) {
    const std::string key = meta_.chunk_key(chunk);
    if (auto it = cache_.find(key); it != cache_.end()) {
      order_.splice(order_.begin(), order_, it->second.at);
      return it->second.data.get();
    }
    const std::size_t bytes = meta_.chunk_bytes();
    // Evicted chunks' buffers are reused: a fresh one per chunk costs page
    // faults and zeroing, more than decoding with lz4.
    while (!order_.empty() && held_ + bytes > cache_bytes_) {
      auto it = cache_.find(order_.back());
      spare_.push_back(std::move(it->second.data));
      held_ -= bytes;
      cache_.erase(it);
      order_.pop_back();
    }
    std::unique_ptr<std::byte[]> data;
    if (spare_.empty()) {
      data.reset(new std::byte[bytes]);  // not zeroed: the decoder fills it
    } else {
      data = std::move(spare_.back());
      spare_.pop_back();
    }
    if (!decode_into(chunk, data.get())) {  // a missing chunk: all fill
      spare_.push_back(std::move(data));
      return fill_chunk_.data();
    }
    order_.push_front(key);
    held_ += bytes;
    auto& entry = cache_[key];
    entry.data = std::move(data);
    entry.at = order_.begin();
    return entry.data.get();
  }

  struct Entry {
    std::unique_ptr<std::byte[]> data;
    std::list<std::string>::iterator at;
  };
  std::vector<std::unique_ptr<std::byte[]>> spare_;
  std::vector<std::byte> stored_;  // the chunk file being decoded
  std::string path_, array_;  // what the user named; the array's folder (an OME-Zarr image's dataset)
  zarr::ArrayMeta meta_;
  VolumeInfo info_;
  std::uint64_t cache_bytes_, held_ = 0, bytes_read_ = 0;
  std::vector<std::byte> fill_chunk_;
  std::map<std::string, Entry> cache_;
  std::list<std::string> order_;  // most recent first
};


// Writes a Zarr v2 array into a hidden directory beside the final name
// (DIR/.NAME.volseg-tmp-PID of rank 0), each rank its own chunk files, and
// at close, once every rank has succeeded, rank 0 writes .zarray (last) and
// renames the directory into place: the store appears under its name only
// when whole. Chunks all equal to fill_value are not written
// (write_empty_chunks=False). A chunk a write covers only in part is kept
// until the rest of it arrives; one still partial at close had another
// writer, which the alignment of chunks to the job's bricks rules out.
class ZarrWriter final : public VolumeWriter {
 public:
  ZarrWriter(const CreateRequest& request, const Comm& comm, zarr::ArrayMeta meta, bool fsync, bool ome)
      : comm_(comm), path_(request.path), info_(request.info), meta_(std::move(meta)), fsync_(fsync),
        overwrite_(request.overwrite), ome_(ome) {
    collectively(comm, [&] {
      if (comm.rank() != 0) return;
      temporary_ = temporary_path(path_);
      std::error_code ec;
      std::filesystem::remove_all(temporary_, ec);
      if (::mkdir(temporary_.c_str(), 0777) != 0) throw_errno("mkdir", temporary_);
      if (ome_ && ::mkdir((temporary_ + "/0").c_str(), 0777) != 0) throw_errno("mkdir", temporary_ + "/0");
    });
    temporary_ = comm.broadcast(temporary_);
    owner_ = comm.rank() == 0;
    fill_ = fill_chunk();
  }
  ~ZarrWriter() override {
    if (owner_ && !temporary_.empty()) {
      std::error_code ec;
      std::filesystem::remove_all(temporary_, ec);
    }
  }

  const VolumeInfo& info() const override { return info_; }
  std::string backend_name() const override { return "zarr"; }
  std::uint64_t bytes_written() const override { return bytes_written_; }

 protected:
  void do_write(const Extent& extent, const void* buffer) override {
    const std::size_t size = dtype_size(meta_.dtype);
    const Index3& c = meta_.chunks;
    const auto* in = static_cast<const std::byte*>(buffer);
    for (std::int64_t cz = extent.offset[0] / c[0]; cz <= (extent.offset[0] + extent.count[0] - 1) / c[0]; ++cz)
      for (std::int64_t cy = extent.offset[1] / c[1]; cy <= (extent.offset[1] + extent.count[1] - 1) / c[1]; ++cy)
        for (std::int64_t cx = extent.offset[2] / c[2]; cx <= (extent.offset[2] + extent.count[2] - 1) / c[2]; ++cx) {
          const Index3 chunk{cz, cy, cx};
          Index3 lo{}, hi{};
          std::int64_t inside = 1, covered = 1;  // the chunk's voxels inside the volume; those this write gives
          for (std::size_t a = 0; a < 3; ++a) {
            lo[a] = std::max(extent.offset[a], chunk[a] * c[a]);
            hi[a] = std::min(extent.offset[a] + extent.count[a], (chunk[a] + 1) * c[a]);
            inside *= std::min(meta_.shape[a], (chunk[a] + 1) * c[a]) - chunk[a] * c[a];
            covered *= hi[a] - lo[a];
          }
          const std::string key = meta_.chunk_key(chunk);
          auto it = pending_.find(key);
          if (it == pending_.end()) {
            if (extent.offset == Index3{chunk[0] * c[0], chunk[1] * c[1], chunk[2] * c[2]} && extent.count == c) {
              store(key, {in, meta_.chunk_bytes()});  // the write is this chunk: encoded from the caller's buffer
              continue;
            }
            if (covered == inside) {
              std::vector<std::byte> whole = fill_chunk();
              copy_into(whole.data(), chunk, extent, in, lo, hi, size);
              store(key, whole);
              continue;
            }
            it = pending_.emplace(key, Pending{fill_chunk(), 0}).first;
          }
          copy_into(it->second.values.data(), chunk, extent, in, lo, hi, size);
          it->second.covered += covered;
          if (it->second.covered >= inside) {
            store(key, it->second.values);
            pending_.erase(it);
          }
        }
  }

  void do_close() override {
    std::exception_ptr error;
    try {
      if (!pending_.empty())
        throw RankError("zarr " + path_ + ": chunk " + pending_.begin()->first +
                        " was written in part by this rank and in part by another; Zarr needs one writer per chunk: "
                        "give --brick a multiple of the chunks, or hint chunks= that divides the bricks");
    } catch (...) {
      error = std::current_exception();
    }
    agree(comm_, error);
    collectively(comm_, [&] {
      if (comm_.rank() != 0) return;
      const std::string array = array_folder();
      write_text(array + "/.zattrs", attributes_json());
      write_text(array + "/.zarray", zarr::array_json(meta_));  // last: the array is whole
      if (fsync_) sync_folder_of(array + "/.zarray");
      if (ome_) {
        write_text(temporary_ + "/.zgroup", "{\n    \"zarr_format\": 2\n}\n");
        write_text(temporary_ + "/.zattrs", ome_json());
        if (fsync_) sync_folder_of(temporary_ + "/.zattrs");
      }
      std::string old;
      if (std::filesystem::exists(path_)) {
        if (!overwrite_) throw Error(path_ + " exists (use --force to replace it)");
        old = temporary_ + ".old";
        if (rename_file(path_, old) != 0) throw_errno("rename away the old", path_);
      }
      if (rename_file(temporary_, path_) != 0) {
        const int saved = errno;
        if (!old.empty()) rename_file(old, path_);
        throw_errno("rename to", path_, saved);
      }
      temporary_.clear();
      if (!old.empty()) std::filesystem::remove_all(old);
      if (fsync_) sync_folder_of(path_);
    });
  }

 private:
  struct Pending {
    std::vector<std::byte> values;
    std::int64_t covered = 0;
  };

  std::vector<std::byte> fill_chunk() const {
    std::vector<std::byte> chunk(meta_.chunk_bytes());
    fill_values(meta_, chunk.data());
    return chunk;
  }

  void copy_into(std::byte* chunk_values, const Index3& chunk, const Extent& extent, const std::byte* in,
                 const Index3& lo, const Index3& hi, std::size_t size) const {
    const Index3& c = meta_.chunks;
    const auto row = static_cast<std::size_t>(hi[2] - lo[2]) * size;
    for (std::int64_t z = lo[0]; z < hi[0]; ++z)
      for (std::int64_t y = lo[1]; y < hi[1]; ++y) {
        const std::int64_t at = ((z - chunk[0] * c[0]) * c[1] + (y - chunk[1] * c[1])) * c[2] + (lo[2] - chunk[2] * c[2]);
        const std::int64_t from = ((z - extent.offset[0]) * extent.count[1] + (y - extent.offset[1])) * extent.count[2] +
                                  (lo[2] - extent.offset[2]);
        std::memcpy(chunk_values + at * static_cast<std::int64_t>(size), in + from * static_cast<std::int64_t>(size), row);
      }
  }

  // Encodes and writes a whole chunk, unless it is all fill.
  void store(const std::string& key, std::span<const std::byte> values) {
    if (meta_.fill_value && std::memcmp(values.data(), fill_.data(), fill_.size()) == 0) return;
    const auto encoded = zarr::encode_chunk(meta_, values);
    const std::string file = array_folder() + "/" + key;
    if (meta_.separator == '/') std::filesystem::create_directories(std::filesystem::path(file).parent_path());
    write_bytes(file, encoded.data(), encoded.size());
    bytes_written_ += encoded.size();
  }

  void write_bytes(const std::string& file, const std::byte* data, std::size_t size) const {
    const int fd = ::open(file.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
    if (fd < 0) throw_errno("create", file);
    std::size_t done = 0;
    while (done < size) {
      const ssize_t n = ::write(fd, data + done, size - done);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) {
        const int saved = errno;
        ::close(fd);
        throw_errno("write", file, saved);
      }
      done += static_cast<std::size_t>(n);
    }
    if (fsync_ && ::fsync(fd) != 0) {
      const int saved = errno;
      ::close(fd);
      throw_errno("fsync", file, saved);
    }
    if (::close(fd) != 0) throw_errno("close", file);
  }

  void write_text(const std::string& file, const std::string& text) const {
    write_bytes(file, reinterpret_cast<const std::byte*>(text.data()), text.size());
  }

  // Where the array goes: the store itself, or an OME-Zarr image's dataset "0".
  std::string array_folder() const { return ome_ ? temporary_ + "/0" : temporary_; }

  // The OME-Zarr 0.4 (NGFF) image group's attributes: one multiscale of one
  // dataset, "0", placed by its scale and translation (z, y, x) from the
  // volume's spacing and origin; masks and labels are label images
  // ("image-label"), as napari's and Neuroglancer's readers expect.
  std::string ome_json() const {
    using nlohmann::json;
    const auto& sp = info_.spacing;
    const auto& o = info_.origin;
    json axes = json::array();
    for (const char* name : {"z", "y", "x"}) axes.push_back({{"name", name}, {"type", "space"}});
    json transforms = json::array({json{{"type", "scale"}, {"scale", {sp[2], sp[1], sp[0]}}}});
    if (o[0] != 0 || o[1] != 0 || o[2] != 0)
      transforms.push_back({{"type", "translation"}, {"translation", {o[2], o[1], o[0]}}});
    const std::string name = std::filesystem::path(path_).filename().string();
    json doc;
    doc["multiscales"] = json::array({json{{"version", "0.4"},
                                           {"name", name.substr(0, name.find('.'))},
                                           {"axes", axes},
                                           {"datasets", json::array({json{{"path", "0"},
                                                                          {"coordinateTransformations", transforms}}})}}});
    const bool mask = info_.attributes.count("flag_values") > 0, labels = info_.attributes.count("numbering") > 0;
    if (mask || labels) {
      json label{{"version", "0.4"}};
      if (mask) label["colors"] = json::array({json{{"label-value", 1}, {"rgba", {255, 200, 0, 255}}}});
      doc["image-label"] = label;
    }
    return doc.dump(4) + "\n";
  }

  // volseg's attributes and the grid's spacing and origin (x, y, z).
  std::string attributes_json() const {
    nlohmann::json doc;
    nlohmann::json volseg = nlohmann::json::object();
    for (const auto& [key, value] : info_.attributes) volseg[key] = value;
    volseg["spacing_xyz"] = info_.spacing;
    volseg["origin_xyz"] = info_.origin;
    doc["volseg"] = volseg;
    return doc.dump(4) + "\n";
  }

  const Comm& comm_;
  std::string path_, temporary_;
  VolumeInfo info_;
  zarr::ArrayMeta meta_;
  bool fsync_, overwrite_, ome_, owner_ = false;
  std::uint64_t bytes_written_ = 0;
  std::map<std::string, Pending> pending_;
  std::vector<std::byte> fill_;  // a whole chunk of fill_value
};

// The array a request asks for, with the hints' chunks and compressor.
zarr::ArrayMeta meta_for(const CreateRequest& request, const Comm& comm, const Hints& hints) {
  const VolumeInfo& info = request.info;
  zarr::ArrayMeta meta;
  meta.shape = info.dims;
  meta.dtype = info.dtype;
  static const char* codes[] = {"i1", "u1", "i2", "u2", "i4", "u4", "i8", "u8", "f4", "f8"};
  meta.dtype_text = std::string(dtype_size(info.dtype) == 1 ? "|" : "<") + codes[static_cast<int>(info.dtype)];
  meta.byte_order = ByteOrder::little;
  // Masks and labels: 0 is background, and chunks of it are not written.
  const bool integer = info.dtype != DType::f32 && info.dtype != DType::f64;
  meta.fill_value = info.fill_value ? info.fill_value : integer ? std::optional<long double>(0) : std::nullopt;
  meta.compressor = zarr::compressor_from(hints.get_string("compressor", "blosc-lz4"),
                                          static_cast<int>(hints.get_int("level", -1)),
                                          hints.get_string("shuffle", ""), info.dtype);
  const std::string separator = hints.get_string("dimension_separator", ".");
  if (separator != "." && separator != "/") throw Error("hint dimension_separator=" + separator + " is neither . nor /");
  meta.separator = separator[0];
  const std::string chunks = hints.get_string("chunks", "");
  if (!chunks.empty()) {
    Index3 c{};
    if (std::sscanf(chunks.c_str(), "%ld,%ld,%ld", &c[0], &c[1], &c[2]) != 3 || c[0] <= 0 || c[1] <= 0 || c[2] <= 0)
      throw Error("hint chunks=" + chunks + " is not Z,Y,X of positive integers");
    meta.chunks = c;
  } else {
    meta.chunks = request.bricks.value_or(Index3{64, 64, 64});
  }
  for (std::size_t a = 0; a < 3; ++a) meta.chunks[a] = std::min(meta.chunks[a], std::max<std::int64_t>(info.dims[a], 1));
  if (static_cast<long double>(meta.chunk_bytes()) > static_cast<long double>(std::int64_t{1} << 31))
    throw Error("zarr chunks of " + std::to_string(meta.chunk_bytes()) + " bytes are past 2 GiB: hint smaller chunks=");
  if (comm.size() > 1) {
    if (!request.bricks)
      throw Error("zarr: this job's writes are not bricks of one grid, and Zarr needs one writer per chunk: run it on "
                  "1 rank");
    for (std::size_t a = 0; a < 3; ++a) {
      const std::int64_t b = (*request.bricks)[a];
      if (b % meta.chunks[a] != 0 && b < info.dims[a])
        throw Error("zarr: chunks " + chunks + " do not divide the job's bricks " + std::to_string((*request.bricks)[0]) +
                    "," + std::to_string((*request.bricks)[1]) + "," + std::to_string((*request.bricks)[2]) +
                    ", so a chunk would have two writers: give --brick a multiple of the chunks, or chunks= that "
                    "divide the bricks");
    }
  }
  if (request.partial != Partial::none)
    throw Error("--resume does not write Zarr: write the mask as .nhdr or .nc to resume it");
  return meta;
}

}  // namespace

Backend make_zarr_backend() {
  Backend backend;
  backend.name = "zarr";
  backend.formats = "Zarr v2 arrays (a .zarr directory): blosc, zlib, gzip, zstd or no compressor";
  backend.extension = ".zarr";
  backend.description =
      "reads: each rank decodes the chunks its bricks touch, keeping recent ones (hint cache=64MiB); writes: each "
      "rank its own chunks, aligned to the bricks (hints compressor=blosc-lz4, level=, shuffle=, chunks=Z,Y,X)";
  backend.hints = {{"cache", HintFor::readers},       {"compressor", HintFor::writers},
                   {"level", HintFor::writers},       {"shuffle", HintFor::writers},
                   {"chunks", HintFor::writers},      {"dimension_separator", HintFor::writers},
                   {"fsync", HintFor::writers},       {"ome", HintFor::writers}};
  backend.open = [](const std::string& path, const Comm& comm, const Hints& hints) -> std::unique_ptr<VolumeReader> {
    const auto cache = static_cast<std::uint64_t>(hints.get_size("cache", std::int64_t{64} << 20));
    hints.reject_unused("zarr");
    return std::make_unique<ZarrReader>(path, comm, cache);
  };
  backend.create = [](const CreateRequest& request, const Comm& comm,
                      const Hints& hints) -> std::unique_ptr<VolumeWriter> {
    zarr::ArrayMeta meta = meta_for(request, comm, hints);
    const bool fsync = hints.get_bool("fsync", false);
    const bool ome = hints.get_bool("ome", false);
    hints.reject_unused("zarr");
    return std::make_unique<ZarrWriter>(request, comm, std::move(meta), fsync, ome);
  };
  return backend;
}

}  // namespace volseg::io
