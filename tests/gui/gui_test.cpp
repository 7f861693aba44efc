// SPDX-License-Identifier: MIT
// volseg-gui driven as a user would, with Qt Test, on every rank count it is
// registered for (under Xvfb, Qt's xcb platform): open -> the histogram ->
// drag a range on it -> Segment -> the refined 3D frame. Rank 0 runs the
// window; the other ranks serve it exactly as in volseg-gui. Afterwards every
// rank runs the batch segmentation of the same range, and the GUI's mask
// must equal it byte for byte.
#include <mpi.h>

#include <QVTKOpenGLNativeWidget.h>
#include <QApplication>
#include <QCheckBox>
#include <QComboBox>
#include <QDoubleSpinBox>
#include <QLineEdit>
#include <QMouseEvent>
#include <QPushButton>
#include <QSpinBox>
#include <QSurfaceFormat>
#include <QTableWidget>
#include <QTest>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <vector>

#include "histogram_view.hpp"
#include "main_window.hpp"
#include "objects_panel.hpp"
#include "session_types.hpp"
#include "slice_view.hpp"
#include "support/temp_dir.hpp"
#include "view3d.hpp"
#include "volseg/datasets/generate.hpp"
#include "volseg/io/nrrd.hpp"
#include "volseg/io/registry.hpp"
#include "volseg/segment/segment.hpp"

using namespace volseg;

namespace {

// Pixels of the 3D view neither grey nor its background: what an object in
// its colour covers.
int coloured_pixels(gui::View3D* view) {
  const QImage image = view->grabFramebuffer();
  int n = 0;
  for (int y = 0; y < image.height(); ++y)
    for (int x = 0; x < image.width(); ++x) {
      const QColor c = image.pixelColor(x, y);
      if (std::max({c.red(), c.green(), c.blue()}) - std::min({c.red(), c.green(), c.blue()}) > 40) ++n;
    }
  return n;
}

std::vector<char> file_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), {}};
}

// What the window test hands to the batch comparison.
// The mask the GUI makes with operators, beside its plain one.
std::string operators_mask(const std::string& mask) { return mask.substr(0, mask.size() - 5) + "-ops.nhdr"; }

struct Outcome {
  double lo = 0, hi = 0;
  double histogram_count = 0;
  bool histogram_exact = false;
};

// The Volume tab's expression (what its line edit sends): a session opened
// on a condition of a NetCDF file's variable shows its own histogram (1s
// and 0s) and segments, on every rank, the bytes batch --where writes.
int expression_session(const Comm& world, const volseg::testing::SharedTempDir& dir) {
  const std::string input = dir / "u.nc", gui_mask = dir / "where-gui.nhdr", batch_mask = dir / "where-batch.nhdr";
  const std::string condition = "u > 2 && u < 5";
  {
    io::VolumeInfo info;
    info.dims = {20, 24, 28};
    info.dtype = io::DType::f32;
    info.variable = "u";
    auto writer = io::create_writer("pnetcdf", {input, info, false}, world);
    datasets::generate(world, {datasets::Field::shells, 3, 1}, *writer, segment::ProgressMode::none);
    writer->close();
  }
  int failed = 0;
  auto fail = [&](const std::string& why) {
    if (world.rank() == 0) std::fprintf(stderr, "FAIL (expression session): %s\n", why.c_str());
    failed = 1;
  };
  {
    gui::Session session(world);
    gui::OpenRequest open;
    open.path = input;
    open.selection.expression = condition;
    open.selection.condition = true;
    auto reply = session.execute(open);
    if (!reply.error.empty()) fail("open: " + reply.error);
    if (world.rank() == 0 && !failed) {
      if (reply.data.value("where", "") != condition) fail("the reply does not name the condition");
      const auto& h = reply.data.at("histogram");
      if (h.at("lo").get<double>() != 0 || h.at("hi").get<double>() != 1) fail("the condition's values are not 0..1");
    }
    if (!failed) {
      gui::SegmentRequest segment;
      segment.lo = segment.hi = 1;
      segment.output = gui_mask;
      reply = session.execute(segment);
      if (!reply.error.empty()) fail("segment: " + reply.error);
    }
    // A name the file does not hold: one line naming it and its column.
    open.selection.expression = "u > 2 && w < 1";
    reply = session.execute(open);
    if (reply.error.find("unknown variable 'w' at column 10") == std::string::npos)
      fail("an unknown variable gave: '" + reply.error + "'");
  }
  if (!failed) {
    segment::SegmentOptions options;
    options.input = input;
    options.selection.expression = condition;
    options.selection.condition = true;
    options.output = batch_mask;
    options.lo = options.hi = 1;
    options.progress = segment::ProgressMode::none;
    const auto result = segment::run_segment(world, options);
    if (world.rank() == 0) {
      const auto a = file_bytes(io::data_path_for_header(gui_mask)),
                 b = file_bytes(io::data_path_for_header(batch_mask));
      if (a.empty() || a != b)
        fail("the GUI's mask of the condition differs from batch --where's");
      else if (result.stats.in_range == 0)
        fail("the condition holds nowhere: the check would be empty");
      else
        std::printf("PASS: the session's mask of --where '%s' equals batch --where's byte for byte\n",
                    condition.c_str());
    }
  }
  MPI_Bcast(&failed, 1, MPI_INT, 0, world.get());
  return failed;
}

}  // namespace

