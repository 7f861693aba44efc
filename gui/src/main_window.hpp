// SPDX-License-Identifier: MIT
// volseg-gui's window (rank 0). It holds no data of the volume: it sends
// requests to the worker (worker.hpp) and shows the replies.
#pragma once

#include <QMainWindow>
#include <QPointer>

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "session_types.hpp"
#include "volseg/segment/histogram.hpp"

class QCheckBox;
class QComboBox;
class QDoubleSpinBox;
class QLabel;
class QLineEdit;
class QPlainTextEdit;
class QProgressBar;
class QPushButton;
class QSpinBox;
class QTabWidget;
class QTimer;
class QVBoxLayout;

namespace volseg::gui {

class ObjectsPanel;

class HistogramView;
class ReportView;
class SliceView;
class View3D;

// What the command line asks for (each action of the window has one), so a
// session can run unattended.
struct Script {
  std::string file, var, backend = "auto", pyramid_dir;
  std::string expr, where;  // a field computed from the file's variables, or a condition (--expr, --where)
  std::optional<long long> time;
  std::vector<std::string> hints;
  std::optional<double> lo, hi;
  std::string output, format;
  bool segment = false, force = false, quit = false;
  bool snap = false;  // move lo and hi to the nearest bin edges, as a drag does
  std::string screenshot, window_shot, timings;
  std::string level = "auto";  // of the refined frames
  std::string mesh;            // volseg mesh's folder: objects drawn with the volume
  std::vector<std::uint64_t> mesh_ids;
  std::optional<render::Camera> camera;
  int view_width = 0, view_height = 0;  // 0: the window's layout decides
  double process_start_epoch = 0;       // seconds since the Unix epoch
};

class MainWindow : public QMainWindow {
  Q_OBJECT
 public:
  // comm: every rank's (the others serve() it); the window's worker owns it.
  MainWindow(Comm comm, Script script);
  ~MainWindow() override;

  // For tests: the parts a user touches.
  HistogramView* histogram_view() const { return histogram_; }
  View3D* view() const { return view_; }
  QPushButton* segment_button() const { return segment_button_; }
  ObjectsPanel* objects_panel() const { return objects_; }
  SliceView* slice_view(int plane) const { return slices_[plane]; }  // 0 z, 1 y, 2 x
  const Planes* planes() const { return planes_.get(); }
  QPushButton* cancel_button() const { return cancel_button_; }
  QLineEdit* output_box() const { return output_; }
  QSpinBox* open_radius_box() const { return open_radius_; }
  QCheckBox* fill_holes_box() const { return fill_holes_; }
  std::pair<double, double> range() const;
  QString count_text() const;
  // The histogram's count of [lo, hi] (what the count label shows).
  segment::Histogram::Count count(double lo, double hi) const;
  QString command_text() const;
  QString last_error() const { return last_error_; }
  bool busy() const;
  int frames_shown() const { return frames_shown_; }
  int jobs_done() const { return jobs_done_; }
  int exit_code() const { return exit_code_; }

 public slots:
  void open_file(const QString& path);
  void set_range(double lo, double hi);
  void start_segment();
  void cancel();
  bool save_screenshot(const QString& path);
  // The view as a file: the open file, variable and step, the range, the
  // camera, the slices' point and the objects selected (the same fields as
  // the browser page's link, docs/gui.md "The view as a file"). Loading a
  // view of another file opens it first.
  bool save_view(const QString& path);
  bool load_view(const QString& path);

 signals:
  void replied(std::shared_ptr<volseg::gui::Reply> reply);
  void progressed(std::vector<std::int64_t> units, std::int64_t total);

 protected:
  void closeEvent(QCloseEvent*) override;

 private slots:
  void on_reply(std::shared_ptr<volseg::gui::Reply> reply);
  void on_progress(std::vector<std::int64_t> units, std::int64_t total);
  // coarse: half the view's size; level -1: the level of coarse frames (2)
  // or of refined ones (the script's, "auto" by default).
  void request_frame(bool coarse, const char* tag = "view", int level = -1);
  void request_slices();

