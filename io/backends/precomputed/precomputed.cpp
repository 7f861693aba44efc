// SPDX-License-Identifier: MIT
// The precomputed backend: Neuroglancer's precomputed volume format
// (neuroglancer's src/datasource/precomputed/volume.md), written. A folder
// with an `info` (JSON: type, data type, a scale per level), a folder per
// scale with a file per chunk ("x0-x1_y0-y1_z0-z1", x fastest, little
// endian; raw, or compressed_segmentation for uint32 and uint64 labels),
// and for labels `segment_properties` from the label job's table, and the
// `mesh` folder that `volseg mesh` fills.
//
// As the zarr writer: each rank writes its own chunks (the job's bricks
// are whole chunks) into a hidden folder, renamed when every rank has
// succeeded. Each chunk, as it is written, leaves its piece of the next
// level (halved by the mode or the mean: io::downsample) in a hidden
// folder; at close the ranks assemble each level's chunks from the pieces
// of the level below, round robin, so no level is read back or decoded and
// a rank holds a chunk and its pieces whatever the volume's size.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include "precomputed/compressed_segmentation.hpp"
#include "raw/raw_volume.hpp"
#include "volseg/io/collective_output.hpp"
#include "volseg/io/comm.hpp"
#include "volseg/io/downsample.hpp"
#include "volseg/io/error.hpp"
#include "volseg/io/files.hpp"
#include "volseg/io/memory.hpp"
#include "volseg/io/registry.hpp"
#include "zarr/zarr_array.hpp"

namespace volseg::io {
namespace {

const char* neuroglancer_type(DType dtype) {
  switch (dtype) {
    case DType::u8:
      return "uint8";
    case DType::i8:
      return "int8";
    case DType::u16:
      return "uint16";
    case DType::i16:
      return "int16";
    case DType::u32:
      return "uint32";
    case DType::i32:
      return "int32";
    case DType::u64:
      return "uint64";
    case DType::f32:
      return "float32";
    default:
      return nullptr;
  }
}

// A chunk's file name: x0-x1_y0-y1_z0-z1 of its voxels, ends excluded.
std::string chunk_name(const Extent& box) {
  return std::to_string(box.offset[2]) + "-" + std::to_string(box.offset[2] + box.count[2]) + "_" +
         std::to_string(box.offset[1]) + "-" + std::to_string(box.offset[1] + box.count[1]) + "_" +
         std::to_string(box.offset[0]) + "-" + std::to_string(box.offset[0] + box.count[0]);
}

class PrecomputedWriter final : public VolumeWriter {
 public:
  PrecomputedWriter(const CreateRequest& request, const Comm& comm, Index3 chunks, int levels, bool segmentation,
                    bool compressed)
      : comm_(comm),
        path_(request.path),
        info_(request.info),
        chunks_(chunks),
        levels_(levels),
        segmentation_(segmentation),
        compressed_(compressed),
        downsampling_(downsampling_for(request.info)),
        overwrite_(request.overwrite) {
    collectively(comm, [&] {
      if (comm.rank() == 0) refuse_existing(path_, overwrite_);
    });
    output_ = CollectiveOutput(comm, path_, CollectiveOutput::Start::folder);
    temporary_ = output_.temporary();
    collectively(comm, [&] {
      if (comm.rank() != 0) return;
      make_folder(temporary_ + "/" + kPieces);
      for (int level = 0; level < levels_; ++level) {
        make_folder(temporary_ + "/" + scale_key(level));
        if (level > 0) make_folder(piece_folder(level));
      }
    });
  }

  const VolumeInfo& info() const override { return info_; }
  std::string backend_name() const override { return "precomputed"; }
  std::uint64_t bytes_written() const override { return bytes_written_; }
  void describe_segments(std::vector<SegmentInfo> segments) override {
    if (comm_.rank() == 0) segments_ = std::move(segments);
  }

