// SPDX-License-Identifier: MIT
#include "zarr/zarr_writer.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <nlohmann/json.hpp>
#include <span>
#include <string>
#include <vector>

#include "raw/raw_volume.hpp"
#include "volseg/io/comm.hpp"
#include "volseg/io/downsample.hpp"
#include "volseg/io/error.hpp"
#include "volseg/io/files.hpp"
#include "zarr/zarr_array.hpp"

namespace volseg::io::zarr {
namespace {

// Writes a Zarr v2 array into a hidden directory beside the final name
// (DIR/.NAME.volseg-tmp-PID of rank 0), each rank its own chunk files, and
// at close, once every rank has succeeded, rank 0 writes .zarray (last) and
// commits the directory (io::AtomicCommit, which swaps folders): the store
// appears under its name only when whole. Chunks all equal to fill_value are not written
// (write_empty_chunks=False). A chunk a write covers only in part is kept
// until the rest of it arrives; one still partial at close had another
// writer, which the alignment of chunks to the job's bricks rules out.
//
// A resumable job (segment --resume, io::Partial) writes into the fixed
// DIR/.NAME.volseg-partial instead, kept when the job fails; a rerun opens it
// as it is and rewrites the chunks of the bricks its journal does not list.
//
// With append=1 the writer adds a step to a 4D array (t, z, y, x; chunks one
// step long) written in place at its name, or starts one: a series' steps,
// each a job of its own, into the folder the series renames when all are
// written (segment --time). Each step's time goes into .zattrs' "times".
class ZarrWriter final : public VolumeWriter {
 public:
  ZarrWriter(const CreateRequest& request, const Comm& comm, ArrayMeta meta, bool fsync, bool ome, bool append,
             int levels)
      : comm_(comm),
        path_(request.path),
        info_(request.info),
        meta_(std::move(meta)),
        fsync_(fsync),
        overwrite_(request.overwrite),
        ome_(ome),
        append_(append),
        partial_(request.partial),
        levels_(levels) {
    if (append_ && partial_ != Partial::none)
      throw Error("zarr " + path_ + ": append=1 adds a step to a series, which is not resumed brick by brick");
    std::string series;  // append=1: the array and its steps' times, as rank 0 found or began them
    collectively(comm, [&] {
      if (comm.rank() != 0) return;
      if (append_) {
        temporary_ = path_;
        series = open_series();
        return;
      }
      temporary_ = partial_ == Partial::none ? temporary_path(path_) : partial_path(path_);
      // A partial store is its journal's, kept for --resume when not committed.
      commit_ = AtomicCommit(
          path_, temporary_,
          partial_ == Partial::none ? AtomicCommit::Uncommitted::removed : AtomicCommit::Uncommitted::kept);
      if (partial_ == Partial::reopen) {
        if (!std::filesystem::is_directory(array_folder()))
          throw Error(path_ + ": the partial store " + temporary_ + " to resume is not a Zarr store being written");
        const std::string pieces = temporary_ + "/" + kPieces;
        if (levels_ > 1 && ::mkdir(pieces.c_str(), 0777) != 0 && errno != EEXIST) throw_errno("mkdir", pieces);
        return;
      }
      std::error_code ec;
      std::filesystem::remove_all(temporary_, ec);
      if (::mkdir(temporary_.c_str(), 0777) != 0) throw_errno("mkdir", temporary_);
      if (ome_ && ::mkdir((temporary_ + "/0").c_str(), 0777) != 0) throw_errno("mkdir", temporary_ + "/0");
      const std::string pieces = temporary_ + "/" + kPieces;
      if (levels_ > 1 && ::mkdir(pieces.c_str(), 0777) != 0 && errno != EEXIST) throw_errno("mkdir", pieces);
    });
    pieces_ = levels_ > 1 && meta_.chunks[0] % 2 == 0 && meta_.chunks[1] % 2 == 0 && meta_.chunks[2] % 2 == 0;
    temporary_ = comm.broadcast(temporary_);
    if (append_) {
      const auto doc = nlohmann::json::parse(comm.broadcast(series));
      meta_ = parse_array(doc["array"].get<std::string>(), path_ + "/.zarray");
      meta_.step = meta_.steps - 1;
      times_ = doc["times"].get<std::vector<double>>();
    }
    fill_ = fill_chunk();
  }

