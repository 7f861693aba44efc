// SPDX-License-Identifier: MIT
// volseg-gui: rank 0 shows the window, every other rank serves it.
//   mpirun -np N volseg-gui [FILE] [--lo A --hi B --segment --out M.nhdr --screenshot S.png --quit]
#include <mpi.h>

#include <QVTKOpenGLNativeWidget.h>
#include <QApplication>
#include <QSurfaceFormat>

#include <CLI/CLI.hpp>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <string>

#include "main_window.hpp"
#include "session_types.hpp"
#include "volseg/io/comm.hpp"
#include "volseg/io/error.hpp"
#include "volseg/io/registry.hpp"
#include "volseg/mesh/mesh.hpp"
#include "volseg/render/job.hpp"
#include "volseg/render/render.hpp"
#include "volseg/version.hpp"

namespace {

// "WxH"
bool parse_size(const std::string& text, int& width, int& height) {
  return std::sscanf(text.c_str(), "%dx%d", &width, &height) == 2 && width > 0 && height > 0;
}

}  // namespace

int main(int argc, char** argv) {
  const double start_epoch = std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  int provided = 0;
  // Rank 0 calls MPI from its worker thread only (not the one that
  // initialised MPI); segment's collective pipeline adds an I/O thread.
  volseg::prefer_checked_mpi_io();  // errors reported, not dropped (OMPIO drops them)
  volseg::prefer_lone_start();      // a singleton: no daemon, no fabric probes
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  std::signal(SIGXFSZ, SIG_IGN);
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  int code = 0;
  {
    volseg::Comm world(MPI_COMM_WORLD);
    volseg::gui::Script script;
    script.process_start_epoch = start_epoch;
    std::string size, camera;
    CLI::App app{
        "volseg-gui: pick a threshold on the exact histogram, segment on every rank, see the result.\n"
        "Run it as 'mpirun -np N volseg-gui [FILE]': rank 0 shows the window, the other ranks work.\n"
        "Every action can be given here too, so a session can run unattended."};
    app.set_version_flag("--version", std::string("volseg-gui ") + volseg::version(),
                         "Print which volseg this is and exit");
    app.add_option("file", script.file,
                   "Volume to open: a raw volume's .nhdr header, a NetCDF file, a Zarr v2 array or an OME-Zarr image");
    app.add_option("--var", script.var, "NetCDF variable (default: the first)");
    auto* expr = app.add_option("--expr", script.expr,
                                "A field computed from the file's variables, opened instead of one: 'sqrt(u*u + v*v)'");
    app.add_option("--where", script.where,
                   "A condition on the file's variables (1 where it holds): 'T > 10 && S < 34.5'")
        ->excludes(expr);
    app.add_option("--time", script.time, "Step of a 4D variable");
    app.add_option("--backend", script.backend, "Backend that reads the input (auto: by format)")
        ->capture_default_str();
    app.add_option("--hint", script.hints, "Backend hint key=value (repeatable), as for 'volseg segment'");
    app.add_option("--pyramid-dir", script.pyramid_dir, "Where the input's brick pyramid is (default: beside it)");
    app.add_option("--lo", script.lo, "Lower threshold (inclusive)");
    app.add_option("--hi", script.hi, "Upper threshold (inclusive)");
    app.add_flag("--snap", script.snap,
                 "Move --lo and --hi to the nearest histogram bin edges (exact counts), as a drag does");
    app.add_option("--out", script.output, "Mask file the Segment button writes (default: INPUT-mask.nhdr)");
    app.add_option("--format", script.format, "Mask format: raw, cdf2, cdf5 or netcdf4 (default: the input's)");
    app.add_flag("--force", script.force, "Replace an existing mask file");
    app.add_flag("--segment", script.segment, "Segment once the volume is open");
    app.add_option("--screenshot", script.screenshot, "Save the 3D view as PNG when everything asked is done");
    app.add_option("--window-shot", script.window_shot, "Save the whole window as PNG when everything asked is done");
    app.add_option("--size", size, "Size of the 3D view, WxH (default: the window's layout)");
    app.add_option("--camera", camera, "Camera azimuth,elevation[,zoom] in degrees");
    app.add_option("--level", script.level, "Pyramid level of refined frames: auto (by --memory, 512 MiB) or N")
        ->capture_default_str();
    app.add_option("--mesh", script.mesh, "Draw objects' meshes from this folder (volseg mesh --out)");
    std::string mesh_ids;
    app.add_option("--mesh-ids", mesh_ids, "Objects of --mesh to draw: 1,4,7-9 (default: every one)");
    app.add_option("--timings", script.timings, "Write the benchmark's timings (JSON) at the end");
    app.add_flag("--quit", script.quit, "Close the window when everything asked is done (exit status 1 on an error)");
    try {
      app.parse(argc, argv);
      if (!size.empty() && !parse_size(size, script.view_width, script.view_height))
        throw volseg::Error("--size must be WxH, like 1024x768 (got '" + size + "')");
      if (!camera.empty()) script.camera = volseg::render::parse_camera(camera);
      volseg::render::parse_level(script.level);  // "auto" or N: refused here, before any window
      if (!mesh_ids.empty() && script.mesh.empty()) throw volseg::Error("--mesh-ids: give the folder with --mesh");
      if (!script.mesh.empty())
        script.mesh_ids = mesh_ids.empty() ? volseg::mesh::mesh_ids(script.mesh) : volseg::mesh::parse_ids(mesh_ids);
      if (script.lo.has_value() != script.hi.has_value()) throw volseg::Error("--lo and --hi go together");
      if (script.segment && !(script.lo && script.hi)) throw volseg::Error("--segment needs --lo and --hi");
      if (provided < MPI_THREAD_SERIALIZED)
        throw volseg::Error("this MPI library gives no thread support (MPI_THREAD_SERIALIZED at least is needed)");
      volseg::io::check_parallel_netcdf();
      // The window needs the user's display; a batch run (pictures, then
      // --quit) draws on a private Xvfb where there is none. One clear line,
      // on every rank, when neither can be.
      const bool batch = script.quit && !(script.screenshot.empty() && script.window_shot.empty());
      const std::string way = volseg::render::check_display(
          world, batch ? volseg::render::Drawing::offscreen : volseg::render::Drawing::window);
      if (rank == 0 && batch) std::printf("volseg-gui: %s\n", way.c_str());
      volseg::Comm session = world.duplicate();
      if (rank == 0) {
        QSurfaceFormat::setDefaultFormat(QVTKOpenGLNativeWidget::defaultFormat());
        int qt_argc = 1;
        QApplication qt(qt_argc, argv);
        volseg::gui::MainWindow window(std::move(session), script);
        window.show();
        const int qt_code = qt.exec();
        code = window.exit_code() ? window.exit_code() : qt_code;
      } else {
        volseg::gui::serve(session);
      }
    } catch (const CLI::CallForHelp& e) {
      if (rank == 0) app.exit(e);
    } catch (const CLI::CallForVersion& e) {
      if (rank == 0) app.exit(e);
    } catch (const CLI::ParseError& e) {
      if (rank == 0) std::fprintf(stderr, "volseg-gui: error: %s (see 'volseg-gui --help')\n", e.what());
      code = 2;
    } catch (const std::exception& e) {
      if (rank == 0) std::fprintf(stderr, "volseg-gui: error: %s\n", e.what());
      code = 1;
    }
  }
  MPI_Finalize();
  return code;
}
