// SPDX-License-Identifier: MIT
#include "volseg/render/job.hpp"

#include <unistd.h>

#include <charconv>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <future>
#include <nlohmann/json.hpp>

#include "rectilinear.hpp"
#include "volseg/io/auto_backend.hpp"
#include "volseg/io/error.hpp"
#include "volseg/io/files.hpp"
#include "volseg/io/registry.hpp"
#include "volseg/pyramid/pyramid.hpp"
#include "volseg/render/load.hpp"
#include "volseg/render/render.hpp"
#include "volseg/segment/expression.hpp"
#include "volseg/segment/progress.hpp"
#include "volseg/version.hpp"

namespace volseg::render {
namespace {

using Clock = std::chrono::steady_clock;
double since(Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); }

// NAME.png -> NAME-SUFFIX.png
std::string with_suffix(const std::string& path, const std::string& suffix) {
  std::filesystem::path p(path);
  return (p.parent_path() / (p.stem().string() + "-" + suffix + p.extension().string())).string();
}

void check_output(const RenderOptions& o) {
  namespace fs = std::filesystem;
  if (o.output.empty() && o.keep_image && o.report.empty()) return;
  if (o.output.empty() && !o.keep_image) throw Error("no output image (--out NAME.png)");
  if (!o.output.empty()) {
    if (fs::path(o.output).extension() != ".png") throw Error("output " + o.output + " is not a .png file");
    fs::path folder = fs::path(o.output).parent_path();
    if (folder.empty()) folder = ".";
    if (::access(folder.c_str(), W_OK) != 0) throw_errno("cannot write the image in", folder.string());
  }
  if (!o.report.empty()) {
    fs::path report_folder = fs::path(o.report).parent_path();
    if (report_folder.empty()) report_folder = ".";
    if (::access(report_folder.c_str(), W_OK) != 0) throw_errno("cannot write the report in", report_folder.string());
  }
  if (!o.report.empty()) io::refuse_existing(o.report, o.force, io::Streams::written_in_place);
}

std::string number(double value) {
  char text[32];
  std::snprintf(text, sizeof text, "%g", value);
  return text;
}

std::vector<RankRenderTimes> gather(const Comm& comm, const RankRenderTimes& t) {
  constexpr int fields = 9;
  double mine[fields] = {t.read,
                         t.scene,
                         t.render,
                         t.composite,
                         t.annotate,
                         t.write,
                         double(t.bytes_read),
                         double(t.bricks),
                         double(t.bricks_skipped)};
  std::vector<double> all(comm.rank() == 0 ? static_cast<std::size_t>(fields * comm.size()) : 0);
  check_mpi(MPI_Gather(mine, fields, MPI_DOUBLE, all.data(), fields, MPI_DOUBLE, 0, comm.get()), "MPI_Gather");
  std::vector<RankRenderTimes> result;
  for (std::size_t r = 0; r < all.size() / fields; ++r) {
    const double* v = &all[r * fields];
    result.push_back({v[0], v[1], v[2], v[3], v[4], v[5], static_cast<std::uint64_t>(v[6]),
                      static_cast<std::int64_t>(v[7]), static_cast<std::int64_t>(v[8])});
  }
  return result;
}

void write_report(const RenderOptions& o, const RenderResult& r) {
  nlohmann::json j;
  j["input"] = o.input;
  j["mask"] = o.mask;
  j["backend"] = r.backend;  // of the input's full-resolution level; coarser ones are read with posix
  if (!r.backend_reason.empty()) j["backend_choice"] = {{"backend", r.backend}, {"reason", r.backend_reason}};
  j["volseg_version"] = version();
  j["ranks"] = r.comm_size;
  j["seconds"] = r.seconds;
  j["dims"] = {r.dims[0], r.dims[1], r.dims[2]};
  j["size"] = {o.frame.width, o.frame.height};
  j["memory_budget"] = o.memory;
  j["level_bytes"] = r.level_bytes;
  j["camera"] = {{"position", r.camera.position}, {"focal_point", r.camera.focal_point},
                 {"view_up", r.camera.view_up},   {"view_angle", r.camera.view_angle},
                 {"parallel", r.camera.parallel}, {"parallel_scale", r.camera.parallel_scale}};
  // Where things lie as drawn (x0, x1, y0, y1, z0, z1): the volume's box in
  // its coordinates, and the box of everything drawn (null: nothing).
  j["bounds"] = r.camera.bounds;
  auto drawn = nlohmann::json::array();
  for (double v : r.camera.drawn) drawn.push_back(std::isnan(v) ? nlohmann::json(nullptr) : nlohmann::json(v));
  j["drawn_bounds"] = drawn;
  for (const auto& f : r.frames)
    j["frames"].push_back({{"path", f.path}, {"level", f.level}, {"seconds_since_start", f.seconds_since_start}});
  for (std::size_t i = 0; i < r.ranks.size(); ++i) {
    const auto& t = r.ranks[i];
    j["per_rank"].push_back({{"rank", i},
                             {"read", t.read},
                             {"scene", t.scene},
                             {"render", t.render},
                             {"composite", t.composite},
                             {"annotate", t.annotate},
                             {"write", t.write},
                             {"bytes_read", t.bytes_read},
                             {"bricks", t.bricks},
                             {"bricks_skipped", t.bricks_skipped}});
  }
  io::write_file_atomically(o.report, j.dump(2) + "\n");
}

// Writes one PNG at a time on its own thread; wait() records when it was
// done in its frame (on the calling thread, so frames may grow meanwhile).
struct FrameWriter {
  Clock::time_point job_start;
  std::vector<FrameRecord>& frames;
  std::future<double> pending;  // when the write finished, since job_start
  std::size_t pending_frame = 0;
  double seconds = 0;  // spent writing (touched by the writing thread until wait())

