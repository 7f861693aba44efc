// SPDX-License-Identifier: MIT
#include "main_window.hpp"

#include <QAction>
#include <QApplication>
#include <QCheckBox>
#include <QClipboard>
#include <QCloseEvent>
#include <QComboBox>
#include <QDoubleSpinBox>
#include <QFileDialog>
#include <QFileInfo>
#include <QFormLayout>
#include <QGridLayout>
#include <QGroupBox>
#include <QHBoxLayout>
#include <QImage>
#include <QLabel>
#include <QLineEdit>
#include <QMenuBar>
#include <QPlainTextEdit>
#include <QProgressBar>
#include <QPushButton>
#include <QScreen>
#include <QSpinBox>
#include <QSplitter>
#include <QStatusBar>
#include <QTabWidget>
#include <QTimer>
#include <QVBoxLayout>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <limits>
#include <numeric>
#include <random>
#include <sstream>

#include "histogram_view.hpp"
#include "objects_panel.hpp"
#include "report_view.hpp"
#include "session_types.hpp"
#include "slice_view.hpp"
#include "view3d.hpp"
#include "volseg/io/error.hpp"
#include "volseg/io/files.hpp"
#include "volseg/io/registry.hpp"
#include "volseg/render/job.hpp"
#include "volseg/render/render.hpp"

