// SPDX-License-Identifier: MIT
#include <algorithm>
#include <cmath>
#include <optional>
#include <string>
#include <vector>

#include "command.hpp"
#include "volseg/render/job.hpp"
#include "volseg/render/series.hpp"

#include <cstdio>
#include <sstream>

#include "volseg/io/error.hpp"
#include "volseg/io/hints.hpp"
#include "volseg/mesh/mesh.hpp"
#include "volseg/render/render.hpp"

namespace volseg::cli {
namespace {

std::pair<int, int> parse_size(const std::string& text) {
  int width = 0, height = 0;
  char x = 0, extra = 0;
  std::istringstream in(text);
  if (!(in >> width >> x >> height) || x != 'x' || (in >> extra))
    throw Error("--size: '" + text + "' is not WIDTHxHEIGHT");
  if (width <= 0 || height <= 0) throw Error("--size: image size " + text + " is empty");
  return {width, height};
}

std::vector<double> numbers(const std::string& text, std::size_t count, const std::string& what) {
  std::vector<double> values;
  std::istringstream in(text);
  std::string item;
  while (std::getline(in, item, ',')) {
    try {
      std::size_t used = 0;
      values.push_back(std::stod(item, &used));
      if (used != item.size()) throw std::invalid_argument(item);
    } catch (const std::exception&) {
      throw Error(what + ": '" + item + "' is not a number");
    }
  }
  if (values.size() != count) throw Error(what + ": '" + text + "' needs " + std::to_string(count) + " numbers");
  return values;
}

render::Rgb colour(const std::string& text, const std::string& what) {
  const auto v = numbers(text, 3, what);
  for (double c : v)
    if (c < 0 || c > 1) throw Error(what + ": components are in [0, 1]");
  return {v[0], v[1], v[2]};
}

class RenderJobCommand final : public Command {
 public:
  CLI::App* add_to(CLI::App& app) override;
  void run(const Context& context) override;