  const VolumeInfo& info() const override { return info_; }
  std::string backend_name() const override { return "zarr"; }
  std::uint64_t bytes_written() const override { return bytes_written_; }

  // A series' step (append) lists none: each step numbers its own objects,
  // and one table of properties would describe only the last.
  void describe_segments(std::vector<SegmentInfo> segments) override {
    if (comm_.rank() == 0 && !append_) segments_ = std::move(segments);
  }

 protected:
  void do_write(const Extent& extent, const void* buffer) override {
    const std::size_t size = dtype_size(meta_.dtype);
    const Index3& c = meta_.chunks;
    const auto* in = static_cast<const std::byte*>(buffer);
    for (std::int64_t cz = extent.offset[0] / c[0]; cz <= (extent.offset[0] + extent.count[0] - 1) / c[0]; ++cz)
      for (std::int64_t cy = extent.offset[1] / c[1]; cy <= (extent.offset[1] + extent.count[1] - 1) / c[1]; ++cy)
        for (std::int64_t cx = extent.offset[2] / c[2]; cx <= (extent.offset[2] + extent.count[2] - 1) / c[2]; ++cx) {
          const Index3 chunk{cz, cy, cx};
          const Extent box = meta_.chunk_box(chunk), part = intersect(extent, box);
          const std::int64_t inside = intersect(box, Extent{{0, 0, 0}, meta_.shape}).voxels(), covered = part.voxels();
          const std::string key = meta_.chunk_key(chunk);
          auto it = pending_.find(key);
          if (it == pending_.end()) {
            if (extent.offset == box.offset && extent.count == box.count) {
              store(chunk, {in, meta_.chunk_bytes()});  // the write is this chunk: encoded from the caller's buffer
              continue;
            }
            if (covered == inside) {
              std::vector<std::byte> whole = fill_chunk();
              copy_part(part, extent, in, box, whole.data(), size);
              store(chunk, whole);
              continue;
            }
            it = pending_.emplace(key, Pending{fill_chunk(), 0}).first;
          }
          copy_part(part, extent, in, box, it->second.values.data(), size);
          it->second.covered += covered;
          if (it->second.covered >= inside) {
            store(chunk, it->second.values);
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
    for (int level = 1; level < levels_; ++level) build_level(level);
    if (append_) times_.push_back(info_.step_time.value_or(static_cast<double>(info_.step.value_or(meta_.step))));
    collectively(comm_, [&] {
      if (comm_.rank() != 0) return;
      const std::string array = array_folder();
      write_text(array + "/.zattrs", attributes_json());
      write_text(array + "/.zarray", array_json(meta_));  // last: the array is whole
      if (fsync_) sync_folder_of(array + "/.zarray");
      if (levels_ > 1) std::filesystem::remove_all(temporary_ + "/" + kPieces);
      for (int level = 1; level < levels_; ++level) {
        write_text(array_folder(level) + "/.zarray", array_json(level_meta(level)));
        if (fsync_) sync_folder_of(array_folder(level) + "/.zarray");
      }
      if (ome_) {
        write_text(temporary_ + "/.zgroup", "{\n    \"zarr_format\": 2\n}\n");
        write_text(temporary_ + "/.zattrs", ome_json());
        if (fsync_) sync_folder_of(temporary_ + "/.zattrs");
      }
      if (append_) return;  // in place: the series commits its folder when whole
      refuse_existing(path_, overwrite_);
      commit_.commit(fsync_);
    });
  }

 private:
  // append=1, rank 0: the series at path_ this step is added to, checked
  // against the step, or a new one; returns {"array": its .zarray with this
  // step counted, "times": the earlier steps' times}.
  std::string open_series() {
    nlohmann::json times = nlohmann::json::array();
    const std::string zarray = array_folder() + "/.zarray";
    if (std::filesystem::exists(zarray)) {
      std::ifstream in(zarray);
      const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
      ArrayMeta found = parse_array(text, zarray);
      const std::string refused = path_ + ": cannot add a step to the Zarr series: ";
      if (found.steps == 0 || found.step_chunk != 1) throw Error(refused + "its array is not 4D with one step a chunk");
      if (found.shape != meta_.shape || found.chunks != meta_.chunks || found.dtype != meta_.dtype)
        throw Error(refused + "its steps' shape, chunks or type differ from this one's");
      found.steps += 1;
      meta_ = found;
      std::ifstream extra(array_folder() + "/.zattrs");
      const auto doc = nlohmann::json::parse(extra, nullptr, false);
      if (!doc.is_discarded() && doc.is_object() && doc.contains("volseg") && doc["volseg"].contains("times"))
        times = doc["volseg"]["times"];
    } else {
      if (std::filesystem::exists(path_)) throw Error(path_ + ": exists and is not a Zarr series to add a step to");
      if (::mkdir(path_.c_str(), 0777) != 0) throw_errno("mkdir", path_);
      if (ome_ && ::mkdir((path_ + "/0").c_str(), 0777) != 0) throw_errno("mkdir", path_ + "/0");
    }
    if (!times.is_array() || times.size() + 1 != static_cast<std::size_t>(meta_.steps))
      throw Error(path_ + ": the Zarr series' .zattrs lists " + std::to_string(times.size()) + " step times for " +
                  std::to_string(meta_.steps - 1) + " steps");
    return nlohmann::json{{"array", array_json(meta_)}, {"times", times}}.dump();
  }

  struct Pending {
    std::vector<std::byte> values;
    std::int64_t covered = 0;
  };

  std::vector<std::byte> fill_chunk() const {
    std::vector<std::byte> chunk(meta_.chunk_bytes());
    fill_values(meta_, chunk.data());
    return chunk;
  }

  // Encodes and writes a whole chunk of level 0, unless it is all fill.
  // With levels, also its level-1 piece (pieces_), while the values are
  // at hand.
  void store(const Index3& chunk, std::span<const std::byte> values) {
    const std::string key = meta_.chunk_key(chunk);
    const bool written = store(meta_, array_folder(), fill_, key, values);
    if (!pieces_) return;
    const std::string piece = temporary_ + "/" + kPieces + "/" + key;
    if (!written) {
      if (partial_ == Partial::reopen && ::unlink(piece.c_str()) != 0 && errno != ENOENT) throw_errno("remove", piece);
      return;
    }
    const Extent box = intersect(meta_.chunk_box(chunk), Extent{{0, 0, 0}, meta_.shape});
    const std::size_t size = dtype_size(meta_.dtype);
    const std::byte* in = values.data();
    if (box.count != meta_.chunks) {  // an edge chunk: its voxels inside the array, packed
      region_.resize(static_cast<std::size_t>(box.voxels()) * size);
      copy_part(box, meta_.chunk_box(chunk), values.data(), box, region_.data(), size);
      in = region_.data();
    }
    piece_.resize(static_cast<std::size_t>(level_dims(box.count, 1)[0] * level_dims(box.count, 1)[1] *
                                           level_dims(box.count, 1)[2]) *
                  size);
    downsample(downsampling_, meta_.dtype, in, box.count, piece_.data(), missing(meta_));
    write_bytes(piece, piece_.data(), piece_.size());
  }

  std::optional<long double> missing(const ArrayMeta& meta) const {
    return downsampling_ == Downsampling::mean && !meta.fill_nan ? meta.fill_value : std::nullopt;
  }

  // A resumed job removes what an earlier one may have left under the key.
  // False: all fill, not written.
  bool store(const ArrayMeta& meta, const std::string& folder, std::span<const std::byte> fill, const std::string& key,
             std::span<const std::byte> values) {
    const std::string file = folder + "/" + key;
    if (meta.fill_value && std::memcmp(values.data(), fill.data(), fill.size()) == 0) {
      if (partial_ == Partial::reopen && ::unlink(file.c_str()) != 0 && errno != ENOENT) throw_errno("remove", file);
      return false;
    }
    const auto encoded = encode_chunk(meta, values);
    if (meta.separator == '/') std::filesystem::create_directories(std::filesystem::path(file).parent_path());
    write_bytes(file, encoded.data(), encoded.size());
    bytes_written_ += encoded.size();
    return true;
  }

  // Through the io layer's write (its traces and fault injection).
  void write_bytes(const std::string& file, const std::byte* data, std::size_t size) const {
    const int fd = ::open(file.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
    if (fd < 0) throw_errno("create", file);
    try {
      raw::write_fully(fd, data, size, 0, file);
      if (fsync_ && ::fsync(fd) != 0) throw_errno("fsync", file);
    } catch (...) {
      ::close(fd);
      throw;
    }
    if (::close(fd) != 0) throw_errno("close", file);
  }

  void write_text(const std::string& file, const std::string& text) const {
    write_bytes(file, reinterpret_cast<const std::byte*>(text.data()), text.size());
  }

  // Where the array goes: the store itself, or an OME-Zarr image's dataset
  // "0" (its full resolution) and "1", "2", ... (its coarser levels).
  std::string array_folder(int level = 0) const { return ome_ ? temporary_ + "/" + std::to_string(level) : temporary_; }

  // Level k: the full resolution's shape halved k times, its chunks the
  // same (no larger than the level).
  ArrayMeta level_meta(int level) const {
    ArrayMeta meta = meta_;
    meta.shape = level_dims(meta_.shape, level);
    for (std::size_t a = 0; a < 3; ++a) meta.chunks[a] = std::min(meta_.chunks[a], meta.shape[a]);
    return meta;
  }

  // Collective: writes level k from level k - 1, as the ranks left it on
  // disk: each rank a share of level k's chunks (round robin), each made
  // from the up to 2x2x2 chunks below it, so a rank holds at most 9 chunks
  // whatever the volume's size.
  void build_level(int level) {
    const ArrayMeta fine = level_meta(level - 1), coarse = level_meta(level);
    const std::string fine_folder = array_folder(level - 1), folder = array_folder(level);
    collectively(comm_, [&] {
      if (comm_.rank() == 0 && ::mkdir(folder.c_str(), 0777) != 0 && errno != EEXIST) throw_errno("mkdir", folder);
    });
    collectively(comm_, [&] {
      const Index3 grid = coarse.grid();
      const std::int64_t chunks = grid[0] * grid[1] * grid[2];
      std::vector<std::byte> fill(coarse.chunk_bytes()), whole(coarse.chunk_bytes()), region, piece, decoded, stored;
      fill_values(coarse, fill.data());
      for (std::int64_t i = comm_.rank(); i < chunks; i += comm_.size()) {
        const Index3 chunk{i / (grid[1] * grid[2]), i / grid[2] % grid[1], i % grid[2]};
        const Extent box = intersect(coarse.chunk_box(chunk), Extent{{0, 0, 0}, coarse.shape});
        Extent below;
        for (std::size_t a = 0; a < 3; ++a) {
          below.offset[a] = 2 * box.offset[a];
          below.count[a] = std::min(2 * box.count[a], fine.shape[a] - below.offset[a]);
        }
        std::memcpy(whole.data(), fill.data(), fill.size());
        if (level == 1 && pieces_) {
          gather_pieces(box, whole, coarse.chunk_box(chunk));
        } else {
          read_region(fine, fine_folder, below, region, decoded, stored);
          piece.resize(static_cast<std::size_t>(box.voxels()) * dtype_size(coarse.dtype));
          downsample(downsampling_, coarse.dtype, region.data(), below.count, piece.data(), missing(coarse));
          copy_part(box, box, piece.data(), coarse.chunk_box(chunk), whole.data(), dtype_size(coarse.dtype));
        }
        store(coarse, folder, fill, coarse.chunk_key(chunk), whole);
      }
    });
  }

  // Level 1's `box` from the pieces of the level-0 chunks below it (fill
  // where a chunk was all fill), into `whole` (a level-1 chunk over `to`).
  void gather_pieces(const Extent& box, std::vector<std::byte>& whole, const Extent& to) {
    const std::size_t size = dtype_size(meta_.dtype);
    const Index3& c = meta_.chunks;
    for (std::int64_t cz = 2 * box.offset[0] / c[0]; cz <= (2 * (box.offset[0] + box.count[0]) - 1) / c[0]; ++cz)
      for (std::int64_t cy = 2 * box.offset[1] / c[1]; cy <= (2 * (box.offset[1] + box.count[1]) - 1) / c[1]; ++cy)
        for (std::int64_t cx = 2 * box.offset[2] / c[2]; cx <= (2 * (box.offset[2] + box.count[2]) - 1) / c[2]; ++cx) {
          const Index3 chunk{cz, cy, cx};
          const Extent fine = intersect(meta_.chunk_box(chunk), Extent{{0, 0, 0}, meta_.shape});
          if (fine.voxels() == 0) continue;
          Extent part;
          for (std::size_t a = 0; a < 3; ++a) {
            part.offset[a] = fine.offset[a] / 2;
            part.count[a] = level_dims(fine.count, 1)[a];
          }
          const std::string file = temporary_ + "/" + kPieces + "/" + meta_.chunk_key(chunk);
          if (!read_whole(file, piece_, static_cast<std::uint64_t>(part.voxels()) * size)) continue;
          if (piece_.size() != static_cast<std::size_t>(part.voxels()) * size)
            throw RankError(file + ": a level-1 piece of " + std::to_string(piece_.size()) + " bytes, not " +
                            std::to_string(part.voxels() * static_cast<std::int64_t>(size)));
          copy_part(part, part, piece_.data(), to, whole.data(), size);
        }
  }

  // The voxels of `box` of a level, packed, from its chunk files (fill
  // where a chunk was not written).
  static void read_region(const ArrayMeta& meta, const std::string& folder, const Extent& box,
                          std::vector<std::byte>& region, std::vector<std::byte>& decoded,
                          std::vector<std::byte>& stored) {
    const std::size_t size = dtype_size(meta.dtype);
    region.resize(static_cast<std::size_t>(box.voxels()) * size);
    decoded.resize(meta.chunk_bytes());
    const Index3& c = meta.chunks;
    for (std::int64_t cz = box.offset[0] / c[0]; cz <= (box.offset[0] + box.count[0] - 1) / c[0]; ++cz)
      for (std::int64_t cy = box.offset[1] / c[1]; cy <= (box.offset[1] + box.count[1] - 1) / c[1]; ++cy)
        for (std::int64_t cx = box.offset[2] / c[2]; cx <= (box.offset[2] + box.count[2] - 1) / c[2]; ++cx) {
          const Index3 chunk{cz, cy, cx};
          const std::string file = folder + "/" + meta.chunk_key(chunk);
          if (read_whole(file, stored, max_stored_bytes(meta))) {
            decode_chunk(meta, stored, decoded, file);
          } else {
            fill_values(meta, decoded.data());
          }
          const Extent chunk_box = meta.chunk_box(chunk);
          copy_part(intersect(box, chunk_box), chunk_box, decoded.data(), box, region.data(), size);
        }
  }

  // The OME-Zarr 0.4 (NGFF) image group's attributes: one multiscale of one
  // dataset, "0", placed by its scale and translation (z, y, x) from the
  // volume's spacing and origin; masks and labels are label images
  // ("image-label"), as napari's and Neuroglancer's readers expect.
  std::string ome_json() const {
    using nlohmann::json;
    const auto& sp = info_.spacing;
    const auto& o = info_.origin;
    json axes = json::array();
    json scale = {sp[2], sp[1], sp[0]}, translation = {o[2], o[1], o[0]};
    if (meta_.steps > 0) {  // a series: time first, a step apart
      axes.push_back({{"name", "t"}, {"type", "time"}});
      scale.insert(scale.begin(), 1.0);
      translation.insert(translation.begin(), 0.0);
    }
    for (const char* name : {"z", "y", "x"}) axes.push_back({{"name", name}, {"type", "space"}});
    // Level k's voxel centres: its 2^k voxels below, centred.
    json datasets = json::array();
    for (int level = 0; level < levels_; ++level) {
      const double f = static_cast<double>(std::int64_t{1} << level), shift = (f - 1) / 2;
      json s = scale, t = translation;
      const std::size_t first = meta_.steps > 0 ? 1 : 0;
      for (std::size_t a = 0; a < 3; ++a) {
        s[first + a] = scale[first + a].get<double>() * f;
        t[first + a] = translation[first + a].get<double>() + shift * scale[first + a].get<double>();
      }
      json transforms = json::array({json{{"type", "scale"}, {"scale", s}}});
      if (level > 0 || o[0] != 0 || o[1] != 0 || o[2] != 0)
        transforms.push_back({{"type", "translation"}, {"translation", t}});
      datasets.push_back({{"path", std::to_string(level)}, {"coordinateTransformations", transforms}});
    }
    const std::string name = std::filesystem::path(path_).filename().string();
    json doc;
    json multiscale{
        {"version", "0.4"}, {"name", name.substr(0, name.find('.'))}, {"axes", axes}, {"datasets", datasets}};
    if (levels_ > 1) {  // NGFF's "type": how the levels were made
      multiscale["type"] = downsampling_name(downsampling_);
      multiscale["metadata"] = {{"method", std::string("volseg ") + downsampling_name(downsampling_) + " of 2x2x2"}};
    }
    doc["multiscales"] = json::array({multiscale});
    const bool mask = info_.attributes.count("flag_values") > 0, labels = info_.attributes.count("numbering") > 0;
    if (mask || labels) doc["image-label"] = image_label(mask);
    return doc.dump(segments_.size() > 64 ? -1 : 4) + "\n";  // a long table: compact
  }

  // NGFF's image-label: a mask's one colour; labels' colour per object
  // and properties from the label job's table (describe_segments).
  nlohmann::json image_label(bool mask) const {
    using nlohmann::json;
    json label{{"version", "0.4"}};
    if (mask) {
      label["colors"] = json::array({json{{"label-value", 1}, {"rgba", {255, 200, 0, 255}}}});
      return label;
    }
    json colors = json::array(), properties = json::array();
    for (const auto& s : segments_) {
      colors.push_back({{"label-value", s.id}, {"rgba", segment_rgba(s.id)}});
      properties.push_back({{"label-value", s.id},
                            {"voxels", s.voxels},
                            {"centroid_zyx", s.centroid},
                            {"box_min_zyx", s.lo},
                            {"box_max_zyx", s.hi}});
    }
    if (!colors.empty()) {
      label["colors"] = colors;
      label["properties"] = properties;
    }
    return label;
  }

  // volseg's attributes and the grid's spacing and origin (x, y, z); a
  // series' steps' times and their units.
  std::string attributes_json() const {
    nlohmann::json doc;
    nlohmann::json volseg = nlohmann::json::object();
    for (const auto& [key, value] : info_.attributes) volseg[key] = value;
    volseg["spacing_xyz"] = info_.spacing;
    volseg["origin_xyz"] = info_.origin;
    if (append_) {
      volseg["times"] = times_;
      if (!info_.time_units.empty()) volseg["time_units"] = info_.time_units;
    }
    doc["volseg"] = volseg;
    return doc.dump(4) + "\n";
  }

  const Comm& comm_;
  std::string path_, temporary_;
  VolumeInfo info_;
  ArrayMeta meta_;
  bool fsync_, overwrite_, ome_, append_;
  AtomicCommit commit_;        // rank 0's store, unless it is a series' step written in place (append)
  std::vector<double> times_;  // append=1: the series' steps' times, this one's last at close
  Partial partial_;
  int levels_ = 1;
  Downsampling downsampling_ = downsampling_for(info_);
  // Level 1 made from pieces each level-0 chunk leaves as it is written (a
  // hidden folder, removed before the commit), not by reading level 0 back;
  // when the chunks' edges fall on even voxels.
  static constexpr const char* kPieces = ".volseg-level1";
  bool pieces_ = false;
  std::vector<std::byte> region_, piece_;
  std::vector<SegmentInfo> segments_;  // rank 0's, for image-label
  std::uint64_t bytes_written_ = 0;
  std::map<std::string, Pending> pending_;
  std::vector<std::byte> fill_;  // a whole chunk of fill_value
};

// The array a request asks for, with the hints' chunks and compressor.
ArrayMeta meta_for(const CreateRequest& request, const Comm& comm, const Hints& hints) {
  const VolumeInfo& info = request.info;
  ArrayMeta meta;
  meta.shape = info.dims;
  meta.dtype = info.dtype;
  static const char* codes[] = {"i1", "u1", "i2", "u2", "i4", "u4", "i8", "u8", "f4", "f8"};
  meta.dtype_text = std::string(dtype_size(info.dtype) == 1 ? "|" : "<") + codes[static_cast<int>(info.dtype)];
  meta.byte_order = ByteOrder::little;
  // Masks and labels: 0 is background, and chunks of it are not written.
  // Other volumes keep their own fill value, or have none (fill_value null:
  // every chunk written), so a converted volume's zeros stay values.
  const bool mask_or_labels = info.attributes.count("flag_values") > 0 || info.attributes.count("numbering") > 0;
  const bool integer = info.dtype != DType::f32 && info.dtype != DType::f64;
  meta.fill_value = info.fill_value             ? info.fill_value
                    : integer && mask_or_labels ? std::optional<long double>(0)
                                                : std::nullopt;
  meta.compressor =
      compressor_from(hints.get_string("compressor", "blosc-lz4"), static_cast<int>(hints.get_int("level", -1)),
                      hints.get_string("shuffle", ""), info.dtype);
  const std::string separator = hints.get_string("dimension_separator", ".");
  if (separator != "." && separator != "/")
    throw Error("hint dimension_separator=" + separator + " is neither . nor /");
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
  for (std::size_t a = 0; a < 3; ++a)
    meta.chunks[a] = std::min(meta.chunks[a], std::max<std::int64_t>(info.dims[a], 1));
  if (hints.get_bool("append", false)) meta.steps = 1;  // a series' first step, unless the writer finds more
  if (static_cast<long double>(meta.chunk_bytes()) > static_cast<long double>(std::int64_t{1} << 31))
    throw Error("zarr chunks of " + std::to_string(meta.chunk_bytes()) + " bytes are past 2 GiB: hint smaller chunks=");
  if (comm.size() > 1) {
    if (!request.bricks)
      throw Error(
          "zarr: this job's writes are not bricks of one grid, and Zarr needs one writer per chunk: run it on "
          "1 rank");
    for (std::size_t a = 0; a < 3; ++a) {
      const std::int64_t b = (*request.bricks)[a];
      if (b % meta.chunks[a] != 0 && b < info.dims[a])
        throw Error("zarr: chunks " + chunks + " do not divide the job's bricks " +
                    std::to_string((*request.bricks)[0]) + "," + std::to_string((*request.bricks)[1]) + "," +
                    std::to_string((*request.bricks)[2]) +
                    ", so a chunk would have two writers: give --brick a multiple of the chunks, or chunks= that "
                    "divide the bricks");
    }
  }
  return meta;
}

}  // namespace

std::unique_ptr<VolumeWriter> create_writer(const CreateRequest& request, const Comm& comm, const Hints& hints) {
  ArrayMeta meta = meta_for(request, comm, hints);
  const bool fsync = hints.get_bool("fsync", false);
  const bool ome = hints.get_bool("ome", false);
  const bool append = hints.get_bool("append", false);
  const auto asked = static_cast<int>(hints.get_int("levels", 0));
  int levels = 1;
  if (ome && !append) {
    levels = level_count(request.info.dims, meta.chunks, asked);
  } else if (asked > 1) {
    throw Error("--levels " + std::to_string(asked) + ": " +
                (ome ? std::string("a series' steps are written one level each")
                     : std::string("a Zarr array holds one level; name the output .ome.zarr for a multiscale image")));
  }
  hints.reject_unused("zarr");
  return std::make_unique<ZarrWriter>(request, comm, std::move(meta), fsync, ome, append, levels);
}

}  // namespace volseg::io::zarr