class GuiTest : public QObject {
  Q_OBJECT
 public:
  GuiTest(Comm* session, std::string input, std::string mask, std::string shot, Outcome* outcome)
      : session_(session),
        input_(std::move(input)),
        mask_(std::move(mask)),
        shot_(std::move(shot)),
        outcome_(outcome) {}

 private slots:
  void open_drag_segment_render() {
    gui::Script script;
    script.output = mask_;
    script.view_width = 320;
    script.view_height = 240;
    gui::MainWindow window(std::move(*session_), script);
    window.show();
    QVERIFY(QTest::qWaitForWindowExposed(&window));
    window.open_file(QString::fromStdString(input_));
    // The histogram arrives with the open; the first frame follows.
    auto* histogram = window.histogram_view();
    QTRY_VERIFY_WITH_TIMEOUT(!histogram->histogram().counts().empty(), 60000);
    QTRY_VERIFY_WITH_TIMEOUT(window.frames_shown() >= 1 && !window.busy(), 60000);
    QCOMPARE(window.last_error(), QString());
    // Before any mask, the 3D view draws the volume (and the threshold
    // surface): the shells cover the centre of the frame, which is not the
    // background.
    {
      const render::Image& first = window.view()->image();
      const std::uint8_t* corner = &first.rgba[0];
      std::size_t centre = 0, drawn = 0;
      for (int py = first.height * 3 / 8; py < first.height * 5 / 8; ++py)
        for (int px = first.width * 3 / 8; px < first.width * 5 / 8; ++px) {
          const std::uint8_t* p = &first.rgba[(static_cast<std::size_t>(py) * static_cast<std::size_t>(first.width) +
                                               static_cast<std::size_t>(px)) *
                                              4];
          ++centre;
          drawn += std::abs(p[0] - corner[0]) + std::abs(p[1] - corner[1]) + std::abs(p[2] - corner[2]) > 30;
        }
      QVERIFY2(drawn > centre / 2, "the volume is not drawn before a mask exists");
    }

    // Drag from about 2 to about 5 across the histogram.
    const int y = histogram->height() / 2;
    const QPoint from(histogram->x_of(2.0), y), to(histogram->x_of(5.0), y);
    QTest::mousePress(histogram, Qt::LeftButton, {}, from);
    QTest::mouseMove(histogram, QPoint((from.x() + to.x()) / 2, y));
    QTest::mouseMove(histogram, to);
    QTest::mouseRelease(histogram, Qt::LeftButton, {}, to);
    const auto [lo, hi] = window.range();
    // Snapped to bin edges (hi just below its edge), close to where it was dragged.
    QCOMPARE(lo, histogram->snapped(lo));
    QVERIFY(std::abs(lo - 2.0) < 0.1);
    QVERIFY(std::abs(hi - 5.0) < 0.1);
    QVERIFY(hi < histogram->snapped(hi) || hi == histogram->histogram().edges().hi);
    QVERIFY2(window.count_text().contains("exact"), qPrintable(window.count_text()));
    const auto count = window.count(lo, hi);
    QVERIFY(count.exact);
    QVERIFY(count.voxels > 0);
    // The equivalent batch command names the range exactly.
    QVERIFY2(window.command_text().contains("volseg segment"), qPrintable(window.command_text()));

    // Segment on every rank; the per-rank bars fill, the frame follows.
    const int frames = window.frames_shown();
    QTest::mouseClick(window.segment_button(), Qt::LeftButton);
    QTRY_VERIFY_WITH_TIMEOUT(window.jobs_done() == 1 && !window.busy() && window.frames_shown() > frames, 120000);
    QCOMPARE(window.last_error(), QString());
    QVERIFY2(window.count_text().contains("segmented"), qPrintable(window.count_text()));
    QVERIFY(std::filesystem::exists(mask_));

    // The 3D view: not blank, and the mask's colour where the mask projects
    // (the shells in range surround the centre). The frame counted above may
    // be the drag's, shown late under load: the one with the mask follows.
    auto reddish_now = [&] {
      const render::Image& shown = window.view()->image();
      std::size_t n = 0;
      for (std::size_t i = 0; i + 3 < shown.rgba.size(); i += 4) {
        const std::uint8_t* p = &shown.rgba[i];
        n += p[0] > 90 && p[0] > 1.4 * p[1] && p[0] > 1.4 * p[2];
      }
      return n > static_cast<std::size_t>(shown.width * shown.height) / 50;
    };
    QTRY_VERIFY_WITH_TIMEOUT(reddish_now(), 30000);
    const render::Image& image = window.view()->image();
    QCOMPARE(image.width, window.view()->frame_size().width());
    std::size_t reddish = 0, centre_reddish = 0, centre = 0, distinct = 0;
    std::vector<bool> seen(1 << 12);
    for (int py = 0; py < image.height; ++py)
      for (int px = 0; px < image.width; ++px) {
        const std::uint8_t* p = &image.rgba[(static_cast<std::size_t>(py) * static_cast<std::size_t>(image.width) +
                                             static_cast<std::size_t>(px)) *
                                            4];
        const bool red = p[0] > 90 && p[0] > 1.4 * p[1] && p[0] > 1.4 * p[2];
        reddish += red;
        const bool in_centre =
            std::abs(px - image.width / 2) < image.width / 8 && std::abs(py - image.height / 2) < image.height / 8;
        centre += in_centre;
        centre_reddish += in_centre && red;
        const int key = (p[0] >> 4) << 8 | (p[1] >> 4) << 4 | (p[2] >> 4);
        distinct += !seen[static_cast<std::size_t>(key)];
        seen[static_cast<std::size_t>(key)] = true;
      }
    // VOLSEG_GUI_TEST_SHOT=FILE keeps the frame for a person to look at.
    if (const char* keep = std::getenv("VOLSEG_GUI_TEST_SHOT")) window.save_screenshot(keep);
    QVERIFY2(distinct > 20, "the frame is (nearly) one colour");
    QVERIFY2(reddish > static_cast<std::size_t>(image.width * image.height) / 50, "no mask colour in the frame");
    QVERIFY2(centre_reddish > centre / 4, "the mask does not cover the centre it projects onto");
    QVERIFY(window.save_screenshot(QString::fromStdString(shot_)));
    QVERIFY(std::filesystem::exists(shot_));

    // The Objects tab: label the mask, split its largest object (a
    // preview, then Apply), as a user clicks them.
    {
      auto* objects = window.objects_panel();
      QTRY_VERIFY_WITH_TIMEOUT(objects->label_button()->isEnabled(), 10000);
      QTest::mouseClick(objects->label_button(), Qt::LeftButton);
      QTRY_VERIFY_WITH_TIMEOUT(objects->labelled().is_object() && !objects->busy() && !window.busy(), 120000);
      QCOMPARE(window.last_error(), QString());
      const auto before = objects->labelled().at("objects").get<long long>();
      auto* table = objects->table();
      QVERIFY(table->rowCount() > 0);
      table->selectRow(0);  // sorted by size: the largest
      const long long largest = table->item(0, 0)->text().toLongLong();
      const long long voxels = table->item(0, 1)->text().toLongLong();
      QVERIFY(objects->split_button()->isEnabled());
      QTest::mouseClick(objects->split_button(), Qt::LeftButton);
      QTRY_VERIFY_WITH_TIMEOUT(!objects->busy() && !window.busy(), 120000);
      QVERIFY2(objects->preview_text().contains("parts at h"), qPrintable(objects->preview_text()));
      QVERIFY(objects->apply_button()->isEnabled());
      if (const char* keep = std::getenv("VOLSEG_GUI_TEST_PREVIEW_SHOT")) window.grab().save(keep);
      QTest::mouseClick(objects->apply_button(), Qt::LeftButton);
      QTRY_VERIFY_WITH_TIMEOUT(!objects->busy() && !window.busy(), 120000);
      QCOMPARE(window.last_error(), QString());
      const std::string edited = objects->labelled().value("output", "");
      QVERIFY2(edited.find(".edited.") != std::string::npos, edited.c_str());
      QVERIFY(std::filesystem::exists(edited));
      const auto after = objects->labelled().at("objects").get<long long>();
      QVERIFY(after > before);
      // The parts hold the object's voxels, under its id and new ones.
      long long parts = 0, in_parts = 0;
      for (int r = 0; r < table->rowCount(); ++r) {
        const long long id = table->item(r, 0)->text().toLongLong();
        if (id == largest || id > before) ++parts, in_parts += table->item(r, 1)->text().toLongLong();
      }
      QCOMPARE(parts, after - before + 1);
      QCOMPARE(in_parts, voxels);
      QVERIFY2(window.command_text().contains("volseg edit"), qPrintable(window.command_text()));
      if (const char* keep = std::getenv("VOLSEG_GUI_TEST_SPLIT_SHOT")) window.grab().save(keep);

      // Delete the largest object left, then Undo and Redo: the table and the
      // journal follow.
      const int rows = table->rowCount();
      table->selectRow(0);
      const long long victim = table->item(0, 0)->text().toLongLong();
      QVERIFY(objects->delete_button()->isEnabled());
      QTest::mouseClick(objects->delete_button(), Qt::LeftButton);
      QTRY_VERIFY_WITH_TIMEOUT(!objects->busy() && !window.busy(), 120000);
      QCOMPARE(window.last_error(), QString());
      QCOMPARE(table->rowCount(), rows - 1);
      QVERIFY(objects->undo_button()->isEnabled());
      QTest::mouseClick(objects->undo_button(), Qt::LeftButton);
      QTRY_VERIFY_WITH_TIMEOUT(!objects->busy() && !window.busy(), 120000);
      QCOMPARE(table->rowCount(), rows);
      QVERIFY(objects->redo_button()->isEnabled());
      QTest::mouseClick(objects->redo_button(), Qt::LeftButton);
      QTRY_VERIFY_WITH_TIMEOUT(!objects->busy() && !window.busy(), 120000);
      QCOMPARE(table->rowCount(), rows - 1);
      for (int r = 0; r < table->rowCount(); ++r) QVERIFY(table->item(r, 0)->text().toLongLong() != victim);
      const auto dot = edited.find(".edited.");
      std::ifstream journal(edited.substr(0, dot) + edited.substr(dot + 7) + ".edits.json");  // LABELS.edits.json
      QVERIFY2(journal, "the journal beside the labels");
      const auto ops = nlohmann::json::parse(journal).at("edits");
      QCOMPARE(static_cast<int>(ops.size()), 2);
      QCOMPARE(QString::fromStdString(ops[1].at("op").get<std::string>()), QString("delete"));

      // Merge the two largest left (selected together): one row fewer, the
      // smaller id holds their voxels.
      table->sortItems(1, Qt::DescendingOrder);
      const long long a = table->item(0, 0)->text().toLongLong(), b = table->item(1, 0)->text().toLongLong();
      const long long both = table->item(0, 1)->text().toLongLong() + table->item(1, 1)->text().toLongLong();
      objects->pick_rows({a, b});
      QVERIFY(objects->merge_button()->isEnabled());
      QTest::mouseClick(objects->merge_button(), Qt::LeftButton);
      QTRY_VERIFY_WITH_TIMEOUT(!objects->busy() && !window.busy(), 120000);
      QCOMPARE(window.last_error(), QString());
      QCOMPARE(table->rowCount(), rows - 2);
      bool found = false;
      for (int r = 0; r < table->rowCount(); ++r)
        if (table->item(r, 0)->text().toLongLong() == std::min(a, b)) {
          found = true;
          QCOMPARE(table->item(r, 1)->text().toLongLong(), both);
        }
      QVERIFY(found);

      // Paint with the Paint tool: a click in the z slice's middle paints a
      // ball of radius 2 there, the table's row gaining what it painted.
      objects->tool_box()->setCurrentIndex(objects->tool_box()->findData("paint"));
      objects->radius_box()->setValue(2);
      objects->paint_id_box()->setValue(static_cast<int>(std::min(a, b)));
      QTRY_VERIFY_WITH_TIMEOUT(window.planes() != nullptr && !window.planes()->labels[0].empty(), 30000);
      auto* z = window.slice_view(0);
      QTest::mouseClick(z, Qt::LeftButton, {}, z->rect().center());
      QTRY_VERIFY_WITH_TIMEOUT(!objects->busy() && !window.busy(), 120000);
      QCOMPARE(window.last_error(), QString());
      objects->tool_box()->setCurrentIndex(objects->tool_box()->findData("erase"));
      QTest::mouseClick(z, Qt::LeftButton, {}, z->rect().topLeft() + QPoint(z->width() / 3, z->height() / 3));
      QTRY_VERIFY_WITH_TIMEOUT(!objects->busy() && !window.busy(), 120000);
      QCOMPARE(window.last_error(), QString());
      objects->tool_box()->setCurrentIndex(objects->tool_box()->findData("move"));
      std::ifstream again(edited.substr(0, dot) + edited.substr(dot + 7) + ".edits.json");
      const auto all = nlohmann::json::parse(again).at("edits");
      QCOMPARE(static_cast<int>(all.size()), 5);
      QCOMPARE(QString::fromStdString(all[3].at("op").get<std::string>()), QString("paint"));
      QCOMPARE(all[3].at("id").get<long long>(), std::min(a, b));
      QCOMPARE(all[3].at("radius").get<double>(), 2.0);
      QCOMPARE(QString::fromStdString(all[4].at("op").get<std::string>()), QString("erase"));
      QVERIFY(!objects->labelled().value("table_stale", false));

      // Save: the same labels, their whole object table beside them.
      const std::string edited_data = edited.substr(0, edited.size() - 5) + ".raw";  // NAME.nhdr's NAME.raw
      const std::vector<char> labels_before = file_bytes(edited_data);
      QVERIFY(!labels_before.empty());
      QVERIFY(objects->save_button()->isEnabled());
      QTest::mouseClick(objects->save_button(), Qt::LeftButton);
      QTRY_VERIFY_WITH_TIMEOUT(!objects->busy() && !window.busy(), 120000);
      QCOMPARE(window.last_error(), QString());
      QVERIFY(file_bytes(edited_data) == labels_before);
      {
        std::ifstream csv(edited + ".objects.csv");
        QVERIFY2(csv, "the table beside the saved labels");
        int lines = 0;
        for (std::string line; std::getline(csv, line);) lines += !line.empty() && line[0] != '#';
        QCOMPARE(lines - 1, table->rowCount());  // a header, then a row an object
      }

      // Show alone: the window draws the object's surface itself, in its
      // colour; a drag turns it there; Show all brings the ranks' frames back.
      const long long alone_id = std::min(a, b);
      objects->pick_rows({alone_id});
      QVERIFY(objects->alone_button()->isEnabled());
      QTest::mouseClick(objects->alone_button(), Qt::LeftButton);
      QTRY_VERIFY_WITH_TIMEOUT(window.view()->object() == alone_id, 60000);
      QCOMPARE(window.last_error(), QString());
      QVERIFY(window.view()->object_triangles() > 0);
      QVERIFY(objects->all_button()->isEnabled());
      QVERIFY2(coloured_pixels(window.view()) > 50, "the object alone is drawn in its colour");
      const double azimuth = window.view()->camera().azimuth;
      QTest::mousePress(window.view(), Qt::LeftButton, {}, window.view()->rect().center());
      {  // a drag's move event itself (QTest::mouseMove may only move the pointer)
        QMouseEvent move(QEvent::MouseMove, window.view()->rect().center() + QPoint(40, 0), Qt::NoButton,
                         Qt::LeftButton, Qt::NoModifier);
        QApplication::sendEvent(window.view(), &move);
      }
      QTest::mouseRelease(window.view(), Qt::LeftButton, {}, window.view()->rect().center() + QPoint(40, 0));
      QVERIFY(window.view()->camera().azimuth != azimuth);
      QCOMPARE(window.view()->object(), alone_id);

      // The view as a file: saved, changed, loaded back.
      const std::string view_file = std::filesystem::path(edited).parent_path() / "view.json";
      QVERIFY(window.save_view(QString::fromStdString(view_file)));
      QTest::mouseClick(objects->all_button(), Qt::LeftButton);
      QCOMPARE(window.view()->object(), 0);
      QCOMPARE(objects->shown(), 0);
      const auto saved_range = window.range();
      const auto saved_camera = window.view()->camera();
      render::Camera turned = saved_camera;
      turned.azimuth += 40;
      window.view()->set_camera(turned);
      window.set_range(saved_range.first, saved_range.second + 1);
      objects->pick_rows({});
      QVERIFY(window.load_view(QString::fromStdString(view_file)));
      QCOMPARE(window.range(), saved_range);
      QCOMPARE(window.view()->camera().azimuth, saved_camera.azimuth);
      QCOMPARE(objects->picked(), std::vector<std::int64_t>{alone_id});
      QTRY_VERIFY_WITH_TIMEOUT(window.view()->object() == alone_id, 60000);  // shown alone again
      if (const char* keep = std::getenv("VOLSEG_GUI_TEST_EDIT_SHOT")) window.grab().save(keep);
    }

    // The operators of the Segment tab: open 1 and fill holes, shown in the
    // command; main() compares the mask with the batch job's.
    window.output_box()->setText(QString::fromStdString(operators_mask(mask_)));
    window.open_radius_box()->setValue(1);
    window.fill_holes_box()->setChecked(true);
    QVERIFY2(window.command_text().contains("--open 1 --fill-holes"), qPrintable(window.command_text()));
    QTest::mouseClick(window.segment_button(), Qt::LeftButton);
    QTRY_VERIFY_WITH_TIMEOUT(window.jobs_done() == 2 && !window.busy(), 120000);
    QCOMPARE(window.last_error(), QString());

    *outcome_ = {lo, hi, count.voxels, count.exact};
    window.close();
  }

