// SPDX-License-Identifier: MIT
// slices: three axis planes (values, and the mask's) through a point, read
// by rank 0 alone from one pyramid level.
#include <algorithm>
#include <cmath>
#include <cstring>

#include "../state.hpp"
#include "volseg/io/auto_backend.hpp"
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

// The labels under the level's planes: each plane read at full resolution
// through the level voxel's first voxel, every 2^level-th row and column
// kept (ids wider than 32 bits keep their low bits: the page only colours).
void read_label_planes(const std::string& path, const io::Index3& at, int level, Planes& planes) {
  const Comm self(MPI_COMM_SELF);
  const auto backend = io::resolve_backend(self, "auto", path, io::Access::copy).backend;
  auto reader = io::open_reader(backend, {path, {}}, self);
  const io::VolumeInfo info = reader->info();
  if (dtype_is_float(info.dtype)) return reader->close();
  const std::int64_t step = std::int64_t{1} << level;
  const std::size_t element = io::dtype_size(info.dtype);
  for (int p = 0; p < 3; ++p) {
    io::Extent e{{0, 0, 0}, info.dims};
    e.offset[static_cast<std::size_t>(p)] =
        std::min(at[static_cast<std::size_t>(p)] * step, info.dims[static_cast<std::size_t>(p)] - 1);
    e.count[static_cast<std::size_t>(p)] = 1;
    std::vector<std::byte> raw(static_cast<std::size_t>(e.voxels()) * element);
    reader->read(e, raw.data());
    const int a = p == 0 ? 1 : 0, b = p == 2 ? 1 : 2;  // the plane's row and column axes
    const std::int64_t columns_full = info.dims[static_cast<std::size_t>(b)];
    const int rows = planes.rows[static_cast<std::size_t>(p)], columns = planes.columns[static_cast<std::size_t>(p)];
    auto& out = planes.labels[static_cast<std::size_t>(p)];
    out.assign(static_cast<std::size_t>(rows) * static_cast<std::size_t>(columns), 0);
    for (int r = 0; r < rows; ++r)
      for (int c = 0; c < columns; ++c) {
        const std::int64_t fr = std::min<std::int64_t>(r * step, info.dims[static_cast<std::size_t>(a)] - 1);
        const std::int64_t fc = std::min<std::int64_t>(c * step, columns_full - 1);
        const std::byte* v = raw.data() + static_cast<std::size_t>(fr * columns_full + fc) * element;
        const std::uint64_t id = load_id(v, info.dtype);
        out[static_cast<std::size_t>(r) * static_cast<std::size_t>(columns) + static_cast<std::size_t>(c)] =
            static_cast<std::uint32_t>(id);
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
  {
    auto reader = open_plane_reader(*state.pyramid, level, self, state.backend, state.selection);
    const segment::Decoder decode(reader->info());
    const std::size_t element = io::dtype_size(reader->info().dtype);
    for (int p = 0; p < 3; ++p) {
      const io::Extent e = extent_of(p);
      std::vector<std::byte> raw(static_cast<std::size_t>(e.voxels()) * element);
      reader->read(e, raw.data());
      auto& values = planes->values[static_cast<std::size_t>(p)];
      values.resize(static_cast<std::size_t>(e.voxels()));
      decode.to_float(raw.data(), e.voxels(), values.data());
      // rows and columns of the plane (the other two axes, slower first)
      std::array<std::int64_t, 2> rc{};
      int k = 0;
      for (int a = 0; a < 3; ++a)
        if (a != p) rc[static_cast<std::size_t>(k++)] = e.count[static_cast<std::size_t>(a)];
      planes->rows[static_cast<std::size_t>(p)] = static_cast<int>(rc[0]);
      planes->columns[static_cast<std::size_t>(p)] = static_cast<int>(rc[1]);
    }
    reader->close();
  }
  if (!state.mask.empty() && state.mask_pyramid) {
    auto reader = open_plane_reader(*state.mask_pyramid, level, self, "auto", io::Selection{});
    for (int p = 0; p < 3; ++p) {
      const io::Extent e = extent_of(p);
      auto& mask = planes->mask[static_cast<std::size_t>(p)];
      mask.resize(static_cast<std::size_t>(e.voxels()));
      reader->read(e, mask.data());
    }
    reader->close();
  }
  if (!state.labels.empty()) read_label_planes(state.labels, planes->at, level, *planes);
  reply.data = {{"level", level}};
  reply.planes = std::move(planes);
}

}  // namespace volseg::session::detail
