// SPDX-License-Identifier: MIT
// The window run from its command line: the unattended steps and the
// benchmark's timings.
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
#include "session_types.hpp"
#include "slice_view.hpp"
#include "view3d.hpp"
#include "volseg/io/error.hpp"
#include "volseg/io/files.hpp"
#include "volseg/io/registry.hpp"
#include "volseg/render/render.hpp"

namespace volseg::gui {

// The unattended run: open -> (first image, refined) -> segment -> final
// frame -> screenshot -> quit, one step per reply once the queue is empty.
void MainWindow::script_step() {
  if (worker_->pending() > 0 || script_done_) return;
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
      if (i < 3)
        request_frame(true, "time-drag", 2);
      else
        request_frame(false, "time-full", 0);
    }
    return;
  }
  script_done_ = true;
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
    sink += count_in_range(histogram_data_, e.edge(a), below_edge(histogram_data_.edges(), e.edge(b))).voxels;
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
    const auto c = count_in_range(histogram_data_, segmented_range_->first, segmented_range_->second);
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
