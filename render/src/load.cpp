// SPDX-License-Identifier: MIT
#include "volseg/render/load.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>

#include "rectilinear.hpp"
#include "volseg/io/auto_backend.hpp"
#include "volseg/io/error.hpp"
#include "volseg/io/format.hpp"
#include "volseg/io/registry.hpp"
#include "volseg/render/partition.hpp"
#include "volseg/segment/brick_driver.hpp"
#include "volseg/segment/decode.hpp"
#include "volseg/segment/expression.hpp"

namespace volseg::render {
namespace {

constexpr std::uint64_t staging_bytes = 16u << 20;  // read in pieces of about this much

}  // namespace

std::unique_ptr<io::VolumeReader> open_source(const Comm& comm, const Source& source, int level, bool mask) {
  if (level != 0 && !source.pyramid)
    throw Error(source.path + " has no pyramid, so only level 0 exists (build one with 'volseg pyramid " + source.path +
                "')");
  // A renderer reads each slab once into its own buffer (Access::copy).
  const std::string backend = io::resolve_backend(comm, source.backend, source.path, io::Access::copy).backend;
  if (source.pyramid) return source.pyramid->open_level(level, comm, backend, source.selection, source.hints);
  // Uneven coordinate axes: on a uniform grid in their coordinates.
  return resample_uneven(segment::open_input(backend, {source.path, source.selection}, comm, source.hints),
                         source.coordinates, mask ? Resampling::nearest : Resampling::linear);
}

std::array<double, 2> value_range(const pyramid::Pyramid& pyramid) {
  std::array<double, 2> range{INFINITY, -INFINITY};
  for (std::int64_t b = 0; b < pyramid.brick_count(); ++b)
    if (const auto& s = pyramid.stats(b); s.valid) {
      range[0] = std::min(range[0], s.min);
      range[1] = std::max(range[1], s.max);
    }
  if (range[0] > range[1]) return {0, 1};
  return range;
}

namespace {

// Reads `box` of the volume into out (box.voxels() values, as T), through
// `convert(values, count, out)`, a few planes at a time. Collective backends
// read in rounds that every rank joins.
template <class T, class Convert>
void read_box(const Comm& comm, io::VolumeReader& reader, const io::Extent& box, std::vector<T>& out, Convert convert) {
  const std::size_t element = io::dtype_size(reader.info().dtype);
  const std::int64_t plane = box.count[1] * box.count[2];
  const std::int64_t planes =
      box.empty()
          ? 0
          : std::clamp<std::int64_t>(
                static_cast<std::int64_t>(staging_bytes / element) / std::max<std::int64_t>(plane, 1), 1, box.count[0]);
  out.resize(static_cast<std::size_t>(box.voxels()));
  std::vector<io::Extent> slabs;
  for (std::int64_t z = 0; planes > 0 && z < box.count[0]; z += planes) {
    io::Extent slab = box;
    slab.offset[0] = box.offset[0] + z;
    slab.count[0] = std::min(planes, box.count[0] - z);
    slabs.push_back(slab);
  }
  std::vector<std::byte> staging(static_cast<std::size_t>(planes * plane) * element);
  // The brick driver's rounds, which every rank joins for a collective
  // backend: a rank that failed (a short file, EIO) joins the rest with
  // nothing to read.
  segment::BrickDriver driver(comm, std::move(slabs), {}, {});
  driver.run(reader.capabilities().collective, [&](std::optional<std::size_t> k) {
    const io::Extent* slab = k ? &driver.extent(*k) : nullptr;
    io::read_in_round(reader, slab, staging.data());
    if (slab) convert(staging.data(), slab->voxels(), out.data() + (slab->offset[0] - box.offset[0]) * plane);
  });
}

// The owned box shrunk to the bricks that can draw something, in points.
// has_mask: a mask is drawn; mask: its pyramid, when it has one.
io::Extent culled_box(const pyramid::Pyramid& field, bool has_mask, const std::optional<pyramid::Pyramid>& mask,
                      int level, const io::Extent& owned, const Culling& culling, LoadStats& stats) {
  const auto& grid = field.brick_grid();
  const bool mask_grid = mask && mask->brick_grid() == grid;
  const auto& dims = field.levels()[static_cast<std::size_t>(level)].dims;
  io::Index3 lo{std::numeric_limits<std::int64_t>::max(), 0, 0}, hi{-1, -1, -1};
  for (int a = 1; a < 3; ++a) lo[a] = std::numeric_limits<std::int64_t>::max();
  auto index = [&](std::int64_t z, std::int64_t y, std::int64_t x) { return (z * grid[1] + y) * grid[2] + x; };
  std::array<std::int64_t, 3> slice_plane{};
  for (int axis = 0; axis < 3; ++axis)
    slice_plane[axis] =
        std::llround(std::clamp(culling.slice_at[2 - axis], 0.0, 1.0) * static_cast<double>(dims[axis] - 1));
  for (std::int64_t bz = 0; bz < grid[0]; ++bz)
    for (std::int64_t by = 0; by < grid[1]; ++by)
      for (std::int64_t bx = 0; bx < grid[2]; ++bx) {
        const std::int64_t b = index(bz, by, bx);
        io::Extent e = field.brick_extent(b, level);
        for (int a = 0; a < 3; ++a)  // a brick's cells reach its neighbour's first plane
          e.count[a] = std::min(e.count[a] + 1, dims[a] - e.offset[a]);
        bool overlaps = true;
        for (int a = 0; a < 3; ++a)
          overlaps =
              overlaps && e.offset[a] < owned.offset[a] + owned.count[a] && e.offset[a] + e.count[a] > owned.offset[a];
        if (!overlaps) continue;
        ++stats.bricks;
        // Values between two bricks' voxels come from both: judge a brick by
        // the range of it and its neighbours together.
        double min = INFINITY, max = -INFINITY, mask_max = 0;
        for (std::int64_t nz = std::max<std::int64_t>(bz - 1, 0); nz <= std::min(bz + 1, grid[0] - 1); ++nz)
          for (std::int64_t ny = std::max<std::int64_t>(by - 1, 0); ny <= std::min(by + 1, grid[1] - 1); ++ny)
            for (std::int64_t nx = std::max<std::int64_t>(bx - 1, 0); nx <= std::min(bx + 1, grid[2] - 1); ++nx) {
              const auto& s = field.stats(index(nz, ny, nx));
              if (s.valid) {
                min = std::min(min, s.min);
                max = std::max(max, s.max);
              }
              if (mask_grid && mask->stats(index(nz, ny, nx)).valid)
                mask_max = std::max(mask_max, mask->stats(index(nz, ny, nx)).max);
            }
        const bool valid = min <= max;
        bool needed = culling.modes.volume && valid && culling.transfer.max_opacity(min, max) > 0;
        for (double v : culling.modes.iso) needed = needed || (valid && v >= min && v <= max);
        if (culling.modes.mask) {
          if (has_mask)
            needed = needed || !mask_grid || mask_max > 0;
          else if (culling.threshold)
            needed = needed || (valid && (*culling.threshold)[1] >= min && (*culling.threshold)[0] <= max);
        }
        if (culling.modes.slices)
          for (int a = 0; a < 3; ++a)
            needed = needed || (slice_plane[a] >= e.offset[a] && slice_plane[a] < e.offset[a] + e.count[a]);
        if (!needed) {
          ++stats.bricks_skipped;
          continue;
        }
        for (int a = 0; a < 3; ++a) {
          lo[a] = std::min(lo[a], e.offset[a]);
          hi[a] = std::max(hi[a], e.offset[a] + e.count[a] - 1);
        }
      }
  io::Extent box;
  if (hi[0] < 0) return box;  // nothing to draw here
  for (int a = 0; a < 3; ++a) {
    const std::int64_t from = std::max(lo[a], owned.offset[a]);
    const std::int64_t to = std::min(hi[a], owned.offset[a] + owned.count[a] - 1);
    if (to < from) return io::Extent{};
    box.offset[a] = from;
    box.count[a] = to - from + 1;
  }
  return box;
}

}  // namespace

std::uint64_t estimated_bytes(const io::Index3& dims, int ranks, bool with_mask, int width, int height,
                              bool floats_first) {
  std::int64_t largest = 0;
  for (const auto& e : partition(dims, ranks)) largest = std::max(largest, with_ghost(e, dims, ghost_layers).voxels());
  // levels, texture, mask (and the smooth surface's two 16-bit arrays while a frame builds)
  const std::uint64_t per_voxel = 2 + 2 + (with_mask ? 2 + 4 : 0) + (floats_first ? 4 : 0);
  const std::uint64_t images = static_cast<std::uint64_t>(width) * static_cast<std::uint64_t>(height) * 16 * 4;
  // + VTK, Mesa and MPI themselves: about 170 MiB measured at the smallest level
  return static_cast<std::uint64_t>(largest) * per_voxel + images + staging_bytes + (160u << 20);
}

int choose_level(const pyramid::Pyramid& pyramid, int ranks, bool with_mask, int width, int height,
                 std::uint64_t budget) {
  for (const auto& level : pyramid.levels())
    if (estimated_bytes(level.dims, ranks, with_mask, width, height) <= budget) return level.level;
  const auto& coarsest = pyramid.levels().back();
  throw Error("no level of " + pyramid.source() + " fits " + std::to_string(budget >> 20) +
              " MiB per rank (the coarsest, level " + std::to_string(coarsest.level) + ", needs " +
              std::to_string(estimated_bytes(coarsest.dims, ranks, with_mask, width, height) >> 20) + " MiB)");
}

Piece load_piece(const Comm& comm, const Source& field, const std::optional<Source>& mask, int level,
                 const Culling& culling, LoadStats& stats) {
  const auto start = std::chrono::steady_clock::now();
  Piece piece;
  piece.level = level;
  piece.threshold = culling.threshold;
  auto field_reader = open_source(comm, field, level);
  std::unique_ptr<io::VolumeReader> mask_reader;
  if (mask) mask_reader = open_source(comm, *mask, level, true);
  const io::VolumeInfo info = field_reader->info();
  piece.dims = info.dims;
  const io::VolumeInfo& source_info = field.pyramid ? field.pyramid->source_info() : info;
  piece.full_spacing = source_info.spacing;
  for (int a = 0; a < 3; ++a) {
    // A uniform coordinate places the axis: the level-0 reader's own (an
    // uneven axis resampled: its new grid), else the input's. An axis drawn
    // reversed (decreasing, or positive down) has its data coordinates
    // negated, so that display_scale (-1) puts index k at its coordinate.
    const auto& own = info.coordinates[static_cast<std::size_t>(a)];
    const auto& c = own ? own : field.coordinates[static_cast<std::size_t>(a)];
    double spacing = source_info.spacing[a], origin = source_info.origin[a];
    bool decreasing = false;
    if (c && c->uniform() && !c->values.empty()) {
      decreasing = c->step() < 0;
      spacing = c->values.size() > 1 ? std::abs(c->step()) : 1;
      origin = decreasing ? -c->values.front() : c->values.front();
    }
    piece.display_scale[a] = (decreasing ? -1 : 1) * (c && c->down ? -1 : 1);
    if (c) piece.axis_titles[a] = c->name + (c->units.empty() ? "" : " (" + c->units + ")");
    if (c && c->uniform()) piece.full_spacing[a] = spacing;
    // A coarse voxel sits at the centre of the fine voxels it stands for.
    const double factor = std::ldexp(1.0, level);
    piece.spacing[a] = spacing * factor;
    piece.origin[a] = origin + 0.5 * (factor - 1) * spacing;
  }
  if (mask_reader && mask_reader->info().dims != info.dims)
    throw Error("mask " + mask->path + " has dims " + io::to_string(io::Extent{{0, 0, 0}, mask_reader->info().dims}) +
                " but " + field.path + " has " + io::to_string(info.whole()) + " (level " + std::to_string(level) +
                ")");

  piece.owned = partition(info.dims, comm.size())[static_cast<std::size_t>(comm.rank())];
  if (culling.enabled && field.pyramid && !piece.owned.empty())
    piece.owned = culled_box(*field.pyramid, mask.has_value(), mask ? mask->pyramid : std::nullopt, level, piece.owned,
                             culling, stats);
  piece.stored = with_ghost(piece.owned, info.dims, ghost_layers);

  const bool need_field =
      culling.modes.volume || culling.modes.slices || !culling.modes.iso.empty() || (culling.modes.mask && !mask);
  const segment::Decoder decoder(info);
  // The range first (from the pyramid; without one, from what the ranks
  // read), so values can be stored as 16-bit levels of it.
  std::array<double, 2> range{INFINITY, -INFINITY};
  std::vector<float> values;  // without a pyramid: floats until the range is known
  if (field.pyramid) {
    range = value_range(*field.pyramid);
  } else if (need_field) {
    read_box(comm, *field_reader, piece.stored, values,
             [&](const void* v, std::int64_t n, float* out) { decoder.to_float(v, n, out); });
    for (float v : values)
      if (!std::isnan(v)) {
        range[0] = std::min(range[0], double(v));
        range[1] = std::max(range[1], double(v));
      }
    double local[2] = {range[0], -range[1]}, global[2];
    check_mpi(MPI_Allreduce(local, global, 2, MPI_DOUBLE, MPI_MIN, comm.get()), "MPI_Allreduce");
    range = {global[0], -global[1]};
  }
  piece.field_min = std::isfinite(range[0]) ? range[0] : 0;
  piece.field_max = std::isfinite(range[1]) ? range[1] : 1;
  const Quantizer q = quantizer(piece);
  if (need_field && field.pyramid) {
    std::vector<float> staging;
    read_box(comm, *field_reader, piece.stored, piece.field, [&](const void* v, std::int64_t n, std::uint16_t* out) {
      staging.resize(static_cast<std::size_t>(n));
      decoder.to_float(v, n, staging.data());
      for (std::int64_t i = 0; i < n; ++i) out[i] = q.quantize(staging[static_cast<std::size_t>(i)]);
    });
  } else if (need_field) {
    piece.field.resize(values.size());
    for (std::size_t i = 0; i < values.size(); ++i) piece.field[i] = q.quantize(values[i]);
    std::vector<float>().swap(values);
  }
  if (mask_reader)
    read_box(comm, *mask_reader, piece.stored, piece.mask, [](const void* v, std::int64_t n, std::uint8_t* out) {
      const auto* bytes = static_cast<const std::uint8_t*>(v);
      for (std::int64_t i = 0; i < n; ++i) out[i] = bytes[i] != 0;
    });
  stats.bytes_read = field_reader->bytes_read() + (mask_reader ? mask_reader->bytes_read() : 0);
  field_reader->close();
  if (mask_reader) mask_reader->close();
  stats.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return piece;
}

std::optional<pyramid::Pyramid> find_pyramid(const Comm& comm, const std::string& path, const std::string& dir,
                                             const io::Selection& selection) {
  std::string found;
  collectively(comm, [&] {
    if (comm.rank() != 0) return;
    if (auto p = pyramid::find(path, dir, selection)) found = p->directory();
  });
  found = comm.broadcast(found);
  std::optional<pyramid::Pyramid> result;
  if (!found.empty()) collectively(comm, [&] { result = pyramid::load(found); });
  return result;
}

}  // namespace volseg::render