 protected:
  void do_write(const Extent& extent, const void* buffer) override {
    const std::size_t size = dtype_size(info_.dtype);
    const auto* in = static_cast<const std::byte*>(buffer);
    const Index3& c = chunks_;
    for (std::int64_t cz = extent.offset[0] / c[0]; cz <= (extent.offset[0] + extent.count[0] - 1) / c[0]; ++cz)
      for (std::int64_t cy = extent.offset[1] / c[1]; cy <= (extent.offset[1] + extent.count[1] - 1) / c[1]; ++cy)
        for (std::int64_t cx = extent.offset[2] / c[2]; cx <= (extent.offset[2] + extent.count[2] - 1) / c[2]; ++cx) {
          const Index3 chunk{cz, cy, cx};
          const Extent box = chunk_box(0, chunk), part = intersect(extent, box);
          auto it = pending_.find(chunk);
          if (it == pending_.end()) {
            if (part.count == box.count && extent.count == box.count) {
              store(0, chunk, in);
              continue;
            }
            it = pending_
                     .emplace(chunk, Pending{std::vector<std::byte>(static_cast<std::size_t>(box.voxels()) * size), 0})
                     .first;
          }
          zarr::copy_part(part, extent, in, box, it->second.values.data(), size);
          it->second.covered += part.voxels();
          if (it->second.covered >= box.voxels()) {
            store(0, chunk, it->second.values.data());
            pending_.erase(it);
          }
        }
  }

  void do_close() override {
    std::exception_ptr error;
    try {
      if (!pending_.empty())
        throw RankError("precomputed " + path_ +
                        ": a chunk was written in part by this rank and in part by another; give --brick a multiple "
                        "of the chunks");
    } catch (...) {
      error = std::current_exception();
    }
    agree(comm_, error);
    for (int level = 1; level < levels_; ++level) collectively(comm_, [&] { build_level(level); });
    collectively(comm_, [&] {
      if (comm_.rank() != 0) return;
      std::filesystem::remove_all(temporary_ + "/" + kPieces);
      write_text(temporary_ + "/info", info_json());
      if (segmentation_) {
        make_folder(temporary_ + "/segment_properties");
        write_text(temporary_ + "/segment_properties/info", properties_json());
      }
    });
    output_.commit(comm_, false, overwrite_);
  }

 private:
  static constexpr const char* kPieces = ".volseg-pieces";

  struct Pending {
    std::vector<std::byte> values;
    std::int64_t covered = 0;
  };

  Index3 level_dims_of(int level) const { return level_dims(info_.dims, level); }
  Index3 level_chunks(int level) const {
    const Index3 d = level_dims_of(level);
    return {std::min(chunks_[0], d[0]), std::min(chunks_[1], d[1]), std::min(chunks_[2], d[2])};
  }
  // A chunk's voxels (z, y, x), inside its level.
  Extent chunk_box(int level, const Index3& chunk) const {
    const Index3 d = level_dims_of(level), c = level_chunks(level);
    Extent box;
    for (std::size_t a = 0; a < 3; ++a) {
      box.offset[a] = chunk[a] * c[a];
      box.count[a] = std::min(c[a], d[a] - box.offset[a]);
    }
    return box;
  }
  std::array<double, 3> resolution(int level) const {  // x, y, z
    const double f = static_cast<double>(std::int64_t{1} << level);
    return {info_.spacing[0] * f, info_.spacing[1] * f, info_.spacing[2] * f};
  }
  std::string scale_key(int level) const {
    std::ostringstream key;
    const auto r = resolution(level);
    key << r[0] << "_" << r[1] << "_" << r[2];
    return key.str();
  }
  std::string piece_folder(int level) const { return temporary_ + "/" + kPieces + "/" + std::to_string(level); }

  // Writes a chunk of a level (values packed over its box) and leaves its
  // piece of the next level.
  void store(int level, const Index3& chunk, const std::byte* values) {
    const Extent box = chunk_box(level, chunk);
    const std::size_t bytes = static_cast<std::size_t>(box.voxels()) * dtype_size(info_.dtype);
    const std::string name = chunk_name(box);
    const std::string file = temporary_ + "/" + scale_key(level) + "/" + name;
    if (compressed_) {
      const auto encoded = precomputed::encode_compressed_segmentation(values, info_.dtype, box.count);
      write_bytes(file, encoded.data(), encoded.size());
    } else {
      write_bytes(file, values, bytes);
    }
    if (level + 1 >= levels_) return;
    const Index3 half = level_dims(box.count, 1);
    piece_.resize(static_cast<std::size_t>(half[0] * half[1] * half[2]) * dtype_size(info_.dtype));
    downsample(downsampling_, info_.dtype, values, box.count, piece_.data(),
               downsampling_ == Downsampling::mean ? info_.fill_value : std::nullopt);
    write_bytes(piece_folder(level + 1) + "/" + name, piece_.data(), piece_.size());
  }

