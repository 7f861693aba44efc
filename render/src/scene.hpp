// SPDX-License-Identifier: MIT
// Rendering a rank's piece: the VTK props that draw what a frame asks for
// (volume, mask surface, isosurfaces, slices) from this rank's box alone.
#pragma once

#include <vtkLookupTable.h>
#include <vtkNew.h>
#include <vtkProp.h>
#include <vtkSmartPointer.h>

#include <array>
#include <string>
#include <vector>

#include "volseg/render/partition.hpp"
#include "volseg/render/render.hpp"

class vtkImageData;
class vtkPolyData;

namespace volseg::render {

// The box a piece's owned points span, in world coordinates.
Box world_box(const Piece& piece, const io::Extent& extent);
// The whole level's box, x, y, z (every rank the same).
Box world_bounds(const Piece& piece);
// x, y, z: what data coordinates are multiplied by when drawn: the piece's
// reversed axes times the frame's stretch.
std::array<double, 3> display_factors(const Piece& piece, const FrameSettings& settings);
// A box as drawn (lo and hi kept in order).
Box display_box(const std::array<double, 3>& factors, const Box& box);

// The values the colormap spans: the transfer function's, else the data's
// range (widened when it is a single value).
std::array<double, 2> colour_range(const FrameSettings& settings, const Piece& piece);

// A lookup table over the transfer function's colour range.
vtkSmartPointer<vtkLookupTable> make_lookup_table(const TransferFunction& transfer, double lo, double hi);

// The surface of `values` in `image` (the piece's stored points), clipped
// to the piece's owned box, so pieces of a partition draw the whole surface
// once and without seams. closed: a mask's surface (values {0.5}), closed
// at the volume's faces and drawn as mask_surface says.
vtkSmartPointer<vtkPolyData> piece_surface(const Piece& piece, vtkImageData* image, std::vector<double> values,
                                           bool closed, MaskSurface mask_surface);

class Scene {
 public:
  // Takes the piece (its field as 16-bit levels, 0 where invalid).
  void set_piece(Piece piece);
  const Piece& piece() const { return piece_; }
  bool has_piece() const { return has_piece_; }

  // The props for these settings, rebuilt only when what they draw changed
  // (an orbit reuses them and moves the camera alone).
  const std::vector<vtkSmartPointer<vtkProp>>& props(const FrameSettings& settings);

 private:
  void build(const FrameSettings& settings);
  void add_volume(const FrameSettings& settings);
  // closed: pad the volume's faces so the surface closes there (masks).
  void add_surface(vtkImageData* image, const std::vector<double>& values, const FrameSettings& settings,
                   bool colour_by_value, bool closed);
  void add_slices(const FrameSettings& settings);
  void add_object_surface(const ObjectSurface& surface, const FrameSettings& settings);

  Piece piece_;
  bool has_piece_ = false;
  vtkSmartPointer<vtkImageData> field_, mask_;
  std::string built_for_;
  std::vector<vtkSmartPointer<vtkProp>> props_;
};

}  // namespace volseg::render
