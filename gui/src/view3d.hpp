// SPDX-License-Identifier: MIT
// The 3D view: a QVTKOpenGLNativeWidget showing the images the render
// library composites from every rank. A left drag turns the camera (azimuth,
// elevation), the wheel zooms, and the window asks the ranks for a coarse
// frame while the camera moves and a fine one when it stops. One object
// shown alone is the one scene it draws itself: the session's surface of the
// object, in the volume's place and turned by the same camera, with no frame
// asked of the ranks until it shows all again.
#pragma once

#include <QVTKOpenGLNativeWidget.h>
#include <vtkSmartPointer.h>

#include <array>
#include <cstdint>

#include "volseg/render/render.hpp"
#include "volseg/session/session.hpp"

class vtkActor;
class vtkImageActor;
class vtkImageData;
class vtkRenderer;

namespace volseg::gui {

class View3D : public QVTKOpenGLNativeWidget {
  Q_OBJECT
 public:
  explicit View3D(QWidget* parent = nullptr);

  // A frame of the ranks: shown, or kept for show_all while an object is alone.
  void show_image(const render::Image& image);
  // One object's surface alone, in colour (0xRRGGBB), the volume's outline
  // around it; a drag or the wheel turns it here. show_all ends it.
  void show_object(const session::Surface& surface, unsigned colour);
  void show_all();
  std::int64_t object() const { return object_; }  // the object shown alone; 0: the ranks' frames
  std::int64_t object_triangles() const { return object_triangles_; }
  const render::Image& image() const { return image_; }
  render::Camera camera() const { return camera_; }
  void set_camera(const render::Camera& camera);
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
  void turn_object();  // the camera moved while an object is alone

  vtkSmartPointer<vtkRenderer> renderer_;
  vtkSmartPointer<vtkImageActor> actor_;
  vtkSmartPointer<vtkImageData> data_;
  vtkSmartPointer<vtkActor> surface_, outline_;
  std::array<double, 6> bounds_{};
  std::int64_t object_ = 0, object_triangles_ = 0;
  render::Image image_;
  render::Camera camera_;
  bool dragging_ = false;
  QPoint last_;
};

}  // namespace volseg::gui