  // Level `level`'s chunks, this rank's share, from the pieces below.
  void build_level(int level) {
    const Index3 d = level_dims_of(level), c = level_chunks(level);
    const Index3 grid{(d[0] + c[0] - 1) / c[0], (d[1] + c[1] - 1) / c[1], (d[2] + c[2] - 1) / c[2]};
    const Index3 fine_c = level_chunks(level - 1), fine_d = level_dims_of(level - 1);
    const std::size_t size = dtype_size(info_.dtype);
    std::vector<std::byte> values;
    for (std::int64_t i = comm_.rank(); i < grid[0] * grid[1] * grid[2]; i += comm_.size()) {
      const Index3 chunk{i / (grid[1] * grid[2]), i / grid[2] % grid[1], i % grid[2]};
      const Extent box = chunk_box(level, chunk);
      values.assign(static_cast<std::size_t>(box.voxels()) * size, std::byte{0});
      Index3 first{}, last{};
      for (std::size_t a = 0; a < 3; ++a) {
        first[a] = 2 * box.offset[a] / fine_c[a];
        last[a] = std::min(2 * (box.offset[a] + box.count[a]), fine_d[a]) - 1;
        last[a] /= fine_c[a];
      }
      for (std::int64_t z = first[0]; z <= last[0]; ++z)
        for (std::int64_t y = first[1]; y <= last[1]; ++y)
          for (std::int64_t x = first[2]; x <= last[2]; ++x) {
            const Extent fine = chunk_box(level - 1, {z, y, x});
            Extent part;
            for (std::size_t a = 0; a < 3; ++a) {
              part.offset[a] = fine.offset[a] / 2;
              part.count[a] = level_dims(fine.count, 1)[a];
            }
            const std::string file = piece_folder(level) + "/" + chunk_name(fine);
            if (!zarr::read_whole(file, piece_, static_cast<std::uint64_t>(part.voxels()) * size) ||
                piece_.size() != static_cast<std::size_t>(part.voxels()) * size)
              throw RankError(file + ": the piece of level " + std::to_string(level - 1) + "'s chunk is missing or " +
                              "short");
            zarr::copy_part(part, part, piece_.data(), box, values.data(), size);
          }
      store(level, chunk, values.data());
    }
  }

  std::string info_json() const {
    using nlohmann::json;
    json scales = json::array();
    for (int level = 0; level < levels_; ++level) {
      const Index3 d = level_dims_of(level), c = level_chunks(level);
      json scale{{"key", scale_key(level)},
                 {"size", {d[2], d[1], d[0]}},
                 {"resolution", resolution(level)},
                 {"voxel_offset", {0, 0, 0}},
                 {"chunk_sizes", json::array({json{c[2], c[1], c[0]}})},
                 {"encoding", compressed_ ? "compressed_segmentation" : "raw"}};
      if (compressed_) scale["compressed_segmentation_block_size"] = {8, 8, 8};
      scales.push_back(scale);
    }
    json doc{{"@type", "neuroglancer_multiscale_volume"},
             {"type", segmentation_ ? "segmentation" : "image"},
             {"data_type", neuroglancer_type(info_.dtype)},
             {"num_channels", 1},
             {"scales", scales}};
    if (segmentation_) {
      doc["mesh"] = "mesh";
      doc["segment_properties"] = "segment_properties";
    }
    doc["volseg"] = {{"origin_xyz", info_.origin},
                     {"downsampling", downsampling_name(downsampling_)},
                     {"attributes", info_.attributes}};
    return doc.dump(2) + "\n";
  }

