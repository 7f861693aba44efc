// SPDX-License-Identifier: MIT
// open: the volume on every rank, and its pyramid (found, or built on first
// open): the pyramid's per-brick histograms sum to the exact full-resolution
// histogram, and its coarse levels give the first image in a fraction of a
// second.
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>

#include "../state.hpp"
#include "volseg/io/auto_backend.hpp"
#include "volseg/io/error.hpp"
#include "volseg/io/format.hpp"
#include "volseg/io/registry.hpp"
#include "volseg/segment/expression.hpp"
#include "volseg/session/threshold.hpp"

namespace volseg::session::detail {
namespace {

// FNV-1a of a text, in hex: the same in every build, so a name made with it
// is found again next time.
std::string stable_hash(const std::string& text) {
  std::uint64_t hash = 14695981039346656037ull;
  for (const unsigned char c : text) hash = (hash ^ c) * 1099511628211ull;
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(hash));
  return hex;
}

// A selection's part of its pyramid's folder name: "-VAR", "-STEP", or for
// an expression "-expr-" (or "-where-") and a hash of its text.
std::string pyramid_name_part(const io::Selection& selection) {
  std::string part;
  if (selection.has_expression())
    part += std::string(selection.condition ? "-where-" : "-expr-") + stable_hash(selection.expression);
  else if (!selection.variable.empty())
    part += "-" + selection.variable;
  if (selection.step) part += "-" + std::to_string(*selection.step);
  return part;
}

// Where the window keeps the pyramid of a volume it opens, unless the user
// names a folder: beside the file (NAME.pyramid, or NAME-VAR-STEP.pyramid
// for a variable, step or expression of it), or, where the file's folder is
// not this user's to write (a shared read-only dataset), in the user's cache
// ($XDG_CACHE_HOME or ~/.cache, volseg/pyramids/), named by the file's full
// path. Rank 0 decides.
std::string default_pyramid_dir(const Comm& comm, const std::string& path, const io::Selection& selection) {
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
    if (const std::string part = pyramid_name_part(selection); !part.empty())  // one per variable, step, expression
      dir = dir.substr(0, dir.size() - std::string(".pyramid").size()) + part + ".pyramid";
  });
  return comm.broadcast(dir);
}

// The volume's pyramid: the one found in pyramid_dir (empty: the default
// above), if it belongs to this selection and is not stale, or one built
// there now; pyramid_dir becomes where it is.
pyramid::Pyramid find_or_build_pyramid(const Comm& comm, const std::string& path, const std::string& backend,
                                       const io::Selection& selection, std::string& pyramid_dir, Reply& reply) {
  if (pyramid_dir.empty()) pyramid_dir = default_pyramid_dir(comm, path, selection);
  if (auto found = render::find_pyramid(comm, path, pyramid_dir, selection)) return std::move(*found);
  pyramid::BuildOptions build;
  build.input = path;
  build.backend = backend;
  build.selection = selection;
  build.force = true;
  build.progress = segment::ProgressMode::none;
  build.command_line = "volseg-gui";
  build.directory = pyramid_dir;
  reply.data["pyramid_built"] = true;
  return pyramid::build(comm, build);
}

// What the window shows of a pyramid: its levels, range, exact histogram
// (with its bins' edges and Otsu's threshold, as segment computes them: a
// front end draws these, it does not recompute them) and counts.
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
  Json edges = Json::array();
  for (int i = 0; i <= e.bins; ++i) edges.push_back(e.edge(i));
  d["histogram"]["edges"] = std::move(edges);
  d["histogram"]["otsu"] = otsu(histogram);
  std::uint64_t voxels = 0, valid = 0;
  for (std::int64_t b = 0; b < pyramid.brick_count(); ++b) {
    voxels += pyramid.stats(b).voxels;
    valid += pyramid.stats(b).valid;
  }
  d["voxels"] = voxels;
  d["valid"] = valid;
}

