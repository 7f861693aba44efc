// SPDX-License-Identifier: MIT
#include "volseg/session/session.hpp"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "volseg/io/auto_backend.hpp"
#include "volseg/io/error.hpp"
#include "volseg/io/format.hpp"
#include "volseg/io/registry.hpp"
#include "volseg/io/selection.hpp"
#include "volseg/render/load.hpp"
#include "volseg/segment/decode.hpp"
#include "volseg/segment/expression.hpp"
#include "volseg/segment/label.hpp"
#include "volseg/segment/segment.hpp"

namespace volseg::session {
namespace {

using Clock = std::chrono::steady_clock;

std::vector<std::string> strings(const Json& request, const char* key) {
  std::vector<std::string> result;
  if (request.contains(key))
    for (const auto& item : request.at(key)) result.push_back(item.get<std::string>());
  return result;
}

std::string text(const Json& request, const char* key, const std::string& fallback = {}) {
  return request.contains(key) && !request.at(key).is_null() ? request.at(key).get<std::string>() : fallback;
}

// The trace's rows as [rank, op, start, duration] (at most `limit`: longer
// traces keep every k-th row, enough for a timeline).
Json trace_rows(const std::string& path, std::size_t limit = 20000) {
  std::ifstream in(path);
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);)
    if (!line.empty() && line[0] != '#' && line.rfind("rank,", 0) != 0) lines.push_back(line);
  const std::size_t step = std::max<std::size_t>(1, (lines.size() + limit - 1) / limit);
  Json rows = Json::array();
  for (std::size_t i = 0; i < lines.size(); i += step) {
    std::stringstream fields(lines[i]);
    std::string rank, op, start, duration;
    std::getline(fields, rank, ',');
    std::getline(fields, op, ',');
    std::getline(fields, start, ',');
    std::getline(fields, duration, ',');
    rows.push_back({std::stoi(rank), op, std::stod(start), std::stod(duration)});
  }
  return rows;
}

// A reader of one level for plane reads, copied into the planes
// (io::Access::copy: a raw volume with pread, not mapped windows that a
// strided plane would fault in whole).
std::unique_ptr<io::VolumeReader> open_plane_reader(const pyramid::Pyramid& pyramid, int level, const Comm& self,
                                                    const std::string& backend, const std::vector<std::string>& hints) {
  return pyramid.open_level(level, self, backend, hints);
}

// FNV-1a of a text, in hex: the same in every build, so a name made with it
// is found again next time.
std::string stable_hash(const std::string& text) {
  std::uint64_t hash = 14695981039346656037ull;
  for (const unsigned char c : text) hash = (hash ^ c) * 1099511628211ull;
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(hash));
  return hex;
}

// A selection's part of its pyramid's folder name: a variable's name or a
// step, or for an expression "expr-" and a hash of its text.
std::string pyramid_name_part(const std::string& selected) {
  const auto eq = selected.find('=');
  const std::string key = selected.substr(0, eq), value = selected.substr(eq + 1);
  if (key != "expr" && key != "where") return value;
  return key + "-" + stable_hash(value);
}

// Where the window keeps the pyramid of a volume it opens, unless the user
// names a folder: beside the file (NAME.pyramid, or NAME-VAR-STEP.pyramid
// for a variable, step or expression of it), or, where the file's folder is
// not this user's to write (a shared read-only dataset), in the user's cache
// ($XDG_CACHE_HOME or ~/.cache, volseg/pyramids/), named by the file's full
// path. Rank 0 decides.
std::string default_pyramid_dir(const Comm& comm, const std::string& path, const std::vector<std::string>& selection) {
  std::string dir;
  collectively(comm, [&] {
    if (comm.rank() != 0) return;
    dir = pyramid::default_directory(path);
    const std::filesystem::path folder = std::filesystem::path(dir).parent_path();
    if (::access(folder.empty() ? "." : folder.c_str(), W_OK) != 0) {
      const char* xdg = std::getenv("XDG_CACHE_HOME");
      const char* home = std::getenv("HOME");
      const std::filesystem::path cache = xdg && *xdg     ? std::filesystem::path(xdg)
                                          : home && *home ? std::filesystem::path(home) / ".cache"
                                                          : std::filesystem::temp_directory_path();
      const std::filesystem::path absolute = std::filesystem::absolute(path).lexically_normal();
      const std::string name = absolute.stem().string() + "-" + stable_hash(absolute.string()) + ".pyramid";
      dir = (cache / "volseg" / "pyramids" / name).string();
      std::filesystem::create_directories(std::filesystem::path(dir).parent_path());
    }
    if (!selection.empty()) {  // one pyramid per variable, step and expression
      dir = dir.substr(0, dir.size() - std::string(".pyramid").size());
      for (const auto& s : selection) dir += "-" + pyramid_name_part(s);
      dir += ".pyramid";
    }
  });
  return comm.broadcast(dir);
}

// The volume's pyramid: the one found in pyramid_dir (empty: the default
// above), if it belongs to this selection and is not stale, or one built
// there now; pyramid_dir becomes where it is.
std::optional<pyramid::Pyramid> find_or_build_pyramid(const Comm& comm, const std::string& path,
                                                      const std::string& backend,
                                                      const std::vector<std::string>& selection,
                                                      std::string& pyramid_dir, Reply& reply) {
  if (pyramid_dir.empty()) pyramid_dir = default_pyramid_dir(comm, path, selection);
  auto found = render::find_pyramid(comm, path, pyramid_dir, selection);
  if (found) return found;
  pyramid::BuildOptions build;
  build.input = path;
  build.backend = backend;
  build.input_hints = selection;
  build.force = true;
  build.progress = segment::ProgressMode::none;
  build.command_line = "volseg-gui";
  build.directory = pyramid_dir;
  found = pyramid::build(comm, build);
  reply.data["pyramid_built"] = true;
  return found;
}

