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
#include "report_view.hpp"
#include "slice_view.hpp"
#include "view3d.hpp"
#include "volseg/io/error.hpp"
#include "volseg/io/files.hpp"
#include "volseg/io/registry.hpp"
#include "volseg/render/render.hpp"
#include "worker.hpp"

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

// Otsu's threshold over a histogram: the bin edge that maximises the
// between-class variance.
double otsu(const segment::Histogram& h) {
  const auto& counts = h.counts();
  const auto& e = h.edges();
  double total = 0, sum = 0;
  for (int i = 0; i < e.bins; ++i) {
    const double c = static_cast<double>(counts[static_cast<std::size_t>(i)]);
    total += c;
    sum += c * (e.edge(i) + e.edge(i + 1)) / 2;
  }
  double weight = 0, partial = 0, best = -1;
  int at = e.bins / 2;
  for (int i = 0; i + 1 < e.bins; ++i) {
    const double c = static_cast<double>(counts[static_cast<std::size_t>(i)]);
    weight += c;
    partial += c * (e.edge(i) + e.edge(i + 1)) / 2;
    if (weight == 0 || weight == total) continue;
    const double m0 = partial / weight, m1 = (sum - partial) / (total - weight);
    const double between = weight * (total - weight) * (m0 - m1) * (m0 - m1);
    if (between > best) {
      best = between;
      at = i + 1;
    }
  }
  return e.edge(at);
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
  if (!script_.output.empty()) output_->setText(QString::fromStdString(script_.output));
  if (!script_.format.empty()) format_->setCurrentText(QString::fromStdString(script_.format));
  backend_->setCurrentText(QString::fromStdString(script_.backend));
  hints_->setText(QString::fromStdString([&] {
    std::string joined;
    for (const auto& h : script_.hints) joined += (joined.empty() ? "" : " ") + h;
    return joined;
  }()));
  if (!script_.file.empty()) QTimer::singleShot(0, this, [this] { open_file(QString::fromStdString(script_.file)); });
}

MainWindow::~MainWindow() {
  if (worker_) worker_->quit();
}

