// SPDX-License-Identifier: MIT
// Each prop draws only the rank's owned box: the volume is cropped to it and
// surfaces are clipped to it, while their interpolation and normals use the
// ghost layer around it, so N ranks draw what one rank draws, without seams.
#include "scene.hpp"

#include <vtkActor.h>
#include <vtkBox.h>
#include <vtkCellArray.h>
#include <vtkClipPolyData.h>
#include <vtkColorTransferFunction.h>
#include <vtkFlyingEdges3D.h>
#include <vtkGPUVolumeRayCastMapper.h>
#include <vtkIdList.h>
#include <vtkImageActor.h>
#include <vtkImageConstantPad.h>
#include <vtkImageData.h>
#include <vtkImageMapper3D.h>
#include <vtkInformation.h>
#include <vtkInformationVector.h>
#include <vtkMatrix4x4.h>
#include <vtkPiecewiseFunction.h>
#include <vtkPlane.h>
#include <vtkPlaneCollection.h>
#include <vtkPointData.h>
#include <vtkPoints.h>
#include <vtkPolyData.h>
#include <vtkPolyDataMapper.h>
#include <vtkPolyDataNormals.h>
#include <vtkProp3D.h>
#include <vtkProperty.h>
#include <vtkReverseSense.h>
#include <vtkTriangleFilter.h>
#include <vtkUnsignedCharArray.h>
#include <vtkUnsignedShortArray.h>
#include <vtkVolume.h>
#include <vtkVolumeProperty.h>

#include <algorithm>
#include <cmath>
#include <sstream>

#include "volseg/io/error.hpp"
#include "volseg/io/volume.hpp"
#include "volseg/mesh/mesh.hpp"

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

std::array<double, 3> display_factors(const Piece& piece, const FrameSettings& settings) {
  return {piece.display_scale[0] * settings.scale[0], piece.display_scale[1] * settings.scale[1],
          piece.display_scale[2] * settings.scale[2]};
}