// What the window shows of a pyramid: its levels, range, exact histogram
// and counts.
void describe_pyramid(const pyramid::Pyramid& pyramid, const std::array<double, 2>& range, Json& d) {
  d["pyramid"] = pyramid.directory();
  Json levels = Json::array();
  for (const auto& l : pyramid.levels()) levels.push_back({l.dims[0], l.dims[1], l.dims[2]});
  d["levels"] = levels;
  d["range"] = {range[0], range[1]};
  const segment::Histogram histogram = pyramid.histogram();
  const auto& e = histogram.edges();
  d["histogram"] = {{"lo", e.lo},
                    {"hi", e.hi},
                    {"bins", e.bins},
                    {"integers", e.integers},
                    {"counts", histogram.counts()},
                    {"below", histogram.below()},
                    {"above", histogram.above()}};
  std::uint64_t voxels = 0, valid = 0;
  for (std::int64_t b = 0; b < pyramid.brick_count(); ++b) {
    voxels += pyramid.stats(b).voxels;
    valid += pyramid.stats(b).valid;
  }
  d["voxels"] = voxels;
  d["valid"] = valid;
}

}  // namespace

Session::Session(const Comm& comm) : comm_(comm.duplicate()) {}

Session::~Session() {
  pieces_.clear();
  renderer_.reset();  // collective: every rank's session ends together
}

Reply Session::execute(const Json& request, const Hooks& hooks) {
  Reply reply;
  reply.kind = text(request, "kind");
  const auto start = Clock::now();
  try {
    collectively(comm_, [&] {
      if (reply.kind == "open")
        open(request, reply);
      else if (reply.kind == "check")
        check(request, reply);
      else if (reply.kind == "segment")
        segment(request, hooks, reply);
      else if (reply.kind == "render")
        draw(request, reply);
      else if (reply.kind == "slices")
        slices(request, reply);
      else if (reply.kind == "label")
        label(request, hooks, reply);
      else if (reply.kind == "surface")
        surface(request, reply);
      else if (reply.kind == "close")
        close();
      else
        throw Error("unknown request '" + reply.kind + "'");
    });
  } catch (const std::exception& e) {
    reply.error = e.what();
    reply.cancelled = dynamic_cast<const Cancelled*>(&e) != nullptr;
    reply.image = {};
    reply.planes.reset();
  }
  reply.seconds = std::chrono::duration<double>(Clock::now() - start).count();
  return reply;
}

void Session::close() {
  path_.clear();
  mask_.clear();
  labels_.clear();
  boxes_.clear();
  pyramid_.reset();
  mask_pyramid_.reset();
  selection_.clear();
  pieces_.clear();
  shown_ = {-1, ""};
  shown_threshold_.reset();
}

// Opens the volume on every rank and finds (or builds) its pyramid: the
// pyramid's per-brick histograms sum to the exact full-resolution histogram,
// and its coarse levels give the first image in a fraction of a second.
void Session::open(const Json& request, Reply& reply) {
  close();
  const std::string path = text(request, "path");
  const std::string backend = text(request, "backend", "auto");
  std::vector<std::string> selection;
  // The field: a variable, or an expression or condition of the file's
  // variables (volseg segment --expr / --where), computed as it is read.
  const std::string expression = text(request, "expr"), condition = text(request, "where");
  if (!expression.empty() && !condition.empty()) throw Error("open: an expression or a condition, not both");
  if (!expression.empty())
    selection.push_back("expr=" + expression);
  else if (!condition.empty())
    selection.push_back("where=" + condition);
  else if (!text(request, "var").empty())
    selection.push_back("var=" + text(request, "var"));
  const bool field_chosen = !selection.empty();
  if (request.contains("time") && !request.at("time").is_null())
    selection.push_back("time=" + std::to_string(request.at("time").get<long long>()));
  const io::FileFormat format = io::detect_format(comm_, path);
  // What a job of this file reads it with (segment's, the pyramid build's).
  const std::string reading = io::resolve_backend(comm_, backend, format, path, io::Access::stream).backend;
  const auto& entry = io::builtin_registry().get(reading);
  Json variables = Json::array();
  if (entry.list_variables) {
    for (const auto& line : entry.list_variables(path, comm_)) variables.push_back(line);
    // A file of several variables opens its first until the user picks one.
    if (!field_chosen && variables.size() > 1) {
      const std::string first = variables[0].get<std::string>();
      selection.push_back("var=" + first.substr(0, first.find('(')));
    }
  }
  std::unique_ptr<io::VolumeReader> reader;
  try {
    reader = segment::open_input(reading, path, comm_, selection);
  } catch (const StepRequired&) {
    // A series opened with no step shows its first, and the step to pick
    // (volseg info does the same); a job still has to name its steps.
    if (request.contains("time") && !request.at("time").is_null()) throw;
    selection.push_back("time=0");
    reader = segment::open_input(reading, path, comm_, selection);
  }
  const io::VolumeInfo info = reader->info();
  reader->close();

  std::string pyramid_dir = text(request, "pyramid_dir");
  auto found = find_or_build_pyramid(comm_, path, backend, selection, pyramid_dir, reply);
  path_ = path;
  backend_ = backend;
  pyramid_dir_ = pyramid_dir;
  selection_ = selection;
  coordinates_ = info.coordinates;
  resampled_dims_.reset();
  bool uneven = false;
  for (const auto& c : coordinates_) uneven = uneven || (c && !c->uniform());
  if (uneven) {  // the grid an uneven axis is drawn on, once per open
    render::Source plain;
    plain.path = path_;
    plain.backend = backend_;
    plain.hints = selection_;
    plain.coordinates = coordinates_;
    auto resampled = render::open_source(comm_, plain, 0);
    resampled_dims_ = resampled->info().dims;
    resampled->close();
  }
  pyramid_ = std::move(found);
  range_ = render::value_range(*pyramid_);
  if (comm_.rank() != 0) return;

  Json& d = reply.data;
  d["path"] = path;
  d["format"] = io::format_name(format);
  d["backend"] = reading;
  d["info"] = io::describe(path, format, reading, info);
  d["variables"] = variables;
  d["selection"] = selection;
  d["variable"] = info.variable;
  if (!expression.empty()) d["expr"] = expression;
  if (!condition.empty()) d["where"] = condition;
  if (info.step) {  // a series: how many steps, and the one open
    d["steps"] = info.steps;
    d["step"] = *info.step;
  }
  d["dims"] = {info.dims[0], info.dims[1], info.dims[2]};
  d["dtype"] = std::string(io::dtype_name(info.dtype));
  d["spacing"] = {info.spacing[0], info.spacing[1], info.spacing[2]};
  describe_pyramid(*pyramid_, range_, d);
}

