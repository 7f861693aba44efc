// SPDX-License-Identifier: MIT
// Each prop draws only the rank's owned box: the volume is cropped to it and
// surfaces are clipped to it, while their interpolation and normals use the
// ghost layer around it, so N ranks draw what one rank draws, without seams.
#include "scene.hpp"

#include <vtkActor.h>
#include <vtkBox.h>
#include <vtkClipPolyData.h>
#include <vtkColorTransferFunction.h>
#include <vtkFlyingEdges3D.h>
#include <vtkUnsignedShortArray.h>
#include <vtkGPUVolumeRayCastMapper.h>
#include <vtkImageActor.h>
#include <vtkImageConstantPad.h>
#include <vtkImageData.h>
#include <vtkImageMapper3D.h>
#include <vtkInformation.h>
#include <vtkInformationVector.h>
#include <vtkPiecewiseFunction.h>
#include <vtkPlane.h>
#include <vtkPlaneCollection.h>
#include <vtkPointData.h>
#include <vtkPolyDataMapper.h>
#include <vtkProperty.h>
#include <vtkUnsignedCharArray.h>
#include <vtkVolume.h>
#include <vtkVolumeProperty.h>

#include <algorithm>
#include <cmath>
#include <sstream>

namespace volseg::render {
namespace {

// io extents are z, y, x; VTK's are x0, x1, y0, y1, z0, z1.
void vtk_extent(const io::Extent& e, int out[6]) {
  for (int a = 0; a < 3; ++a) {
    out[2 * a] = static_cast<int>(e.offset[2 - a]);
    out[2 * a + 1] = static_cast<int>(e.offset[2 - a] + e.count[2 - a] - 1);
  }
}

vtkSmartPointer<vtkImageData> make_image(const Piece& piece) {
  auto image = vtkSmartPointer<vtkImageData>::New();
  int extent[6];
  vtk_extent(piece.stored, extent);
  image->SetExtent(extent);
  image->SetSpacing(piece.spacing.data());
  image->SetOrigin(piece.origin.data());
  return image;
}

double colour_lo(const FrameSettings& s, const Piece& p) { return colour_range(s, p)[0]; }
double colour_hi(const FrameSettings& s, const Piece& p) { return colour_range(s, p)[1]; }

}  // namespace

Box world_box(const Piece& piece, const io::Extent& extent) {
  Box box;
  for (int a = 0; a < 3; ++a) {
    const int axis = 2 - a;  // x is the extent's last axis
    box.lo[a] = piece.origin[a] + piece.spacing[a] * static_cast<double>(extent.offset[axis]);
    box.hi[a] = piece.origin[a] + piece.spacing[a] * static_cast<double>(extent.offset[axis] + extent.count[axis] - 1);
  }
  return box;
}

std::array<double, 2> colour_range(const FrameSettings& s, const Piece& p) {
  const double lo = s.transfer.lo.value_or(p.field_min), hi = s.transfer.hi.value_or(p.field_max);
  return {lo, hi > lo ? hi : lo + 1};
}

Box world_bounds(const Piece& piece) { return world_box(piece, io::Extent{{0, 0, 0}, piece.dims}); }

vtkSmartPointer<vtkLookupTable> make_lookup_table(const TransferFunction& transfer, double lo, double hi) {
  auto table = vtkSmartPointer<vtkLookupTable>::New();
  const int colours = 256;
  table->SetNumberOfTableValues(colours);
  table->SetRange(lo, hi);
  for (int i = 0; i < colours; ++i) {
    const Rgb c = colormap_at(transfer.colormap, i / double(colours - 1));
    table->SetTableValue(i, c.r, c.g, c.b, 1.0);
  }
  table->SetNanColor(0.3, 0.3, 0.3, 1.0);
  return table;
}

void Scene::set_piece(Piece piece) {
  // VTK's arrays point into the old piece: drop them before its memory goes.
  built_for_.clear();
  props_.clear();
  field_ = mask_ = nullptr;
  piece_ = std::move(piece);
  has_piece_ = true;
  if (!piece_.field.empty()) {
    field_ = make_image(piece_);
    vtkNew<vtkUnsignedShortArray> values;
    values->SetName("field");
    values->SetArray(piece_.field.data(), static_cast<vtkIdType>(piece_.field.size()), 1);  // zero-copy
    // VTK's volume mapper normalises its texture by the array's range and
    // spreads the transfer functions over it: every rank's array reports the
    // whole range of levels, or ranks whose values span less drew the same
    // values differently (VTK keeps a cached range while it is newer than
    // the array).
    vtkNew<vtkInformationVector> per_component;
    vtkNew<vtkInformation> component;
    const double range[2] = {0, Quantizer::top};
    component->Set(vtkDataArray::COMPONENT_RANGE(), range, 2);
    per_component->Append(component);
    values->GetInformation()->Set(vtkAbstractArray::PER_COMPONENT(), per_component);
    field_->GetPointData()->SetScalars(values);
  }
  if (!piece_.mask.empty()) {
    mask_ = make_image(piece_);
    vtkNew<vtkUnsignedCharArray> values;
    values->SetName("mask");
    values->SetArray(piece_.mask.data(), static_cast<vtkIdType>(piece_.mask.size()), 1);
    mask_->GetPointData()->SetScalars(values);
  }
}

const std::vector<vtkSmartPointer<vtkProp>>& Scene::props(const FrameSettings& s) {
  std::ostringstream key;  // everything but the camera and the size
  key.precision(17);
  key << s.modes.volume << s.modes.mask << s.modes.slices << '|';
  for (double v : s.modes.iso) key << v << ',';
  key << '|' << s.transfer.colormap << s.transfer.lo.value_or(NAN) << s.transfer.hi.value_or(NAN) << '|';
  for (const auto& p : s.transfer.opacity) key << p.value << ':' << p.alpha << ',';
  key << '|' << s.mask_color.r << s.mask_color.g << s.mask_color.b << s.mask_opacity << s.shade
      << s.sample_distance << '|' << s.slice_at[0] << s.slice_at[1] << s.slice_at[2];
  if (key.str() != built_for_) {
    build(s);
    built_for_ = key.str();
  }
  return props_;
}

void Scene::build(const FrameSettings& s) {
  props_.clear();
  if (!has_piece_ || piece_.owned.empty()) return;
  if (s.modes.volume && field_) add_volume(s);
  if (s.modes.mask) {
    const Quantizer q = quantizer(piece_);
    if (mask_) add_surface(mask_, {0.5}, s, false, true);
    else if (field_ && piece_.threshold)
      add_surface(field_, {q.level((*piece_.threshold)[0]), q.level((*piece_.threshold)[1])}, s, false, false);
  }
  if (!s.modes.iso.empty() && field_) {
    std::vector<double> levels;
    for (double v : s.modes.iso) levels.push_back(quantizer(piece_).level(v));
    add_surface(field_, levels, s, true, false);
  }
  if (s.modes.slices && field_) add_slices(s);
}

void Scene::add_volume(const FrameSettings& s) {
  const double lo = colour_lo(s, piece_), hi = colour_hi(s, piece_);
  // Transfer functions over levels (see Quantizer); level 0 marks invalid
  // voxels, which are transparent.
  const Quantizer q = quantizer(piece_);
  vtkNew<vtkColorTransferFunction> colours;
  const int steps = 32;
  for (int i = 0; i <= steps; ++i) {
    const Rgb c = colormap_at(s.transfer.colormap, i / double(steps));
    colours->AddRGBPoint(q.level(lo + (hi - lo) * i / steps), c.r, c.g, c.b);
  }
  vtkNew<vtkPiecewiseFunction> opacity;  // 0 outside the points
  opacity->AddPoint(0, 0.0);
  const double nudge = 4;  // levels; the mapper sizes its table by the closest points
  if (!s.transfer.opacity.empty() && q.level(s.transfer.opacity.front().value) - nudge > 1)
    opacity->AddPoint(q.level(s.transfer.opacity.front().value) - nudge, 0.0);
  for (const auto& p : s.transfer.opacity)
    if (q.level(p.value) > 0.5) opacity->AddPoint(q.level(p.value), p.alpha);
  if (!s.transfer.opacity.empty() && q.level(s.transfer.opacity.back().value) + nudge < Quantizer::top)
    opacity->AddPoint(q.level(s.transfer.opacity.back().value) + nudge, 0.0);
  opacity->ClampingOn();

  vtkNew<vtkVolumeProperty> property;
  property->SetColor(colours);
  property->SetScalarOpacity(opacity);
  property->SetInterpolationTypeToLinear();
  property->SetShade(s.shade);
  property->SetAmbient(0.3);
  property->SetDiffuse(0.7);
  property->SetSpecular(0.2);
  // Opacity is per full-resolution voxel, whatever the level drawn, so
  // coarse levels look like the fine one.
  property->SetScalarOpacityUnitDistance(*std::min_element(piece_.full_spacing.begin(), piece_.full_spacing.end()));

  vtkNew<vtkGPUVolumeRayCastMapper> mapper;
  mapper->SetInputData(field_);
  mapper->SetBlendModeToComposite();
  mapper->AutoAdjustSampleDistancesOff();
  mapper->LockSampleDistanceToInputSpacingOff();
  mapper->SetUseJittering(0);
  const double step = s.sample_distance > 0 ? s.sample_distance
                                            : 0.5 * *std::min_element(piece_.spacing.begin(), piece_.spacing.end());
  mapper->SetSampleDistance(static_cast<float>(step));
  // Draw the owned box only; the ghost layer is there for interpolation and
  // gradients at its faces.
  // Clipping planes cut each ray exactly at the box's faces (the mapper's
  // cropping did not: a slab between two others drew its faces brighter).
  const Box box = world_box(piece_, piece_.owned);
  vtkNew<vtkPlaneCollection> planes;
  for (int a = 0; a < 3; ++a) {
    const int axis = 2 - a;
    if (piece_.owned.offset[axis] > piece_.stored.offset[axis]) {
      vtkNew<vtkPlane> plane;
      double origin[3] = {0, 0, 0}, normal[3] = {0, 0, 0};
      origin[a] = box.lo[a];
      normal[a] = 1;  // keeps the side the normal points to
      plane->SetOrigin(origin);
      plane->SetNormal(normal);
      planes->AddItem(plane);
    }
    if (piece_.owned.offset[axis] + piece_.owned.count[axis] < piece_.stored.offset[axis] + piece_.stored.count[axis]) {
      vtkNew<vtkPlane> plane;
      double origin[3] = {0, 0, 0}, normal[3] = {0, 0, 0};
      origin[a] = box.hi[a];
      normal[a] = -1;
      plane->SetOrigin(origin);
      plane->SetNormal(normal);
      planes->AddItem(plane);
    }
  }
  if (planes->GetNumberOfItems() > 0) mapper->SetClippingPlanes(planes);

  vtkNew<vtkVolume> volume;
  volume->SetMapper(mapper);
  volume->SetProperty(property);
  props_.emplace_back(volume.GetPointer());
}

void Scene::add_surface(vtkImageData* image, const std::vector<double>& values, const FrameSettings& s,
                        bool colour_by_value, bool closed) {
  vtkNew<vtkFlyingEdges3D> contour;
  Box box = world_box(piece_, piece_.owned);
  vtkNew<vtkImageConstantPad> pad;
  if (closed) {
    // A mask's surface closes at the volume's faces: pad the faces this
    // piece touches with one layer of zeros (the ghost layer does the same
    // job between ranks), and keep the cap that lies half a voxel outside.
    int extent[6];
    vtk_extent(piece_.stored, extent);
    for (int a = 0; a < 3; ++a) {
      const int axis = 2 - a;
      if (piece_.owned.offset[axis] == 0) {
        --extent[2 * a];
        box.lo[a] -= piece_.spacing[a];
      }
      if (piece_.owned.offset[axis] + piece_.owned.count[axis] == piece_.dims[axis]) {
        ++extent[2 * a + 1];
        box.hi[a] += piece_.spacing[a];
      }
    }
    pad->SetInputData(image);
    pad->SetOutputWholeExtent(extent);
    pad->SetConstant(0);
    contour->SetInputConnection(pad->GetOutputPort());
  } else {
    contour->SetInputData(image);
  }
  contour->SetNumberOfContours(static_cast<int>(values.size()));
  for (std::size_t i = 0; i < values.size(); ++i) contour->SetValue(static_cast<int>(i), values[i]);
  contour->ComputeNormalsOn();
  contour->ComputeScalarsOn();
  // Cut at the owned box's faces: a neighbour draws the rest, with the same
  // triangles cut at the same plane.
  vtkNew<vtkBox> inside;
  inside->SetBounds(box.lo[0], box.hi[0], box.lo[1], box.hi[1], box.lo[2], box.hi[2]);
  vtkNew<vtkClipPolyData> clip;
  clip->SetInputConnection(contour->GetOutputPort());
  clip->SetClipFunction(inside);
  clip->InsideOutOn();
  clip->Update();

  vtkNew<vtkPolyDataMapper> mapper;
  mapper->SetInputData(clip->GetOutput());
  vtkNew<vtkActor> actor;
  if (colour_by_value) {  // the surfaces carry levels: a table over the levels of the colour range
    const Quantizer q = quantizer(piece_);
    mapper->SetLookupTable(make_lookup_table(s.transfer, q.level(colour_lo(s, piece_)), q.level(colour_hi(s, piece_))));
    mapper->UseLookupTableScalarRangeOn();
    mapper->ScalarVisibilityOn();
  } else {
    mapper->ScalarVisibilityOff();
    actor->GetProperty()->SetColor(s.mask_color.r, s.mask_color.g, s.mask_color.b);
    actor->GetProperty()->SetOpacity(s.mask_opacity);
  }
  actor->GetProperty()->SetSpecular(0.3);
  actor->GetProperty()->SetSpecularPower(30);
  actor->SetMapper(mapper);
  props_.emplace_back(actor.GetPointer());
}

void Scene::add_slices(const FrameSettings& s) {
  auto table = make_lookup_table(s.transfer, colour_lo(s, piece_), colour_hi(s, piece_));
  const Quantizer q = quantizer(piece_);
  // The overlay without a mask: the levels inside the threshold.
  const double low = piece_.threshold ? q.level((*piece_.threshold)[0]) : 0;
  const double high = piece_.threshold ? q.level((*piece_.threshold)[1]) : 0;
  const auto& owned = piece_.owned;
  const auto& stored = piece_.stored;
  for (int axis = 0; axis < 3; ++axis) {  // file order: z, y, x
    const double fraction = std::clamp(s.slice_at[2 - axis], 0.0, 1.0);
    const std::int64_t plane = std::llround(fraction * static_cast<double>(piece_.dims[axis] - 1));
    if (plane < owned.offset[axis] || plane >= owned.offset[axis] + owned.count[axis]) continue;
    io::Extent slice = owned;
    slice.offset[axis] = plane;
    slice.count[axis] = 1;
    auto image = make_image(piece_);
    int extent[6];
    vtk_extent(slice, extent);
    image->SetExtent(extent);
    vtkNew<vtkUnsignedCharArray> rgba;
    rgba->SetNumberOfComponents(4);
    rgba->SetNumberOfTuples(slice.voxels());
    std::uint8_t* out = rgba->GetPointer(0);
    const double blend = 0.55;  // how strongly the mask tints the slice
    for (std::int64_t z = 0; z < slice.count[0]; ++z)
      for (std::int64_t y = 0; y < slice.count[1]; ++y)
        for (std::int64_t x = 0; x < slice.count[2]; ++x) {
          const std::int64_t i = ((slice.offset[0] + z - stored.offset[0]) * stored.count[1] +
                                  (slice.offset[1] + y - stored.offset[1])) *
                                     stored.count[2] +
                                 (slice.offset[2] + x - stored.offset[2]);
          const std::uint16_t level = piece_.field[static_cast<std::size_t>(i)];
          const double v = q.value(level);
          double c[3];
          if (level == Quantizer::invalid) c[0] = c[1] = c[2] = 0.3;
          else table->GetColor(v, c);
          const bool inside = !piece_.mask.empty() ? piece_.mask[static_cast<std::size_t>(i)] != 0
                              : piece_.threshold && level != Quantizer::invalid && level >= low && level <= high;
          if (inside) {
            c[0] = (1 - blend) * c[0] + blend * s.mask_color.r;
            c[1] = (1 - blend) * c[1] + blend * s.mask_color.g;
            c[2] = (1 - blend) * c[2] + blend * s.mask_color.b;
          }
          for (int k = 0; k < 3; ++k) *out++ = static_cast<std::uint8_t>(std::lround(255 * std::clamp(c[k], 0.0, 1.0)));
          *out++ = 255;
        }
    image->GetPointData()->SetScalars(rgba);
    vtkNew<vtkImageActor> actor;
    actor->GetMapper()->SetInputData(image);
    actor->SetDisplayExtent(extent);  // also sets the mapper's orientation to this slice's axis
    actor->ForceOpaqueOn();
    actor->InterpolateOff();
    props_.emplace_back(actor.GetPointer());
  }
}

}  // namespace volseg::render
