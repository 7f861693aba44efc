// SPDX-License-Identifier: MIT
// slices: three axis planes (values, the mask's and the labels') through a
// point, read by rank 0 alone from one pyramid level; what the last planes
// hold and has not changed since is not read again.
#include <algorithm>
#include <cmath>
#include <cstring>

#include "../state.hpp"
#include "volseg/io/auto_backend.hpp"
#include "volseg/io/label_ids.hpp"
#include "volseg/io/registry.hpp"
#include "volseg/segment/decode.hpp"

namespace volseg::session::detail {
namespace {

// A reader of one level for plane reads, copied into the planes
// (io::Access::copy: a raw volume with pread, not mapped windows that a
// strided plane would fault in whole).
std::unique_ptr<io::VolumeReader> open_plane_reader(const pyramid::Pyramid& pyramid, int level, const Comm& self,
                                                    const std::string& backend, const io::Selection& selection) {
  return pyramid.open_level(level, self, backend, selection);
}

// The labels under plane p (its index `at` at the level): read at full
// resolution through the level voxel's first voxel, every 2^level-th row
// and column kept (ids wider than 32 bits keep their low bits: the page
// only colours), where the plane meets `box` (full resolution) into `out`
// (rows x columns, already sized).
void read_labels(io::VolumeReader& reader, const std::string& path, int p, std::int64_t at, int level,
                 const io::Extent& box, int rows, int columns, std::vector<std::uint32_t>& out) {
  const io::VolumeInfo& info = reader.info();
  const std::int64_t step = std::int64_t{1} << level;
  const auto axis = static_cast<std::size_t>(p);
  const std::int64_t plane = std::min(at * step, info.dims[axis] - 1);
  if (plane < box.offset[axis] || plane >= box.offset[axis] + box.count[axis]) return;
  io::Extent e = box;
  e.offset[axis] = plane;
  e.count[axis] = 1;
  const std::size_t element = io::dtype_size(info.dtype);
  std::vector<std::byte> raw(static_cast<std::size_t>(e.voxels()) * element);
  reader.read(e, raw.data());
  const auto a = static_cast<std::size_t>(p == 0 ? 1 : 0),
             b = static_cast<std::size_t>(p == 2 ? 1 : 2);  // rows, columns
  // The level's samples in the box: full-resolution rows and columns that are multiples of step.
  const auto first = [&](std::size_t k) { return (e.offset[k] + step - 1) / step; };
  for (std::int64_t r = first(a); r < rows && r * step < e.offset[a] + e.count[a]; ++r)
    for (std::int64_t c = first(b); c < columns && c * step < e.offset[b] + e.count[b]; ++c) {
      const std::int64_t i = (r * step - e.offset[a]) * e.count[b] + (c * step - e.offset[b]);
      out[static_cast<std::size_t>(r * columns + c)] = static_cast<std::uint32_t>(
          io::label_id(raw.data() + static_cast<std::size_t>(i) * element, info.dtype, path));
    }
}

// The labels under the planes, each from the cached planes where they
// hold it (the same level, index and labels; the regions written in place
// since read again where they meet it), else read whole.
void label_planes(const State& state, const PlaneCache& cache, Planes& planes) {
  const Planes* old = cache.labels == state.labels_generation ? cache.planes.get() : nullptr;
  const auto kept = [&](std::size_t p) {
    return old != nullptr && old->level == planes.level && old->at[p] == planes.at[p] && !old->labels[p].empty();
  };
  if (kept(0) && kept(1) && kept(2) && cache.written.empty()) {
    planes.labels = old->labels;
    return;
  }
  const Comm self(MPI_COMM_SELF);
  const auto backend = io::resolve_backend(self, "auto", state.labels, io::Access::copy).backend;
  auto reader = io::open_reader(backend, {state.labels, {}}, self);
  if (dtype_is_float(reader->info().dtype)) return reader->close();
  const io::Extent whole{{0, 0, 0}, reader->info().dims};
  for (std::size_t p = 0; p < 3; ++p) {
    auto& out = planes.labels[p];
    const int rows = planes.rows[p], columns = planes.columns[p];
    if (kept(p)) {
      out = old->labels[p];
      for (const auto& box : cache.written)
        read_labels(*reader, state.labels, static_cast<int>(p), planes.at[p], planes.level, box, rows, columns, out);
    } else {
      out.assign(static_cast<std::size_t>(rows) * static_cast<std::size_t>(columns), 0);
      read_labels(*reader, state.labels, static_cast<int>(p), planes.at[p], planes.level, whole, rows, columns, out);
    }
  }
  reader->close();
}

}  // namespace

// Rank 0 alone reads the three planes, at the finest level whose planes fit
// max_side (the other ranks have nothing to do).
void handle(State& state, const SlicesRequest& request, const Hooks&, Reply& reply) {
  state.require_volume();
  if (state.comm.rank() != 0) return;
  const std::int64_t max_side = request.max_side;
  int level = 0;
  const auto& levels = state.pyramid->levels();
  while (level + 1 < static_cast<int>(levels.size()) &&
         *std::max_element(levels[static_cast<std::size_t>(level)].dims.begin(),
                           levels[static_cast<std::size_t>(level)].dims.end()) > max_side)
    ++level;
  if (!state.mask.empty() && state.mask_pyramid)
    level = std::min(level, static_cast<int>(state.mask_pyramid->levels().size()) - 1);
  auto planes = std::make_shared<Planes>();
  planes->level = level;
  const io::Index3 dims = levels[static_cast<std::size_t>(level)].dims;
  planes->dims = dims;
  const double scale = std::pow(2.0, level);
  for (int a = 0; a < 3; ++a)
    planes->spacing[static_cast<std::size_t>(a)] =
        state.pyramid->source_info().spacing[static_cast<std::size_t>(a)] * scale;
  // at[] is x, y, z as fractions; planes are z, y, x
  for (int a = 0; a < 3; ++a) {
    const double f = std::clamp(request.at[static_cast<std::size_t>(2 - a)], 0.0, 1.0);
    planes->at[static_cast<std::size_t>(a)] =
        std::clamp<std::int64_t>(static_cast<std::int64_t>(f * static_cast<double>(dims[static_cast<std::size_t>(a)])),
                                 0, dims[static_cast<std::size_t>(a)] - 1);
  }
  const Comm self(MPI_COMM_SELF);
  auto extent_of = [&](int plane) {
    io::Extent e{{0, 0, 0}, dims};
    e.offset[static_cast<std::size_t>(plane)] = planes->at[static_cast<std::size_t>(plane)];
    e.count[static_cast<std::size_t>(plane)] = 1;
    return e;
  };
  // A plane the cache holds at this level and index keeps what has not
  // changed since: a strided plane (x) reads a voxel a row of the file.
  const PlaneCache& cache = state.plane_cache;
  const Planes* old = cache.planes.get();
  const auto same = [&](std::size_t p) { return old != nullptr && old->level == level && old->at[p] == planes->at[p]; };
  {
    std::unique_ptr<io::VolumeReader> reader;
    for (int p = 0; p < 3; ++p) {
      const auto k = static_cast<std::size_t>(p);
      const io::Extent e = extent_of(p);
      // rows and columns of the plane (the other two axes, slower first)
      std::array<std::int64_t, 2> rc{};
      int n = 0;
      for (int a = 0; a < 3; ++a)
        if (a != p) rc[static_cast<std::size_t>(n++)] = e.count[static_cast<std::size_t>(a)];
      planes->rows[k] = static_cast<int>(rc[0]);
      planes->columns[k] = static_cast<int>(rc[1]);
      auto& values = planes->values[k];
      if (same(k) && cache.volume == state.volume_generation) {
        values = old->values[k];
        continue;
      }
      if (!reader) reader = open_plane_reader(*state.pyramid, level, self, state.backend, state.selection);
      const std::size_t element = io::dtype_size(reader->info().dtype);
      std::vector<std::byte> raw(static_cast<std::size_t>(e.voxels()) * element);
      reader->read(e, raw.data());
      values.resize(static_cast<std::size_t>(e.voxels()));
      segment::Decoder(reader->info()).to_float(raw.data(), e.voxels(), values.data());
    }
    if (reader) reader->close();
  }
  if (!state.mask.empty() && state.mask_pyramid) {
    std::unique_ptr<io::VolumeReader> reader;
    for (int p = 0; p < 3; ++p) {
      const auto k = static_cast<std::size_t>(p);
      auto& mask = planes->mask[k];
      if (same(k) && cache.mask == state.mask_generation && !old->mask[k].empty()) {
        mask = old->mask[k];
        continue;
      }
      if (!reader) reader = open_plane_reader(*state.mask_pyramid, level, self, "auto", io::Selection{});
      const io::Extent e = extent_of(p);
      mask.resize(static_cast<std::size_t>(e.voxels()));
      reader->read(e, mask.data());
    }
    if (reader) reader->close();
  }
  if (!state.labels.empty()) label_planes(state, cache, *planes);
  state.plane_cache = {planes, state.volume_generation, state.mask_generation, state.labels_generation, {}};
  reply.data = {{"level", level}};
  reply.planes = std::move(planes);
}

}  // namespace volseg::session::detail