// Opens the input with a backend and its hints (every rank), as a job would:
// an unknown hint or a bad value is refused here, before any work.
void Session::check(const Json& request, Reply& reply) {
  if (path_.empty()) throw Error("no volume is open");
  std::vector<std::string> hints = selection_;
  for (const auto& h : strings(request, "hints")) hints.push_back(h);
  const std::string backend = text(request, "backend", "auto");
  // The backend the segment job will use, so its hints are the ones checked.
  const std::string reading = io::resolve_backend(comm_, backend, path_, io::Access::stream).backend;
  auto reader = segment::open_input(reading, path_, comm_, hints);
  reader->close();
  reply.data["backend"] = reading;
}

namespace {

// The operators after the threshold, from a segment request's optional
// "seed": [C, D], "open", "close" (ball radii), "fill_holes" and
// "connectivity" (of hysteresis' components); checked by the job.
segment::MaskOperators mask_operators(const Json& request) {
  segment::MaskOperators o;
  if (request.contains("seed") && !request.at("seed").is_null()) {
    const Json& seed = request.at("seed");
    if (!seed.is_array() || seed.size() != 2) throw Error("'seed' is [lo, hi] of the hysteresis seeds");
    o.seed = std::pair{seed[0].get<double>(), seed[1].get<double>()};
  }
  o.open = request.value("open", 0);
  o.close = request.value("close", 0);
  o.fill_holes = request.value("fill_holes", false);
  o.connectivity = segment::check_connectivity(request.value("connectivity", 26));
  return o;
}

}  // namespace

void Session::segment(const Json& request, const Hooks& hooks, Reply& reply) {
  if (path_.empty()) throw Error("no volume is open");
  segment::SegmentOptions options;
  options.input = path_;
  options.output = text(request, "output");
  if (options.output.empty()) throw Error("no output file named for the mask");
  options.backend = text(request, "backend", "auto");
  options.format = text(request, "format");
  options.hints = strings(request, "hints");
  options.input_hints = selection_;
  options.lo = request.at("lo").get<double>();
  options.hi = request.at("hi").get<double>();
  options.operators = mask_operators(request);
  options.force = request.value("force", false);
  options.progress = segment::ProgressMode::none;
  options.command_line = text(request, "command_line", "volseg-gui");
  // The trace of the job, for the timeline: a private temporary file.
  std::string trace = comm_.broadcast(comm_.rank() == 0 ? (std::filesystem::temp_directory_path() /
                                                           ("volseg-gui-" + std::to_string(::getpid()) + "-trace.csv"))
                                                              .string()
                                                        : std::string());
  options.trace = trace;
  if (comm_.rank() == 0) {
    options.cancel = hooks.cancel;
    options.on_progress = hooks.progress;
  }
  // The old mask's pieces go first: the new mask may replace its file.
  mask_.clear();
  labels_.clear();
  boxes_.clear();
  mask_pyramid_.reset();
  pieces_.clear();
  shown_ = {-1, ""};
  const segment::SegmentResult result = segment::run_segment(comm_, options);
  // The mask's pyramid, so coarse frames show the mask too.
  pyramid::BuildOptions build;
  build.input = options.output;
  build.force = true;
  build.progress = segment::ProgressMode::none;
  build.command_line = "volseg-gui";
  mask_pyramid_ = pyramid::build(comm_, build);
  mask_ = options.output;
  if (comm_.rank() != 0) return;
  Json& d = reply.data;
  d["output"] = options.output;
  d["lo"] = options.lo;
  d["hi"] = options.hi;
  const auto& ops = options.operators;
  if (ops.seed) d["seed"] = {ops.seed->first, ops.seed->second};
  d["open"] = ops.open;
  d["close"] = ops.close;
  d["fill_holes"] = ops.fill_holes;
  d["connectivity"] = ops.connectivity;
  d["operators"] = ops.describe();
  d["in_range"] = result.stats.in_range;
  d["valid"] = result.stats.valid;
  d["voxels"] = result.stats.voxels;
  d["seconds"] = result.seconds;
  d["backend"] = result.backend;
  d["pipeline"] = result.pipeline;
  d["summary"] = segment::summary(options, result);
  Json ranks = Json::array();
  for (const auto& r : result.ranks)
    ranks.push_back({{"open", r.open},
                     {"read", r.read},
                     {"compute", r.compute},
                     {"write", r.write},
                     {"wait", r.wait},
                     {"close", r.close},
                     {"total", r.total},
                     {"bricks", r.bricks},
                     {"bytes_read", r.bytes_read}});
  d["ranks"] = ranks;
  d["trace"] = trace_rows(trace);
  std::filesystem::remove(trace);
}

