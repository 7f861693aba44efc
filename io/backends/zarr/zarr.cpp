// SPDX-License-Identifier: MIT
// Backend "zarr": Zarr v2 arrays (a directory of one JSON .zarray and a
// file per chunk). Reads are independent: each rank decodes the chunks its
// extents touch, and keeps the latest decoded chunks up to a byte budget
// (hint cache=, default 64 MiB) so a chunk that straddles a rank's bricks is
// decoded once. A missing chunk is all fill_value, as the specification says.
// A 4D array (t, z, y, x) is a series: --time picks the step,
// whose time comes from xarray's coordinate array of t or volseg's "times".
// Writing: zarr_writer.cpp.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <limits>
#include <list>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <span>

#include "volseg/io/byteswap.hpp"
#include "volseg/io/dtype_dispatch.hpp"
#include "volseg/io/error.hpp"
#include "volseg/io/registry.hpp"
#include "volseg/io/selection.hpp"
#include "zarr/zarr_array.hpp"
#include "zarr/zarr_writer.hpp"

namespace volseg::io {
namespace {

using zarr::read_whole;

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

class ZarrReader final : public VolumeReader {
 public:
  ZarrReader(const std::string& path, const Comm& comm, std::uint64_t cache_bytes, bool fill_is_data,
             std::optional<std::int64_t> time)
      : path_(path), array_(path), cache_bytes_(cache_bytes) {
    std::string text, attributes, group, coordinates;
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
      const auto meta = zarr::parse_array(text, array_ + "/.zarray");  // refused on every rank, before any broadcast
      const auto step = select_step(meta, time);
      check_first_chunk(meta, step);
      if (auto extra = read_file(array_ + "/.zattrs"))
        attributes.assign(reinterpret_cast<const char*>(extra->data()), extra->size());
      coordinates = read_xarray_coordinates(attributes, meta).dump();
    });
    text = comm.broadcast(text);
    attributes = comm.broadcast(attributes);
    coordinates = comm.broadcast(coordinates);
    group = comm.broadcast(group);
    array_ = comm.broadcast(array_);
    meta_ = zarr::parse_array(text, array_ + "/.zarray");
    meta_.step = select_step(meta_, time);
    if (meta_.steps > 0) info_.steps = meta_.steps, info_.step = meta_.step;
    read_attributes(attributes);
    if (!group.empty()) read_ome(group);
    apply_coordinates(nlohmann::json::parse(coordinates));
    info_.dims = meta_.shape;
    info_.dtype = meta_.dtype;
    info_.byte_order = meta_.byte_order;
    // fill_value marks missing data, as xarray reads it (_FillValue), unless
    // the user says the array's fill is a value like any other (hint fill=data).
    info_.fill_value = meta_.fill_nan || fill_is_data ? std::nullopt : meta_.fill_value;
    info_.attributes["zarr_dtype"] = meta_.dtype_text;
    info_.attributes["zarr_chunks"] =
        std::to_string(meta_.chunks[0]) + "," + std::to_string(meta_.chunks[1]) + "," + std::to_string(meta_.chunks[2]);
    info_.attributes["zarr_compressor"] =
        meta_.compressor.id.empty() ? "none"
        : meta_.compressor.id == "blosc"
            ? "blosc (" + meta_.compressor.cname + ", level " + std::to_string(meta_.compressor.level) + ", shuffle " +
                  std::to_string(meta_.compressor.shuffle) + ")"
            : meta_.compressor.id + " (level " + std::to_string(meta_.compressor.level) + ")";
    info_.attributes["zarr_dimension_separator"] = std::string(1, meta_.separator);
    if (meta_.steps > 0) info_.attributes["zarr_steps"] = std::to_string(meta_.steps);
    fill_chunk_.resize(meta_.chunk_bytes());
    zarr::fill_values(meta_, fill_chunk_.data());
    set_capabilities({.chunks = meta_.chunks});
  }