namespace volseg::gui {
namespace {

double now_epoch() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

// A shell word, quoted when it needs to be.
std::string shell_word(const std::string& word) {
  if (!word.empty() && word.find_first_of(" \t\n'\"\\$*?[]{}()<>|&;`~#") == std::string::npos) return word;
  std::string out = "'";
  for (char c : word) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

std::string number(double value) {  // round-trips
  std::ostringstream out;
  out.precision(17);
  out << value;
  return out.str();
}

}  // namespace

MainWindow::MainWindow(Comm comm, Script script) : script_(std::move(script)), ranks_(comm.size()) {
  qRegisterMetaType<std::shared_ptr<volseg::gui::Reply>>("std::shared_ptr<volseg::gui::Reply>");
  qRegisterMetaType<std::vector<std::int64_t>>("std::vector<std::int64_t>");
  setWindowTitle(tr("volseg-gui (%1 %2)").arg(ranks_).arg(ranks_ == 1 ? tr("rank") : tr("ranks")));
  build_ui();
  build_menus();
  connect(this, &MainWindow::replied, this, &MainWindow::on_reply, Qt::QueuedConnection);
  connect(this, &MainWindow::progressed, this, &MainWindow::on_progress, Qt::QueuedConnection);
  worker_ = std::make_unique<Worker>(
      std::move(comm), [this](std::shared_ptr<Reply> reply) { emit replied(std::move(reply)); },
      [this](const std::vector<std::int64_t>& units, std::int64_t total, bool) { emit progressed(units, total); });
  if (script_.camera) view_->set_camera(*script_.camera);
  mesh_folder_ = script_.mesh;
  mesh_ids_ = script_.mesh_ids;
  if (!script_.output.empty()) output_->setText(QString::fromStdString(script_.output));
  if (!script_.format.empty()) format_->setCurrentText(QString::fromStdString(script_.format));
  backend_->setCurrentText(QString::fromStdString(script_.backend));
  hints_->setText(QString::fromStdString([&] {
    std::string joined;
    for (const auto& h : script_.hints) joined += (joined.empty() ? "" : " ") + h;
    return joined;
  }()));
  expression_->setText(QString::fromStdString(script_.where.empty() ? script_.expr : script_.where));
  condition_->setChecked(!script_.where.empty());
  if (!script_.file.empty()) QTimer::singleShot(0, this, [this] { open_file(QString::fromStdString(script_.file)); });
}

MainWindow::~MainWindow() {
  if (worker_) worker_->quit();
}

OpenRequest MainWindow::open_request() const {
  OpenRequest request;
  request.path = path_->text().toStdString();
  request.backend = script_.backend;
  request.pyramid_dir = script_.pyramid_dir;
  io::Selection& s = request.selection;
  const std::string expression = expression_->text().trimmed().toStdString();
  if (!expression.empty()) {
    s.expression = expression;
    s.condition = condition_->isChecked();
  } else if (variable_->isEnabled() && variable_->currentIndex() >= 0) {
    const std::string line = variable_->currentText().toStdString();
    s.variable = line.substr(0, line.find('('));
  } else {
    s.variable = script_.var;
  }
  if (time_->isEnabled())
    s.step = time_->value();
  else
    s.step = script_.time;
  return request;
}

void MainWindow::open_file(const QString& path) {
  if (path != path_->text()) {
    variable_->clear();
    variable_->setEnabled(false);
    time_->setEnabled(false);
  }
  path_->setText(path);
  statusBar()->showMessage(
      tr("opening %1 (the first open builds its brick pyramid: one pass over the data)").arg(path));
  mask_.clear();
  segmented_range_.reset();
  worker_->post(open_request());
}

std::pair<double, double> MainWindow::range() const { return {lo_, hi_}; }

void MainWindow::set_range(double lo, double hi) { set_range(lo, hi, true); }

void MainWindow::set_range(double lo, double hi, bool redraw) {
  if (lo > hi) std::swap(lo, hi);
  lo_ = lo;
  hi_ = hi;
  histogram_->set_range(lo, hi);
  for (auto [box, value] : {std::pair{lo_box_, lo}, std::pair{hi_box_, hi}}) {
    box->blockSignals(true);
    box->setValue(value);
    box->blockSignals(false);
  }
  update_count();
  update_command();
  if (!opened_.is_null() && redraw) {
    if (planes_) show_planes(*planes_);
    if (mask_.empty() && show_mask_->isChecked()) request_frame(false);
  }
}

QString MainWindow::count_text() const { return count_->text(); }
QString MainWindow::command_text() const { return command_->toPlainText(); }
bool MainWindow::busy() const { return worker_->pending() > 0; }

segment::Histogram::Count MainWindow::count(double lo, double hi) const {
  return count_in_range(histogram_data_, lo, hi);
}

// The voxel count of [lo, hi] from the histogram: no pass over the data.
void MainWindow::update_count() {
  if (histogram_data_.counts().empty()) return;
  const auto count = count_in_range(histogram_data_, lo_, hi_);
  const double valid = opened_.value("valid", 0.0);
  const double fraction = valid > 0 ? 100.0 * count.voxels / valid : 0.0;
  QString text;
  if (segmented_range_ && segmented_range_->first == lo_ && segmented_range_->second == hi_)
    text = tr("%L1 voxels in [%2, %3] (%4 % of the valid voxels), exact: segmented")
               .arg(static_cast<qulonglong>(segmented_count_))
               .arg(lo_, 0, 'g', 7)
               .arg(hi_, 0, 'g', 7)
               .arg(valid > 0 ? 100.0 * static_cast<double>(segmented_count_) / valid : 0.0, 0, 'f', 3);
  else if (count.exact)
    text = tr("%L1 voxels in [%2, %3] (%4 % of the valid voxels), exact")
               .arg(static_cast<qulonglong>(std::llround(count.voxels)))
               .arg(lo_, 0, 'g', 7)
               .arg(hi_, 0, 'g', 7)
               .arg(fraction, 0, 'f', 3);
  else
    text = tr("about %L1 voxels in [%2, %3] (%4 %), an estimate: a threshold inside a bin")
               .arg(static_cast<qulonglong>(std::llround(count.voxels)))
               .arg(lo_, 0, 'g', 7)
               .arg(hi_, 0, 'g', 7)
               .arg(fraction, 0, 'f', 3);
  count_->setText(text);
}

std::vector<std::string> MainWindow::hint_list() const {
  std::vector<std::string> hints;
  std::istringstream words(hints_->text().toStdString());
  for (std::string word; words >> word;) hints.push_back(word);
  return hints;
}

SegmentRequest MainWindow::segment_request() const {
  SegmentRequest request;
  request.lo = lo_;
  request.hi = hi_;
  request.output = output_->text().toStdString();
  request.backend = backend_->currentText().toStdString();
  request.hints = hint_list();
  request.format = format_->currentText().toStdString();
  if (seed_on_->isChecked()) request.operators.seed = std::pair{seed_lo_->value(), seed_hi_->value()};
  request.operators.open = open_radius_->value();
  request.operators.close = close_radius_->value();
  request.operators.fill_holes = fill_holes_->isChecked();
  return request;
}

void MainWindow::check_hints() {
  if (opened_.is_null()) return;
  const auto hints = hint_list();
  try {
    io::Hints::parse(hints);  // the syntax, here; the backend's own check on every rank
  } catch (const std::exception& e) {
    hint_status_->setText(QString::fromUtf8(e.what()));
    hint_status_->setStyleSheet("color: #c0392b");
    return;
  }
  worker_->post(CheckRequest{backend_->currentText().toStdString(), hints});
}

void MainWindow::update_command() {
  if (opened_.is_null()) return;
  SegmentRequest segment = segment_request();
  if (segment.output.empty()) segment.output = "MASK.nhdr";
  const OpenRequest opened = opened_request_.value_or(open_request());
  std::string seg =
      "mpirun -np " + std::to_string(ranks_) + " " + session::segment_command_line(opened, segment) + " --pyramid";
  const auto camera = view_->camera();
  std::string modes;
  if (show_volume_->isChecked()) modes += "volume";
  if (show_mask_->isChecked()) modes += std::string(modes.empty() ? "" : ",") + "mask";
  if (show_slices_->isChecked()) modes += std::string(modes.empty() ? "" : ",") + "slices";
  if (modes.empty()) modes = "volume";
  std::string ren = "mpirun -np " + std::to_string(ranks_) + " volseg render " + session::input_arguments(opened) +
                    " --mode " + modes;
  if (!mask_.empty())
    ren += " --mask " + shell_word(mask_);
  else if (show_mask_->isChecked())
    ren += " --lo " + number(lo_) + " --hi " + number(hi_);
  const QSize size = view_->frame_size();
  ren += " --size " + std::to_string(size.width()) + "x" + std::to_string(size.height()) + " --camera " +
         number(camera.azimuth) + "," + number(camera.elevation) + "," + number(camera.zoom);
  if (show_slices_->isChecked())
    ren += " --slice-at " + number(cursor_[0]) + "," + number(cursor_[1]) + "," + number(cursor_[2]);
  if (!mask_.empty() && show_mask_->isChecked() && !smooth_surface_->isChecked()) ren += " --mask-surface voxels";
  if (z_scale_->value() != 1) ren += " --scale " + number(z_scale_->value()) + ",1,1";
  ren += " --out volseg.png";
  command_->setPlainText(QString::fromStdString(seg + "\n" + ren + "\n" + objects_->commands()));
}

void MainWindow::request_frame(bool coarse, const char* tag, int level) {
  if (opened_.is_null()) return;
  const QSize size = view_->frame_size();
  const int levels = static_cast<int>(opened_.at("levels").size());
  DrawRequest request;
  request.width = coarse ? std::max(1, size.width() / 2) : size.width();
  request.height = coarse ? std::max(1, size.height() / 2) : size.height();
  request.azimuth = view_->camera().azimuth;
  request.elevation = view_->camera().elevation;
  request.zoom = view_->camera().zoom;
  request.volume = show_volume_->isChecked();
  request.mask = show_mask_->isChecked();
  request.slices = show_slices_->isChecked();
  request.slice_at = {cursor_[0], cursor_[1], cursor_[2]};
  request.mask_surface = smooth_surface_->isChecked() ? "smooth" : "voxels";
  request.scale = {1.0, 1.0, z_scale_->value()};
  request.title = QFileInfo(path_->text()).fileName().toStdString();
  if (level >= 0)
    request.level = std::min(level, levels - 1);
  else if (coarse)
    request.level = std::min(2, levels - 1);
  else if (const auto asked = render::parse_level(script_.level))
    request.level = std::clamp(*asked, 0, levels - 1);
  if (mask_.empty()) request.threshold = std::array<double, 2>{lo_, hi_};
  request.meshes = mesh_folder_;
  request.mesh_ids = mesh_ids_;
  // Interactive frames may replace each other in the queue; the first image,
  // the one after a job and the benchmark's frames are all drawn.
  const std::string t = tag;
  worker_->post(std::move(request), t, t == "view" || t == "drag" || t == "refine" ? "view" : "");
  update_command();
}

void MainWindow::request_slices() {
  if (opened_.is_null()) return;
  worker_->post(SlicesRequest{{cursor_[0], cursor_[1], cursor_[2]}, 768});
}

void MainWindow::start_segment() {
  if (opened_.is_null() || job_running_) return;
  if (output_->text().isEmpty()) {
    show_error(tr("segment"), tr("name the mask file first (Segment tab)"));
    return;
  }
  SegmentRequest request = segment_request();
  request.force = script_.force || !mask_.empty();
  request.command_line = command_->toPlainText().section('\n', 0, 0).toStdString();
  job_running_ = true;
  segment_button_->setEnabled(false);
  cancel_button_->setEnabled(true);
  for (auto* bar : rank_bars_) bar->setValue(0);
  tabs_->setCurrentIndex(1);
  statusBar()->showMessage(tr("segmenting on %1 ranks...").arg(ranks_));
  worker_->post(std::move(request));
}

void MainWindow::cancel() {
  worker_->cancel();
  statusBar()->showMessage(tr("cancelling..."));
}

void MainWindow::on_progress(std::vector<std::int64_t> units, std::int64_t total) {
  // Bricks are dealt in equal shares (one rank's share: total / ranks).
  const double share = std::max(
      1.0, std::ceil(static_cast<double>(total) / static_cast<double>(std::max<std::size_t>(1, units.size()))));
  for (std::size_t r = 0; r < units.size() && r < rank_bars_.size(); ++r)
    rank_bars_[r]->setValue(static_cast<int>(std::min(100.0, 100.0 * static_cast<double>(units[r]) / share)));
}

void MainWindow::show_error(const QString& context, const QString& message) {
  last_error_ = context + ": " + message;
  statusBar()->showMessage(last_error_);
  summary_->appendPlainText("error: " + last_error_);
  std::fprintf(stderr, "volseg-gui: %s\n", last_error_.toLocal8Bit().constData());
}

void MainWindow::on_reply(std::shared_ptr<Reply> reply) {
  worker_->delivered();
  if (!reply->error.empty()) {
    if (reply->kind == "check") {
      hint_status_->setText(QString::fromStdString(reply->error));
      hint_status_->setStyleSheet("color: #c0392b");
      return;
    }
    if (reply->kind == "segment") {
      job_running_ = false;
      segment_button_->setEnabled(true);
      cancel_button_->setEnabled(false);
      if (reply->cancelled) {
        statusBar()->showMessage(tr("segmentation cancelled; no mask was written"));
        summary_->appendPlainText(tr("cancelled: no mask was written"));
        return;
      }
    }
    if (reply->kind == "label" || reply->kind == "split" || reply->kind == "edit") objects_->on_reply(*reply);
    show_error(QString::fromStdString(reply->kind), QString::fromStdString(reply->error));
    if (script_.quit) {
      exit_code_ = 1;
      close();
    }
    return;
  }
  if (reply->kind == "open")
    on_opened(*reply);
  else if (reply->kind == "segment")
    on_segmented(*reply);
  else if (reply->kind == "render")
    on_frame(*reply);
  else if (reply->kind == "label" || reply->kind == "split" || reply->kind == "edit") {
    objects_->on_reply(*reply);
    tabs_->setCurrentWidget(objects_);
    // the slices show the labels (edited ones after an edit)
    if (reply->kind != "split" || reply->data.value("applied", false)) request_slices();
  } else if (reply->kind == "surface") {
    on_surface(*reply);
  } else if (reply->kind == "slices" && reply->planes) {
    planes_ = reply->planes;
    show_planes(*planes_);
  } else if (reply->kind == "check") {
    hint_status_->setText(tr("hints accepted by %1").arg(QString::fromStdString(reply->data.value("backend", ""))));
    hint_status_->setStyleSheet("color: #27ae60");
  }
  script_step();
}

void MainWindow::on_opened(const Reply& reply) {
  opened_ = reply.data;
  opened_request_ = reply.opened;
  info_->setPlainText(QString::fromStdString(opened_.value("info", "")));
  // variable and time pickers (NetCDF)
  const auto& variables = opened_.at("variables");
  const std::string chosen = opened_.value("variable", "");
  variable_->blockSignals(true);
  variable_->clear();
  for (const auto& v : variables) {
    const std::string line = v.get<std::string>();
    variable_->addItem(QString::fromStdString(line));
    if (line.substr(0, line.find('(')) == chosen) variable_->setCurrentIndex(variable_->count() - 1);
  }
  variable_->setEnabled(!variables.empty());
  variable_->blockSignals(false);
  // A series (a 4D NetCDF or HDF5 variable, a 4D Zarr array): its steps, and
  // the one open.
  const long long steps = opened_.value("steps", 1LL);
  time_->blockSignals(true);
  time_->setEnabled(opened_.contains("step"));
  time_->setRange(0, static_cast<int>(std::max<long long>(0, steps - 1)));
  time_->setValue(static_cast<int>(opened_.value("step", 0LL)));
  time_->blockSignals(false);
  const auto& h = opened_.at("histogram");
  segment::HistogramEdges edges;
  edges.lo = h.at("lo").get<double>();
  edges.hi = h.at("hi").get<double>();
  edges.bins = h.at("bins").get<int>();
  edges.integers = h.at("integers").get<bool>();
  histogram_data_ = segment::Histogram(edges);
  histogram_data_.counts() = h.at("counts").get<std::vector<std::uint64_t>>();
  histogram_->set_histogram(histogram_data_);
  if (output_->text().isEmpty()) {
    const std::filesystem::path in(opened_.value("path", ""));
    output_->setText(QString::fromStdString((in.parent_path() / (in.stem().string() + "-mask.nhdr")).string()));
  }
  if (script_.lo && script_.hi && script_.snap)  // as a drag would: to the nearest bin edges
    set_range(histogram_->snapped(*script_.lo), below_edge(histogram_data_.edges(), histogram_->snapped(*script_.hi)),
              false);
  else if (script_.lo && script_.hi)
    set_range(*script_.lo, *script_.hi, false);
  else
    set_range(histogram_->snapped(edges.lo + (edges.hi - edges.lo) * 0.5),
              below_edge(histogram_data_.edges(), histogram_->snapped(edges.hi)), false);
  statusBar()->showMessage(tr("%1 open%2")
                               .arg(QString::fromStdString(opened_.value("path", "")),
                                    opened_.value("pyramid_built", false) ? tr("; its pyramid was built") : QString()));
  // Progressive: a coarse first image at full size, then the refined one.
  const int levels = static_cast<int>(opened_.at("levels").size());
  request_frame(false, "first", std::min(2, levels - 1));
  request_slices();
  check_hints();
  update_command();
  if (pending_view_.is_object()) {  // a loaded view of this file
    const Json view = std::move(pending_view_);
    pending_view_ = nullptr;
    apply_view(view);
  }
}

void MainWindow::on_segmented(const Reply& reply) {
  job_running_ = false;
  ++jobs_done_;
  segment_button_->setEnabled(true);
  cancel_button_->setEnabled(false);
  for (auto* bar : rank_bars_) bar->setValue(100);
  const Json& d = reply.data;
  mask_ = d.value("output", "");
  segmented_range_ = std::pair{d.at("lo").get<double>(), d.at("hi").get<double>()};
  segmented_count_ = d.at("in_range").get<std::uint64_t>();
  segment_seconds_ = d.value("seconds", 0.0);
  {
    const std::filesystem::path mask(mask_);
    std::string stem = mask.stem().string();
    if (stem.size() > 5 && stem.compare(stem.size() - 5, 5, "-mask") == 0) stem.resize(stem.size() - 5);
    objects_->set_mask(mask_, (mask.parent_path() / (stem + "-labels.nhdr")).string());
  }
  summary_->setPlainText(QString::fromStdString(d.value("summary", "")));
  report_->set_report(d.at("ranks"), d.at("trace"));
  update_count();
  statusBar()->showMessage(
      tr("segmented in %1 s: %2").arg(d.value("seconds", 0.0), 0, 'f', 2).arg(QString::fromStdString(mask_)));
  tabs_->setCurrentIndex(2);
  request_slices();
  request_frame(false, "segmented");
  update_command();
}

void MainWindow::on_frame(const Reply& reply) {
  view_->show_image(reply.image);
  ++frames_shown_;
  const int level = reply.data.value("level", 0);
  const std::string tag = reply.tag.is_string() ? reply.tag.get<std::string>() : "";
  if (first_image_seconds_ < 0) {
    first_image_epoch_ = now_epoch();
    first_image_seconds_ = first_image_epoch_ - script_.process_start_epoch;
    first_image_level_ = level;
  }
  frame_status_->setText(tr("level %1, %2x%3, %4 s")
                             .arg(level)
                             .arg(reply.image.width)
                             .arg(reply.image.height)
                             .arg(reply.seconds, 0, 'f', 3));
  if (tag.rfind("time-", 0) == 0)
    timed_frames_.push_back(
        {level, reply.image.width, reply.image.height,
         reply.data.value("render", 0.0) + reply.data.value("scene", 0.0) + reply.data.value("composite", 0.0)});
  // The first image is a coarse one (level 2 at most); the refined follows.
  if (tag == "first" && level != 0 && script_.level != std::to_string(level)) request_frame(false, "refine");
}

bool MainWindow::save_screenshot(const QString& path) {
  const auto& image = view_->image();
  if (image.width == 0) {
    show_error(tr("screenshot"), tr("no image yet"));
    return false;
  }
  try {
    render::write_png(image, path.toStdString());
  } catch (const std::exception& e) {
    show_error(tr("screenshot"), QString::fromUtf8(e.what()));
    return false;
  }
  statusBar()->showMessage(tr("saved %1").arg(path));
  return true;
}

// The mask in another file or format: the same job, written there.
void MainWindow::save_mask_as() {
  if (opened_.is_null()) return;
  QString filter;
  const QString path =
      QFileDialog::getSaveFileName(this, tr("Save the mask"), output_->text(),
                                   tr("NRRD raw (*.nhdr);;NIfTI-1 (*.nii);;VTK image data (*.vti);;TIFF, a page a "
                                      "plane (*.tif);;NetCDF-64, CDF-2 (*.nc);;CDF-5 (*.nc);;NetCDF-4 (*.nc);;"
                                      "Zarr v2, compressed (*.zarr);;OME-Zarr label image (*.ome.zarr)"),
                                   &filter);
  if (path.isEmpty()) return;
  output_->setText(path);
  format_->setCurrentText(filter.startsWith("NRRD") || filter.startsWith("NIfTI") || filter.startsWith("VTK") ||
                                  filter.startsWith("TIFF")
                              ? "raw"
                          : filter.startsWith("NetCDF-64") ? "cdf2"
                          : filter.startsWith("CDF-5")     ? "cdf5"
                          : filter.startsWith("Zarr")      ? "zarr"
                          : filter.startsWith("OME-Zarr")  ? "ome-zarr"
                                                           : "netcdf4");
  start_segment();
}

void MainWindow::closeEvent(QCloseEvent* event) {
  if (worker_) worker_->quit();  // every rank leaves its loop
  event->accept();
}

}  // namespace volseg::gui
