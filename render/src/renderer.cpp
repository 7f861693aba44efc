// SPDX-License-Identifier: MIT
// One frame, in three named steps: render this rank's piece
// (render_piece), order the ranks from the camera (visibility_order, in
// partition.cpp), and blend their images (Compositor::blend). Rank 0 then
// puts the background under the result and the annotations over it.
#include <vtkCamera.h>
#include <vtkRenderWindow.h>
#include <vtkRenderer.h>
#include <vtkUnsignedCharArray.h>
#include <vtk_glew.h>

#include <algorithm>
#include <chrono>
#include <cmath>

#include "annotations.hpp"
#include "compositor.hpp"
#include "display.hpp"
#include "scene.hpp"
#include "volseg/io/error.hpp"
#include "volseg/render/render.hpp"

namespace volseg::render {
namespace {

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// ParaView's "set view direction to": the direction looked along and the up vector.
}  // namespace

void view_direction(const std::string& view, double direction[3], double up[3]) {
  static const char* names[] = {"+x", "-x", "+y", "-y", "+z", "-z"};
  for (int i = 0; i < 6; ++i)
    if (view == names[i]) {
      const int axis = i / 2;
      for (int a = 0; a < 3; ++a) direction[a] = up[a] = 0;
      direction[axis] = i % 2 ? -1 : 1;
      up[axis == 2 ? 1 : 2] = 1;
      return;
    }
  throw Error("unknown view '" + view + "' (known: +x, -x, +y, -y, +z, -z)");
}

struct Renderer::Impl {
  Comm comm;
  vtkNew<vtkRenderWindow> window;
  vtkNew<vtkRenderer> renderer;
  Compositor compositor;
  Scene scene;
  std::unique_ptr<Annotations> annotations;  // rank 0
  FrameTimes times;
  CameraState camera_state;
  int max_size = 0;     // largest image side
  int max_texture = 0;  // largest 3D texture side (a rank's slab, for the volume)

  explicit Impl(const Comm& parent) : comm(parent.duplicate()), compositor(comm) {}

