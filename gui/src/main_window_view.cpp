// SPDX-License-Identifier: MIT
// The window's slices (the planes, the labels over them, a click with an
// edit tool) and the view as a file.
#include <QComboBox>
#include <QLabel>
#include <QLineEdit>
#include <QSpinBox>
#include <QStatusBar>

#include <algorithm>
#include <array>
#include <fstream>

#include "main_window.hpp"
#include "objects_panel.hpp"
#include "slice_view.hpp"
#include "view3d.hpp"
#include "volseg/io/error.hpp"
#include "volseg/io/files.hpp"

namespace volseg::gui {

namespace {

// An object's colour in the slices, as the browser page's (the same hash).
QRgb label_colour(std::uint32_t id) {
  static constexpr std::array<QRgb, 12> kColours{0xe6194b, 0x3cb44b, 0xffe119, 0x4363d8, 0xf58231, 0x911eb4,
                                                 0x46f0f0, 0xf032e6, 0xbcf60c, 0xfabebe, 0x008080, 0x9a6324};
  return kColours[static_cast<std::uint32_t>(id * 2654435761u) % kColours.size()];
}

// A labelled pixel: its object's colour over the grey g, full on the
// object's edge in the plane.
QRgb label_tint(const std::vector<std::uint32_t>& l, std::size_t i, int r, int c, int rows, int columns, int g) {
  const QRgb k = label_colour(l[i]);
  const auto n = static_cast<std::size_t>(columns);
  const bool edge = (c > 0 && l[i - 1] != l[i]) || (c + 1 < columns && l[i + 1] != l[i]) ||
                    (r > 0 && l[i - n] != l[i]) || (r + 1 < rows && l[i + n] != l[i]);
  if (edge) return 0xff000000 | k;
  return qRgb((g + qRed(k)) / 2, (g + qGreen(k)) / 2, (g + qBlue(k)) / 2);
}

}  // namespace

void MainWindow::pick_in_slice(int p, double column, double row) {
  if (!planes_ || opened_.is_null()) return;
  const Planes& planes = *planes_;
  const auto u = static_cast<std::size_t>(p);
  // plane z: columns x, rows y; plane y: columns x, rows z; plane x: columns y, rows z (z, y, x indices)
  const int column_axis = p == 2 ? 1 : 2, row_axis = p == 0 ? 1 : 0;
  std::array<std::int64_t, 3> dims{};
  for (int a = 0; a < 3; ++a) dims[static_cast<std::size_t>(a)] = opened_.at("dims")[static_cast<std::size_t>(a)];
  const auto at_full = [&](int axis, double f) {
    return std::clamp<std::int64_t>(
        static_cast<std::int64_t>(f * static_cast<double>(dims[static_cast<std::size_t>(axis)])), 0,
        dims[static_cast<std::size_t>(axis)] - 1);
  };
  std::array<std::int64_t, 3> zyx{};
  zyx[u] = std::min<std::int64_t>(planes.at[u] << planes.level, dims[u] - 1);
  zyx[static_cast<std::size_t>(column_axis)] = at_full(column_axis, column);
  zyx[static_cast<std::size_t>(row_axis)] = at_full(row_axis, row);
  std::uint64_t id = 0;
  const auto& labels = planes.labels[u];
  if (!labels.empty()) {
    const int columns = planes.columns[u], rows = planes.rows[u];
    const int c = std::clamp(static_cast<int>(column * columns), 0, columns - 1);
    const int r = std::clamp(static_cast<int>(row * rows), 0, rows - 1);
    id = labels[static_cast<std::size_t>(r) * static_cast<std::size_t>(columns) + static_cast<std::size_t>(c)];
  }
  objects_->pick(zyx, id);
}

void MainWindow::show_alone(std::int64_t id) {
  if (id == 0) {
    view_->show_all();
    request_frame(false, "view");
    return;
  }
  session::SurfaceRequest request;
  request.object = id;
  request.max_side = 256;  // the page's coarse surface is 128 a side; a window has the room
  request.max_triangles = 400000;
  worker_->post(std::move(request), "alone", "alone");
  frame_status_->setText(tr("object %1: its surface...").arg(id));
}

void MainWindow::on_surface(const Reply& reply) {
  if (!reply.surface || reply.surface->object == 0 || reply.surface->object != objects_->shown()) return;
  const session::Surface& s = *reply.surface;
  view_->show_object(s, label_colour(static_cast<std::uint32_t>(s.object)));
  frame_status_->setText(tr("object %1 alone: %2 triangles, level %3, %4 s")
                             .arg(s.object)
                             .arg(s.triangles.size() / 3)
                             .arg(s.level)
                             .arg(reply.seconds, 0, 'f', 3));
}

Json MainWindow::view_state() const {
  const render::Camera camera = view_->camera();
  Json view{{"file", opened_.value("path", "")},
            {"range", {lo_, hi_}},
            {"camera", {camera.azimuth, camera.elevation, camera.zoom}},
            {"at", cursor_}};
  if (!opened_.value("variable", std::string()).empty()) view["var"] = opened_.at("variable");
  if (opened_.contains("step")) view["step"] = opened_.at("step");
  if (objects_->shown() != 0) view["object"] = objects_->shown();  // shown alone
  if (const auto picked = objects_->picked(); !picked.empty()) view["picked"] = picked;
  return view;
}

bool MainWindow::save_view(const QString& path) {
  if (opened_.is_null()) {
    show_error(tr("save view"), tr("open a volume first"));
    return false;
  }
  try {
    io::write_file_atomically(path.toStdString(), view_state().dump(1) + "\n");
  } catch (const std::exception& e) {
    show_error(tr("save view"), QString::fromUtf8(e.what()));
    return false;
  }
  statusBar()->showMessage(tr("saved the view to %1").arg(path));
  return true;
}

bool MainWindow::load_view(const QString& path) {
  Json view;
  try {
    std::ifstream in(path.toStdString());
    if (!in) throw Error("cannot read " + path.toStdString());
    view = Json::parse(in);
    if (!view.is_object() || !view.contains("file") || !view.at("file").is_string())
      throw Error(path.toStdString() + ": not a view file (it names no \"file\")");
  } catch (const std::exception& e) {
    show_error(tr("load view"), QString::fromUtf8(e.what()));
    return false;
  }
  const std::string file = view.at("file");
  const bool same =
      !opened_.is_null() && opened_.value("path", "") == file &&
      view.value("var", opened_.value("variable", std::string())) == opened_.value("variable", std::string()) &&
      (!view.contains("step") || (opened_.contains("step") && view.at("step") == opened_.at("step")));
  if (same) {
    apply_view(view);
    return true;
  }
  pending_view_ = view;
  script_.var = view.value("var", std::string());
  if (view.contains("step")) script_.time = view.at("step").get<long long>();
  variable_->clear();
  variable_->setEnabled(false);
  time_->setEnabled(false);
  expression_->clear();
  path_->setText(QString());  // a new open, whatever the path
  open_file(QString::fromStdString(file));
  return true;
}

void MainWindow::apply_view(const Json& view) {
  try {
    if (view.contains("range")) set_range(view.at("range")[0].get<double>(), view.at("range")[1].get<double>());
    if (view.contains("at"))
      for (std::size_t a = 0; a < 3; ++a) cursor_[a] = std::clamp(view.at("at")[a].get<double>(), 0.0, 1.0);
    if (view.contains("camera")) {
      render::Camera camera = view_->camera();
      camera.azimuth = view.at("camera")[0].get<double>();
      camera.elevation = view.at("camera")[1].get<double>();
      camera.zoom = view.at("camera")[2].get<double>();
      view_->set_camera(camera);
    }
    objects_->pick_rows(view.value("picked", std::vector<std::int64_t>{}));
    if (const auto object = view.value("object", std::int64_t{0}); object != objects_->shown())
      objects_->show_alone(object);
  } catch (const std::exception& e) {
    show_error(tr("load view"), QString::fromUtf8(e.what()));
  }
  request_slices();
  request_frame(false, "view");
}

void MainWindow::show_planes(const Planes& planes) {
  const double lo = opened_.at("range")[0].get<double>(), hi = opened_.at("range")[1].get<double>();
  const double scale = hi > lo ? 255.0 / (hi - lo) : 0;
  const char* names[3] = {"Z", "Y", "X"};
  for (int p = 0; p < 3; ++p) {
    const auto& values = planes.values[static_cast<std::size_t>(p)];
    const auto& mask = planes.mask[static_cast<std::size_t>(p)];
    const auto& labels = planes.labels[static_cast<std::size_t>(p)];
    const int rows = planes.rows[static_cast<std::size_t>(p)], columns = planes.columns[static_cast<std::size_t>(p)];
    QImage image(columns, rows, QImage::Format_RGB32);
    for (int r = 0; r < rows; ++r) {
      auto* line = reinterpret_cast<QRgb*>(image.scanLine(r));
      for (int c = 0; c < columns; ++c) {
        const std::size_t i =
            static_cast<std::size_t>(r) * static_cast<std::size_t>(columns) + static_cast<std::size_t>(c);
        const float v = values[i];
        if (std::isnan(v)) {
          line[c] = qRgb(60, 0, 60);
          continue;
        }
        const int g = std::clamp(static_cast<int>((v - lo) * scale), 0, 255);
        if (!labels.empty()) {
          line[c] = labels[i] ? label_tint(labels, i, r, c, rows, columns, g) : qRgb(g, g, g);
          continue;
        }
        if (!mask.empty() && mask[i])
          line[c] = qRgb((g + 3 * 242) / 4, (g + 3 * 89) / 4, (g + 3 * 51) / 4);
        else if (mask.empty() && v >= lo_ && v <= hi_)
          line[c] = qRgb((g + 242) / 2, (g + 89) / 2, (g + 51) / 2);
        else
          line[c] = qRgb(g, g, g);
      }
    }
    // pixel aspect: row spacing over column spacing (x, y, z spacing)
    const double sx = planes.spacing[0], sy = planes.spacing[1], sz = planes.spacing[2];
    const double aspect = p == 0 ? sy / sx : p == 1 ? sz / sx : sz / sy;
    slices_[p]->set_picture(image.mirrored(false, false), aspect,
                            tr("%1 = %2 of %3 (level %4)%5")
                                .arg(names[p])
                                .arg(planes.at[static_cast<std::size_t>(p)])
                                .arg(planes.dims[static_cast<std::size_t>(p)])
                                .arg(planes.level)
                                .arg(mask.empty() ? tr(", threshold tinted") : tr(", mask")));
  }
  slices_[0]->set_cursor(cursor_[0], cursor_[1]);
  slices_[1]->set_cursor(cursor_[0], cursor_[2]);
  slices_[2]->set_cursor(cursor_[1], cursor_[2]);
}

}  // namespace volseg::gui