// What the reply says of the volume opened (rank 0).
void describe_open(const State& state, io::FileFormat format, const std::string& reading, const Json& variables,
                   const io::VolumeInfo& info, Json& d) {
  const io::Selection& selection = state.selection;
  d["path"] = state.path;
  d["format"] = io::format_name(format);
  d["backend"] = reading;
  d["info"] = io::describe(state.path, format, reading, info);
  d["variables"] = variables;
  if (!selection.variable.empty()) d["selected_variable"] = selection.variable;
  if (selection.step) d["selected_step"] = *selection.step;
  d["variable"] = info.variable;
  if (selection.has_expression()) d[selection.condition ? "where" : "expr"] = selection.expression;
  if (info.step) {  // a series: how many steps, and the one open
    d["steps"] = info.steps;
    d["step"] = *info.step;
  }
  d["dims"] = {info.dims[0], info.dims[1], info.dims[2]};
  d["dtype"] = std::string(io::dtype_name(info.dtype));
  d["spacing"] = {info.spacing[0], info.spacing[1], info.spacing[2]};
  describe_pyramid(*state.pyramid, state.range, d);
  // The colours frames are drawn in, for a front end that draws surfaces itself.
  const render::FrameSettings frame;
  auto rgb = [](const render::Rgb& c) { return Json{c.r, c.g, c.b}; };
  d["colours"] = {{"mask", rgb(frame.mask_color)}, {"background", rgb(frame.background)}};
}

}  // namespace

void handle(State& state, const OpenRequest& request, const Hooks&, Reply& reply) {
  state.close();
  const Comm& comm = state.comm;
  const std::string& path = request.path;
  io::Selection selection = request.selection;
  const bool field_chosen = selection.has_expression() || !selection.variable.empty();
  const io::FileFormat format = io::detect_format(comm, path);
  // What a job of this file reads it with (segment's, the pyramid build's).
  const std::string reading = io::resolve_backend(comm, request.backend, format, path, io::Access::stream).backend;
  const auto& entry = io::builtin_registry().get(reading);
  Json variables = Json::array();
  if (entry.list_variables) {
    for (const auto& line : entry.list_variables(path, comm)) variables.push_back(line);
    // A file of several variables opens its first until the user picks one.
    if (!field_chosen && variables.size() > 1) {
      const std::string first = variables[0].get<std::string>();
      selection.variable = first.substr(0, first.find('('));
    }
  }
  std::unique_ptr<io::VolumeReader> reader;
  try {
    reader = segment::open_input(reading, {path, selection}, comm, {});
  } catch (const StepRequired&) {
    // A series opened with no step shows its first, and the step to pick
    // (volseg info does the same); a job still has to name its steps.
    if (request.selection.step) throw;
    selection.step = 0;
    reader = segment::open_input(reading, {path, selection}, comm, {});
  }
  const io::VolumeInfo info = reader->info();
  reader->close();

  std::string pyramid_dir = request.pyramid_dir;
  auto found = find_or_build_pyramid(comm, path, request.backend, selection, pyramid_dir, reply);
  state.path = path;
  state.backend = request.backend;
  state.pyramid_dir = pyramid_dir;
  state.selection = selection;
  state.coordinates = info.coordinates;
  state.resampled_dims.reset();
  bool uneven = false;
  for (const auto& c : state.coordinates) uneven = uneven || (c && !c->uniform());
  if (uneven) {  // the grid an uneven axis is drawn on, once per open
    auto resampled = render::open_source(comm, state.field(false), 0);
    state.resampled_dims = resampled->info().dims;
    resampled->close();
  }
  state.pyramid = std::move(found);
  ++state.volume_generation;
  state.range = render::value_range(*state.pyramid);
  if (comm.rank() != 0) return;
  describe_open(state, format, reading, variables, info, reply.data);
  reply.opened = OpenRequest{path, selection, request.backend, pyramid_dir};
}

}  // namespace volseg::session::detail