void MainWindow::build_ui() {
  auto* splitter = new QSplitter(Qt::Horizontal, this);
  // Views: 3D and the three slices.
  auto* views = new QWidget(splitter);
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
    connect(slices_[p], &SliceView::cursor_moved, this, [this, p](double column, double row) {
      // plane z: columns x, rows y; plane y: columns x, rows z; plane x: columns y, rows z
      if (p == 0) cursor_ = {column, row, cursor_[2]};
      if (p == 1) cursor_ = {column, cursor_[1], row};
      if (p == 2) cursor_ = {cursor_[0], column, row};
      request_slices();
      if (show_slices_->isChecked()) refine_timer_->start();
    });

  // Panels.
  auto* side = new QWidget(splitter);
  auto* column = new QVBoxLayout(side);
  auto* threshold = new QGroupBox(tr("Threshold"), side);
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
  column->addWidget(threshold);
  connect(log_, &QCheckBox::toggled, histogram_, &HistogramView::set_log);
  connect(histogram_, &HistogramView::range_dragged, this, [this](double lo, double hi) {
    lo_ = lo;
    hi_ = below_edge(hi);
    lo_box_->blockSignals(true);
    hi_box_->blockSignals(true);
    lo_box_->setValue(lo);
    hi_box_->setValue(hi);
    lo_box_->blockSignals(false);
    hi_box_->blockSignals(false);
    update_count();
  });
  connect(histogram_, &HistogramView::range_chosen, this, [this](double lo, double hi) { set_range(lo, below_edge(hi)); });
  auto typed = [this] { set_range(lo_box_->value(), hi_box_->value()); };
  connect(lo_box_, qOverload<double>(&QDoubleSpinBox::valueChanged), this, typed);
  connect(hi_box_, qOverload<double>(&QDoubleSpinBox::valueChanged), this, typed);
  connect(mode, &QPushButton::clicked, this, [this] {
    const auto& counts = histogram_data_.counts();
    if (counts.empty()) return;
    const auto& e = histogram_data_.edges();
    const int m = static_cast<int>(std::max_element(counts.begin(), counts.end()) - counts.begin());
    int a = m, b = m;  // the bins around the mode down to half its count
    while (a > 0 && counts[static_cast<std::size_t>(a - 1)] * 2 >= counts[static_cast<std::size_t>(m)]) --a;
    while (b + 1 < e.bins && counts[static_cast<std::size_t>(b + 1)] * 2 >= counts[static_cast<std::size_t>(m)]) ++b;
    set_range(histogram_->snapped(e.edge(a)), below_edge(histogram_->snapped(e.edge(b + 1))));
  });
  connect(otsu_button, &QPushButton::clicked, this, [this] {
    if (histogram_data_.counts().empty()) return;
    set_range(histogram_->snapped(otsu(histogram_data_)), histogram_data_.edges().integers
                                                                ? histogram_data_.edges().hi - 0.5
                                                                : histogram_data_.edges().hi);
  });

  tabs_ = new QTabWidget(side);
  column->addWidget(tabs_, 1);
  // Volume
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
  vf->addRow(tr("Time step"), time_);
  info_ = new QPlainTextEdit(volume);
  info_->setReadOnly(true);
  info_->setFont(QFont("monospace"));
  vf->addRow(info_);
  auto reopen = [this] {
    if (!opened_.is_null()) open_file(path_->text());
  };
  connect(variable_, qOverload<int>(&QComboBox::activated), this, reopen);
  connect(time_, &QSpinBox::editingFinished, this, reopen);
  tabs_->addTab(volume, tr("Volume"));
  // Segment
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
  format_->addItems({"", "raw", "cdf2", "cdf5", "netcdf4"});
  format_->setToolTip(tr("Empty: the input's format (or the output's extension)"));
  sf->addRow(tr("Mask file"), output_);
  sf->addRow(tr("Format"), format_);
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
  tabs_->addTab(seg, tr("Segment"));
  // Report
  auto* rep = new QWidget;
  auto* rl = new QVBoxLayout(rep);
  summary_ = new QPlainTextEdit(rep);
  summary_->setReadOnly(true);
  summary_->setFont(QFont("monospace"));
  summary_->setMaximumHeight(140);
  report_ = new ReportView(rep);
  rl->addWidget(summary_);
  rl->addWidget(report_, 1);
  tabs_->addTab(rep, tr("Report"));
  // View options and the command
  auto* cmd = new QWidget;
  auto* cl = new QVBoxLayout(cmd);
  show_volume_ = new QCheckBox(tr("Volume"), cmd);
  show_mask_ = new QCheckBox(tr("Mask (threshold surface before segmenting)"), cmd);
  show_slices_ = new QCheckBox(tr("Slices in 3D"), cmd);
  show_volume_->setChecked(true);
  show_mask_->setChecked(true);
  for (auto* box : {show_volume_, show_mask_, show_slices_}) {
    cl->addWidget(box);
    connect(box, &QCheckBox::toggled, this, [this] {
      request_frame(false);
      update_command();
    });
  }
  cl->addWidget(new QLabel(tr("The same as a batch job:"), cmd));
  command_ = new QPlainTextEdit(cmd);
  command_->setReadOnly(true);
  command_->setFont(QFont("monospace"));
  cl->addWidget(command_, 1);
  auto* copy = new QPushButton(tr("Copy"), cmd);
  connect(copy, &QPushButton::clicked, this, [this] { QApplication::clipboard()->setText(command_->toPlainText()); });
  cl->addWidget(copy);
  tabs_->addTab(cmd, tr("View && command"));

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

void MainWindow::build_menus() {
  auto* file = menuBar()->addMenu(tr("&File"));
  file->addAction(tr("&Open..."), this, [this] {
    const QString path = QFileDialog::getOpenFileName(this, tr("Open a volume"), QString(),
                                                      tr("Volumes (*.nhdr *.nc *.nc4 *.h5);;All files (*)"));
    if (!path.isEmpty()) open_file(path);
  }, QKeySequence::Open);
  file->addAction(tr("Save &screenshot..."), this, [this] {
    const QString path = QFileDialog::getSaveFileName(this, tr("Save the 3D view"), "volseg.png", tr("PNG (*.png)"));
    if (!path.isEmpty()) save_screenshot(path);
  });
  file->addAction(tr("Save &mask as..."), this, &MainWindow::save_mask_as);
  file->addSeparator();
  file->addAction(tr("&Quit"), this, &QWidget::close, QKeySequence::Quit);
}

Json MainWindow::open_request() const {
  Json request{{"kind", "open"}, {"path", path_->text().toStdString()}, {"backend", script_.backend}};
  if (!script_.pyramid_dir.empty()) request["pyramid_dir"] = script_.pyramid_dir;
  if (variable_->isEnabled() && variable_->currentIndex() >= 0) {
    const std::string line = variable_->currentText().toStdString();
    request["var"] = line.substr(0, line.find('('));
  } else if (!script_.var.empty()) {
    request["var"] = script_.var;
  }
  if (time_->isEnabled()) request["time"] = time_->value();
  else if (script_.time) request["time"] = *script_.time;
  return request;
}

void MainWindow::open_file(const QString& path) {
  if (path != path_->text()) {
    variable_->clear();
    variable_->setEnabled(false);
    time_->setEnabled(false);
  }
  path_->setText(path);
  statusBar()->showMessage(tr("opening %1 (the first open builds its brick pyramid: one pass over the data)").arg(path));
  first_frame_ = true;
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

// Segment counts lo <= v <= hi; a bin holds edge(i) <= v < edge(i+1). So a
// range dragged to an inner bin edge e ends at the largest double below e:
// then segment and the histogram count the same voxels, those below e, for
// every data type (values compare exactly as doubles).
double MainWindow::below_edge(double edge) const {
  const auto& e = histogram_data_.edges();
  if (e.integers || edge >= e.hi || edge <= e.lo) return edge;
  return std::nextafter(edge, -std::numeric_limits<double>::infinity());
}

segment::Histogram::Count MainWindow::histogram_count(double lo, double hi) const {
  const auto& e = histogram_data_.edges();
  if (!e.integers) {
    const double b = std::round((hi - e.lo) / e.width());
    if (b > 0 && b < e.bins) {
      const double edge = e.edge(static_cast<int>(b));
      if (hi == below_edge(edge)) return histogram_data_.count_between(lo, edge);
    }
  }
  return histogram_data_.count_between(lo, hi);
}

// The voxel count of [lo, hi] from the histogram: no pass over the data.
void MainWindow::update_count() {
  if (histogram_data_.counts().empty()) return;
  const auto count = histogram_count(lo_, hi_);
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
  worker_->post({{"kind", "check"}, {"backend", backend_->currentText().toStdString()}, {"hints", hints}});
}

void MainWindow::update_command() {
  if (opened_.is_null()) return;
  const std::string input = opened_.value("path", "");
  std::string selection;
  for (const auto& s : opened_.at("selection")) {
    const std::string item = s.get<std::string>();
    const auto eq = item.find('=');
    selection += " --" + item.substr(0, eq) + " " + shell_word(item.substr(eq + 1));
  }
  std::string seg = "mpirun -np " + std::to_string(ranks_) + " volseg segment " + shell_word(input) + selection +
                    " --lo " + number(lo_) + " --hi " + number(hi_);
  const std::string output = output_->text().toStdString();
  seg += " --out " + shell_word(output.empty() ? "MASK.nhdr" : output);
  if (backend_->currentText() != "auto") seg += " --backend " + backend_->currentText().toStdString();
  for (const auto& h : hint_list()) seg += " --hint " + shell_word(h);
  if (!format_->currentText().isEmpty()) seg += " --format " + format_->currentText().toStdString();
  seg += " --pyramid";
  const auto camera = view_->camera();
  std::string modes;
  if (show_volume_->isChecked()) modes += "volume";
  if (show_mask_->isChecked()) modes += std::string(modes.empty() ? "" : ",") + "mask";
  if (show_slices_->isChecked()) modes += std::string(modes.empty() ? "" : ",") + "slices";
  if (modes.empty()) modes = "volume";
  std::string ren = "mpirun -np " + std::to_string(ranks_) + " volseg render " + shell_word(input) + selection +
                    " --mode " + modes;
  if (!mask_.empty()) ren += " --mask " + shell_word(mask_);
  else if (show_mask_->isChecked()) ren += " --lo " + number(lo_) + " --hi " + number(hi_);
  const QSize size = view_->frame_size();
  ren += " --size " + std::to_string(size.width()) + "x" + std::to_string(size.height()) + " --camera " +
         number(camera.azimuth) + "," + number(camera.elevation) + "," + number(camera.zoom);
  if (show_slices_->isChecked())
    ren += " --slice-at " + number(cursor_[0]) + "," + number(cursor_[1]) + "," + number(cursor_[2]);
  ren += " --out volseg.png";
  command_->setPlainText(QString::fromStdString(seg + "\n" + ren + "\n"));
}

void MainWindow::request_frame(bool coarse, const char* tag, int level) {
  if (opened_.is_null()) return;
  const QSize size = view_->frame_size();
  const int levels = static_cast<int>(opened_.at("levels").size());
  Json request{{"kind", "render"},
               {"tag", tag},
               {"width", coarse ? std::max(1, size.width() / 2) : size.width()},
               {"height", coarse ? std::max(1, size.height() / 2) : size.height()},
               {"camera",
                {{"azimuth", view_->camera().azimuth},
                 {"elevation", view_->camera().elevation},
                 {"zoom", view_->camera().zoom}}},
               {"modes",
                {{"volume", show_volume_->isChecked()},
                 {"mask", show_mask_->isChecked()},
                 {"slices", show_slices_->isChecked()}}},
               {"slice_at", {cursor_[0], cursor_[1], cursor_[2]}},
               {"title", QFileInfo(path_->text()).fileName().toStdString()}};
  // Interactive frames may replace each other in the queue; the first image,
  // the one after a job and the benchmark's frames are all drawn.
  const std::string t = tag;
  request["replaceable"] = t == "view" || t == "drag" || t == "refine";
  if (level >= 0) request["level"] = std::min(level, levels - 1);
  else if (coarse) request["level"] = std::min(2, levels - 1);
  else request["level"] = script_.level;
  if (mask_.empty()) {
    request["lo"] = lo_;
    request["hi"] = hi_;
  }
  worker_->post(std::move(request));
  update_command();
}

void MainWindow::request_slices() {
  if (opened_.is_null()) return;
  worker_->post({{"kind", "slices"}, {"at", {cursor_[0], cursor_[1], cursor_[2]}}, {"max_side", 768}});
}

void MainWindow::start_segment() {
  if (opened_.is_null() || job_running_) return;
  if (output_->text().isEmpty()) {
    show_error(tr("segment"), tr("name the mask file first (Segment tab)"));
    return;
  }
  Json request{{"kind", "segment"},       {"lo", lo_},
               {"hi", hi_},               {"output", output_->text().toStdString()},
               {"backend", backend_->currentText().toStdString()},
               {"hints", hint_list()},    {"format", format_->currentText().toStdString()},
               {"force", script_.force || !mask_.empty()},
               {"command_line", command_->toPlainText().section('\n', 0, 0).toStdString()}};
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
  const double share = std::max(1.0, std::ceil(static_cast<double>(total) / static_cast<double>(std::max<std::size_t>(1, units.size()))));
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
    show_error(QString::fromStdString(reply->kind), QString::fromStdString(reply->error));
    if (script_.quit) {
      exit_code_ = 1;
      close();
    }
    return;
  }
  if (reply->kind == "open") on_opened(*reply);
  else if (reply->kind == "segment") on_segmented(*reply);
  else if (reply->kind == "render") on_frame(*reply);
  else if (reply->kind == "slices" && reply->planes) {
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
  info_->setPlainText(QString::fromStdString(opened_.value("info", "")));
  // variable and time pickers (NetCDF)
  const auto& variables = opened_.at("variables");
  const std::string chosen = opened_.value("variable", "");
  variable_->blockSignals(true);
  variable_->clear();
  long long steps = 0;
  for (const auto& v : variables) {
    const std::string line = v.get<std::string>();
    variable_->addItem(QString::fromStdString(line));
    if (line.substr(0, line.find('(')) == chosen) {
      variable_->setCurrentIndex(variable_->count() - 1);
      // "name(time=12, z=..., ...)": a 4D variable's first dimension is its steps
      const auto open = line.find('('), eq = line.find('=', open);
      const auto comma = line.find(',', eq);
      if (std::count(line.begin(), line.end(), '=') >= 4 && eq != std::string::npos)
        steps = std::stoll(line.substr(eq + 1, comma - eq - 1));
    }
  }
  variable_->setEnabled(!variables.empty());
  variable_->blockSignals(false);
  time_->setEnabled(steps > 0);
  time_->setRange(0, static_cast<int>(std::max<long long>(0, steps - 1)));
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
    set_range(histogram_->snapped(*script_.lo), below_edge(histogram_->snapped(*script_.hi)), false);
  else if (script_.lo && script_.hi) set_range(*script_.lo, *script_.hi, false);
  else set_range(histogram_->snapped(edges.lo + (edges.hi - edges.lo) * 0.5), below_edge(histogram_->snapped(edges.hi)), false);
  statusBar()->showMessage(tr("%1 open%2").arg(QString::fromStdString(opened_.value("path", "")),
                                               opened_.value("pyramid_built", false) ? tr("; its pyramid was built")
                                                                                     : QString()));
  // Progressive: a coarse first image at full size, then the refined one.
  first_frame_ = true;
  const int levels = static_cast<int>(opened_.at("levels").size());
  request_frame(false, "first", std::min(2, levels - 1));
  request_slices();
  check_hints();
  update_command();
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
  summary_->setPlainText(QString::fromStdString(d.value("summary", "")));
  report_->set_report(d.at("ranks"), d.at("trace"));
  update_count();
  statusBar()->showMessage(tr("segmented in %1 s: %2").arg(d.value("seconds", 0.0), 0, 'f', 2).arg(QString::fromStdString(mask_)));
  tabs_->setCurrentIndex(2);
  request_slices();
  request_frame(false, "segmented");
  update_command();
}

void MainWindow::on_frame(const Reply& reply) {
  view_->show_image(reply.image);
  ++frames_shown_;
  const int level = reply.data.value("level", 0);
  const std::string tag = reply.data.value("tag", "");
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
    timed_frames_.push_back({level, reply.image.width, reply.image.height,
                             reply.data.value("render", 0.0) + reply.data.value("scene", 0.0) +
                                 reply.data.value("composite", 0.0)});
  // The first image is a coarse one (level 2 at most); the refined follows.
  if (tag == "first" && level != 0 && script_.level != std::to_string(level)) request_frame(false, "refine");
}

void MainWindow::show_planes(const Planes& planes) {
  const double lo = opened_.at("range")[0].get<double>(), hi = opened_.at("range")[1].get<double>();
  const double scale = hi > lo ? 255.0 / (hi - lo) : 0;
  const char* names[3] = {"Z", "Y", "X"};
  for (int p = 0; p < 3; ++p) {
    const auto& values = planes.values[static_cast<std::size_t>(p)];
    const auto& mask = planes.mask[static_cast<std::size_t>(p)];
    const int rows = planes.rows[static_cast<std::size_t>(p)], columns = planes.columns[static_cast<std::size_t>(p)];
    QImage image(columns, rows, QImage::Format_RGB32);
    for (int r = 0; r < rows; ++r) {
      auto* line = reinterpret_cast<QRgb*>(image.scanLine(r));
      for (int c = 0; c < columns; ++c) {
        const std::size_t i = static_cast<std::size_t>(r) * static_cast<std::size_t>(columns) + static_cast<std::size_t>(c);
        const float v = values[i];
        if (std::isnan(v)) {
          line[c] = qRgb(60, 0, 60);
          continue;
        }
        const int g = std::clamp(static_cast<int>((v - lo) * scale), 0, 255);
        if (!mask.empty() && mask[i]) line[c] = qRgb((g + 3 * 242) / 4, (g + 3 * 89) / 4, (g + 3 * 51) / 4);
        else if (mask.empty() && v >= lo_ && v <= hi_) line[c] = qRgb((g + 242) / 2, (g + 89) / 2, (g + 51) / 2);
        else line[c] = qRgb(g, g, g);
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
  const QString path = QFileDialog::getSaveFileName(
      this, tr("Save the mask"), output_->text(),
      tr("NRRD raw (*.nhdr);;NetCDF-64, CDF-2 (*.nc);;CDF-5 (*.nc);;NetCDF-4 (*.nc)"), &filter);
  if (path.isEmpty()) return;
  output_->setText(path);
  format_->setCurrentText(filter.startsWith("NRRD")      ? "raw"
                          : filter.startsWith("NetCDF-64") ? "cdf2"
                          : filter.startsWith("CDF-5")     ? "cdf5"
                                                           : "netcdf4");
  start_segment();
}

void MainWindow::closeEvent(QCloseEvent* event) {
  if (worker_) worker_->quit();  // every rank leaves its loop
  event->accept();
}

// The unattended run: open -> (first image, refined) -> segment -> final
// frame -> screenshot -> quit, one step per reply once the queue is empty.
void MainWindow::script_step() {
  if (worker_->pending() > 0 || step_ == Step::done) return;
  if (opened_.is_null()) return;
  if (script_.segment && !script_segmented_) {
    script_segmented_ = true;
    start_segment();
    return;
  }
  if (!script_.timings.empty() && timing_frames_left_ == 0 && timed_frames_.empty()) {
    // Camera-drag frames (level 2, half size) and level-0 frames, 3 each.
    timing_frames_left_ = 6;
    for (int i = 0; i < 6; ++i) {
      auto camera = view_->camera();
      camera.azimuth += i;
      view_->set_camera(camera);
      if (i < 3) request_frame(true, "time-drag", 2);
      else request_frame(false, "time-full", 0);
    }
    return;
  }
  step_ = Step::done;
  if (!script_.screenshot.empty() && !save_screenshot(QString::fromStdString(script_.screenshot))) exit_code_ = 1;
  if (!script_.window_shot.empty()) {
    if (!grab().save(QString::fromStdString(script_.window_shot))) {
      show_error(tr("window shot"), tr("cannot write %1").arg(QString::fromStdString(script_.window_shot)));
      exit_code_ = 1;
    }
  }
  if (!script_.timings.empty()) write_timings();
  if (script_.quit) close();
}

void MainWindow::write_timings() {
  // The exact voxel count of a dragged range from the histogram, timed over
  // many ranges at bin edges, against the threshold pass of the same run.
  const auto& e = histogram_data_.edges();
  std::mt19937 random(7);
  std::uniform_int_distribution<int> edge(0, e.bins);
  const int queries = 20000;
  double sink = 0;
  const auto start = std::chrono::steady_clock::now();
  for (int q = 0; q < queries; ++q) {
    int a = edge(random), b = edge(random);
    if (a > b) std::swap(a, b);
    sink += histogram_count(e.edge(a), below_edge(e.edge(b))).voxels;
  }
  const double per_query = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() / queries;
  Json t;
  t["ranks"] = ranks_;
  t["count_query_seconds"] = per_query;
  t["count_checksum"] = sink;
  t["segment_seconds"] = segment_seconds_;
  if (segmented_range_) {
    t["segment_lo"] = segmented_range_->first;
    t["segment_hi"] = segmented_range_->second;
    t["segment_count"] = segmented_count_;
    const auto c = histogram_count(segmented_range_->first, segmented_range_->second);
    t["histogram_count"] = c.voxels;
    t["histogram_count_exact"] = c.exact;
  }
  t["first_image_seconds"] = first_image_seconds_;
  t["first_image_epoch"] = first_image_epoch_;
  t["first_image_level"] = first_image_level_;
  t["process_start_epoch"] = script_.process_start_epoch;
  Json frames = Json::array();
  for (const auto& f : timed_frames_)
    frames.push_back({{"level", f.level}, {"width", f.width}, {"height", f.height}, {"seconds", f.seconds}});
  t["frames"] = frames;
  try {
    io::write_file_atomically(script_.timings, t.dump(2) + "\n");
  } catch (const std::exception& ex) {
    show_error(tr("timings"), QString::fromUtf8(ex.what()));
    exit_code_ = 1;
  }
}

}  // namespace volseg::gui
