// SPDX-License-Identifier: MIT
// The window's widgets and how they are wired to its slots (main_window.cpp
// holds what the window does).
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
#include <QInputDialog>
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
#include "volseg/mesh/mesh.hpp"
#include "volseg/render/render.hpp"
#include "volseg/segment/operators.hpp"

namespace volseg::gui {

void MainWindow::build_ui() {
  auto* splitter = new QSplitter(Qt::Horizontal, this);
  build_views(splitter);
  auto* side = new QWidget(splitter);
  auto* column = new QVBoxLayout(side);
  column->addWidget(build_threshold_panel(side));
  tabs_ = new QTabWidget(side);
  column->addWidget(tabs_, 1);
  tabs_->addTab(build_volume_tab(), tr("Volume"));
  tabs_->addTab(build_segment_tab(), tr("Segment"));
  tabs_->addTab(build_report_tab(), tr("Report"));
  tabs_->addTab(build_view_tab(), tr("View && command"));
  objects_ = new ObjectsPanel([this](Request request) { worker_->post(std::move(request)); }, side);
  tabs_->addTab(objects_, tr("Objects"));
  connect(objects_, &ObjectsPanel::changed, this, [this] { update_command(); });
  connect(objects_, &ObjectsPanel::alone, this, [this](std::int64_t id) { show_alone(id); });

  splitter->setStretchFactor(0, 3);
  splitter->setStretchFactor(1, 2);
  setCentralWidget(splitter);
  frame_status_ = new QLabel(this);
  statusBar()->addPermanentWidget(frame_status_);
  refine_timer_ = new QTimer(this);
  refine_timer_->setSingleShot(true);
  refine_timer_->setInterval(250);
  connect(refine_timer_, &QTimer::timeout, this, [this] { request_frame(false); });
  resize(1400, 900);
}

// Views: 3D and the three slices.
void MainWindow::build_views(QWidget* parent) {
  auto* views = new QWidget(parent);
  auto* grid = new QGridLayout(views);
  grid->setContentsMargins(2, 2, 2, 2);
  view_ = new View3D(views);
  if (script_.view_width > 0) view_->setFixedSize(script_.view_width, script_.view_height);
  slices_[0] = new SliceView("Z", views);
  slices_[1] = new SliceView("Y", views);
  slices_[2] = new SliceView("X", views);
  grid->addWidget(view_, 0, 0);
  grid->addWidget(slices_[0], 0, 1);
  grid->addWidget(slices_[1], 1, 0);
  grid->addWidget(slices_[2], 1, 1);
  grid->setRowStretch(0, 3);
  grid->setRowStretch(1, 2);
  grid->setColumnStretch(0, 3);
  grid->setColumnStretch(1, 2);
  connect(view_, &View3D::camera_changed, this, [this](bool moving) {
    request_frame(moving, moving ? "drag" : "view");
    if (!moving) refine_timer_->stop();
  });
  connect(view_, &View3D::resized, this, [this] {
    if (!opened_.is_null()) refine_timer_->start();
  });
  // Slice i shows plane i (z, y, x); its columns and rows are the other axes.
  for (int p = 0; p < 3; ++p)
    connect(slices_[p], &SliceView::pressed, this, [this, p](double column, double row) {
      if (objects_->tool() != "move") pick_in_slice(p, column, row);
    });
  for (int p = 0; p < 3; ++p)
    connect(slices_[p], &SliceView::cursor_moved, this, [this, p](double column, double row) {
      if (objects_->tool() != "move") return;  // a tool's click is an edit, not a move
      // plane z: columns x, rows y; plane y: columns x, rows z; plane x: columns y, rows z
      if (p == 0) cursor_ = {column, row, cursor_[2]};
      if (p == 1) cursor_ = {column, cursor_[1], row};
      if (p == 2) cursor_ = {cursor_[0], column, row};
      request_slices();
      if (show_slices_->isChecked()) refine_timer_->start();
    });
}

// The histogram, lo and hi, the presets and the count.
QWidget* MainWindow::build_threshold_panel(QWidget* parent) {
  auto* threshold = new QGroupBox(tr("Threshold"), parent);
  auto* tl = new QVBoxLayout(threshold);
  histogram_ = new HistogramView(threshold);
  tl->addWidget(histogram_);
  auto* row = new QHBoxLayout;
  lo_box_ = new QDoubleSpinBox(threshold);
  hi_box_ = new QDoubleSpinBox(threshold);
  for (auto* box : {lo_box_, hi_box_}) {
    box->setDecimals(6);
    box->setRange(-1e300, 1e300);
    box->setKeyboardTracking(false);
  }
  row->addWidget(new QLabel(tr("lo"), threshold));
  row->addWidget(lo_box_);
  row->addWidget(new QLabel(tr("hi"), threshold));
  row->addWidget(hi_box_);
  log_ = new QCheckBox(tr("log"), threshold);
  log_->setChecked(true);
  row->addWidget(log_);
  tl->addLayout(row);
  auto* presets = new QHBoxLayout;
  auto* mode = new QPushButton(tr("Around the mode"), threshold);
  auto* otsu_button = new QPushButton(tr("Otsu"), threshold);
  presets->addWidget(mode);
  presets->addWidget(otsu_button);
  tl->addLayout(presets);
  count_ = new QLabel(tr("no volume open"), threshold);
  count_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  tl->addWidget(count_);
  connect_threshold_panel(mode, otsu_button);
  return threshold;
}

void MainWindow::connect_threshold_panel(QPushButton* mode, QPushButton* otsu_button) {
  connect(log_, &QCheckBox::toggled, histogram_, &HistogramView::set_log);
  connect(histogram_, &HistogramView::range_dragged, this, [this](double lo, double hi) {
    lo_ = lo;
    hi_ = below_edge(histogram_data_.edges(), hi);
    lo_box_->blockSignals(true);
    hi_box_->blockSignals(true);
    lo_box_->setValue(lo);
    hi_box_->setValue(hi);
    lo_box_->blockSignals(false);
    hi_box_->blockSignals(false);
    update_count();
  });
  connect(histogram_, &HistogramView::range_chosen, this,
          [this](double lo, double hi) { set_range(lo, below_edge(histogram_data_.edges(), hi)); });
  auto typed = [this] { set_range(lo_box_->value(), hi_box_->value()); };
  connect(lo_box_, qOverload<double>(&QDoubleSpinBox::valueChanged), this, typed);
  connect(hi_box_, qOverload<double>(&QDoubleSpinBox::valueChanged), this, typed);
  connect(mode, &QPushButton::clicked, this, [this] {
    if (histogram_data_.counts().empty()) return;
    const auto [lo, hi] = around_mode(histogram_data_);
    set_range(histogram_->snapped(lo), below_edge(histogram_data_.edges(), histogram_->snapped(hi)));
  });
  connect(otsu_button, &QPushButton::clicked, this, [this] {
    if (histogram_data_.counts().empty()) return;
    set_range(histogram_->snapped(otsu(histogram_data_)),
              histogram_data_.edges().integers ? histogram_data_.edges().hi - 0.5 : histogram_data_.edges().hi);
  });
}

// The file, its variable and time step, and what it holds.
QWidget* MainWindow::build_volume_tab() {
  auto* volume = new QWidget;
  auto* vf = new QFormLayout(volume);
  path_ = new QLineEdit(volume);
  path_->setReadOnly(true);
  vf->addRow(tr("File"), path_);
  variable_ = new QComboBox(volume);
  time_ = new QSpinBox(volume);
  time_->setRange(0, 0);
  time_->setEnabled(false);
  variable_->setEnabled(false);
  vf->addRow(tr("Variable"), variable_);
  // Or a field computed from the variables as they are read, as volseg
  // segment --expr and --where do; Enter opens it, an empty one the variable.
  expression_ = new QLineEdit(volume);
  expression_->setPlaceholderText(tr("sqrt(u*u + v*v), or a condition: T > 10 && S < 34.5"));
  expression_->setToolTip(
      tr("An expression of the file's variables (muparser: + - * / ^, sqrt exp log sin abs min max "
         "..., a ? b : c), opened instead of the variable; Enter to open, empty for the variable"));
  condition_ = new QCheckBox(tr("a condition: the mask is where it holds (segment 1..1)"), volume);
  vf->addRow(tr("Expression"), expression_);
  vf->addRow(QString(), condition_);
  vf->addRow(tr("Time step"), time_);
  info_ = new QPlainTextEdit(volume);
  info_->setReadOnly(true);
  info_->setFont(QFont("monospace"));
  vf->addRow(info_);
  auto reopen = [this] {
    if (!opened_.is_null()) open_file(path_->text());
  };
  connect(variable_, qOverload<int>(&QComboBox::activated), this, [this, reopen] {
    expression_->clear();  // a variable picked: the variable, not the expression
    reopen();
  });
  connect(expression_, &QLineEdit::returnPressed, this, reopen);
  connect(condition_, &QCheckBox::toggled, this, [this, reopen] {
    if (!expression_->text().trimmed().isEmpty()) reopen();
  });
  connect(time_, &QSpinBox::editingFinished, this, reopen);
  return volume;
}

// Backend, hints, the mask file and its format, Segment and Cancel, and a
// progress bar per rank.
QWidget* MainWindow::build_segment_tab() {
  auto* seg = new QWidget;
  auto* sf = new QFormLayout(seg);
  backend_ = new QComboBox(seg);
  backend_->addItem("auto");
  for (const auto& b : io::builtin_registry().all())
    if (b.open) backend_->addItem(QString::fromStdString(b.name));
  sf->addRow(tr("Backend"), backend_);
  hints_ = new QLineEdit(seg);
  hints_->setPlaceholderText(tr("key=value ... (e.g. cb_nodes=2 partition=group-cyclic)"));
  sf->addRow(tr("Hints"), hints_);
  hint_status_ = new QLabel(seg);
  sf->addRow(QString(), hint_status_);
  output_ = new QLineEdit(seg);
  format_ = new QComboBox(seg);
  format_->addItems({"", "raw", "cdf2", "cdf5", "netcdf4", "zarr", "ome-zarr"});
  format_->setToolTip(tr("Empty: the input's format (or the output's extension)"));
  sf->addRow(tr("Mask file"), output_);
  sf->addRow(tr("Format"), format_);
  // The operators, in the order they run: hysteresis, open, close, fill holes.
  auto* seeds = new QHBoxLayout;
  seed_on_ = new QCheckBox(tr("keep components with a seed in"), seg);
  seed_lo_ = new QDoubleSpinBox(seg);
  seed_hi_ = new QDoubleSpinBox(seg);
  for (auto* box : {seed_lo_, seed_hi_}) {
    box->setDecimals(6);
    box->setRange(-1e300, 1e300);
    box->setEnabled(false);
  }
  seeds->addWidget(seed_on_);
  seeds->addWidget(seed_lo_);
  seeds->addWidget(seed_hi_);
  sf->addRow(tr("Hysteresis"), seeds);
  auto* radii = new QHBoxLayout;
  open_radius_ = new QSpinBox(seg);
  close_radius_ = new QSpinBox(seg);
  for (auto* box : {open_radius_, close_radius_}) {
    box->setRange(0, segment::max_radius);
    box->setSuffix(tr(" voxels"));
  }
  open_radius_->setToolTip(tr("Open with a ball of this radius (erosion, then dilation)"));
  close_radius_->setToolTip(tr("Close with a ball of this radius (dilation, then erosion)"));
  radii->addWidget(new QLabel(tr("open"), seg));
  radii->addWidget(open_radius_);
  radii->addWidget(new QLabel(tr("close"), seg));
  radii->addWidget(close_radius_);
  sf->addRow(tr("Ball radius"), radii);
  fill_holes_ = new QCheckBox(tr("fill holes (background that touches no face of the volume)"), seg);
  sf->addRow(QString(), fill_holes_);
  auto* buttons = new QHBoxLayout;
  segment_button_ = new QPushButton(tr("Segment"), seg);
  cancel_button_ = new QPushButton(tr("Cancel"), seg);
  cancel_button_->setEnabled(false);
  buttons->addWidget(segment_button_);
  buttons->addWidget(cancel_button_);
  sf->addRow(buttons);
  auto* bars = new QWidget(seg);
  rank_bars_layout_ = new QVBoxLayout(bars);
  rank_bars_layout_->setContentsMargins(0, 0, 0, 0);
  for (int r = 0; r < ranks_; ++r) {
    auto* bar = new QProgressBar(bars);
    bar->setFormat(tr("rank %1: %p%").arg(r));
    bar->setValue(0);
    rank_bars_layout_->addWidget(bar);
    rank_bars_.push_back(bar);
  }
  sf->addRow(tr("Progress"), bars);
  connect_segment_tab();
  return seg;
}

void MainWindow::connect_segment_tab() {
  connect(segment_button_, &QPushButton::clicked, this, &MainWindow::start_segment);
  connect(cancel_button_, &QPushButton::clicked, this, &MainWindow::cancel);
  hint_timer_ = new QTimer(this);
  hint_timer_->setSingleShot(true);
  hint_timer_->setInterval(400);
  connect(hint_timer_, &QTimer::timeout, this, &MainWindow::check_hints);
  connect(hints_, &QLineEdit::textChanged, this, [this] {
    hint_timer_->start();
    update_command();
  });
  connect(backend_, &QComboBox::currentTextChanged, this, [this] {
    hint_timer_->start();
    update_command();
  });
  connect(output_, &QLineEdit::textChanged, this, &MainWindow::update_command);
  connect(format_, &QComboBox::currentTextChanged, this, &MainWindow::update_command);
  connect(seed_on_, &QCheckBox::toggled, this, [this](bool on) {
    seed_lo_->setEnabled(on);
    seed_hi_->setEnabled(on);
    if (on && seed_lo_->value() == 0 && seed_hi_->value() == 0) {  // a start: the upper half of the band
      seed_lo_->setValue((lo_ + hi_) / 2);
      seed_hi_->setValue(hi_);
    }
    update_command();
  });
  for (auto* box : {seed_lo_, seed_hi_})
    connect(box, qOverload<double>(&QDoubleSpinBox::valueChanged), this, &MainWindow::update_command);
  for (auto* box : {open_radius_, close_radius_})
    connect(box, qOverload<int>(&QSpinBox::valueChanged), this, &MainWindow::update_command);
  connect(fill_holes_, &QCheckBox::toggled, this, &MainWindow::update_command);
}

// The last job's summary and its report.
QWidget* MainWindow::build_report_tab() {
  auto* rep = new QWidget;
  auto* rl = new QVBoxLayout(rep);
  summary_ = new QPlainTextEdit(rep);
  summary_->setReadOnly(true);
  summary_->setFont(QFont("monospace"));
  summary_->setMaximumHeight(140);
  report_ = new ReportView(rep);
  rl->addWidget(summary_);
  rl->addWidget(report_, 1);
  return rep;
}

// What the 3D view shows, and the same job as a batch command.
QWidget* MainWindow::build_view_tab() {
  auto* cmd = new QWidget;
  auto* cl = new QVBoxLayout(cmd);
  show_volume_ = new QCheckBox(tr("Volume"), cmd);
  show_mask_ = new QCheckBox(tr("Mask (threshold surface before segmenting)"), cmd);
  show_slices_ = new QCheckBox(tr("Slices in 3D"), cmd);
  smooth_surface_ = new QCheckBox(tr("Smooth mask surface (off: the voxels' staircase)"), cmd);
  show_volume_->setChecked(true);
  show_mask_->setChecked(true);
  smooth_surface_->setChecked(true);
  for (auto* box : {show_volume_, show_mask_, show_slices_, smooth_surface_}) {
    cl->addWidget(box);
    connect(box, &QCheckBox::toggled, this, [this] {
      request_frame(false);
      update_command();
    });
  }
  // Vertical exaggeration: data in its coordinates can be metres deep and
  // degrees wide (volseg render --scale Z,1,1).
  auto* scale_row = new QHBoxLayout;
  scale_row->addWidget(new QLabel(tr("Stretch z by"), cmd));
  z_scale_ = new QDoubleSpinBox(cmd);
  z_scale_->setDecimals(4);
  z_scale_->setRange(0.0001, 10000);
  z_scale_->setValue(1);
  z_scale_->setStepType(QAbstractSpinBox::AdaptiveDecimalStepType);
  scale_row->addWidget(z_scale_, 1);
  cl->addLayout(scale_row);
  connect(z_scale_, qOverload<double>(&QDoubleSpinBox::valueChanged), this, [this] {
    request_frame(false);
    update_command();
  });
  cl->addWidget(new QLabel(tr("The same as a batch job:"), cmd));
  command_ = new QPlainTextEdit(cmd);
  command_->setReadOnly(true);
  command_->setFont(QFont("monospace"));
  cl->addWidget(command_, 1);
  auto* copy = new QPushButton(tr("Copy"), cmd);
  connect(copy, &QPushButton::clicked, this, [this] { QApplication::clipboard()->setText(command_->toPlainText()); });
  cl->addWidget(copy);
  return cmd;
}

void MainWindow::build_menus() {
  auto* file = menuBar()->addMenu(tr("&File"));
  file->addAction(
      tr("&Open..."), this,
      [this] {
        const QString path = QFileDialog::getOpenFileName(
            this, tr("Open a volume"), QString(),
            tr("Volumes (*.nhdr *.nii *.nii.gz *.hdr *.vti *.tif *.tiff *.nc *.nc4 *.h5);;All files (*)"));
        if (!path.isEmpty()) open_file(path);
      },
      QKeySequence::Open);
  // A Zarr array or OME-Zarr image is a folder, which a file dialog cannot pick.
  file->addAction(tr("Open &Zarr store..."), this, [this] {
    const QString path = QFileDialog::getExistingDirectory(this, tr("Open a Zarr v2 array or OME-Zarr image"));
    if (!path.isEmpty()) open_file(path);
  });
  file->addAction(tr("Save &screenshot..."), this, [this] {
    const QString path = QFileDialog::getSaveFileName(this, tr("Save the 3D view"), "volseg.png", tr("PNG (*.png)"));
    if (!path.isEmpty()) save_screenshot(path);
  });
  file->addAction(tr("Save &mask as..."), this, &MainWindow::save_mask_as);
  // The view as a file (the browser page's link, as a file): save and load.
  file->addAction(tr("Save &view..."), this, [this] {
    const QString path = QFileDialog::getSaveFileName(this, tr("Save the view"), "view.json", tr("JSON (*.json)"));
    if (!path.isEmpty()) save_view(path);
  });
  file->addAction(tr("&Load view..."), this, [this] {
    const QString path = QFileDialog::getOpenFileName(this, tr("Load a view"), QString(), tr("JSON (*.json)"));
    if (!path.isEmpty()) load_view(path);
  });
  // volseg mesh's folder: the objects named drawn with the volume, each in
  // its colour (the same as the OME-Zarr labels' and volseg render's).
  file->addAction(tr("Show object &meshes..."), this, [this] {
    const QString folder = QFileDialog::getExistingDirectory(this, tr("A mesh folder (volseg mesh --out)"));
    if (folder.isEmpty()) return;
    bool ok = false;
    const QString ids = QInputDialog::getText(this, tr("Object meshes"), tr("Objects (1,4,7-9; empty: all):"),
                                              QLineEdit::Normal, QString(), &ok);
    if (!ok) return;
    try {
      const std::string path = folder.toStdString();
      mesh_ids_ = ids.trimmed().isEmpty() ? mesh::mesh_ids(path) : mesh::parse_ids(ids.toStdString());
      mesh_folder_ = path;
    } catch (const std::exception& e) {
      statusBar()->showMessage(QString::fromStdString(e.what()));
      return;
    }
    request_frame(false, "view");
  });
  file->addSeparator();
  file->addAction(tr("&Quit"), this, &QWidget::close, QKeySequence::Quit);
}

}  // namespace volseg::gui