  void start(Image image, std::string path, std::size_t frame) {
    pending_frame = frame;
    pending = std::async(std::launch::async, [this, image = std::move(image), path = std::move(path)] {
      const auto began = Clock::now();
      write_png(image, path);
      seconds += since(began);
      return since(job_start);
    });
  }
  // Waits for the write under way and throws its error.
  void wait() {
    if (pending.valid()) frames[pending_frame].seconds_since_start = pending.get();
  }
};

// Bad options, refused before any work.
void check_options(const RenderOptions& o) {
  const FrameSettings& frame = o.frame;
  if (frame.width <= 0 || frame.height <= 0)
    throw Error("image size " + std::to_string(frame.width) + "x" + std::to_string(frame.height) + " is empty");
  check_colormap(frame.transfer.colormap);
  parse_opacity(o.opacity, 0, 1);  // its syntax (presets take the data's range later)
  if (!frame.camera.view.empty()) {
    double direction[3], up[3];
    view_direction(frame.camera.view, direction, up);
  }
  if (o.orbit < 0) throw Error("--orbit must not be negative");
  if (!(frame.sample_distance >= 0) || !std::isfinite(frame.sample_distance))
    throw Error("--sample-distance must be positive (or 0 for half the level's spacing)");
  if (!(frame.mask_opacity >= 0 && frame.mask_opacity <= 1)) throw Error("--mask-opacity must be in [0, 1]");
  if (o.lo.has_value() != o.hi.has_value()) throw Error("--lo and --hi go together");
  if (o.lo && o.hi && *o.lo > *o.hi) throw Error("--lo is above --hi");
  if (frame.transfer.lo && frame.transfer.hi && *frame.transfer.lo >= *frame.transfer.hi)
    throw Error("--range-lo must be below --range-hi");
  if (frame.modes.mask && o.mask.empty() && !(o.lo && o.hi))
    throw Error("mode mask needs a mask (--mask FILE) or thresholds (--lo, --hi)");
}

// Collective. The level asked for, or the finest that fits the memory
// budget; checks that the mask has it and has the volume's shape.
int pick_level(const Comm& comm, const RenderOptions& o, const Source& field, const std::optional<Source>& mask) {
  const FrameSettings& frame = o.frame;
  const int levels = field.pyramid ? static_cast<int>(field.pyramid->levels().size()) : 1;
  int level = 0;
  if (!o.level) {
    if (field.pyramid)
      level = choose_level(*field.pyramid, comm.size(), mask.has_value(), frame.width, frame.height, o.memory);
    else {
      const auto dims = open_source(comm, field, 0)->info().dims;
      if (estimated_bytes(dims, comm.size(), mask.has_value(), frame.width, frame.height, true) > o.memory)
        throw Error(o.input + " at full resolution needs more than " + std::to_string(o.memory >> 20) +
                    " MiB per rank and has no pyramid: build one with 'volseg pyramid " + o.input + "'");
    }
  } else {
    if (*o.level < 0 || *o.level >= levels)
      throw Error("level '" + std::to_string(*o.level) + "' does not exist: " + o.input + " has levels 0.." +
                  std::to_string(levels - 1) + (field.pyramid ? "" : " (no pyramid: build one with 'volseg pyramid')"));
    level = *o.level;
  }
  if (!mask) return level;
  if (level > 0 && (!mask->pyramid || static_cast<int>(mask->pyramid->levels().size()) <= level))
    throw Error("mask " + o.mask + " has no pyramid level " + std::to_string(level) +
                " (build one with 'volseg pyramid " + o.mask + "' or 'segment --pyramid')");
  auto volume = open_source(comm, field, 0), other = open_source(comm, *mask, 0, true);
  const auto a = volume->info().dims, b = other->info().dims;
  volume->close();
  other->close();
  if (a != b)
    throw Error("mask " + o.mask + " has dims " + std::to_string(b[0]) + "," + std::to_string(b[1]) + "," +
                std::to_string(b[2]) + " but " + o.input + " has " + std::to_string(a[0]) + "," + std::to_string(a[1]) +
                "," + std::to_string(a[2]) + " (z,y,x)");
  return level;
}

// The window's limits decide what is bad input before any reading.
void check_image_size(const FrameSettings& frame, const Renderer& renderer) {
  if (frame.width > renderer.max_size() || frame.height > renderer.max_size())
    throw Error("image size " + std::to_string(frame.width) + "x" + std::to_string(frame.height) + " is outside 1.." +
                std::to_string(renderer.max_size()) + " (this OpenGL's largest image side)");
}

// What run_render decides before it reads a brick: the sources and their
// backend, the level and the levels drawn, and what decides culling.
struct RenderPlan {
  io::AutoChoice reading;
  Source field;
  std::optional<Source> mask;
  int level = 0;
  std::vector<int> levels;  // drawn in this order: with --progressive two coarser ones first
  int frames_per_level = 1;
  Culling culling;
  std::string scalar_name;  // the colour bar's title: the variable and its units
};

RenderPlan plan_render(const Comm& comm, const RenderOptions& o) {
  RenderPlan plan;
  plan.reading = io::resolve_backend(comm, o.backend, o.input, io::Access::copy);
  Source& field = plan.field;
  field.path = o.input;
  field.backend = plan.reading.backend;
  field.selection = o.selection;
  field.hints = o.input_hints;
  field.pyramid = find_pyramid(comm, o.input, o.pyramid_dir, o.selection);
  auto& mask = plan.mask;
  if (!o.mask.empty()) {
    mask.emplace();
    mask->path = o.mask;
    mask->pyramid = find_pyramid(comm, o.mask, o.mask_pyramid_dir);
  }
  {  // the input's coordinate variables, as the file has them (a pyramid
     // keeps spacing and origin only)
    auto reader = segment::open_input(field.backend, {field.path, field.selection}, comm, field.hints);
    const io::VolumeInfo& info = reader->info();
    field.coordinates = info.coordinates;
    plan.scalar_name = info.variable;
    if (auto units = info.attributes.find("units"); units != info.attributes.end() && !units->second.empty())
      plan.scalar_name += (plan.scalar_name.empty() ? "" : " ") + ("(" + units->second + ")");
    reader->close();
  }
  if (mask) mask->coordinates = field.coordinates;  // a mask is drawn on the field's grid
  if (has_uneven_axis(field.coordinates)) {
    // Pyramid levels halve index space; an uneven axis is resampled from
    // level 0 instead (rectilinear.hpp).
    field.pyramid.reset();
    if (mask) mask->pyramid.reset();
  }

  const int level = plan.level = pick_level(comm, o, field, mask);
  const int levels = field.pyramid ? static_cast<int>(field.pyramid->levels().size()) : 1;
  if (o.progressive)
    for (int l = std::min(level + 2, levels - 1); l > level; --l)
      if (!mask || (mask->pyramid && static_cast<int>(mask->pyramid->levels().size()) > l)) plan.levels.push_back(l);
  plan.levels.push_back(level);
  plan.frames_per_level = std::max(o.orbit, 1);

  Culling& culling = plan.culling;
  culling.enabled = o.cull;
  culling.modes = o.frame.modes;
  if (o.lo && o.hi) culling.threshold = std::array<double, 2>{*o.lo, *o.hi};
  culling.slice_at = o.frame.slice_at;
  return plan;
}

// Reads a level's piece on every rank and hands it to the renderer. The
// colour range must be known before culling judges the bricks: from the
// pyramid's statistics, or else from the piece read.
void load_level(const Comm& comm, const RenderOptions& o, RenderPlan& plan, int l, FrameSettings& frame,
                Renderer& renderer, RenderResult& result, RankRenderTimes& times) {
  const Source& field = plan.field;
  if (field.pyramid) {
    const auto range = value_range(*field.pyramid);
    frame.transfer.lo = o.frame.transfer.lo.value_or(range[0]);
    frame.transfer.hi = o.frame.transfer.hi.value_or(range[1]);
    frame.transfer.opacity = parse_opacity(o.opacity, *frame.transfer.lo, *frame.transfer.hi);
    plan.culling.transfer = frame.transfer;
  } else {
    plan.culling.enabled = false;
  }
  LoadStats load;
  Piece piece = load_piece(comm, field, plan.mask, l, plan.culling, load);
  if (!field.pyramid) {
    frame.transfer.lo = o.frame.transfer.lo.value_or(piece.field_min);
    frame.transfer.hi = o.frame.transfer.hi.value_or(piece.field_max);
    frame.transfer.opacity = parse_opacity(o.opacity, *frame.transfer.lo, *frame.transfer.hi);
  }
  times.read += load.seconds;
  times.bytes_read += load.bytes_read;
  times.bricks += load.bricks;
  times.bricks_skipped += load.bricks_skipped;
  result.dims = piece.dims;
  renderer.set_piece(std::move(piece));
}

// The title a frame gets when none is asked for: file, variable, step,
// thresholds, level and ranks.
std::string default_title(const RenderOptions& o, int l, int ranks) {
  std::string title = std::filesystem::path(o.input).filename().string();
  if (!o.selection.variable.empty()) title += " " + o.selection.variable;
  if (o.selection.step) title += " step " + std::to_string(*o.selection.step);
  if (o.lo && o.hi) title += "  [" + number(*o.lo) + ", " + number(*o.hi) + "]";
  title += "  level " + std::to_string(l) + "  " + std::to_string(ranks) + (ranks == 1 ? " rank" : " ranks");
  return title;
}

// NAME.png, NAME-003.png for an orbit's frames, -levelL for a coarser level.
std::string frame_path(const RenderOptions& o, int f, int l, int level) {
  std::string path = o.output;
  if (o.orbit > 0) {
    char index[16];
    std::snprintf(index, sizeof index, "%03d", f);
    path = with_suffix(path, index);
  }
  if (l != level) path = with_suffix(path, "level" + std::to_string(l));
  return path;
}

// Draws frame f of level l; rank 0 encodes and writes its PNG on a thread
// while the ranks draw the next frame; a failed write stops the job at the
// next frame (or at the end), on every rank.
void draw_frame(const Comm& comm, const RenderOptions& o, const RenderPlan& plan, int l, int f,
                const FrameSettings& frame, Renderer& renderer, FrameWriter& writer, RenderResult& result,
                RankRenderTimes& times) {
  FrameSettings s = frame;
  if (o.orbit > 0) s.camera.orbit = 360.0 * f / o.orbit;
  if (s.scalar_name == FrameSettings{}.scalar_name && !plan.scalar_name.empty()) s.scalar_name = plan.scalar_name;
  if (s.title.empty()) s.title = default_title(o, l, comm.size());
  Image image = renderer.render(s);
  const auto& t = renderer.last_times();
  times.scene += t.scene;
  times.render += t.render;
  times.composite += t.composite;
  times.annotate += t.annotate;
  if (o.keep_image && comm.rank() == 0) result.image = image;
  if (o.output.empty()) return;
  std::string path = frame_path(o, f, l, plan.level);
  result.frames.push_back({path, l, 0});
  collectively(comm, [&] {
    if (comm.rank() != 0) return;
    writer.wait();
    writer.start(std::move(image), path, result.frames.size() - 1);
  });
}

// Every level of the plan, every frame of each. A job that fails leaves
// none of its images: a partial orbit or progressive series would look like
// a finished one.
void draw_levels(const Comm& comm, const RenderOptions& o, RenderPlan& plan, Renderer& renderer, FrameWriter& writer,
                 RenderResult& result, RankRenderTimes& times) {
  FrameSettings frame = o.frame;
  segment::Progress progress(comm, "render", static_cast<std::int64_t>(plan.levels.size()) * plan.frames_per_level,
                             o.progress, "frames");
  std::exception_ptr error;
  try {
    for (int l : plan.levels) {
      load_level(comm, o, plan, l, frame, renderer, result, times);
      for (int f = 0; f < plan.frames_per_level; ++f) {
        draw_frame(comm, o, plan, l, f, frame, renderer, writer, result, times);
        if (comm.rank() == 0) progress.advance(1, 0);
      }
    }
    collectively(comm, [&] { writer.wait(); });
  } catch (...) {
    error = std::current_exception();
  }
  try {
    writer.wait();  // never leave a thread behind, even on an error
  } catch (...) {
    if (!error) error = std::current_exception();
  }
  progress.finish();
  try {
    agree(comm, error);
  } catch (...) {
    if (comm.rank() == 0)
      for (const auto& f : result.frames) ::unlink(f.path.c_str());
    throw;
  }
}

}  // namespace