// {"folder": volseg mesh's folder, "ids": [...]}: those objects' meshes
// drawn in their colours; each rank reads each once (its box's part is
// drawn).
void Session::add_meshes(const Json& meshes, render::FrameSettings& frame) {
  const std::string folder = meshes.at("folder").get<std::string>();
  for (const auto& value : meshes.at("ids")) {
    const auto id = value.get<std::uint64_t>();
    auto& surface = surfaces_[{folder, id}];
    if (!surface) surface = render::object_surface(folder, id);
    frame.surfaces.push_back(surface);
  }
}

void Session::draw(const Json& request, Reply& reply) {
  if (!pyramid_) throw Error("no volume is open");
  render::FrameSettings frame;
  frame.width = request.at("width").get<int>();
  frame.height = request.at("height").get<int>();
  const Json& camera = request.at("camera");
  frame.camera.azimuth = camera.value("azimuth", 30.0);
  frame.camera.elevation = camera.value("elevation", 20.0);
  frame.camera.zoom = camera.value("zoom", 1.0);
  const Json& modes = request.at("modes");
  frame.modes.volume = modes.value("volume", true);
  frame.modes.slices = modes.value("slices", false);
  std::optional<std::array<double, 2>> threshold;
  if (request.contains("lo") && request.contains("hi"))
    threshold = std::array<double, 2>{request.at("lo").get<double>(), request.at("hi").get<double>()};
  frame.modes.mask = modes.value("mask", true) && (!mask_.empty() || threshold);
  if (!frame.modes.any()) frame.modes.volume = true;
  if (request.contains("slice_at"))
    for (int a = 0; a < 3; ++a)
      frame.slice_at[static_cast<std::size_t>(a)] = request.at("slice_at").at(a).get<double>();
  frame.annotations = request.value("annotations", true);
  frame.transfer.lo = range_[0];
  frame.transfer.hi = range_[1];
  frame.transfer.opacity = render::parse_opacity(text(request, "opacity", "ramp"), range_[0], range_[1]);
  // With a mask (or the threshold surface) drawn, the volume is its context:
  // faint enough that the surface inside it shows through.
  if (frame.modes.volume && frame.modes.mask && !request.contains("opacity"))
    for (auto& point : frame.transfer.opacity) point.alpha *= 0.03;
  frame.mask_opacity = request.value("mask_opacity", 1.0);
  frame.mask_surface = render::parse_mask_surface(text(request, "mask_surface", "smooth"));
  if (request.contains("scale"))
    for (int a = 0; a < 3; ++a) {
      const double v = request.at("scale").at(a).get<double>();
      if (!(v > 0) || !std::isfinite(v)) throw Error("scale: each factor must be positive and finite");
      frame.scale[static_cast<std::size_t>(a)] = v;
    }
  frame.title = text(request, "title");
  if (request.contains("meshes")) add_meshes(request.at("meshes"), frame);
  frame.scalar_name = pyramid_->source_info().variable.empty() ? "value" : pyramid_->source_info().variable;

  if (!renderer_) {
    render::check_display(comm_);
    renderer_ = std::make_unique<render::Renderer>(comm_);
  }
  if (frame.width < 1 || frame.height < 1 || frame.width > renderer_->max_size() ||
      frame.height > renderer_->max_size())
    throw Error("view size " + std::to_string(frame.width) + "x" + std::to_string(frame.height) + " is outside 1.." +
                std::to_string(renderer_->max_size()));
  const int levels = static_cast<int>(pyramid_->levels().size());
  int level = 0;
  const std::string asked = request.at("level").is_string() ? request.at("level").get<std::string>() : "";
  const bool with_mask = !mask_.empty();
  if (asked == "auto")
    level = render::choose_level(*pyramid_, comm_.size(), with_mask, frame.width, frame.height,
                                 request.value("memory", std::uint64_t{512} << 20));
  else
    level =
        std::clamp(request.at("level").is_number() ? request.at("level").get<int>() : std::stoi(asked), 0, levels - 1);
  if (with_mask && (!mask_pyramid_ || static_cast<int>(mask_pyramid_->levels().size()) <= level))
    level = mask_pyramid_ ? static_cast<int>(mask_pyramid_->levels().size()) - 1 : 0;
  // An uneven coordinate axis (ocean levels) is drawn in its coordinates
  // from level 0, resampled as it is read (render/src/rectilinear.hpp), when
  // that fits the memory budget; pyramid levels are in index space.
  const bool resampled =
      resampled_dims_ && render::estimated_bytes(*resampled_dims_, comm_.size(), with_mask, frame.width, frame.height,
                                                 true) <= request.value("memory", std::uint64_t{512} << 20);
  if (resampled) level = 0;

  double load_seconds = 0;
  const std::pair<int, std::string> key{level, mask_};
  // Without a mask, the mask mode draws the threshold surface of the scalar.
  const auto surface = with_mask ? std::nullopt : threshold;
  if (key != shown_ || surface != shown_threshold_) {
    auto cached = pieces_.find(key);
    if (cached == pieces_.end()) {
      render::Source field;
      field.path = path_;
      field.backend = backend_;
      field.hints = selection_;
      if (!resampled) field.pyramid = pyramid_;
      field.coordinates = coordinates_;  // reversed axes (depth) drawn as in `volseg render`
      std::optional<render::Source> mask;
      if (with_mask) {
        mask.emplace();
        mask->path = mask_;
        mask->coordinates = coordinates_;  // drawn on the field's grid
        if (!resampled) mask->pyramid = mask_pyramid_;
      }
      render::Culling culling;
      culling.enabled = false;                             // one piece serves every transfer function and threshold
      culling.modes.volume = culling.modes.slices = true;  // and every mode: the field is loaded
      render::LoadStats load;
      render::Piece piece = render::load_piece(comm_, field, mask, level, culling, load);
      load_seconds = load.seconds;
      // Two pieces at most: a camera drag's coarse one and the latest finer one.
      while (pieces_.size() >= 2) pieces_.erase(pieces_.begin());  // the finest level
      cached = pieces_.emplace(key, std::move(piece)).first;
    }
    render::Piece copy = cached->second;
    copy.threshold = surface;
    renderer_->set_piece(std::move(copy));
    shown_ = key;
    shown_threshold_ = surface;
  }
  reply.image = renderer_->render(frame);
  const auto& t = renderer_->last_times();
  reply.data = {{"level", level},   {"width", frame.width}, {"height", frame.height},  {"load", load_seconds},
                {"scene", t.scene}, {"render", t.render},   {"composite", t.composite}};
}