 private:
  render::RenderOptions options_;
  SelectionOptions selection_;
  std::string level_ = "auto";
  std::string size_ = "1024x1024", camera_, view_, colormap_ = "viridis", memory_ = "512MiB", progress_ = "auto",
              mask_color_, background_, slice_at_, mask_surface_ = "smooth", scale_;
  std::vector<std::string> modes_, hints_;
  std::vector<double> iso_;
  std::optional<double> tf_lo_, tf_hi_, zoom_;
  std::string movie_, mesh_, mesh_ids_;
  int fps_ = 10;
  bool parallel_ = false, no_annotations_ = false, no_shade_ = false, no_cull_ = false, quiet_ = false;
};

CLI::App* RenderJobCommand::add_to(CLI::App& app) {
  auto* sub = app.add_subcommand("render", "Render a volume, its mask and surfaces on all ranks into PNG images");
  auto& o = options_;
  sub->add_option("input", o.input, input_help)->required();
  sub->add_option("--out", o.output,
                  "Output image NAME.png (--orbit: NAME-000.png ...; --progressive: "
                  "NAME-levelK.png first; --time A:B: frame_%04d.png, a frame per step)")
      ->required();
  selection_.add_to(*sub, true, true);
  sub->add_option("--movie", movie_,
                  "With --time A:B: the frames encoded into NAME.mp4, .mov or .mkv (H.264) or NAME.avi (MPEG-4), by "
                  "FFmpeg's libraries");
  sub->add_option("--fps", fps_, "Frames per second of --movie")->capture_default_str();
  sub->add_option("--mask", o.mask, "Mask volume of the same shape (from 'volseg segment')");
  sub->add_option("--mode", modes_,
                  "volume | mask | iso | slices, combined with commas or repeated (default: volume, and the mask's "
                  "surface with --mask)");
  sub->add_option("--iso", iso_, "Isosurface values of the scalar (mode iso)")->expected(1, -1);
  sub->add_option("--lo", o.lo, "Threshold: mode mask without --mask draws the surface of lo <= v <= hi");
  sub->add_option("--hi", o.hi, "Threshold (see --lo)");
  sub->add_option("--size", size_, "Image WIDTHxHEIGHT")->capture_default_str();
  sub->add_option("--camera", camera_, "AZIMUTH,ELEVATION[,ZOOM] in degrees (default 30,20,1)");
  sub->add_option("--view", view_, "View direction +x|-x|+y|-y|+z|-z (as ParaView's buttons); replaces --camera");
  sub->add_option("--zoom", zoom_, "Zoom (> 1 magnifies); with --view, or instead of --camera's third number");
  sub->add_flag("--parallel", parallel_, "Orthographic projection");
  sub->add_option("--orbit", o.orbit, "Render N frames around the volume (one PNG each)");
  sub->add_option("--level", level_, "Pyramid level: 0 is full resolution, or auto (finest that fits --memory)")
      ->capture_default_str();
  sub->add_option(
         "--memory", memory_,
         "Memory budget per rank for --level auto (512MiB, 2GiB); given, also the most one strip, tile or chunk of "
         "the input may take decoded (else VOLSEG_MEMORY, else 1GiB)")
      ->capture_default_str();
  sub->add_flag("--progressive", o.progressive, "Write coarser levels' images first, then the finer ones");
  sub->add_option("--pyramid-dir", o.pyramid_dir, "The volume's pyramid (default: NAME.pyramid beside it)");
  sub->add_option("--mask-pyramid-dir", o.mask_pyramid_dir, "The mask's pyramid (default: beside the mask)");
  std::string colormaps;
  for (const auto& name : render::colormap_names()) colormaps += (colormaps.empty() ? "" : " | ") + name;
  sub->add_option("--colormap", colormap_, colormaps)->capture_default_str();
  sub->add_option("--tf", o.opacity, "Opacity: ramp | shells | VALUE:OPACITY,... (piecewise linear, 0 outside)")
      ->capture_default_str();
  sub->add_option("--range-lo", tf_lo_, "Low end of the colour range (default: the data's minimum)");
  sub->add_option("--range-hi", tf_hi_, "High end of the colour range (default: the data's maximum)");
  sub->add_option("--mask-color", mask_color_, "R,G,B of the mask surface, each in [0, 1]");
  sub->add_option("--mask-opacity", o.frame.mask_opacity, "Opacity of the mask surface")->capture_default_str();
  sub->add_option("--mesh", mesh_, "Draw objects' meshes from this folder (volseg mesh --out), each in its colour");
  sub->add_option("--mesh-ids", mesh_ids_, "Objects of --mesh to draw: 1,4,7-9 (default: every one in the folder)");
  sub->add_option(
         "--mask-surface", mask_surface_,
         "smooth (the mask smoothed over about a voxel, each voxel kept on its side, then its half-way surface) | "
         "voxels (the exact staircase of the voxels)")
      ->capture_default_str();
  sub->add_option("--background", background_, "R,G,B of the background, each in [0, 1]");
  sub->add_option("--scale", scale_,
                  "Z,Y,X: stretch the drawing along each axis (vertical exaggeration: --scale 50,1,1); a "
                  "coordinate that decreases or is positive down (depth) is drawn reversed by itself");
  sub->add_option("--slice-at", slice_at_, "X,Y,Z of the slices as fractions of the volume (default 0.5,0.5,0.5)");
  sub->add_option("--sample-distance", o.frame.sample_distance,
                  "Ray step in the data's units, before --scale (default: half the level's smallest spacing)");
  sub->add_flag("--no-shade", no_shade_, "No gradient shading of the volume");
  sub->add_flag("--no-annotations", no_annotations_, "No colour bar, axes or title");
  sub->add_option("--title", o.frame.title, "Title line (default: volume, thresholds, level, ranks)");
  sub->add_flag("--no-cull", no_cull_, "Read and draw every brick (default: skip bricks that draw nothing)");
  sub->add_option("--backend", o.backend, "Backend that reads the full-resolution volume")->capture_default_str();
  sub->add_option("--hint", hints_, "Reader hint key=value (repeatable)");
  sub->add_option("--report", o.report, "Write a JSON report with per-rank read, render and composite times");
  sub->add_flag("--force", o.force, "Replace an existing report");
  sub->add_flag("--quiet", quiet_, "No progress and no summary");
  sub->add_option("--progress", progress_, "auto | bar | lines | none")->capture_default_str();
  sub->footer(
      "Runs on every rank: mpirun -np N volseg render ... Draws through OpenGL on X: on the X display of\n"
      "DISPLAY, or where there is none (a compute node) on a private Xvfb per node that volseg starts and stops.");
  return sub;
}

void RenderJobCommand::run(const Context& context) {
  const Comm& comm = context.comm;
  auto& o = options_;
  auto& f = o.frame;
  std::tie(f.width, f.height) = parse_size(size_);
  if (!camera_.empty()) f.camera = render::parse_camera(camera_);
  if (!view_.empty() && !camera_.empty()) throw Error("--view and --camera: give one of them");
  f.camera.view = view_;
  if (zoom_) {
    if (*zoom_ <= 0) throw Error("--zoom must be positive");
    f.camera.zoom = *zoom_;
  }
  f.camera.parallel = parallel_;
  f.modes = render::parse_modes(modes_, iso_);
  if (modes_.empty() && !o.mask.empty()) f.modes.mask = true;  // a mask given is a mask to show
  if (!iso_.empty() && !modes_.empty()) {
    bool asked = false;
    for (const auto& m : modes_) asked = asked || m.find("iso") != std::string::npos;
    if (!asked) throw Error("--iso given but no mode iso");
  }
  f.transfer.colormap = colormap_;
  f.transfer.lo = tf_lo_;
  f.transfer.hi = tf_hi_;
  if (!mask_color_.empty()) f.mask_color = colour(mask_color_, "--mask-color");
  if (!background_.empty()) f.background = colour(background_, "--background");
  if (!scale_.empty()) {
    const auto v = numbers(scale_, 3, "--scale");
    for (double x : v)
      if (!(x > 0) || !std::isfinite(x)) throw Error("--scale: each factor must be positive and finite, not " + scale_);
    o.frame.scale = {v[2], v[1], v[0]};  // given z, y, x as the dims; kept x, y, z
  }
  if (!slice_at_.empty()) {
    const auto v = numbers(slice_at_, 3, "--slice-at");
    f.slice_at = {v[0], v[1], v[2]};
  }
  if (o.frame.mask_opacity < 0 || o.frame.mask_opacity > 1) throw Error("--mask-opacity must be in [0, 1]");
  if (!mesh_ids_.empty() && mesh_.empty()) throw Error("--mesh-ids: give the mesh folder with --mesh");
  if (!mesh_.empty()) {
    // Every rank reads them: each draws the part in its own box.
    for (const std::uint64_t id : mesh_ids_.empty() ? mesh::mesh_ids(mesh_) : mesh::parse_ids(mesh_ids_)) {
      f.surfaces.push_back(render::object_surface(mesh_, id));
    }
    if (f.surfaces.empty()) throw Error("--mesh " + mesh_ + ": no object's mesh in the folder");
  }
  f.mask_surface = render::parse_mask_surface(mask_surface_);
  f.shade = !no_shade_;
  f.annotations = !no_annotations_;
  o.cull = !no_cull_;
  {
    io::Hints parsed;
    parsed.set("memory", memory_);
    o.memory = static_cast<std::uint64_t>(parsed.get_size("memory", 0));
    if (o.memory == 0) throw Error("--memory must be positive");
  }
  o.level = render::parse_level(level_);
  o.selection = selection_.selection();
  o.input_hints.insert(o.input_hints.end(), hints_.begin(), hints_.end());
  o.progress = quiet_ ? segment::ProgressMode::none : segment::parse_progress_mode(progress_);
  if (const auto time = selection_.step_range(); time && time->range()) {
    if (fps_ < 1 || fps_ > 120) throw Error("--fps must be 1 to 120");
    const auto steps = segment::input_steps(comm, o.backend, {o.input, o.selection}, o.input_hints, *time);
    const auto series = render::run_render_series(comm, o, steps, movie_, fps_);
    if (comm.rank() != 0 || quiet_) return;
    std::printf("render: %zu frames, %s ... %s, colour range [%g, %g] for all, %.2f s\n", series.frames.size(),
                series.frames.front().c_str(), series.frames.back().c_str(), series.lo, series.hi, series.seconds);
    if (!series.movie.empty()) std::printf("  movie: %s\n", series.movie.c_str());
    std::printf("  %s\n", render::display_way().c_str());
    return;
  }
  if (!movie_.empty()) throw Error("--movie encodes the frames of several steps: give --time all or A:B[:S]");
  const auto result = render::run_render(comm, o);
  if (comm.rank() != 0 || quiet_) return;
  for (const auto& frame : result.frames)
    std::printf("wrote %s (level %d, %.2f s)\n", frame.path.c_str(), frame.level, frame.seconds_since_start);
  double read = 0, draw = 0, composite = 0;
  for (const auto& r : result.ranks) {
    read = std::max(read, r.read);
    draw = std::max(draw, r.render + r.scene);
    composite = std::max(composite, r.composite);
  }
  std::printf("render: %d ranks, %.2f s (slowest rank: read %.2f s, render %.2f s, composite %.3f s)\n",
              result.comm_size, result.seconds, read, draw, composite);
  if (!o.report.empty()) std::printf("  report: %s\n", o.report.c_str());
  std::printf("  %s\n", render::display_way().c_str());
}

}  // namespace

// volseg-render's one command (render_program.cpp).
std::unique_ptr<Command> make_render_job_command() { return std::make_unique<RenderJobCommand>(); }

}  // namespace volseg::cli