// A job is planned (options, output, display and image size checked; the
// backend, sources, levels and culling decided), then executed (every
// level's frames), then reported.
RenderResult run_render(const Comm& comm, const RenderOptions& o) {
  const auto start = Clock::now();
  check_options(o);
  collectively(comm, [&] { check_output(o); });
  check_display(comm);
  // The window first: its limits decide what is bad input before any reading.
  Renderer renderer(comm);
  check_image_size(o.frame, renderer);
  RenderPlan plan = plan_render(comm, o);

  RenderResult result;
  result.comm_size = comm.size();
  result.backend = plan.reading.backend;
  result.backend_reason = plan.reading.reason;
  if (plan.field.pyramid)
    for (const auto& l : plan.field.pyramid->levels())
      result.level_bytes.push_back(
          estimated_bytes(l.dims, comm.size(), plan.mask.has_value(), o.frame.width, o.frame.height));
  RankRenderTimes times;
  FrameWriter writer{start, result.frames, {}};
  draw_levels(comm, o, plan, renderer, writer, result, times);
  times.write = writer.seconds;
  result.camera = renderer.last_camera();
  result.ranks = gather(comm, times);
  double total = since(start);
  check_mpi(MPI_Allreduce(&total, &result.seconds, 1, MPI_DOUBLE, MPI_MAX, comm.get()), "MPI_Allreduce");
  if (!o.report.empty())
    collectively(comm, [&] {
      if (comm.rank() == 0) write_report(o, result);
    });
  return result;
}

std::optional<int> parse_level(const std::string& text) {
  if (text == "auto") return std::nullopt;
  int level = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), level);
  if (text.empty() || error != std::errc() || end != text.data() + text.size() || level < 0)
    throw Error("level '" + text + "': give auto or a level number (0 is full resolution)");
  return level;
}

}  // namespace volseg::render