  const VolumeInfo& info() const override { return info_; }
  std::string backend_name() const override { return "zarr"; }
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
          const Extent box = meta_.chunk_box(chunk);
          zarr::copy_part(intersect(extent, box), box, decoded(chunk), extent, out, size);
        }
  }
  void do_close() override {
    cache_.clear();
    order_.clear();
    spare_.clear();
  }

 private:
  // The step a time selection reads: refused for a 3D array, required where
  // a 4D one has several steps (as the NetCDF readers do).
  std::int64_t select_step(const zarr::ArrayMeta& meta, std::optional<std::int64_t> time) const {
    if (meta.steps == 0) {
      if (time) throw Error(path_ + ": the Zarr array is 3D; --time does not apply");
      return 0;
    }
    if (!time && meta.steps != 1)
      throw StepRequired(path_ + ": the Zarr array has " + std::to_string(meta.steps) +
                         " steps along its first axis; choose "
                         "one with --time 0.." +
                         std::to_string(meta.steps - 1) + ", or a range: --time all, A:B[:S]");
    if (time && *time >= meta.steps)
      throw Error(path_ + ": --time " + std::to_string(*time) + " is past the last step " +
                  std::to_string(meta.steps - 1));
    return time.value_or(0);
  }

  // The step's first chunk, where it is stored, decoded and dropped: a
  // header that lies about it is refused when the array is opened, so
  // `volseg info` does not describe an array it cannot read. Later chunks
  // are checked as they are decoded.
  void check_first_chunk(zarr::ArrayMeta meta, std::int64_t step) const {
    meta.step = step;
    const std::string key = meta.chunk_key({0, 0, 0});
    std::vector<std::byte> stored;
    if (!read_whole(array_ + "/" + key, stored, zarr::max_stored_bytes(meta))) return;
    std::vector<std::byte> decoded(meta.stored_chunk_bytes());
    zarr::decode_chunk(meta, stored, decoded, path_ + ": chunk " + key);
  }

  // What volseg wrote in .zattrs ("volseg": its attributes, spacing_xyz,
  // origin_xyz); other tools' attributes are left alone, and a .zattrs that
  // is not JSON is ignored like a missing one (the array is what is read).
  void read_attributes(const std::string& text) {
    if (text.empty()) return;
    const auto doc = nlohmann::json::parse(text, nullptr, false);
    if (doc.is_discarded() || !doc.is_object() || !doc.contains("volseg") || !doc["volseg"].is_object()) return;
    for (const auto& [key, value] : doc["volseg"].items()) {
      if (key == "time_units" && value.is_string()) {
        info_.time_units = value.get<std::string>();
        continue;
      }
      if (key == "times" && value.is_array() && static_cast<std::int64_t>(value.size()) == meta_.steps &&
          value[static_cast<std::size_t>(meta_.step)].is_number()) {
        info_.step_time = value[static_cast<std::size_t>(meta_.step)].get<double>();
        continue;
      }
      if (value.is_string()) info_.attributes[key] = value.get<std::string>();
      const bool triple = value.is_array() && value.size() == 3 &&
                          std::all_of(value.begin(), value.end(), [](const auto& v) { return v.is_number(); });
      if (triple && key == "spacing_xyz") info_.spacing = value.get<std::array<double, 3>>();
      if (triple && key == "origin_xyz") info_.origin = value.get<std::array<double, 3>>();
    }
  }

  // xarray's coordinates: the array's _ARRAY_DIMENSIONS name its
  // dimensions, and a sibling array of each name, one-dimensional and
  // numeric, holds that axis's coordinate (CF attributes units and positive
  // in its .zattrs); a 4D array's first is its time. Also the variable's own
  // units. Rank 0 reads them; a coordinate array it cannot read is passed
  // by, as CF readers do.
  nlohmann::json read_xarray_coordinates(const std::string& attributes, const zarr::ArrayMeta& meta) const {
    nlohmann::json found = nlohmann::json::object();
    const auto doc = nlohmann::json::parse(attributes.empty() ? std::string("{}") : attributes, nullptr, false);
    if (doc.is_discarded() || !doc.is_object()) return found;
    if (doc.contains("units") && doc["units"].is_string()) found["units"] = doc["units"];
    const auto& dims = doc.value("_ARRAY_DIMENSIONS", nlohmann::json());
    const std::size_t first = meta.steps > 0 ? 1 : 0;
    if (!dims.is_array() || dims.size() != 3 + first) return found;
    std::string array = array_;
    while (array.size() > 1 && array.back() == '/') array.pop_back();
    const std::string parent = std::filesystem::path(array).parent_path().string();
    auto coordinate = [&](const nlohmann::json& name, std::int64_t length) -> nlohmann::json {
      if (!name.is_string()) return nullptr;
      try {
        return read_coordinate_array(parent, name.get<std::string>(), length);
      } catch (const std::exception&) {  // a malformed coordinate array is passed by
        return nullptr;
      }
    };
    nlohmann::json axes = nlohmann::json::array();
    for (std::size_t a = 0; a < 3; ++a) axes.push_back(coordinate(dims[first + a], meta.shape[a]));
    found["axes"] = axes;
    if (first == 1) found["time"] = coordinate(dims[0], meta.steps);
    return found;
  }

  // One coordinate array: {name, units, positive, values}, or null.
  static nlohmann::json read_coordinate_array(const std::string& parent, const std::string& name, std::int64_t length) {
    if (name.empty() || name.find('/') != std::string::npos || name.find("..") != std::string::npos) return nullptr;
    const std::string where = parent + "/" + name;
    const auto bytes = read_file(where + "/.zarray");
    if (!bytes) return nullptr;
    auto meta_json =
        nlohmann::json::parse(std::string(reinterpret_cast<const char*>(bytes->data()), bytes->size()), nullptr, false);
    if (meta_json.is_discarded() || !meta_json.is_object() || !meta_json["shape"].is_array() ||
        meta_json["shape"].size() != 1 || meta_json["shape"][0] != length || !meta_json["chunks"].is_array() ||
        meta_json["chunks"].size() != 1)
      return nullptr;
    // As a 1 x 1 x n array, whose chunks are the files 0, 1, ... of the 1D one.
    meta_json["shape"] = {1, 1, length};
    meta_json["chunks"] = {1, 1, meta_json["chunks"][0]};
    const zarr::ArrayMeta meta = zarr::parse_array(meta_json.dump(), where + "/.zarray");
    std::vector<double> values(static_cast<std::size_t>(length));
    std::vector<std::byte> chunk(meta.chunk_bytes()), stored;
    const std::size_t size = dtype_size(meta.dtype);
    for (std::int64_t c = 0; c < meta.grid()[2]; ++c) {
      if (!read_whole(where + "/" + std::to_string(c), stored, zarr::max_stored_bytes(meta)))
        return nullptr;  // a coordinate is all there
      zarr::decode_chunk(meta, stored, chunk, where + ": chunk " + std::to_string(c));
      if (meta.byte_order == ByteOrder::big && size > 1) to_native(chunk.data(), chunk.size() / size, size);
      const std::int64_t first = c * meta.chunks[2], count = std::min(meta.chunks[2], length - first);
      visit_dtype(meta.dtype, [&]<class T>(std::type_identity<T>) {
        const T* v = reinterpret_cast<const T*>(chunk.data());
        for (std::int64_t i = 0; i < count; ++i)
          values[static_cast<std::size_t>(first + i)] = static_cast<double>(v[i]);
      });
    }
    nlohmann::json axis{{"name", name}, {"values", values}};
    if (const auto extra = read_file(where + "/.zattrs")) {
      const auto attrs = nlohmann::json::parse(std::string(reinterpret_cast<const char*>(extra->data()), extra->size()),
                                               nullptr, false);
      if (!attrs.is_discarded() && attrs.is_object()) {
        if (attrs.contains("units") && attrs["units"].is_string()) axis["units"] = attrs["units"];
        if (attrs.contains("positive") && attrs["positive"].is_string()) axis["positive"] = attrs["positive"];
      }
    }
    return axis;
  }

  void apply_coordinates(const nlohmann::json& found) {
    if (found.contains("units")) info_.attributes["units"] = found["units"].get<std::string>();
    if (found.contains("time") && !found["time"].is_null()) {
      const auto& time = found["time"];
      info_.step_time = time["values"][static_cast<std::size_t>(meta_.step)].get<double>();
      info_.time_units = time.value("units", std::string());
    }
    if (!found.contains("axes")) return;
    for (std::size_t a = 0; a < 3; ++a) {
      const auto& axis = found["axes"][a];
      if (axis.is_null()) continue;
      Coordinate c;
      c.name = axis["name"].get<std::string>();
      c.values = axis["values"].get<std::vector<double>>();
      c.units = axis.value("units", std::string());
      if (Coordinate::time_units(c.units)) continue;  // a time axis
      c.down = Coordinate::positive_down(axis.value("positive", std::string()));
      info_.set_coordinate(2 - a, std::move(c));
    }
  }

  // Reads and decodes a chunk into out (chunk_bytes()), native order; a
  // missing chunk is fill. Returns whether the chunk was stored.
  bool decode_into(const Index3& chunk, std::byte* out) {
    const std::string key = meta_.chunk_key(chunk);
    if (!read_whole(array_ + "/" + key, stored_, zarr::max_stored_bytes(meta_))) {
      std::memcpy(out, fill_chunk_.data(), fill_chunk_.size());
      return false;
    }
    bytes_read_ += stored_.size();
    const std::size_t bytes = meta_.chunk_bytes();
    if (meta_.step_chunk > 1) {  // a chunk of several steps: decoded whole, the step's part kept
      steps_.resize(meta_.stored_chunk_bytes());
      zarr::decode_chunk(meta_, stored_, steps_, path_ + ": chunk " + key);
      std::memcpy(out, steps_.data() + static_cast<std::size_t>(meta_.step % meta_.step_chunk) * bytes, bytes);
    } else {
      zarr::decode_chunk(meta_, stored_, {out, bytes}, path_ + ": chunk " + key);
    }
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
      throw Error(where +
                  ": a Zarr group, not an array, and not an OME-Zarr image (no multiscales): name one of its "
                  "arrays (" +
                  where + "/NAME)");
    const auto& axes = m[0].value("axes", nlohmann::json());
    const bool series =
        axes.is_array() && axes.size() == 4 && axes[0].is_object() && axes[0].value("type", std::string()) == "time";
    if (axes.is_array() && axes.size() != 3 && !series)
      throw Error(at + ": an OME-Zarr image of " + std::to_string(axes.size()) +
                  " axes; volseg reads 3 spatial axes (z, y, x), or time and 3 spatial axes (t, z, y, x)");
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
      if (!key || !t.contains(key) || !t[key].is_array() || (t[key].size() != 3 && t[key].size() != 4)) continue;
      if (!std::all_of(t[key].begin(), t[key].end(), [](const auto& v) { return v.is_number(); })) continue;
      const auto values = t[key].template get<std::vector<double>>();  // t first in a series: passed by
      const std::array<double, 3> zyx{values[values.size() - 3], values[values.size() - 2], values.back()};
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
  std::vector<std::byte> steps_;   // a chunk of several steps, decoded
  std::string path_, array_;       // what the user named; the array's folder (an OME-Zarr image's dataset)
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
  backend.description =
      "reads: each rank decodes the chunks its bricks touch, keeping recent ones (hint cache=64MiB; fill=data: "
      "fill_value is a value, not missing; --time T: a step of a 4D array, t first); writes: each "
      "rank its own chunks, aligned to the bricks (hints compressor=blosc-lz4, level=, shuffle=, chunks=Z,Y,X; "
      "append=1: a step added to a 4D array)";
  backend.hints = {{"cache", HintFor::readers},
                   {"compressor", HintFor::writers},
                   {"append", HintFor::writers},
                   {"level", HintFor::writers},
                   {"shuffle", HintFor::writers},
                   {"chunks", HintFor::writers},
                   {"dimension_separator", HintFor::writers},
                   {"fsync", HintFor::writers},
                   {"ome", HintFor::writers},
                   {"levels", HintFor::writers},
                   {"fill", HintFor::readers}};
  backend.open = [](const OpenRequest& request, const Comm& comm, const Hints& hints) -> std::unique_ptr<VolumeReader> {
    const auto cache = static_cast<std::uint64_t>(hints.get_size("cache", std::int64_t{64} << 20));
    const std::string fill = hints.get_string("fill", "missing");
    if (fill != "missing" && fill != "data")
      throw Error("hint fill=" + fill + " is neither missing (voxels equal to fill_value are missing data) nor data");
    const std::optional<std::int64_t> time = request.selection.step;
    if (time && *time < 0) throw Error("--time must be 0 or more");
    request.selection.refuse_glob("zarr");
    request.selection.refuse_variable("zarr");
    hints.reject_unused("zarr");
    return std::make_unique<ZarrReader>(request.path, comm, cache, fill == "data", time);
  };
  backend.create = [](const CreateRequest& request, const Comm& comm,
                      const Hints& hints) -> std::unique_ptr<VolumeWriter> {
    return zarr::create_writer(request, comm, hints);
  };
  return backend;
}

}  // namespace volseg::io