Box display_box(const std::array<double, 3>& factors, const Box& box) {
  Box out;
  for (int a = 0; a < 3; ++a) {
    const double lo = box.lo[a] * factors[a], hi = box.hi[a] * factors[a];
    out.lo[a] = std::min(lo, hi);
    out.hi[a] = std::max(lo, hi);
  }
  return out;
}

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
  key << '|' << s.mask_color.r << s.mask_color.g << s.mask_color.b << s.mask_opacity << s.shade << s.sample_distance
      << to_string(s.mask_surface) << '|' << s.slice_at[0] << s.slice_at[1] << s.slice_at[2] << '|' << s.scale[0] << ','
      << s.scale[1] << ',' << s.scale[2] << '|';
  for (const auto& surface : s.surfaces) key << surface->id << ':' << surface.get() << ',';
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
    if (mask_)
      add_surface(mask_, {0.5}, s, false, true);
    else if (field_ && piece_.threshold)
      add_surface(field_, {q.level((*piece_.threshold)[0]), q.level((*piece_.threshold)[1])}, s, false, false);
  }
  if (!s.modes.iso.empty() && field_) {
    std::vector<double> levels;
    for (double v : s.modes.iso) levels.push_back(quantizer(piece_).level(v));
    add_surface(field_, levels, s, true, false);
  }
  if (s.modes.slices && field_) add_slices(s);
  for (const auto& surface : s.surfaces) add_object_surface(*surface, s);
  if (const auto factors = display_factors(piece_, s); factors != std::array<double, 3>{1, 1, 1}) {
    // Reversed and stretched axes: every prop drawn through one matrix, as
    // ParaView's display Scale does (normals follow its inverse transpose).
    vtkNew<vtkMatrix4x4> matrix;
    for (int a = 0; a < 3; ++a) matrix->SetElement(a, a, factors[a]);
    for (auto& prop : props_)
      if (auto* placed = vtkProp3D::SafeDownCast(prop)) placed->SetUserMatrix(matrix);
  }
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
  const double step =
      s.sample_distance > 0 ? s.sample_distance : 0.5 * *std::min_element(piece_.spacing.begin(), piece_.spacing.end());
  mapper->SetSampleDistance(static_cast<float>(step));
  // Draw the owned box only; the ghost layer is there for interpolation and
  // gradients at its faces.
  // Clipping planes cut each ray exactly at the box's faces (the mapper's
  // cropping did not: a slab between two others drew its faces brighter).
  const Box box = world_box(piece_, piece_.owned);
  const auto factors = display_factors(piece_, s);
  vtkNew<vtkPlaneCollection> planes;
  for (int a = 0; a < 3; ++a) {
    const int axis = 2 - a;
    if (piece_.owned.offset[axis] > piece_.stored.offset[axis]) {
      vtkNew<vtkPlane> plane;
      double origin[3] = {0, 0, 0}, normal[3] = {0, 0, 0};
      origin[a] = box.lo[a] * factors[a];   // the mapper's planes are in world coordinates
      normal[a] = factors[a] > 0 ? 1 : -1;  // keeps the side the normal points to
      plane->SetOrigin(origin);
      plane->SetNormal(normal);
      planes->AddItem(plane);
    }
    if (piece_.owned.offset[axis] + piece_.owned.count[axis] < piece_.stored.offset[axis] + piece_.stored.count[axis]) {
      vtkNew<vtkPlane> plane;
      double origin[3] = {0, 0, 0}, normal[3] = {0, 0, 0};
      origin[a] = box.hi[a] * factors[a];
      normal[a] = factors[a] > 0 ? -1 : 1;
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

MaskSurface parse_mask_surface(const std::string& name) {
  if (name == "smooth") return MaskSurface::smooth;
  if (name == "voxels") return MaskSurface::voxels;
  throw Error("--mask-surface must be smooth or voxels, not '" + name + "'");
}

const char* to_string(MaskSurface surface) { return surface == MaskSurface::smooth ? "smooth" : "voxels"; }

namespace {

// The mask over `extent` (the piece's stored points, grown by layers of
// zeros at the volume's faces), smoothed by [1 2 1] along each axis,
// smoothing_passes times ([1 4 6 4 1] / 16 for two: a Gaussian of one
// voxel's sigma): values 0..smoothed_top, exact in integers so every rank
// computes the same numbers. A point's value needs the mask `passes` points
// around it; at the extent's edge the edge value stands in, which only the
// outer layers see (the owned points and their neighbours are inside:
// ghost_layers).
constexpr int smoothing_passes = ghost_layers - 1;
constexpr int smoothed_top = 1 << (6 * smoothing_passes);  // 4^3 per pass

vtkSmartPointer<vtkImageData> smoothed_mask(const Piece& piece, const int extent[6]) {
  const std::int64_t n[3] = {extent[1] - extent[0] + 1, extent[3] - extent[2] + 1, extent[5] - extent[4] + 1};
  const auto count = static_cast<std::size_t>(n[0] * n[1] * n[2]);
  // The passes go between VTK's array and one scratch array, an even number
  // of times, so they end in VTK's: 4 bytes a point while it runs, 2 after.
  vtkNew<vtkUnsignedShortArray> values;
  values->SetName("mask");
  values->SetNumberOfTuples(static_cast<vtkIdType>(count));
  std::uint16_t* a = values->GetPointer(0);
  std::fill(a, a + count, std::uint16_t{0});
  const io::Extent& s = piece.stored;
  auto at = [&](std::int64_t z, std::int64_t y) {  // the stored row (z, y)'s first point in the padded extent
    return ((s.offset[0] + z - extent[4]) * n[1] + (s.offset[1] + y - extent[2])) * n[0] + (s.offset[2] - extent[0]);
  };
  for (std::int64_t z = 0; z < s.count[0]; ++z)
    for (std::int64_t y = 0; y < s.count[1]; ++y) {
      const std::uint8_t* from = piece.mask.data() + (z * s.count[1] + y) * s.count[2];
      for (std::int64_t x = 0; x < s.count[2]; ++x) a[at(z, y) + x] = from[x] != 0;
    }
  {
    std::vector<std::uint16_t> scratch(count);
    std::uint16_t* b = scratch.data();
    const std::int64_t stride[3] = {1, n[0], n[0] * n[1]};
    static_assert(smoothing_passes * 3 % 2 == 0, "the passes must end in VTK's array");
    for (int pass = 0; pass < smoothing_passes; ++pass)
      for (int axis = 0; axis < 3; ++axis) {  // x, y, z
        const std::int64_t step = stride[axis], length = n[axis];
        const std::int64_t outer = static_cast<std::int64_t>(count) / (step * length);
        for (std::int64_t o = 0; o < outer; ++o)
          for (std::int64_t k = 0; k < length; ++k) {
            const std::uint16_t* here = a + (o * length + k) * step;
            const std::uint16_t* before = k > 0 ? here - step : here;
            const std::uint16_t* after = k + 1 < length ? here + step : here;
            std::uint16_t* out = b + (o * length + k) * step;
            for (std::int64_t i = 0; i < step; ++i)
              out[i] = static_cast<std::uint16_t>(before[i] + 2 * here[i] + after[i]);
          }
        std::swap(a, b);
      }
  }
  // Each point stays on its side of the surface: inside at least 17/32 of
  // the top, outside at most 15/32 (a margin that bends the surface little).
  // The contour at one half then crosses exactly the grid edges the voxels'
  // surface crosses (no voxel lost or gained; a lone voxel or a one-voxel
  // sheet keeps a body), each somewhere along the edge. The padding is
  // outside.
  const auto least = static_cast<std::uint16_t>(smoothed_top * 17 / 32);
  const auto most = static_cast<std::uint16_t>(smoothed_top * 15 / 32);
  const std::int64_t first[3] = {s.offset[2] - extent[0], s.offset[1] - extent[2], s.offset[0] - extent[4]};
  for (std::int64_t z = 0; z < n[2]; ++z)
    for (std::int64_t y = 0; y < n[1]; ++y) {
      std::uint16_t* row = a + (z * n[1] + y) * n[0];
      const std::int64_t sz = z - first[2], sy = y - first[1];
      const bool stored_row = sz >= 0 && sz < s.count[0] && sy >= 0 && sy < s.count[1];
      const std::uint8_t* mask = stored_row ? piece.mask.data() + (sz * s.count[1] + sy) * s.count[2] : nullptr;
      for (std::int64_t x = 0; x < n[0]; ++x) {
        const std::int64_t sx = x - first[0];
        const bool inside = mask && sx >= 0 && sx < s.count[2] && mask[sx] != 0;
        row[x] = inside ? std::max(row[x], least) : std::min(row[x], most);
      }
    }
  auto image = vtkSmartPointer<vtkImageData>::New();
  image->SetExtent(const_cast<int*>(extent));
  image->SetSpacing(piece.spacing.data());
  image->SetOrigin(piece.origin.data());
  image->GetPointData()->SetScalars(values);
  return image;
}

}  // namespace

vtkSmartPointer<vtkPolyData> piece_surface(const Piece& piece, vtkImageData* image, std::vector<double> values,
                                           bool closed, MaskSurface mask_surface) {
  vtkNew<vtkFlyingEdges3D> contour;
  Box box = world_box(piece, piece.owned);
  vtkSmartPointer<vtkImageData> smoothed;
  vtkNew<vtkImageConstantPad> pad;
  if (closed) {
    // A mask's surface closes at the volume's faces: pad the faces this
    // piece touches with zeros (the ghost layers do the same job between
    // ranks), and keep the cap that lies half a voxel outside.
    const int layers = mask_surface == MaskSurface::smooth ? ghost_layers : 1;
    int extent[6];
    vtk_extent(piece.stored, extent);
    for (int a = 0; a < 3; ++a) {
      const int axis = 2 - a;
      if (piece.owned.offset[axis] == 0) {
        extent[2 * a] -= layers;
        box.lo[a] -= piece.spacing[a];
      }
      if (piece.owned.offset[axis] + piece.owned.count[axis] == piece.dims[axis]) {
        extent[2 * a + 1] += layers;
        box.hi[a] += piece.spacing[a];
      }
    }
    if (mask_surface == MaskSurface::smooth) {
      smoothed = smoothed_mask(piece, extent);
      contour->SetInputData(smoothed);
      for (double& v : values) v *= smoothed_top;  // the smoothed scale
    } else {
      pad->SetInputData(image);
      pad->SetOutputWholeExtent(extent);
      pad->SetConstant(0);
      contour->SetInputConnection(pad->GetOutputPort());
    }
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
  return clip->GetOutput();
}

Mesh mask_mesh(const Piece& piece) {
  vtkNew<vtkImageData> image;  // unused for the smooth surface, which reads piece.mask
  auto surface = piece_surface(piece, image, {0.5}, true, MaskSurface::smooth);
  vtkNew<vtkTriangleFilter> triangles;  // the clip leaves polygons of more sides
  triangles->SetInputData(surface);
  triangles->PassVertsOff();
  triangles->PassLinesOff();
  triangles->Update();
  vtkPolyData* out = triangles->GetOutput();
  Mesh mesh;
  const vtkIdType n = out->GetNumberOfPoints();
  vtkDataArray* normals = out->GetPointData()->GetNormals();
  const auto& d = piece.display_scale;
  mesh.points.reserve(static_cast<std::size_t>(n) * 3);
  mesh.normals.reserve(static_cast<std::size_t>(n) * 3);
  for (vtkIdType i = 0; i < n; ++i) {
    double p[3], v[3] = {0, 0, 1};
    out->GetPoint(i, p);
    if (normals) normals->GetTuple(i, v);
    for (int a = 0; a < 3; ++a) {
      mesh.points.push_back(static_cast<float>(p[a] * d[a]));
      mesh.normals.push_back(static_cast<float>(v[a] * (d[a] < 0 ? -1 : 1)));
    }
  }
  const bool mirrored = d[0] * d[1] * d[2] < 0;  // a mirror turns the winding
  vtkCellArray* polys = out->GetPolys();
  vtkNew<vtkIdList> cell;
  for (polys->InitTraversal(); polys->GetNextCell(cell);) {
    if (cell->GetNumberOfIds() != 3) continue;
    mesh.triangles.push_back(static_cast<std::uint32_t>(cell->GetId(0)));
    mesh.triangles.push_back(static_cast<std::uint32_t>(cell->GetId(mirrored ? 2 : 1)));
    mesh.triangles.push_back(static_cast<std::uint32_t>(cell->GetId(mirrored ? 1 : 2)));
  }
  return mesh;
}

void Scene::add_surface(vtkImageData* image, const std::vector<double>& values, const FrameSettings& s,
                        bool colour_by_value, bool closed) {
  auto surface = piece_surface(piece_, image, values, closed, s.mask_surface);
  const auto& d = piece_.display_scale;
  if (d[0] * d[1] * d[2] < 0) {
    // A mirroring matrix turns the triangles' winding, and OpenGL's front
    // faces with it: turned back here, or the lit side reads as the back
    // and the surface draws black.
    vtkNew<vtkReverseSense> reverse;
    reverse->SetInputData(surface);
    reverse->ReverseCellsOn();
    reverse->ReverseNormalsOff();
    reverse->Update();
    surface = reverse->GetOutput();
  }
  vtkNew<vtkPolyDataMapper> mapper;
  mapper->SetInputData(surface);
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

// An object's mesh, cut at this rank's owned box as piece_surface cuts
// the mask's (the compositing orders the ranks by their boxes); at the
// volume's faces the box reaches past the mesh, which closes outside them.
std::shared_ptr<const ObjectSurface> object_surface(const std::string& folder, std::uint64_t id) {
  auto mesh = mesh::read_mesh(folder, id);
  auto surface = std::make_shared<ObjectSurface>();
  surface->id = id;
  surface->points = std::move(mesh.vertices);
  surface->triangles = std::move(mesh.triangles);
  const auto rgba = io::segment_rgba(id);
  surface->colour = {rgba[0] / 255.0, rgba[1] / 255.0, rgba[2] / 255.0};
  return surface;
}

void Scene::add_object_surface(const ObjectSurface& surface, const FrameSettings& s) {
  vtkNew<vtkPoints> points;
  points->SetDataTypeToFloat();
  const auto n = static_cast<vtkIdType>(surface.points.size() / 3);
  points->SetNumberOfPoints(n);
  for (vtkIdType i = 0; i < n; ++i)
    points->SetPoint(i, surface.points[3 * i], surface.points[3 * i + 1], surface.points[3 * i + 2]);
  vtkNew<vtkCellArray> cells;
  const bool mirrored = piece_.display_scale[0] * piece_.display_scale[1] * piece_.display_scale[2] < 0;
  for (std::size_t t = 0; t + 2 < surface.triangles.size(); t += 3) {
    const vtkIdType ids[3] = {surface.triangles[t], surface.triangles[t + (mirrored ? 2 : 1)],
                              surface.triangles[t + (mirrored ? 1 : 2)]};
    cells->InsertNextCell(3, ids);
  }
  vtkNew<vtkPolyData> mesh;
  mesh->SetPoints(points);
  mesh->SetPolys(cells);
  Box box = world_box(piece_, piece_.owned);
  for (int a = 0; a < 3; ++a) {
    const int axis = 2 - a;
    const double margin = 4 * std::abs(piece_.spacing[a]) * (1 << piece_.level) + 1;
    if (piece_.owned.offset[axis] == 0) box.lo[a] -= margin;
    if (piece_.owned.offset[axis] + piece_.owned.count[axis] == piece_.dims[axis]) box.hi[a] += margin;
  }
  vtkNew<vtkBox> inside;
  inside->SetBounds(box.lo[0], box.hi[0], box.lo[1], box.hi[1], box.lo[2], box.hi[2]);
  vtkNew<vtkClipPolyData> clip;
  clip->SetInputData(mesh);
  clip->SetClipFunction(inside);
  clip->InsideOutOn();
  vtkNew<vtkPolyDataNormals> normals;  // smooth shading across the triangles
  normals->SetInputConnection(clip->GetOutputPort());
  normals->SplittingOff();
  normals->ConsistencyOff();
  normals->AutoOrientNormalsOff();
  normals->Update();
  vtkNew<vtkPolyDataMapper> mapper;
  mapper->SetInputData(normals->GetOutput());
  mapper->ScalarVisibilityOff();
  vtkNew<vtkActor> actor;
  actor->GetProperty()->SetColor(surface.colour.r, surface.colour.g, surface.colour.b);
  actor->GetProperty()->SetOpacity(s.mask_opacity);
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
          const std::int64_t i =
              ((slice.offset[0] + z - stored.offset[0]) * stored.count[1] + (slice.offset[1] + y - stored.offset[1])) *
                  stored.count[2] +
              (slice.offset[2] + x - stored.offset[2]);
          const std::uint16_t level = piece_.field[static_cast<std::size_t>(i)];
          const double v = q.value(level);
          double c[3];
          if (level == Quantizer::invalid)
            c[0] = c[1] = c[2] = 0.3;
          else
            table->GetColor(v, c);
          const bool inside = !piece_.mask.empty()
                                  ? piece_.mask[static_cast<std::size_t>(i)] != 0
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