// Rank 0 alone reads the three planes, at the finest level whose planes fit
// max_side (the other ranks have nothing to do).
void Session::slices(const Json& request, Reply& reply) {
  if (!pyramid_) throw Error("no volume is open");
  if (comm_.rank() != 0) return;
  const std::int64_t max_side = request.value("max_side", 768);
  int level = 0;
  const auto& levels = pyramid_->levels();
  while (level + 1 < static_cast<int>(levels.size()) &&
         *std::max_element(levels[static_cast<std::size_t>(level)].dims.begin(),
                           levels[static_cast<std::size_t>(level)].dims.end()) > max_side)
    ++level;
  if (!mask_.empty() && mask_pyramid_) level = std::min(level, static_cast<int>(mask_pyramid_->levels().size()) - 1);
  auto planes = std::make_shared<Planes>();
  planes->level = level;
  const io::Index3 dims = levels[static_cast<std::size_t>(level)].dims;
  planes->dims = dims;
  const double scale = std::pow(2.0, level);
  for (int a = 0; a < 3; ++a)
    planes->spacing[static_cast<std::size_t>(a)] = pyramid_->source_info().spacing[static_cast<std::size_t>(a)] * scale;
  // at[] is x, y, z as fractions; planes are z, y, x
  for (int a = 0; a < 3; ++a) {
    const double f = std::clamp(request.at("at").at(2 - a).get<double>(), 0.0, 1.0);
    planes->at[static_cast<std::size_t>(a)] =
        std::clamp<std::int64_t>(static_cast<std::int64_t>(f * static_cast<double>(dims[static_cast<std::size_t>(a)])),
                                 0, dims[static_cast<std::size_t>(a)] - 1);
  }
  const Comm self(MPI_COMM_SELF);
  auto extent_of = [&](int plane) {
    io::Extent e{{0, 0, 0}, dims};
    e.offset[static_cast<std::size_t>(plane)] = planes->at[static_cast<std::size_t>(plane)];
    e.count[static_cast<std::size_t>(plane)] = 1;
    return e;
  };
  {
    auto reader = open_plane_reader(*pyramid_, level, self, backend_, selection_);
    const segment::Decoder decode(reader->info());
    const std::size_t element = io::dtype_size(reader->info().dtype);
    for (int p = 0; p < 3; ++p) {
      const io::Extent e = extent_of(p);
      std::vector<std::byte> raw(static_cast<std::size_t>(e.voxels()) * element);
      reader->read(e, raw.data());
      auto& values = planes->values[static_cast<std::size_t>(p)];
      values.resize(static_cast<std::size_t>(e.voxels()));
      decode.to_float(raw.data(), e.voxels(), values.data());
      // rows and columns of the plane (the other two axes, slower first)
      std::array<std::int64_t, 2> rc{};
      int k = 0;
      for (int a = 0; a < 3; ++a)
        if (a != p) rc[static_cast<std::size_t>(k++)] = e.count[static_cast<std::size_t>(a)];
      planes->rows[static_cast<std::size_t>(p)] = static_cast<int>(rc[0]);
      planes->columns[static_cast<std::size_t>(p)] = static_cast<int>(rc[1]);
    }
    reader->close();
  }
  if (!mask_.empty() && mask_pyramid_) {
    auto reader = open_plane_reader(*mask_pyramid_, level, self, "auto", {});
    for (int p = 0; p < 3; ++p) {
      const io::Extent e = extent_of(p);
      auto& mask = planes->mask[static_cast<std::size_t>(p)];
      mask.resize(static_cast<std::size_t>(e.voxels()));
      reader->read(e, mask.data());
    }
    reader->close();
  }
  reply.data = {{"level", level}};
  reply.planes = std::move(planes);
}

