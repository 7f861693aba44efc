// SPDX-License-Identifier: MIT
// The hook's --image through the render library (VTK and IceT): the block
// with its ghost layers as one rank's piece, composited to rank 0.
#include "image.hpp"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <filesystem>

#include <mpi.h>

#include "block.hpp"
#include "outputs.hpp"
#include "volseg/io/error.hpp"
#include "volseg/render/render.hpp"
#include "volseg/segment/decode.hpp"

namespace volseg::insitu::detail {

void check_image_options(const Options& options) {
  if (!options.image.empty()) format_step(options.image, 0);
  if (!options.camera.empty()) render::parse_camera(options.camera);
}

void check_display_for(const Comm& comm, const Options& options) {
  if (!options.image.empty() || !options.scripts.empty()) render::check_display(comm);  // before VTK could abort
}

struct ImageOutput::Impl {
  Impl(const Comm& c, const Options& o) : comm(c), options(o), renderer(c) {}
  const Comm& comm;
  const Options& options;
  render::Renderer renderer;

  render::Piece piece(const Field& field, const io::Extent& stored, const std::vector<std::uint8_t>& ghosted_mask,
                      const segment::Stats& stats) const;
};

ImageOutput::ImageOutput(const Comm& comm, const Options& options) : impl_(std::make_unique<Impl>(comm, options)) {}
ImageOutput::~ImageOutput() = default;

render::Piece ImageOutput::Impl::piece(const Field& field, const io::Extent& stored,
                                       const std::vector<std::uint8_t>& ghosted_mask,
                                       const segment::Stats& stats) const {
  render::Piece piece;
  piece.dims = field.global_dims;
  piece.spacing = piece.full_spacing = field.spacing;
  piece.origin = field.origin;
  // Neighbouring blocks draw up to a shared plane of points (else a seam):
  // this rank's box grown by one on its upper faces, where the ghost layer
  // has that plane.
  piece.owned = field.box;
  for (int a = 0; a < 3; ++a)
    if (piece.owned.offset[a] + piece.owned.count[a] < stored.offset[a] + stored.count[a]) ++piece.owned.count[a];
  piece.stored = io::intersect(io::with_ghost(piece.owned, field.global_dims, render::ghost_layers), stored);
  piece.field_min = stats.valid ? stats.min : 0;
  piece.field_max = stats.valid && stats.max > stats.min ? stats.max : piece.field_min + 1;
  const render::Quantizer q = render::quantizer(piece);
  const auto& p = piece.stored;
  piece.field.resize(static_cast<std::size_t>(p.voxels()));
  if (!ghosted_mask.empty() && options.have_range) piece.mask.resize(piece.field.size());
  io::VolumeInfo info;
  info.dtype = field.dtype;
  const segment::Decoder decoder(info);
  std::vector<float> row(static_cast<std::size_t>(p.count[2]));
  const auto size = static_cast<std::int64_t>(io::dtype_size(field.dtype));
  for (std::int64_t z = 0; z < p.count[0]; ++z)
    for (std::int64_t y = 0; y < p.count[1]; ++y) {
      const std::int64_t in = index_in(stored, p.offset[0] + z, p.offset[1] + y, p.offset[2]);
      const std::int64_t out = (z * p.count[1] + y) * p.count[2];
      decoder.to_float(static_cast<const std::byte*>(field.values) + in * size, p.count[2], row.data());
      for (std::int64_t x = 0; x < p.count[2]; ++x)
        piece.field[static_cast<std::size_t>(out + x)] = q.quantize(row[static_cast<std::size_t>(x)]);
      if (!piece.mask.empty())
        std::memcpy(piece.mask.data() + out, ghosted_mask.data() + in, static_cast<std::size_t>(p.count[2]));
    }
  return piece;
}

std::string ImageOutput::render(const Field& field, const io::Extent& stored,
                                const std::vector<std::uint8_t>& ghosted_mask, const segment::Stats& stats,
                                bool small) {
  auto& m = *impl_;
  const auto& options = m.options;
  render::Piece piece = m.piece(field, stored, ghosted_mask, stats);
  render::FrameSettings settings;
  // The smooth mask surface needs render::ghost_layers layers beyond the
  // points a rank draws, or the ranks' surfaces differ where they meet: a
  // simulation publishing fewer gets the voxels' exact surface (on every
  // rank alike).
  int enough = 1;
  for (int a = 0; a < 3; ++a) {
    const std::int64_t lo = piece.owned.offset[a], hi = lo + piece.owned.count[a];
    if ((lo > 0 && lo - piece.stored.offset[a] < render::ghost_layers) ||
        (hi < piece.dims[a] && piece.stored.offset[a] + piece.stored.count[a] - hi < render::ghost_layers))
      enough = 0;
  }
  if (MPI_Allreduce(MPI_IN_PLACE, &enough, 1, MPI_INT, MPI_MIN, m.comm.get()) != MPI_SUCCESS)
    throw Error("in-situ image: MPI_Allreduce failed");
  settings.mask_surface = enough ? render::MaskSurface::smooth : render::MaskSurface::voxels;
  settings.width = small ? std::max(16, options.width / 2) : options.width;
  settings.height = small ? std::max(16, options.height / 2) : options.height;
  if (!options.camera.empty()) settings.camera = render::parse_camera(options.camera);
  settings.modes.volume = true;
  settings.modes.mask = !piece.mask.empty();
  settings.transfer.opacity = render::parse_opacity("ramp", piece.field_min, piece.field_max);
  char title[256];
  auto bound = [](const std::string& rule, double value) {
    char text[64];
    std::snprintf(text, sizeof text, "%g", value);
    return rule.empty() ? std::string(text) : rule;
  };
  std::snprintf(title, sizeof title, "%s, step %lld, t = %g: mask of [%s, %s]", options.variable.c_str(),
                static_cast<long long>(field.step), field.time, bound(options.lo_rule, options.lo).c_str(),
                bound(options.hi_rule, options.hi).c_str());
  settings.title = options.have_range ? title : options.variable + " step " + std::to_string(field.step);
  settings.scalar_name = options.variable;
  m.renderer.set_piece(std::move(piece));
  const render::Image image = m.renderer.render(settings);
  const std::string path = format_step(options.image, field.step);
  collectively(m.comm, [&] {
    if (m.comm.rank() != 0) return;
    const auto parent = std::filesystem::path(path).parent_path();
    if (!parent.empty()) std::filesystem::create_directories(parent);
    if (std::filesystem::exists(path) && !options.force)
      throw Error("in-situ image " + path + " exists (--force replaces it)");
    render::write_png(image, path);
  });
  return path;
}

}  // namespace volseg::insitu::detail
