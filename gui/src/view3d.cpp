// SPDX-License-Identifier: MIT
#include "view3d.hpp"

#include <vtkCamera.h>
#include <vtkGenericOpenGLRenderWindow.h>
#include <vtkImageActor.h>
#include <vtkImageData.h>
#include <vtkImageMapper3D.h>
#include <vtkPointData.h>
#include <vtkRenderWindowInteractor.h>
#include <vtkRenderer.h>
#include <vtkUnsignedCharArray.h>
#include <QMouseEvent>
#include <QWheelEvent>

#include <algorithm>
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
  data_->SetDimensions(image.width, image.height, 1);
  data_->AllocateScalars(VTK_UNSIGNED_CHAR, 4);
  auto* out = static_cast<std::uint8_t*>(data_->GetScalarPointer());
  const std::size_t row = static_cast<std::size_t>(image.width) * 4;
  for (int y = 0; y < image.height; ++y)  // VTK's rows go up
    std::memcpy(out + static_cast<std::size_t>(image.height - 1 - y) * row,
                image.rgba.data() + static_cast<std::size_t>(y) * row, row);
  data_->Modified();
  actor_->VisibilityOn();
  fit();
  renderWindow()->Render();
  update();
}

// The image fills the view: a parallel camera over its pixels.
void View3D::fit() {
  if (image_.width == 0) return;
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
  emit camera_changed(true);
}

void View3D::mouseReleaseEvent(QMouseEvent* event) {
  if (!dragging_ || event->button() != Qt::LeftButton) return;
  dragging_ = false;
  emit camera_changed(false);
}

void View3D::wheelEvent(QWheelEvent* event) {
  camera_.zoom = std::clamp(camera_.zoom * std::pow(1.1, event->angleDelta().y() / 120.0), 0.1, 50.0);
  emit camera_changed(false);
}

void View3D::resizeEvent(QResizeEvent* event) {
  QVTKOpenGLNativeWidget::resizeEvent(event);
  fit();
  emit resized();
}

}  // namespace volseg::gui