namespace {

// A private temporary file named on rank 0 and known to every rank.
std::string shared_temporary(const Comm& comm, const std::string& what) {
  return comm.broadcast(comm.rank() == 0 ? (std::filesystem::temp_directory_path() /
                                            ("volseg-session-" + std::to_string(::getpid()) + "-" + what))
                                               .string()
                                         : std::string());
}

// The object table a label job wrote (label_report.cpp's columns), the
// largest `limit` objects when there are more.
Json read_table(const std::string& path, std::size_t limit, std::uint64_t& total) {
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);  // the header
  struct Row {
    std::int64_t id, voxels;
    std::array<std::int64_t, 6> box;  // z, y, x min, then max
    std::array<double, 3> centroid;   // z, y, x
    int border;
  };
  std::vector<Row> rows;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    std::vector<std::string> f;
    std::stringstream fields(line);
    for (std::string item; std::getline(fields, item, ',');) f.push_back(item);
    if (f.size() < 16)
      throw Error("the object table " + path + " has a row of " + std::to_string(f.size()) + " fields");
    Row r{std::stoll(f[0]), std::stoll(f[1]), {}, {}, std::stoi(f[15])};
    for (int k = 0; k < 6; ++k) r.box[k] = std::stoll(f[3 + k]);
    for (int k = 0; k < 3; ++k) r.centroid[k] = std::stod(f[9 + k]);
    rows.push_back(r);
  }
  total = rows.size();
  if (rows.size() > limit) {
    std::partial_sort(
        rows.begin(), rows.begin() + static_cast<std::ptrdiff_t>(limit), rows.end(),
        [](const Row& a, const Row& b) { return a.voxels != b.voxels ? a.voxels > b.voxels : a.id < b.id; });
    rows.resize(limit);
  }
  Json table = Json::array();
  for (const auto& r : rows)
    table.push_back({{"id", r.id},
                     {"voxels", r.voxels},
                     {"centroid", {r.centroid[2], r.centroid[1], r.centroid[0]}},
                     {"box", {{r.box[2], r.box[1], r.box[0]}, {r.box[5], r.box[4], r.box[3]}}},
                     {"border", r.border}});
  return table;
}

}  // namespace

// Labels the mask on every rank as `volseg label MASK --mask-input` does,
// and keeps the table's boxes so an object can be shown alone.
void Session::label(const Json& request, const Hooks& hooks, Reply& reply) {
  if (mask_.empty()) throw Error("segment first: there is no mask to label");
  segment::LabelOptions options;
  options.input = mask_;
  options.mask_input = true;
  options.output = text(request, "output");
  if (options.output.empty()) throw Error("no output file named for the labels");
  options.connectivity = request.value("connectivity", 26);
  options.min_voxels = request.value("min_voxels", std::uint64_t{0});
  options.force = request.value("force", false);
  options.progress = segment::ProgressMode::none;
  options.command_line = text(request, "command_line", "volseg web");
  options.stats = shared_temporary(comm_, "objects.csv");
  if (comm_.rank() == 0) options.on_progress = hooks.progress;
  labels_.clear();
  boxes_.clear();
  const segment::LabelResult result = segment::run_label(comm_, options);
  labels_ = options.output;
  // Rank 0 reads the table and keeps the boxes: object surfaces are drawn there.
  Json table;
  std::uint64_t total = 0;
  if (comm_.rank() == 0) {
    table = read_table(options.stats, 20000, total);
    std::filesystem::remove(options.stats);
    for (const auto& row : table) {
      const auto& b = row.at("box");
      boxes_[row.at("id").get<std::int64_t>()] = {b[0][2], b[0][1], b[0][0], b[1][2], b[1][1], b[1][0]};
    }
  }
  if (comm_.rank() != 0) return;
  Json& d = reply.data;
  d["output"] = options.output;
  d["objects"] = result.summary.objects;
  d["connectivity"] = options.connectivity;
  d["seconds"] = result.seconds;
  d["label_type"] = result.label_type;
  d["table"] = std::move(table);
  d["table_total"] = total;
  d["table_truncated"] = total > d["table"].size();
}

