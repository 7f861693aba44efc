// SPDX-License-Identifier: MIT
// The brick pyramid on disk: reading it back (load, find, open_level).
// build.cpp writes it.
//
// A pyramid is a directory, by default DIR/NAME.pyramid beside DIR/NAME.nhdr
// or DIR/NAME.nc, holding:
//
//   level-K.nhdr, level-K.raw  (K = 1 .. levels-1) level K as a raw volume
//       with a detached NRRD header, written through the I/O layer (posix
//       backend), so ParaView and numpy open every level. dims =
//       ceil(source dims / 2^K) per axis; spacing = source spacing * 2^K;
//       origin = source origin + (2^K - 1) / 2 * source spacing (the centre
//       of the fine voxels a coarse one stands for), so every level lines up
//       with the source in ParaView.
//       Voxel (z, y, x) of level K covers the level-0 voxels
//       [z*2^K, (z+1)*2^K) x [y*2^K, ...) x [x*2^K, ...), clipped to the
//       volume. Reduction "mean": f32, the mean of the valid level-0 voxels
//       of that cube (unpacked values, as segment::Decoder gives them), NaN
//       when none is valid. Reduction "max" (masks): u8, the largest valid
//       level-0 value of the cube, 0 when none is valid.
//       Level 0 is the source itself, never copied.
//   bricks.bin  one 32-byte little-endian record per level-0 brick, bricks
//       numbered z-major (x fastest) over the brick grid: f64 min, f64 max
//       (over the brick's valid voxels, unpacked; 0 when valid is 0), u64
//       valid (voxels neither NaN, fill, missing nor outside valid_range),
//       u64 voxels (all voxels of the brick). min and max are of the
//       FULL-RESOLUTION voxels, not of any coarse level: a renderer culls a
//       brick whose [min, max] misses the threshold range, and a coarse mean
//       can miss a thin feature that fine voxels have, so culling on coarse
//       values would drop bricks that matter.
//   histograms.u32  brick_count x bins little-endian u32 counts, brick-major:
//       the histogram of each brick's valid level-0 voxels over the shared
//       edges (segment::HistogramEdges: bins of equal width over [lo, hi],
//       or integer bins). Bricks hold at most 1024^3 voxels, so u32 holds
//       every count. Summing bricks gives any region's or the volume's
//       histogram.
//   index.json  written last, under .index.json.volseg-tmp-PID, then renamed: a
//       directory without index.json is not a finished pyramid. Fields:
//       format ("volseg-pyramid"), version (1), created_by (command line),
//       source {path (relative to the pyramid directory when possible),
//         dims [z,y,x], dtype, variable, hints (var=/time= it was read with),
//         files [{path, size, mtime_ns}] (to tell a stale pyramid)},
//       reduction ("mean" | "max"),
//       brick {shape [B,B,B], grid [z,y,x], count},
//       levels [{level, dims [z,y,x], header, dtype}] (level 0: the source),
//       histogram {lo, hi, bins, integers, file},
//       bricks {file, record_bytes}.
//
// Bricks are cubes of edge B, a power of two: a level-K voxel never straddles
// two level-0 bricks (B >= 2^K), so each brick's coarse pieces are computed
// from its own full-resolution voxels alone, and every level is cut on the
// same brick grid (brick_extent()).
#include "volseg/pyramid/pyramid.hpp"

#include <sys/stat.h>
#include <algorithm>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <vector>

#include "files.hpp"
#include "volseg/io/auto_backend.hpp"
#include "volseg/io/error.hpp"
#include "volseg/io/format.hpp"
#include "volseg/io/nrrd.hpp"
#include "volseg/io/registry.hpp"
#include "volseg/segment/expression.hpp"