  // Neuroglancer's segment properties: a label, a description and the
  // voxel count of each object of the table.
  std::string properties_json() const {
    using nlohmann::json;
    json ids = json::array(), labels = json::array(), descriptions = json::array(), voxels = json::array();
    std::uint64_t largest = 0;
    for (const auto& s : segments_) {
      ids.push_back(std::to_string(s.id));
      labels.push_back("object " + std::to_string(s.id));
      char text[160];
      std::snprintf(text, sizeof text, "%llu voxels, centroid z,y,x (%.1f, %.1f, %.1f)",
                    static_cast<unsigned long long>(s.voxels), s.centroid[0], s.centroid[1], s.centroid[2]);
      descriptions.push_back(text);
      voxels.push_back(s.voxels);
      largest = std::max(largest, s.voxels);
    }
    json properties = json::array({json{{"id", "label"}, {"type", "label"}, {"values", labels}},
                                   json{{"id", "description"}, {"type", "description"}, {"values", descriptions}},
                                   json{{"id", "voxels"},
                                        {"type", "number"},
                                        {"data_type", largest < (std::uint64_t{1} << 32) ? "uint32" : "float32"},
                                        {"values", voxels}}});
    return json{{"@type", "neuroglancer_segment_properties"}, {"inline", {{"ids", ids}, {"properties", properties}}}}
               .dump() +
           "\n";
  }

  static void make_folder(const std::string& folder) {
    if (::mkdir(folder.c_str(), 0777) != 0 && errno != EEXIST) throw_errno("mkdir", folder);
  }

  void write_bytes(const std::string& file, const void* data, std::size_t size) {
    const int fd = ::open(file.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
    if (fd < 0) throw_errno("create", file);
    try {
      raw::write_fully(fd, data, size, 0, file);
    } catch (...) {
      ::close(fd);
      throw;
    }
    if (::close(fd) != 0) throw_errno("close", file);
    bytes_written_ += size;
  }
  void write_text(const std::string& file, const std::string& text) { write_bytes(file, text.data(), text.size()); }

  const Comm& comm_;
  std::string path_, temporary_;
  VolumeInfo info_;
  Index3 chunks_;
  int levels_;
  bool segmentation_, compressed_;
  Downsampling downsampling_;
  bool overwrite_;
  CollectiveOutput output_;
  std::map<Index3, Pending> pending_;
  std::vector<std::byte> piece_;
  std::vector<SegmentInfo> segments_;
  std::uint64_t bytes_written_ = 0;
};

// Level 0 of a precomputed volume (raw or compressed_segmentation, one
// channel), so that volseg's own jobs (mesh, segment, info) read what it
// writes. Each rank reads the chunks its extents touch, the last one kept.
class PrecomputedReader final : public VolumeReader {
 public:
  PrecomputedReader(const std::string& path, const Comm& comm) : path_(path) {
    std::string text;
    collectively(comm, [&] {
      if (comm.rank() != 0) return;
      std::vector<std::byte> raw;
      if (!zarr::read_whole(path + "/info", raw, 16u << 20)) throw Error(path + ": no info (not a precomputed volume)");
      text.assign(reinterpret_cast<const char*>(raw.data()), raw.size());
    });
    parse(comm.broadcast(text));
  }

  const VolumeInfo& info() const override { return info_; }
  std::string backend_name() const override { return "precomputed"; }
  std::uint64_t bytes_read() const override { return bytes_read_; }
  std::vector<std::string> files() const override { return {path_}; }

 protected:
  void do_read(const Extent& extent, void* buffer) override {
    const std::size_t size = dtype_size(info_.dtype);
    const Index3& c = chunks_;
    for (std::int64_t cz = extent.offset[0] / c[0]; cz <= (extent.offset[0] + extent.count[0] - 1) / c[0]; ++cz)
      for (std::int64_t cy = extent.offset[1] / c[1]; cy <= (extent.offset[1] + extent.count[1] - 1) / c[1]; ++cy)
        for (std::int64_t cx = extent.offset[2] / c[2]; cx <= (extent.offset[2] + extent.count[2] - 1) / c[2]; ++cx) {
          Extent box;
          const Index3 chunk{cz, cy, cx};
          for (std::size_t a = 0; a < 3; ++a) {
            box.offset[a] = chunk[a] * c[a];
            box.count[a] = std::min(c[a], info_.dims[a] - box.offset[a]);
          }
          load(box);
          zarr::copy_part(intersect(extent, box), box, decoded_.data(), extent, static_cast<std::byte*>(buffer), size);
        }
  }
  void do_close() override {}