namespace {

// The finest level of a pyramid whose largest side is at most max_side.
int coarse_level(const pyramid::Pyramid& pyramid, std::int64_t max_side) {
  const auto& levels = pyramid.levels();
  int level = 0;
  while (level + 1 < static_cast<int>(levels.size()) &&
         *std::max_element(levels[static_cast<std::size_t>(level)].dims.begin(),
                           levels[static_cast<std::size_t>(level)].dims.end()) > max_side)
    ++level;
  return level;
}

// A whole piece's mask at half the resolution: a voxel is in where at least
// half of the 2x2x2 it covers is (the level stays `level`: its voxel size is
// what the spacing says).
render::Piece halved(const render::Piece& piece) {
  render::Piece h;
  const io::Index3& n = piece.dims;
  h.dims = {(n[0] + 1) / 2, (n[1] + 1) / 2, (n[2] + 1) / 2};
  h.owned = h.stored = io::Extent{{0, 0, 0}, h.dims};
  h.level = piece.level;
  h.display_scale = piece.display_scale;
  for (int a = 0; a < 3; ++a) {
    h.spacing[a] = 2 * piece.spacing[a];
    h.origin[a] = piece.origin[a] + 0.5 * piece.spacing[a];
  }
  h.mask.assign(static_cast<std::size_t>(h.dims[0] * h.dims[1] * h.dims[2]), 0);
  for (std::int64_t z = 0; z < h.dims[0]; ++z)
    for (std::int64_t y = 0; y < h.dims[1]; ++y)
      for (std::int64_t x = 0; x < h.dims[2]; ++x) {
        int in = 0, all = 0;
        for (std::int64_t k = 2 * z; k < std::min(2 * z + 2, n[0]); ++k)
          for (std::int64_t j = 2 * y; j < std::min(2 * y + 2, n[1]); ++j)
            for (std::int64_t i = 2 * x; i < std::min(2 * x + 2, n[2]); ++i, ++all)
              in += piece.mask[static_cast<std::size_t>((k * n[1] + j) * n[2] + i)] != 0;
        h.mask[static_cast<std::size_t>((z * h.dims[1] + y) * h.dims[2] + x)] = 2 * in >= all;
      }
  return h;
}

Surface surface_of(const render::Piece& piece) {
  render::Mesh mesh = render::mask_mesh(piece);
  Surface s;
  s.level = piece.level;
  s.points = std::move(mesh.points);
  s.normals = std::move(mesh.normals);
  s.triangles = std::move(mesh.triangles);
  return s;
}

// The level-0 volume's box in world coordinates as drawn, from a piece of
// any level (its voxels are 2^level wide and centred on theirs).
std::array<double, 6> full_bounds(const render::Piece& piece, const io::Index3& dims) {
  std::array<double, 6> b{};
  const double factor = std::pow(2.0, piece.level);
  for (int a = 0; a < 3; ++a) {
    const double s0 = piece.spacing[a] / factor;
    const double lo = piece.origin[a] - 0.5 * (factor - 1) * s0;
    const double hi = lo + s0 * static_cast<double>(dims[static_cast<std::size_t>(2 - a)] - 1);
    const double d = piece.display_scale[a];
    b[2 * a] = std::min(lo * d, hi * d);
    b[2 * a + 1] = std::max(lo * d, hi * d);
  }
  return b;
}

}  // namespace

// A coarse surface for the page to turn itself: rank 0 alone reads one
// pyramid level of at most max_side^3 voxels.
void Session::surface(const Json& request, Reply& reply) {
  if (!pyramid_) throw Error("no volume is open");
  if (comm_.rank() != 0) return;
  const std::int64_t max_side = std::clamp<std::int64_t>(request.value("max_side", 128), 16, 256);
  const Comm self(MPI_COMM_SELF);
  render::Source field;
  field.path = path_;
  field.backend = backend_;
  field.hints = selection_;
  field.pyramid = pyramid_;
  field.coordinates = coordinates_;
  render::Culling culling;
  culling.enabled = false;
  culling.modes.volume = culling.modes.mask = true;  // load the field and the mask whole
  render::LoadStats load;
  const io::Index3 dims0 = pyramid_->levels().front().dims;
  if (request.contains("object")) {
    const std::size_t budget = request.value("max_triangles", std::size_t{100000});
    for (std::int64_t side = max_side;; side /= 2) {
      auto s = std::make_shared<Surface>(object_surface(request.at("object").get<std::int64_t>(), side));
      reply.surface = std::move(s);
      if (reply.surface->triangles.size() / 3 <= budget || side <= 16) return;
    }
  }
  std::optional<render::Source> mask;
  int level = coarse_level(*pyramid_, max_side);
  if (!mask_.empty()) {
    mask.emplace();
    mask->path = mask_;
    mask->coordinates = coordinates_;
    mask->pyramid = mask_pyramid_;
    level = std::min(coarse_level(*mask_pyramid_, max_side), static_cast<int>(pyramid_->levels().size()) - 1);
  } else if (!request.contains("lo") || !request.contains("hi")) {
    throw Error("no mask yet: give lo and hi");
  }
  // A level coarser while the surface is over the triangle budget: the page
  // turns it at screen speed on any GPU (or none: a software renderer).
  const std::size_t budget = request.value("max_triangles", std::size_t{100000});
  const int coarsest = static_cast<int>((mask_.empty() ? *pyramid_ : *mask_pyramid_).levels().size()) - 1;
  for (;; ++level) {
    render::Piece piece = render::load_piece(self, field, mask, level, culling, load);
    if (piece.field.size() != static_cast<std::size_t>(piece.stored.voxels()))
      throw Error("surface: level " + std::to_string(level) + " was not read whole");
    if (mask_.empty()) {  // the band, from the field's levels
      const double lo = request.at("lo").get<double>(), hi = request.at("hi").get<double>();
      const render::Quantizer q = render::quantizer(piece);
      piece.mask.resize(piece.field.size());
      for (std::size_t i = 0; i < piece.field.size(); ++i) {
        const double v = q.value(piece.field[i]);
        piece.mask[i] = piece.field[i] != render::Quantizer::invalid && v >= lo && v <= hi;
      }
    }
    const std::array<double, 6> bounds = full_bounds(piece, dims0);
    auto surface = std::make_shared<Surface>(surface_of(piece));
    if (surface->triangles.size() / 3 > budget && level < coarsest) continue;
    // Past the pyramid's coarsest level: halve the mask itself.
    while (surface->triangles.size() / 3 > budget && *std::min_element(piece.dims.begin(), piece.dims.end()) >= 8) {
      piece = halved(piece);
      surface = std::make_shared<Surface>(surface_of(piece));
    }
    surface->bounds = bounds;
    reply.surface = std::move(surface);
    reply.data = {{"level", piece.level}};
    return;
  }
}