 private:
  Comm* session_;
  std::string input_, mask_, shot_;
  Outcome* outcome_;
};

int main(int argc, char** argv) {
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  int failed = 0;
  {
    Comm world(MPI_COMM_WORLD);
    volseg::testing::SharedTempDir dir(MPI_COMM_WORLD);
    const std::string input = dir / "shells.nhdr", gui_mask = dir / "gui-mask.nhdr",
                      batch_mask = dir / "batch-mask.nhdr";
    {
      io::VolumeInfo info;
      info.dims = {40, 48, 56};
      info.dtype = io::DType::f32;
      auto writer = io::create_writer("posix", {input, info, false}, world);
      datasets::generate(world, {datasets::Field::shells, 3, 1}, *writer, segment::ProgressMode::none);
      writer->close();
    }
    Outcome outcome;
    Comm session = world.duplicate();
    if (world.rank() == 0) {
      QSurfaceFormat::setDefaultFormat(QVTKOpenGLNativeWidget::defaultFormat());
      int qt_argc = 1;
      QApplication app(qt_argc, argv);
      GuiTest test(&session, input, gui_mask, dir / "shot.png", &outcome);
      failed = QTest::qExec(&test, argc, argv);
      if (failed) std::fprintf(stderr, "gui test failed on %d ranks\n", world.size());
    } else {
      gui::serve(session);
    }
    // The batch job of the same range on every rank: the same bytes.
    MPI_Bcast(&failed, 1, MPI_INT, 0, world.get());
    double range[2] = {outcome.lo, outcome.hi};
    MPI_Bcast(range, 2, MPI_DOUBLE, 0, world.get());
    if (!failed) {
      segment::SegmentOptions options;
      options.input = input;
      options.output = batch_mask;
      options.lo = range[0];
      options.hi = range[1];
      options.progress = segment::ProgressMode::none;
      const auto result = segment::run_segment(world, options);
      if (world.rank() == 0) {
        const auto a = file_bytes(io::data_path_for_header(gui_mask)),
                   b = file_bytes(io::data_path_for_header(batch_mask));
        if (a.empty() || a != b) {
          std::fprintf(stderr, "FAIL: the GUI's mask (%zu bytes) differs from the batch mask (%zu bytes)\n", a.size(),
                       b.size());
          failed = 1;
        }
        if (static_cast<double>(result.stats.in_range) != outcome.histogram_count) {
          std::fprintf(stderr, "FAIL: the histogram counted %.0f voxels in [%.17g, %.17g], the threshold pass %llu\n",
                       outcome.histogram_count, range[0], range[1],
                       static_cast<unsigned long long>(result.stats.in_range));
          failed = 1;
        }
        if (!failed)
          std::printf("PASS: mask equal to the batch mask byte for byte; histogram count %.0f == threshold pass\n",
                      outcome.histogram_count);
      }
      // The same with the operators the test chose (open 1, fill holes).
      options.output = dir / "batch-ops.nhdr";
      options.operators.open = 1;
      options.operators.fill_holes = true;
      const auto with_operators = segment::run_segment(world, options);
      if (world.rank() == 0) {
        const auto a = file_bytes(io::data_path_for_header(operators_mask(gui_mask))),
                   b = file_bytes(io::data_path_for_header(options.output));
        if (a.empty() || a != b || with_operators.stats.in_range == result.stats.in_range) {
          std::fprintf(stderr,
                       "FAIL: the GUI's mask with operators differs from the batch job's (or equals the plain)\n");
          failed = 1;
        } else {
          std::printf("PASS: the GUI's mask with --open 1 --fill-holes equals the batch job's byte for byte\n");
        }
      }
    }
    MPI_Bcast(&failed, 1, MPI_INT, 0, world.get());
    if (!failed) failed = expression_session(world, dir);
  }
  MPI_Finalize();
  return failed ? 1 : 0;
}

#include "gui_test.moc"