  void place_camera(const FrameSettings& s, const Box& bounds);
  vtkSmartPointer<vtkUnsignedCharArray> render_piece(const FrameSettings& s);
  std::vector<int> rank_order(const Box& mine, const Box& bounds);
};

Renderer::Renderer(const Comm& comm) {
  check_display(comm);
  collectively(comm, [&] {
    impl_ = std::make_unique<Impl>(comm);
    auto& w = *impl_->window;
    w.SetDisplayId(x_display());
    w.SetOffScreenRendering(1);
    w.SetAlphaBitPlanes(1);
    w.SetMultiSamples(0);
    w.AddRenderer(impl_->renderer);
    impl_->renderer->SetBackground(0, 0, 0);
    impl_->renderer->SetBackgroundAlpha(0.0);
    // Translucent surfaces (--mask-opacity below 1) sorted exactly by depth
    // peeling, volumes peeled with them. VTK's default for them, weighted
    // order-independent transparency, approximates the order and leaves
    // colour above alpha in the image, which the premultiplied compositing
    // then drew as wrong colours where ranks meet.
    impl_->renderer->SetUseDepthPeeling(1);
    impl_->renderer->SetUseDepthPeelingForVolumes(true);
    impl_->renderer->SetMaximumNumberOfPeels(16);
    impl_->renderer->SetOcclusionRatio(0.0);
    w.SetSize(16, 16);
    w.Render();  // creates the context, so its limits can be asked
    w.MakeCurrent();
    GLint renderbuffer = 0, viewport[2] = {0, 0};
    glGetIntegerv(GL_MAX_RENDERBUFFER_SIZE, &renderbuffer);
    glGetIntegerv(GL_MAX_VIEWPORT_DIMS, viewport);
    impl_->max_size =
        std::min({static_cast<int>(renderbuffer), static_cast<int>(viewport[0]), static_cast<int>(viewport[1])});
    if (impl_->max_size <= 0) impl_->max_size = 4096;
    GLint texture3d = 0;
    glGetIntegerv(GL_MAX_3D_TEXTURE_SIZE, &texture3d);
    impl_->max_texture = texture3d > 0 ? static_cast<int>(texture3d) : 2048;
    if (comm.rank() == 0) impl_->annotations = std::make_unique<Annotations>(impl_->window);
  });
  // Every rank must refuse the same sizes: the smallest limits of all.
  int limits[2] = {impl_->max_size, impl_->max_texture};
  check_mpi(MPI_Allreduce(MPI_IN_PLACE, limits, 2, MPI_INT, MPI_MIN, comm.get()), "MPI_Allreduce");
  impl_->max_size = limits[0];
  impl_->max_texture = limits[1];
}

Renderer::~Renderer() = default;

void Renderer::set_piece(Piece piece) {
  // The props point into the old piece's arrays: let go of them first.
  impl_->renderer->RemoveAllViewProps();
  impl_->scene.set_piece(std::move(piece));
}
const FrameTimes& Renderer::last_times() const { return impl_->times; }
const CameraState& Renderer::last_camera() const { return impl_->camera_state; }
int Renderer::max_size() const { return impl_->max_size; }

void place_camera(vtkRenderer* renderer, const Camera& c, const std::array<double, 6>& bounds) {
  vtkCamera* camera = renderer->GetActiveCamera();
  double center[3], b[6];
  for (int a = 0; a < 3; ++a) {
    center[a] = 0.5 * (bounds[2 * a] + bounds[2 * a + 1]);
    b[2 * a] = bounds[2 * a];
    b[2 * a + 1] = bounds[2 * a + 1];
  }
  camera->SetFocalPoint(center);
  if (!c.view.empty()) {
    double direction[3], up[3];
    view_direction(c.view, direction, up);
    camera->SetPosition(center[0] - direction[0], center[1] - direction[1], center[2] - direction[2]);
    camera->SetViewUp(up);
  } else {
    camera->SetPosition(center[0], center[1], center[2] + 1);
    camera->SetViewUp(0, 1, 0);
    camera->Azimuth(c.azimuth);
    camera->Elevation(c.elevation);
    camera->OrthogonalizeViewUp();
  }
  camera->Azimuth(c.orbit);
  camera->SetParallelProjection(c.parallel);
  renderer->ResetCamera(b);
  camera->Zoom(c.zoom);
  renderer->ResetCameraClippingRange(b);
}

void Renderer::Impl::place_camera(const FrameSettings& s, const Box& bounds) {
  render::place_camera(renderer, s.camera,
                       {bounds.lo[0], bounds.hi[0], bounds.lo[1], bounds.hi[1], bounds.lo[2], bounds.hi[2]});
  vtkCamera* camera = renderer->GetActiveCamera();
  camera->GetPosition(camera_state.position.data());
  camera->GetFocalPoint(camera_state.focal_point.data());
  camera->GetViewUp(camera_state.view_up.data());
  camera_state.view_angle = camera->GetViewAngle();
  camera_state.parallel_scale = camera->GetParallelScale();
  camera_state.parallel = s.camera.parallel;
}

// Draws this rank's props into a transparent image: premultiplied RGBA
// bytes, rows from the bottom.
vtkSmartPointer<vtkUnsignedCharArray> Renderer::Impl::render_piece(const FrameSettings& s) {
  renderer->RemoveAllViewProps();
  for (const auto& prop : scene.props(s)) renderer->AddViewProp(prop);
  window->Render();
  auto pixels = vtkSmartPointer<vtkUnsignedCharArray>::New();
  window->GetRGBACharPixelData(0, 0, s.width - 1, s.height - 1, 0, pixels, 0);
  // Premultiplied colour never exceeds its alpha; translucent layers' blend
  // can leave it a level or two above, and IceT's 8-bit "over" then wraps
  // past 255 (red turned green where ranks' translucent surfaces met).
  std::uint8_t* p = pixels->GetPointer(0);
  const vtkIdType count = pixels->GetNumberOfTuples();
  for (vtkIdType i = 0; i < count; ++i, p += 4)
    for (int k = 0; k < 3; ++k) p[k] = std::min(p[k], p[3]);
  return pixels;
}

// Front to back, from every rank's owned box.
std::vector<int> Renderer::Impl::rank_order(const Box& mine, const Box& bounds) {
  double local[6] = {mine.lo[0], mine.lo[1], mine.lo[2], mine.hi[0], mine.hi[1], mine.hi[2]};
  std::vector<double> all(static_cast<std::size_t>(6 * comm.size()));
  check_mpi(MPI_Allgather(local, 6, MPI_DOUBLE, all.data(), 6, MPI_DOUBLE, comm.get()), "MPI_Allgather");
  std::vector<Box> boxes(static_cast<std::size_t>(comm.size()));
  for (std::size_t r = 0; r < boxes.size(); ++r)
    for (int a = 0; a < 3; ++a) {
      boxes[r].lo[a] = all[6 * r + a];
      boxes[r].hi[a] = all[6 * r + 3 + a];
    }
  Viewpoint view;
  view.parallel = camera_state.parallel;
  view.position = camera_state.position;
  for (int a = 0; a < 3; ++a) view.direction[a] = camera_state.focal_point[a] - camera_state.position[a];
  (void)bounds;
  return visibility_order(boxes, view);
}

Image Renderer::render(const FrameSettings& s) {
  auto& m = *impl_;
  if (s.width <= 0 || s.height <= 0 || s.width > m.max_size || s.height > m.max_size)
    throw Error("image size " + std::to_string(s.width) + "x" + std::to_string(s.height) + " is outside 1.." +
                std::to_string(m.max_size) + " (this OpenGL's largest image side)");
  vtkSmartPointer<vtkUnsignedCharArray> mine;
  Box owned, bounds;
  collectively(m.comm, [&] {
    if (!m.scene.has_piece()) throw Error("render: rank " + std::to_string(m.comm.rank()) + " has no piece");
    const Piece& piece = m.scene.piece();
    if (s.modes.volume && !piece.field.empty())
      for (int a = 0; a < 3; ++a)
        if (piece.stored.count[a] > m.max_texture)
          throw Error("rank " + std::to_string(m.comm.rank()) + "'s part of the volume is " +
                      std::to_string(piece.stored.count[a]) + " voxels along an axis, more than this OpenGL's " +
                      "largest 3D texture (" + std::to_string(m.max_texture) +
                      "): use more ranks or a coarser --level");
    const auto factors = display_factors(piece, s);
    bounds = display_box(factors, world_bounds(piece));
    owned = piece.owned.empty() ? Box{{1, 1, 1}, {0, 0, 0}} : display_box(factors, world_box(piece, piece.owned));
    m.window->SetSize(s.width, s.height);
    m.place_camera(s, bounds);
    auto start = std::chrono::steady_clock::now();
    m.scene.props(s);
    m.times.scene = seconds_since(start);
    start = std::chrono::steady_clock::now();
    mine = m.render_piece(s);
    m.times.render = seconds_since(start);
  });
  {  // what every rank drew, for reports
    double drawn[6];
    m.renderer->ComputeVisiblePropBounds(drawn);
    double local[6];
    for (int a = 0; a < 3; ++a) {
      const bool none = !(drawn[2 * a] <= drawn[2 * a + 1]);
      local[a] = none ? INFINITY : drawn[2 * a];
      local[3 + a] = none ? INFINITY : -drawn[2 * a + 1];
    }
    double global[6];
    check_mpi(MPI_Allreduce(local, global, 6, MPI_DOUBLE, MPI_MIN, m.comm.get()), "MPI_Allreduce");
    for (int a = 0; a < 3; ++a) {
      const bool none = std::isinf(global[a]);
      m.camera_state.drawn[2 * a] = none ? NAN : global[a];
      m.camera_state.drawn[2 * a + 1] = none ? NAN : -global[3 + a];
      m.camera_state.bounds[2 * a] = bounds.lo[a];
      m.camera_state.bounds[2 * a + 1] = bounds.hi[a];
    }
  }
  auto start = std::chrono::steady_clock::now();
  const auto order = m.rank_order(owned, bounds);
  const auto blended = m.compositor.blend(mine->GetPointer(0), s.width, s.height, order);
  mine = nullptr;
  m.times.composite = seconds_since(start);
  Image image;
  collectively(m.comm, [&] {
    if (m.comm.rank() != 0) return;
    if (blended.empty()) throw Error("IceT returned no composited image");
    start = std::chrono::steady_clock::now();
    image = m.annotations->finish(blended, s, m.scene.piece(), *m.renderer->GetActiveCamera());
    m.times.annotate = seconds_since(start);
  });
  return image;
}

}  // namespace volseg::render