// One object alone: the labels in its box (one voxel around it), every
// stride-th voxel so the box's longest side is at most max_side, read a
// plane at a time.
Surface Session::object_surface(std::int64_t id, std::int64_t max_side) const {
  if (labels_.empty()) throw Error("label first: there are no labels");
  const auto found = boxes_.find(id);
  if (found == boxes_.end()) throw Error("no object " + std::to_string(id) + " in the table");
  const Comm self(MPI_COMM_SELF);
  render::Source field;
  field.path = path_;
  field.backend = backend_;
  field.hints = selection_;
  field.pyramid = pyramid_;
  field.coordinates = coordinates_;
  render::Culling culling;
  culling.enabled = false;
  culling.modes.volume = culling.modes.mask = true;  // load the field and the mask whole
  render::LoadStats load;
  const int top = static_cast<int>(pyramid_->levels().size()) - 1;
  // The coarsest level places the volume as render does (origin, spacing, axes).
  render::Piece coarse = render::load_piece(self, field, std::nullopt, top, culling, load);
  const io::Index3 dims0 = pyramid_->levels().front().dims;
  const auto& b = found->second;
  io::Extent box;
  std::int64_t longest = 1;
  for (int a = 0; a < 3; ++a) {
    const std::int64_t lo = std::max<std::int64_t>(0, b[a] - 1),
                       hi = std::min<std::int64_t>(dims0[a] - 1, b[3 + a] + 1);
    box.offset[a] = lo;
    box.count[a] = hi - lo + 1;
    longest = std::max(longest, box.count[a]);
  }
  const std::int64_t stride = (longest + max_side - 1) / max_side;
  io::Index3 sampled{};
  for (int a = 0; a < 3; ++a) sampled[a] = (box.count[a] + stride - 1) / stride;
  render::Piece piece;
  piece.dims = sampled;
  piece.owned = piece.stored = io::Extent{{0, 0, 0}, sampled};
  piece.display_scale = coarse.display_scale;
  piece.mask.assign(static_cast<std::size_t>(sampled[0] * sampled[1] * sampled[2]), 0);
  const double factor = std::pow(2.0, coarse.level);
  for (int a = 0; a < 3; ++a) {  // x, y, z
    const double s0 = coarse.spacing[a] / factor;
    const double o0 = coarse.origin[a] - 0.5 * (factor - 1) * s0;
    piece.spacing[a] = s0 * static_cast<double>(stride);
    piece.origin[a] = o0 + s0 * static_cast<double>(box.offset[static_cast<std::size_t>(2 - a)]);
  }
  const std::string reading = io::resolve_backend(self, "auto", labels_, io::Access::copy).backend;
  auto reader = segment::open_input(reading, labels_, self, {});
  const io::DType type = reader->info().dtype;
  const std::size_t element = io::dtype_size(type);
  io::Extent plane{{0, box.offset[1], box.offset[2]}, {1, box.count[1], box.count[2]}};
  std::vector<std::byte> raw(static_cast<std::size_t>(plane.voxels()) * element);
  auto label_at = [&](std::size_t i) -> std::int64_t {
    std::uint64_t v = 0;
    std::memcpy(&v, raw.data() + i * element, element);  // little-endian hosts: the low bytes
    return static_cast<std::int64_t>(v);
  };
  for (std::int64_t z = 0; z < sampled[0]; ++z) {
    plane.offset[0] = box.offset[0] + z * stride;
    reader->read(plane, raw.data());
    for (std::int64_t y = 0; y < sampled[1]; ++y)
      for (std::int64_t x = 0; x < sampled[2]; ++x) {
        const auto i = static_cast<std::size_t>((y * stride) * box.count[2] + x * stride);
        piece.mask[static_cast<std::size_t>((z * sampled[1] + y) * sampled[2] + x)] = label_at(i) == id;
      }
  }
  reader->close();
  Surface s = surface_of(piece);
  s.bounds = full_bounds(coarse, dims0);
  s.object = id;
  return s;
}

void serve(const Comm& comm) {
  Session session(comm);
  for (;;) {
    const Json request = Json::parse(receive_request(comm));
    if (request.value("kind", "") == "quit") break;
    session.execute(request);
  }
}

}  // namespace volseg::session

namespace volseg::session {
namespace {

// The request's length, by a non-blocking broadcast (a blocking and a
// non-blocking collective do not match: both sides use this one).
long long broadcast_length(const Comm& comm, long long length) {
  MPI_Request request = MPI_REQUEST_NULL;
  check_mpi(MPI_Ibcast(&length, 1, MPI_LONG_LONG, 0, comm.get(), &request), "MPI_Ibcast");
  auto pause = std::chrono::microseconds(50);
  for (int done = 0;;) {
    check_mpi(MPI_Test(&request, &done, MPI_STATUS_IGNORE), "MPI_Test");
    if (done) return length;
    std::this_thread::sleep_for(pause);
    pause = std::min(pause * 2, std::chrono::microseconds(5000));  // at most 5 ms late
  }
}

}  // namespace

void send_request(const Comm& comm, const std::string& request) {
  broadcast_length(comm, static_cast<long long>(request.size()));
  std::string copy = request;
  if (!copy.empty())
    check_mpi(MPI_Bcast(copy.data(), static_cast<int>(copy.size()), MPI_CHAR, 0, comm.get()), "MPI_Bcast");
}

std::string receive_request(const Comm& comm) {
  std::string request(static_cast<std::size_t>(broadcast_length(comm, 0)), '\0');
  if (!request.empty())
    check_mpi(MPI_Bcast(request.data(), static_cast<int>(request.size()), MPI_CHAR, 0, comm.get()), "MPI_Bcast");
  return request;
}

}  // namespace volseg::session