 private:
  // The window's widgets, one function per panel (main_window_layout.cpp).
  void build_ui();
  void build_views(QWidget* parent);
  QWidget* build_threshold_panel(QWidget* parent);
  void connect_threshold_panel(QPushButton* mode, QPushButton* otsu_button);
  QWidget* build_volume_tab();
  QWidget* build_segment_tab();
  void connect_segment_tab();
  QWidget* build_report_tab();
  QWidget* build_view_tab();
  void build_menus();
  void on_opened(const Reply& reply);
  void on_segmented(const Reply& reply);
  void on_frame(const Reply& reply);
  void show_planes(const Planes& planes);
  // A click in slice p with an edit tool on (the Objects tab's): the voxel
  // at full resolution, and the id the slice shows there.
  void pick_in_slice(int p, double column, double row);
  // The Objects tab's "Show alone": the session's surface of the object in
  // the 3D view (as the page's row click); 0: the ranks' frames again.
  void show_alone(std::int64_t id);
  void on_surface(const Reply& reply);
  Json view_state() const;
  void apply_view(const Json& view);
  void set_range(double lo, double hi, bool redraw);
  void update_count();
  void update_command();
  void check_hints();
  void show_error(const QString& context, const QString& message);
  void script_step();
  void write_timings();
  void save_mask_as();
  OpenRequest open_request() const;
  // The Segment tab's request (the job's output, thresholds, operators, backend).
  SegmentRequest segment_request() const;
  std::vector<std::string> hint_list() const;

  Script script_;
  std::unique_ptr<Worker> worker_;
  int ranks_ = 1;

  // the volume
  Json opened_;
  std::optional<OpenRequest> opened_request_;  // as opened: the command line's selection
  segment::Histogram histogram_data_;
  std::optional<std::pair<double, double>> segmented_range_;  // the last job's range and its exact count
  std::uint64_t segmented_count_ = 0;
  std::string mask_;
  std::string mesh_folder_;  // objects' meshes drawn with the volume (File > Show object meshes, --mesh)
  std::vector<std::uint64_t> mesh_ids_;
  std::shared_ptr<Planes> planes_;
  std::array<double, 3> cursor_{0.5, 0.5, 0.5};  // x, y, z fractions
  Json pending_view_;                            // a loaded view, applied once its file is open
  double lo_ = 0, hi_ = 0;

  // widgets
  View3D* view_ = nullptr;
  SliceView* slices_[3] = {};
  HistogramView* histogram_ = nullptr;
  QCheckBox *log_ = nullptr, *show_volume_ = nullptr, *show_mask_ = nullptr, *show_slices_ = nullptr,
            *smooth_surface_ = nullptr;
  QDoubleSpinBox* z_scale_ = nullptr;
  QDoubleSpinBox *lo_box_ = nullptr, *hi_box_ = nullptr;
  QLabel *count_ = nullptr, *hint_status_ = nullptr, *frame_status_ = nullptr;
  QPlainTextEdit *info_ = nullptr, *summary_ = nullptr, *command_ = nullptr;
  QComboBox *variable_ = nullptr, *backend_ = nullptr, *format_ = nullptr;
  QSpinBox* time_ = nullptr;
  // The operators after the threshold (docs/operators.md): a hysteresis seed
  // range, open and close radii, fill holes.
  QCheckBox *seed_on_ = nullptr, *fill_holes_ = nullptr;
  QDoubleSpinBox *seed_lo_ = nullptr, *seed_hi_ = nullptr;
  QSpinBox *open_radius_ = nullptr, *close_radius_ = nullptr;
  QLineEdit *path_ = nullptr, *hints_ = nullptr, *output_ = nullptr;
  QLineEdit* expression_ = nullptr;  // the Volume tab's field: an expression of the variables
  QCheckBox* condition_ = nullptr;   // ... taken as a condition (1 where it holds)
  QPushButton *segment_button_ = nullptr, *cancel_button_ = nullptr;
  QVBoxLayout* rank_bars_layout_ = nullptr;
  std::vector<QProgressBar*> rank_bars_;
  ReportView* report_ = nullptr;
  ObjectsPanel* objects_ = nullptr;  // the Objects tab: label, the table, split
  QTabWidget* tabs_ = nullptr;
  QTimer *refine_timer_ = nullptr, *hint_timer_ = nullptr;

  // state
  bool job_running_ = false;
  int frames_shown_ = 0, jobs_done_ = 0, exit_code_ = 0;
  QString last_error_;
  // the script's progress
  bool script_done_ = false;
  bool script_segmented_ = false;
  // timings for the benchmark
  double first_image_seconds_ = -1, first_image_epoch_ = 0;
  int first_image_level_ = -1;
  struct TimedFrame {
    int level;
    int width, height;
    double seconds;
  };
  std::vector<TimedFrame> timed_frames_;
  int timing_frames_left_ = 0;
  double segment_seconds_ = 0;
};

}  // namespace volseg::gui