 private:
  void parse(const std::string& text) {
    using nlohmann::json;
    const json doc = json::parse(text, nullptr, false);
    const std::string where = path_ + "/info";
    const auto bad = [&](const std::string& what) { return Error(where + ": " + what); };
    if (doc.is_discarded() || !doc.is_object()) throw bad("not JSON");
    if (doc.value("@type", std::string()) != "neuroglancer_multiscale_volume")
      throw bad("not a neuroglancer_multiscale_volume");
    if (doc.value("num_channels", 1) != 1) throw bad("volseg reads volumes of one channel");
    const auto& scales = doc.value("scales", json());
    if (!scales.is_array() || scales.empty() || !scales[0].is_object()) throw bad("no scales");
    const json& s = scales[0];
    const auto triple = [&](const json& v, const char* name) {
      if (!v.is_array() || v.size() != 3 ||
          !std::all_of(v.begin(), v.end(), [](const json& x) { return x.is_number(); }))
        throw bad(std::string("scale 0's ") + name + " is not three numbers");
      return std::array<double, 3>{v[0].get<double>(), v[1].get<double>(), v[2].get<double>()};
    };
    const auto size = triple(s.value("size", json()), "size");
    const auto resolution = triple(s.value("resolution", json()), "resolution");
    const auto& sizes = s.value("chunk_sizes", json());
    if (!sizes.is_array() || sizes.empty()) throw bad("scale 0 has no chunk_sizes");
    const auto chunk = triple(sizes[0], "chunk_sizes");
    key_ = s.value("key", std::string());
    if (key_.empty() || key_.find("..") != std::string::npos || key_[0] == '/')
      throw bad("scale 0's key is not a folder");
    const std::string type = doc.value("data_type", std::string());
    for (const DType t : {DType::u8, DType::i8, DType::u16, DType::i16, DType::u32, DType::i32, DType::u64, DType::f32})
      if (type == neuroglancer_type(t)) info_.dtype = t;
    if (type != neuroglancer_type(info_.dtype)) throw bad("data_type '" + type + "' is not one Neuroglancer reads");
    const std::string encoding = s.value("encoding", std::string());
    compressed_ = encoding == "compressed_segmentation";
    if (!compressed_ && encoding != "raw")
      throw bad("encoding '" + encoding + "': volseg reads raw and compressed_segmentation");
    for (std::size_t a = 0; a < 3; ++a) {
      if (!(size[a] >= 1 && size[a] < 1e12 && chunk[a] >= 1 && chunk[a] <= 4096))
        throw bad("scale 0's size or chunk_sizes out of range");
      info_.dims[2 - a] = static_cast<std::int64_t>(size[a]);
      chunks_[2 - a] = static_cast<std::int64_t>(chunk[a]);
      info_.spacing[a] = resolution[a];
    }
    check_volume_size(info_.dims, info_.dtype, where);
    if (doc.contains("volseg") && doc["volseg"].contains("origin_xyz"))
      info_.origin = doc["volseg"]["origin_xyz"].get<std::array<double, 3>>();
    if (doc.contains("volseg") && doc["volseg"].contains("attributes") && doc["volseg"]["attributes"].is_object())
      for (const auto& [k, v] : doc["volseg"]["attributes"].items())
        if (v.is_string()) info_.attributes[k] = v.get<std::string>();
    if (doc.value("type", std::string()) == "segmentation") info_.attributes["precomputed_type"] = "segmentation";
    check_piece(path_ + ": chunk " + std::to_string(chunks_[2]) + " x " + std::to_string(chunks_[1]) + " x " +
                    std::to_string(chunks_[0]) + " of " + type,
                saturating_product({static_cast<std::uint64_t>(chunks_[0]), static_cast<std::uint64_t>(chunks_[1]),
                                    static_cast<std::uint64_t>(chunks_[2]), dtype_size(info_.dtype)}));
    decoded_.resize(static_cast<std::size_t>(chunks_[0] * chunks_[1] * chunks_[2]) * dtype_size(info_.dtype));
  }