namespace volseg::pyramid {

namespace fs = std::filesystem;
using nlohmann::json;

std::string reduction_name(Reduction reduction) { return reduction == Reduction::max ? "max" : "mean"; }

std::string default_directory(const std::string& input) {
  const fs::path path(input);
  return (path.parent_path() / (path.stem().string() + ".pyramid")).string();
}

io::Extent Pyramid::brick_extent(std::int64_t brick, int level) const {
  if (brick < 0 || brick >= brick_count())
    throw Error("brick " + std::to_string(brick) + " is not in the pyramid (" + std::to_string(brick_count()) +
                " bricks)");
  if (level < 0 || level >= static_cast<int>(levels_.size()))
    throw Error("level " + std::to_string(level) + " is not in the pyramid (" + std::to_string(levels_.size()) +
                " levels)");
  const io::Index3 position{brick / (brick_grid_[1] * brick_grid_[2]), (brick / brick_grid_[2]) % brick_grid_[1],
                            brick % brick_grid_[2]};
  const auto& dims = levels_[static_cast<std::size_t>(level)].dims;
  io::Extent extent;
  for (std::size_t a = 0; a < 3; ++a) {
    const std::int64_t begin = position[a] * brick_shape_[a];
    const std::int64_t end = std::min(begin + brick_shape_[a], source_info_.dims[a]);
    extent.offset[a] = begin >> level;
    extent.count[a] = std::min(dims[a], (end + (std::int64_t{1} << level) - 1) >> level) - extent.offset[a];
  }
  return extent;
}

segment::Histogram Pyramid::histogram(std::int64_t brick) const {
  if (brick < 0 || brick >= brick_count())
    throw Error("brick " + std::to_string(brick) + " is not in the pyramid (" + std::to_string(brick_count()) +
                " bricks)");
  segment::Histogram histogram(edges_);
  const auto bins = static_cast<std::size_t>(edges_.bins);
  std::vector<std::byte> bytes(bins * 4);
  files::read_at(histograms_path_, static_cast<std::uint64_t>(brick) * bins * 4, bytes.data(), bytes.size());
  for (std::size_t i = 0; i < bins; ++i) histogram.counts()[i] = files::get_u32(&bytes[i * 4]);
  return histogram;
}

segment::Histogram Pyramid::histogram() const { return histogram(0, brick_count()); }

segment::Histogram Pyramid::histogram(std::int64_t first_brick, std::int64_t count) const {
  if (first_brick < 0 || count < 0 || first_brick + count > brick_count())
    throw Error("bricks [" + std::to_string(first_brick) + ", " + std::to_string(first_brick + count) +
                ") are not in the pyramid (" + std::to_string(brick_count()) + " bricks)");
  segment::Histogram total(edges_);
  const auto bins = static_cast<std::size_t>(edges_.bins);
  // A bounded window of bricks at a time, not the whole file.
  const std::int64_t per_read =
      std::max<std::int64_t>(1, (std::int64_t{4} << 20) / static_cast<std::int64_t>(bins * 4));
  std::vector<std::byte> bytes;
  const std::int64_t end = first_brick + count;
  for (std::int64_t first = first_brick; first < end; first += per_read) {
    const auto n = static_cast<std::size_t>(std::min(per_read, end - first));
    bytes.resize(n * bins * 4);
    files::read_at(histograms_path_, static_cast<std::uint64_t>(first) * bins * 4, bytes.data(), bytes.size());
    for (std::size_t b = 0; b < n; ++b)
      for (std::size_t i = 0; i < bins; ++i) total.counts()[i] += files::get_u32(&bytes[(b * bins + i) * 4]);
  }
  return total;
}

std::unique_ptr<io::VolumeReader> Pyramid::open_level(int level, const Comm& comm, const std::string& backend,
                                                      const std::optional<io::Selection>& selection,
                                                      const std::vector<std::string>& hints) const {
  if (level < 0 || level >= static_cast<int>(levels_.size()))
    throw Error(directory_ + ": no level " + std::to_string(level) + " (the pyramid has levels 0 to " +
                std::to_string(levels_.size() - 1) + ")");
  if (level == 0) {
    const std::string name = io::resolve_backend(comm, backend, source_, io::Access::copy).backend;
    return segment::open_input(name, {source_, selection.value_or(source_selection_)}, comm, hints);
  }
  return io::open_reader("posix", {levels_[static_cast<std::size_t>(level)].header, {}}, comm);
}

namespace {

[[noreturn]] void bad_index(const std::string& path, const std::string& problem) {
  throw Error(path + ": not a valid volseg pyramid index: " + problem);
}

io::Index3 index3(const json& value) {
  auto v = value.get<std::vector<std::int64_t>>();
  if (v.size() != 3) throw json::type_error::create(302, "expected 3 numbers", &value);
  return {v[0], v[1], v[2]};
}

// A path stored relative to the pyramid directory, as a usable path.
std::string resolve(const std::string& directory, const std::string& stored) {
  const fs::path path(stored);
  return path.is_absolute() ? stored : (fs::path(directory) / path).lexically_normal().string();
}

void parse_index(const json& j, const std::string& directory, std::string& source, io::VolumeInfo& info,
                 Reduction& reduction, io::Index3& shape, io::Index3& grid, std::vector<Level>& levels,
                 segment::HistogramEdges& edges, std::string& bricks_file, std::string& histograms_file) {
  const auto& s = j.at("source");
  source = resolve(directory, s.at("path").get<std::string>());
  info.dims = index3(s.at("dims"));
  const auto dtype = io::parse_dtype(s.at("dtype").get<std::string>());
  if (!dtype) throw json::other_error::create(501, "unknown source dtype", &s);
  info.dtype = *dtype;
  info.variable = s.at("variable").get<std::string>();
  const auto name = j.at("reduction").get<std::string>();
  if (name != "mean" && name != "max") throw json::other_error::create(501, "unknown reduction " + name, &j);
  reduction = name == "max" ? Reduction::max : Reduction::mean;
  shape = index3(j.at("brick").at("shape"));
  grid = index3(j.at("brick").at("grid"));
  for (const auto& l : j.at("levels")) {
    Level level;
    level.level = l.at("level").get<int>();
    level.dims = index3(l.at("dims"));
    level.header = level.level == 0 ? source : resolve(directory, l.at("header").get<std::string>());
    if (level.level != static_cast<int>(levels.size())) throw json::other_error::create(501, "levels out of order", &l);
    levels.push_back(level);
  }
  const auto& h = j.at("histogram");
  edges.lo = h.at("lo").get<double>();
  edges.hi = h.at("hi").get<double>();
  edges.bins = h.at("bins").get<int>();
  edges.integers = h.at("integers").get<bool>();
  histograms_file = resolve(directory, h.at("file").get<std::string>());
  bricks_file = resolve(directory, j.at("bricks").at("file").get<std::string>());
  if (j.at("bricks").at("record_bytes").get<std::size_t>() != files::brick_record_bytes)
    throw json::other_error::create(501, "unexpected brick record size", &j);
}

}  // namespace

Pyramid load(const std::string& directory) {
  const std::string index_path = (fs::path(directory) / files::index).string();
  if (!fs::exists(index_path))
    throw Error(directory + ": no pyramid here (" + index_path + " is missing; build one with 'volseg pyramid')");
  const std::string text = files::read_text(index_path);
  json j;
  try {
    j = json::parse(text);
  } catch (const json::exception& e) {
    bad_index(index_path, std::string("malformed JSON (") + e.what() + ")");
  }
  Pyramid p;
  p.directory_ = directory;
  std::string bricks_file;
  try {
    if (!j.is_object() || j.value("format", std::string()) != files::format_name)
      bad_index(index_path, std::string("'format' is not \"") + files::format_name + "\"");
    const int version = j.at("version").get<int>();
    if (version != files::format_version)
      bad_index(index_path, "version " + std::to_string(version) + " (this volseg reads version " +
                                std::to_string(files::format_version) + ")");
    parse_index(j, directory, p.source_, p.source_info_, p.reduction_, p.brick_shape_, p.brick_grid_, p.levels_,
                p.edges_, bricks_file, p.histograms_path_);
    p.source_selection_ = io::Selection::from_record(j.at("source").at("hints").get<std::vector<std::string>>());
    for (const auto& file : j.at("source").at("files"))
      p.source_files_.push_back({resolve(directory, file.at("path").get<std::string>()),
                                 file.at("size").get<std::uint64_t>(), file.at("mtime_ns").get<std::int64_t>()});
  } catch (const json::exception& e) {
    bad_index(index_path, std::string("missing or malformed field (") + e.what() + ")");
  }
  for (std::size_t a = 0; a < 3; ++a)
    if (p.brick_shape_[a] < 1 ||
        p.brick_grid_[a] != (p.source_info_.dims[a] + p.brick_shape_[a] - 1) / p.brick_shape_[a])
      bad_index(index_path, "brick grid does not match the source dims and brick shape");
  if (p.levels_.empty() || p.levels_[0].dims != p.source_info_.dims)
    bad_index(index_path, "level 0 must have the source's dims");
  if (p.edges_.bins < 1 || !(p.edges_.lo < p.edges_.hi)) bad_index(index_path, "bad histogram edges");
  // The binary files must hold exactly one record per brick.
  const auto count = static_cast<std::uint64_t>(p.brick_count());
  const std::uint64_t bricks_size = files::file_size(bricks_file);
  if (bricks_size != count * files::brick_record_bytes)
    throw Error(bricks_file + ": " + std::to_string(bricks_size) + " bytes, expected " +
                std::to_string(count * files::brick_record_bytes) + " (" + std::to_string(count) +
                " bricks of 32 bytes): damaged pyramid, rebuild it with --force");
  const std::uint64_t histograms_size = files::file_size(p.histograms_path_);
  const std::uint64_t expected = count * static_cast<std::uint64_t>(p.edges_.bins) * 4;
  if (histograms_size != expected)
    throw Error(p.histograms_path_ + ": " + std::to_string(histograms_size) + " bytes, expected " +
                std::to_string(expected) + " (" + std::to_string(count) + " bricks x " + std::to_string(p.edges_.bins) +
                " bins x 4): damaged pyramid, rebuild it with --force");
  std::vector<std::byte> records(bricks_size);
  files::read_at(bricks_file, 0, records.data(), records.size());
  p.stats_.resize(count);
  for (std::size_t b = 0; b < count; ++b) p.stats_[b] = files::get_brick(&records[b * files::brick_record_bytes]);
  return p;
}

std::optional<Pyramid> find(const std::string& input, const std::string& directory, const io::Selection& selection) {
  const std::string dir = directory.empty() ? default_directory(input) : directory;
  if (!fs::exists(fs::path(dir) / files::index)) return std::nullopt;
  Pyramid p = load(dir);
  std::error_code ec;
  if (!fs::equivalent(p.source_, input, ec) || ec) return std::nullopt;
  // Of another variable or step, or not of the stored one (a glob, an
  // expression: what the index does not record).
  if (p.source_selection_ != selection) return std::nullopt;
  // A source rewritten since the build: the pyramid is stale.
  for (const auto& file : p.source_files_) {
    struct stat st {};
    if (::stat(file.path.c_str(), &st) != 0) return std::nullopt;
    const std::int64_t mtime_ns = static_cast<std::int64_t>(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec;
    if (static_cast<std::uint64_t>(st.st_size) != file.size || mtime_ns != file.mtime_ns) return std::nullopt;
  }
  // A raw source's header can be checked without a communicator.
  if (fs::path(input).extension() == ".nhdr") {
    const auto header = io::parse_nrrd(files::read_text(input), input);
    if (header.info.dims != p.source_info_.dims || header.info.dtype != p.source_info_.dtype) return std::nullopt;
  }
  return p;
}

}  // namespace volseg::pyramid
