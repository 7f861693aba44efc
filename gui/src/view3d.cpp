// SPDX-License-Identifier: MIT
#include "view3d.hpp"

#include <vtkActor.h>
#include <vtkCamera.h>
#include <vtkCellArray.h>
#include <vtkFloatArray.h>
#include <vtkGenericOpenGLRenderWindow.h>
#include <vtkImageActor.h>
#include <vtkImageData.h>
#include <vtkImageMapper3D.h>
#include <vtkOutlineSource.h>
#include <vtkPointData.h>
#include <vtkPoints.h>
#include <vtkPolyData.h>
#include <vtkPolyDataMapper.h>
#include <vtkProperty.h>
#include <vtkRenderWindowInteractor.h>
#include <vtkRenderer.h>
#include <vtkUnsignedCharArray.h>
#include <QMouseEvent>
#include <QWheelEvent>

#include <algorithm>
#include <cmath>
#include <cstring>

namespace volseg::gui {

View3D::View3D(QWidget* parent) : QVTKOpenGLNativeWidget(parent) {
  auto window = vtkSmartPointer<vtkGenericOpenGLRenderWindow>::New();
  setRenderWindow(window);
  renderer_ = vtkSmartPointer<vtkRenderer>::New();
  renderer_->SetBackground(0.12, 0.12, 0.16);
  window->AddRenderer(renderer_);
  actor_ = vtkSmartPointer<vtkImageActor>::New();
  data_ = vtkSmartPointer<vtkImageData>::New();
  actor_->GetMapper()->SetInputData(data_);
  actor_->InterpolateOff();
  actor_->VisibilityOff();
  renderer_->AddActor(actor_);
  for (auto* actor : {&surface_, &outline_}) {
    *actor = vtkSmartPointer<vtkActor>::New();
    (*actor)->SetMapper(vtkSmartPointer<vtkPolyDataMapper>::New());
    (*actor)->VisibilityOff();
    renderer_->AddActor(*actor);
  }
  outline_->GetProperty()->SetColor(0.55, 0.57, 0.65);  // the page's outline
  renderer_->GetActiveCamera()->ParallelProjectionOn();
  // The camera is the ranks' to move: VTK's own interaction stays off.
  if (auto* interactor = window->GetInteractor()) interactor->SetInteractorStyle(nullptr);
  setMinimumSize(240, 200);
}

QSize View3D::frame_size() const {
  const double ratio = devicePixelRatioF();
  return {std::max(1, static_cast<int>(width() * ratio)), std::max(1, static_cast<int>(height() * ratio))};
}

void View3D::show_image(const render::Image& image) {
  image_ = image;
  if (object_ != 0) return;  // shown by show_all
  data_->SetDimensions(image.width, image.height, 1);
  data_->AllocateScalars(VTK_UNSIGNED_CHAR, 4);
  auto* out = static_cast<std::uint8_t*>(data_->GetScalarPointer());
  const std::size_t row = static_cast<std::size_t>(image.width) * 4;
  for (int y = 0; y < image.height; ++y)  // VTK's rows go up
    std::memcpy(out + static_cast<std::size_t>(image.height - 1 - y) * row,
                image.rgba.data() + static_cast<std::size_t>(y) * row, row);
  data_->Modified();
  actor_->SetVisibility(image.width > 0);
  fit();
  renderWindow()->Render();
  update();
}

void View3D::show_object(const session::Surface& surface, unsigned colour) {
  const auto n = static_cast<vtkIdType>(surface.points.size() / 3);
  auto points = vtkSmartPointer<vtkPoints>::New();
  points->SetDataTypeToFloat();
  points->SetNumberOfPoints(n);
  auto normals = vtkSmartPointer<vtkFloatArray>::New();
  normals->SetNumberOfComponents(3);
  normals->SetNumberOfTuples(n);
  const bool lit = surface.normals.size() == surface.points.size();
  for (vtkIdType i = 0; i < n; ++i) {
    const float* p = &surface.points[static_cast<std::size_t>(3 * i)];
    points->SetPoint(i, p[0], p[1], p[2]);
    if (lit) normals->SetTypedTuple(i, &surface.normals[static_cast<std::size_t>(3 * i)]);
  }
  auto triangles = vtkSmartPointer<vtkCellArray>::New();
  for (std::size_t t = 0; t + 2 < surface.triangles.size(); t += 3) {
    const vtkIdType ids[3] = {surface.triangles[t], surface.triangles[t + 1], surface.triangles[t + 2]};
    triangles->InsertNextCell(3, ids);
  }
  auto poly = vtkSmartPointer<vtkPolyData>::New();
  poly->SetPoints(points);
  poly->SetPolys(triangles);
  if (lit) poly->GetPointData()->SetNormals(normals);
  vtkPolyDataMapper::SafeDownCast(surface_->GetMapper())->SetInputData(poly);
  surface_->GetProperty()->SetColor(((colour >> 16) & 0xff) / 255.0, ((colour >> 8) & 0xff) / 255.0,
                                    (colour & 0xff) / 255.0);
  auto box = vtkSmartPointer<vtkOutlineSource>::New();
  bounds_ = surface.bounds;
  box->SetBounds(bounds_.data());
  box->Update();
  vtkPolyDataMapper::SafeDownCast(outline_->GetMapper())->SetInputData(box->GetOutput());
  object_ = surface.object;
  object_triangles_ = static_cast<std::int64_t>(surface.triangles.size() / 3);
  actor_->VisibilityOff();
  surface_->VisibilityOn();
  outline_->VisibilityOn();
  render::place_camera(renderer_, camera_, bounds_);
  renderWindow()->Render();
  update();
}

void View3D::show_all() {
  if (object_ == 0) return;
  object_ = object_triangles_ = 0;
  surface_->VisibilityOff();
  outline_->VisibilityOff();
  renderer_->GetActiveCamera()->ParallelProjectionOn();
  show_image(image_);
}

// The image fills the view: a parallel camera over its pixels.
void View3D::fit() {
  if (image_.width == 0 || object_ != 0) return;
  auto* camera = renderer_->GetActiveCamera();
  const double w = image_.width, h = image_.height;
  camera->SetFocalPoint((w - 1) / 2, (h - 1) / 2, 0);
  camera->SetPosition((w - 1) / 2, (h - 1) / 2, 1000);
  camera->SetViewUp(0, 1, 0);
  const double aspect = static_cast<double>(std::max(1, width())) / std::max(1, height());
  camera->SetParallelScale(std::max(h / 2, w / 2 / aspect));
  renderer_->ResetCameraClippingRange();
}

void View3D::mousePressEvent(QMouseEvent* event) {
  if (event->button() != Qt::LeftButton) return;
  dragging_ = true;
  last_ = event->pos();
}

void View3D::mouseMoveEvent(QMouseEvent* event) {
  if (!dragging_) return;
  const QPoint d = event->pos() - last_;
  last_ = event->pos();
  camera_.azimuth -= d.x() * 0.4;
  camera_.elevation = std::clamp(camera_.elevation + d.y() * 0.4, -89.0, 89.0);
  if (object_ != 0) return turn_object();
  emit camera_changed(true);
}

void View3D::mouseReleaseEvent(QMouseEvent* event) {
  if (!dragging_ || event->button() != Qt::LeftButton) return;
  dragging_ = false;
  if (object_ == 0) emit camera_changed(false);
}

void View3D::wheelEvent(QWheelEvent* event) {
  camera_.zoom = std::clamp(camera_.zoom * std::pow(1.1, event->angleDelta().y() / 120.0), 0.1, 50.0);
  if (object_ != 0) return turn_object();
  emit camera_changed(false);
}

void View3D::set_camera(const render::Camera& camera) {
  camera_ = camera;
  if (object_ != 0) turn_object();
}

void View3D::turn_object() {
  render::place_camera(renderer_, camera_, bounds_);
  renderWindow()->Render();
  update();
}

void View3D::resizeEvent(QResizeEvent* event) {
  QVTKOpenGLNativeWidget::resizeEvent(event);
  fit();
  emit resized();
}

}  // namespace volseg::gui