  // The chunk over `box` into decoded_ (packed over box), unless it is there.
  void load(const Extent& box) {
    const std::string name = chunk_name(box);
    if (name == loaded_) return;
    loaded_.clear();
    const std::string file = path_ + "/" + key_ + "/" + name;
    const std::size_t bytes = static_cast<std::size_t>(box.voxels()) * dtype_size(info_.dtype);
    // compressed_segmentation at worst: a table entry and 32 bits per voxel, and the headers.
    const std::uint64_t limit = compressed_ ? 4 * bytes + (64u << 10) : bytes;
    if (!zarr::read_whole(file, stored_, limit)) {
      std::memset(decoded_.data(), 0, bytes);  // a chunk not written: zeros, as Neuroglancer reads it
    } else if (compressed_) {
      precomputed::decode_compressed_segmentation(stored_, info_.dtype, box.count, decoded_.data(), file);
    } else {
      if (stored_.size() != bytes)
        throw Error(file + ": " + std::to_string(stored_.size()) + " bytes, not the chunk's " + std::to_string(bytes));
      std::memcpy(decoded_.data(), stored_.data(), bytes);
    }
    bytes_read_ += stored_.size();
    loaded_ = name;
  }

  std::string path_, key_, loaded_;
  VolumeInfo info_;
  Index3 chunks_{};
  bool compressed_ = false;
  std::vector<std::byte> stored_, decoded_;
  std::uint64_t bytes_read_ = 0;
};

std::unique_ptr<VolumeWriter> create_precomputed(const CreateRequest& request, const Comm& comm, const Hints& hints) {
  const VolumeInfo& info = request.info;
  if (!neuroglancer_type(info.dtype))
    throw Error("precomputed: Neuroglancer reads uint8/16/32/64, int8/16/32 and float32 volumes, not " +
                std::string(dtype_name(info.dtype)));
  const bool segmentation = downsampling_for(info) == Downsampling::mode;
  Index3 chunks = request.bricks.value_or(Index3{64, 64, 64});
  for (std::size_t a = 0; a < 3; ++a) {
    chunks[a] = std::min(chunks[a], info.dims[a]);
    if (chunks[a] % 2 != 0 && chunks[a] < info.dims[a])
      throw Error("precomputed: chunks (the job's bricks) of " + std::to_string(chunks[a]) +
                  " voxels along an axis: the levels need even ones; give --brick even sizes");
  }
  if (comm.size() > 1 && !request.bricks)
    throw Error(
        "precomputed: this job's writes are not bricks of one grid, and each chunk needs one writer: run it "
        "on 1 rank");
  const std::string encoding = hints.get_string(
      "encoding",
      segmentation && (info.dtype == DType::u32 || info.dtype == DType::u64) ? "compressed_segmentation" : "raw");
  if (encoding != "raw" && encoding != "compressed_segmentation")
    throw Error("hint encoding=" + encoding + " is neither raw nor compressed_segmentation");
  if (encoding == "compressed_segmentation" && info.dtype != DType::u32 && info.dtype != DType::u64)
    throw Error("hint encoding=compressed_segmentation: uint32 and uint64 labels only, not " +
                std::string(dtype_name(info.dtype)));
  const int levels = level_count(info.dims, chunks, static_cast<int>(hints.get_int("levels", 0)));
  hints.reject_unused("precomputed");
  return std::make_unique<PrecomputedWriter>(request, comm, chunks, levels, segmentation,
                                             encoding == "compressed_segmentation");
}

}  // namespace

Backend make_precomputed_backend() {
  Backend backend;
  backend.name = "precomputed";
  backend.formats = "Neuroglancer precomputed volumes (a folder: info, a scale per level; read: its full resolution)";
  backend.extension = ".precomputed";
  backend.description =
      "writes: each rank its own chunks (the job's bricks), levels by the mode (labels, masks) or the mean "
      "(hints levels=N, 0: down to one chunk; encoding=raw|compressed_segmentation, the latter the default for "
      "uint32 and uint64 labels)";
  backend.hints = {{"levels", HintFor::writers}, {"encoding", HintFor::writers}};
  backend.open = [](const OpenRequest& request, const Comm& comm, const Hints& hints) -> std::unique_ptr<VolumeReader> {
    request.selection.refuse_step_and_glob("precomputed");
    request.selection.refuse_variable("precomputed");
    hints.reject_unused("precomputed");
    return std::make_unique<PrecomputedReader>(request.path, comm);
  };
  backend.create = create_precomputed;
  return backend;
}

}  // namespace volseg::io
