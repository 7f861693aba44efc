// SPDX-License-Identifier: MIT
// The 3D view: a QVTKOpenGLNativeWidget showing the images the render
// library composites from every rank. The widget draws no scene of its own;
// a left drag turns the camera (azimuth, elevation), the wheel zooms, and the
// window asks the ranks for a coarse frame while the camera moves and a fine
// one when it stops.
#pragma once

#include <QVTKOpenGLNativeWidget.h>
#include <vtkSmartPointer.h>

#include "volseg/render/render.hpp"

class vtkImageActor;
class vtkImageData;
class vtkRenderer;

namespace volseg::gui {

class View3D : public QVTKOpenGLNativeWidget {
  Q_OBJECT
 public:
  explicit View3D(QWidget* parent = nullptr);

  void show_image(const render::Image& image);
  const render::Image& image() const { return image_; }
  render::Camera camera() const { return camera_; }
  void set_camera(const render::Camera& camera) { camera_ = camera; }
  bool moving() const { return dragging_; }
  // The size of the frames to ask for, in device pixels.
  QSize frame_size() const;

 signals:
  void camera_changed(bool moving);  // moving: a coarse frame will do
  void resized();

 protected:
  void mousePressEvent(QMouseEvent*) override;
  void mouseMoveEvent(QMouseEvent*) override;
  void mouseReleaseEvent(QMouseEvent*) override;
  void wheelEvent(QWheelEvent*) override;
  void resizeEvent(QResizeEvent*) override;

 private:
  void fit();

  vtkSmartPointer<vtkRenderer> renderer_;
  vtkSmartPointer<vtkImageActor> actor_;
  vtkSmartPointer<vtkImageData> data_;
  render::Image image_;
  render::Camera camera_;
  bool dragging_ = false;
  QPoint last_;
};

}  // namespace volseg::gui
