// SPDX-License-Identifier: MIT
// Reading a rank's piece of a volume (and of its mask) at one pyramid level,
// through the I/O layer: any backend, any format volseg reads.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "volseg/io/comm.hpp"
#include "volseg/pyramid/pyramid.hpp"
#include "volseg/render/render.hpp"

namespace volseg::render {

// A volume and how to open it.
struct Source {
  std::string path;
  std::string backend = "auto";
  io::Selection selection;                  // which volume of the file
  std::vector<std::string> hints;           // the reader's tuning hints
  std::optional<pyramid::Pyramid> pyramid;  // its pyramid, if there is one
  // x, y, z: the input's coordinate variables (CF), which place and orient
  // the drawing (a decreasing or positive-down axis is drawn reversed).
  std::array<std::optional<io::Coordinate>, 3> coordinates;
};

// Everything that decides which bricks can be skipped.
struct Culling {
  bool enabled = true;
  Modes modes;
  TransferFunction transfer;
  std::optional<std::array<double, 2>> threshold;
  std::array<double, 3> slice_at{0.5, 0.5, 0.5};
};

struct LoadStats {
  double seconds = 0;                           // open, read, decode, close
  std::uint64_t bytes_read = 0;                 // from storage
  std::int64_t bricks = 0, bricks_skipped = 0;  // of this rank's slab
};

// Collective. The pyramid of `path` in `dir` (empty: beside it), if one
// belongs to it: rank 0 looks (a stale or damaged one is none) and every rank
// loads what it found, so all ranks take the same path.
std::optional<pyramid::Pyramid> find_pyramid(const Comm& comm, const std::string& path, const std::string& dir = {},
                                             const io::Selection& selection = {});

// Collective when it opens a file. Opens a level of the source (levels
// above 0 need its pyramid).
// Level 0 of a source with an uneven coordinate axis is resampled to the
// grid of source.coordinates (rectilinear.hpp): linearly, or from the
// nearer level for a mask (give a mask the field's coordinates).
std::unique_ptr<io::VolumeReader> open_source(const Comm& comm, const Source& source, int level, bool mask = false);

// The range of the valid full-resolution values, from the pyramid's brick
// statistics (0, 1 when no voxel is valid).
std::array<double, 2> value_range(const pyramid::Pyramid& pyramid);

// Bytes a rank needs to render a level: its largest slab (ghost layers
// included) as 16-bit levels, the GL texture copy of it, the mask and its
// texture, and the images. Without a pyramid (floats_first) the slab is read
// as floats before the value range is known.
std::uint64_t estimated_bytes(const io::Index3& level_dims, int ranks, bool with_mask, int width, int height,
                              bool floats_first = false);

// The finest level whose estimate fits `budget` bytes; throws volseg::Error
// when none does.
int choose_level(const pyramid::Pyramid& pyramid, int ranks, bool with_mask, int width, int height,
                 std::uint64_t budget);

// Collective over comm. Reads this rank's box of `level` (from partition(),
// shrunk to the bricks culling keeps, plus one ghost layer) of the field and
// of the mask, and the field's global range. A mask must have the field's
// dims. Levels above 0 need pyramids.
Piece load_piece(const Comm& comm, const Source& field, const std::optional<Source>& mask, int level,
                 const Culling& culling, LoadStats& stats);

}  // namespace volseg::render
