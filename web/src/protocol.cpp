// SPDX-License-Identifier: MIT
#include "volseg/web/protocol.hpp"

#include <jpeglib.h>

#include <charconv>
#include <cmath>
#include <csetjmp>
#include <cstring>
#include <limits>

#include "volseg/io/error.hpp"
#include "volseg/segment/operators.hpp"

namespace volseg::web {
namespace {

const Json& field(const Json& message, const char* name) {
  if (!message.contains(name)) throw Error(std::string("'") + name + "' is missing");
  return message.at(name);
}

double number(const Json& message, const char* name) {
  const Json& v = field(message, name);
  if (!v.is_number()) throw Error(std::string("'") + name + "' must be a number");
  const double d = v.get<double>();
  if (!std::isfinite(d)) throw Error(std::string("'") + name + "' must be finite");
  return d;
}

std::int64_t integer(const Json& message, const char* name, std::int64_t lo, std::int64_t hi) {
  const Json& v = field(message, name);
  if (!v.is_number_integer()) throw Error(std::string("'") + name + "' must be an integer");
  const auto i = v.get<std::int64_t>();
  if (i < lo || i > hi)
    throw Error(std::string("'") + name + "' must be in " + std::to_string(lo) + ".." + std::to_string(hi));
  return i;
}

std::string string(const Json& message, const char* name, std::size_t longest = 4096) {
  const Json& v = field(message, name);
  if (!v.is_string()) throw Error(std::string("'") + name + "' must be a string");
  auto s = v.get<std::string>();
  if (s.size() > longest) throw Error(std::string("'") + name + "' is longer than " + std::to_string(longest));
  return s;
}

bool flag(const Json& message, const char* name) {
  if (!message.contains(name)) return false;
  if (!message.at(name).is_boolean()) throw Error(std::string("'") + name + "' must be true or false");
  return message.at(name).get<bool>();
}

// Only the fields a type names: a misspelt one is an error, not ignored.
void only(const Json& message, std::initializer_list<const char*> names) {
  for (const auto& [key, value] : message.items()) {
    if (key == "type" || key == "id") continue;
    bool known = false;
    for (const char* n : names) known = known || key == n;
    if (!known) throw Error("unknown field '" + key + "'");
  }
}

session::OpenRequest open_request(const Json& m, const Roots& roots, const std::string& file) {
  only(m, {"path", "var", "time", "expr", "where"});
  session::OpenRequest r;
  r.path = roots.input(m.contains("path") ? string(m, "path") : file).string();
  io::Selection& s = r.selection;
  if (m.contains("var")) s.variable = string(m, "var", 256);
  if (m.contains("time")) s.step = integer(m, "time", 0, std::numeric_limits<std::int32_t>::max());
  const std::string expression = m.contains("expr") ? string(m, "expr") : "";
  const std::string condition = m.contains("where") ? string(m, "where") : "";
  if (!expression.empty() && !condition.empty()) throw Error("an expression or a condition, not both");
  s.expression = expression.empty() ? condition : expression;
  s.condition = !condition.empty();
  return r;
}

// "connectivity": 6, 18 or 26.
int connectivity(const Json& m) {
  const auto c = integer(m, "connectivity", 6, 26);
  if (c != 6 && c != 18 && c != 26) throw Error("'connectivity' must be 6, 18 or 26");
  return static_cast<int>(c);
}

session::SegmentRequest segment_request(const Json& m, const Roots& roots) {
  only(m, {"lo", "hi", "output", "force", "seed", "open", "close", "fill_holes", "connectivity"});
  session::SegmentRequest r;
  r.lo = number(m, "lo");
  r.hi = number(m, "hi");
  if (r.lo > r.hi) throw Error("'lo' is above 'hi'");
  r.output = roots.output(string(m, "output")).string();
  r.force = flag(m, "force");
  // The operators after the threshold (docs/operators.md).
  auto& o = r.operators;
  if (m.contains("seed")) {
    const Json& seed = m.at("seed");
    if (!seed.is_array() || seed.size() != 2 || !seed[0].is_number() || !seed[1].is_number())
      throw Error("'seed' must be [lo, hi], two numbers");
    if (seed[0].get<double>() > seed[1].get<double>()) throw Error("'seed' is [lo, hi] with lo above hi");
    o.seed = std::pair{seed[0].get<double>(), seed[1].get<double>()};
  }
  if (m.contains("open")) o.open = static_cast<int>(integer(m, "open", 0, segment::max_radius));
  if (m.contains("close")) o.close = static_cast<int>(integer(m, "close", 0, segment::max_radius));
  o.fill_holes = flag(m, "fill_holes");
  if (m.contains("connectivity")) o.connectivity = connectivity(m);
  return r;
}

session::LabelRequest label_request(const Json& m, const Roots& roots) {
  only(m, {"output", "connectivity", "min_voxels", "force"});
  session::LabelRequest r;
  r.output = roots.output(string(m, "output")).string();
  r.force = flag(m, "force");
  if (m.contains("connectivity")) r.connectivity = connectivity(m);
  if (m.contains("min_voxels"))
    r.min_voxels = static_cast<std::uint64_t>(integer(m, "min_voxels", 0, std::numeric_limits<std::int64_t>::max()));
  return r;
}

// "lo" and "hi", together or not at all.
std::optional<std::array<double, 2>> band(const Json& m) {
  if (m.contains("lo") != m.contains("hi")) throw Error("'lo' and 'hi' come together");
  if (!m.contains("lo")) return std::nullopt;
  return std::array<double, 2>{number(m, "lo"), number(m, "hi")};
}

session::SurfaceRequest surface_request(const Json& m) {
  only(m, {"lo", "hi", "object", "max_side", "max_triangles"});
  session::SurfaceRequest r;
  r.band = band(m);
  if (m.contains("object")) r.object = integer(m, "object", 1, std::numeric_limits<std::int64_t>::max());
  if (m.contains("max_side")) r.max_side = integer(m, "max_side", 16, 256);
  if (m.contains("max_triangles"))
    r.max_triangles = static_cast<std::size_t>(integer(m, "max_triangles", 1000, 2000000));
  return r;
}

// A labelled object's split (volseg edit's): by h or from seed voxels.
session::SplitRequest split_request(const Json& m) {
  only(m, {"object", "h", "seeds", "connectivity", "apply", "base"});
  session::SplitRequest r;
  r.object = integer(m, "object", 1, std::numeric_limits<std::int64_t>::max());
  if (m.contains("h") == m.contains("seeds")) throw Error("a split takes 'h' or 'seeds'");
  if (m.contains("h")) {
    r.h = number(m, "h");
    if (!(*r.h > 0) || *r.h > 1e6) throw Error("'h' must be above 0");
  } else {
    const Json& seeds = field(m, "seeds");
    if (!seeds.is_array() || seeds.size() < 2 || seeds.size() > 1000)
      throw Error("'seeds' must be 2 to 1000 voxels [z, y, x]");
    for (const auto& seed : seeds) {
      if (!seed.is_array() || seed.size() != 3) throw Error("'seeds' must be voxels [z, y, x]");
      std::array<std::int64_t, 3> at{};
      for (std::size_t k = 0; k < 3; ++k) {
        if (!seed[k].is_number_integer() || seed[k].get<std::int64_t>() < 0)
          throw Error("'seeds' must be voxel indices, whole numbers from 0");
        at[k] = seed[k].get<std::int64_t>();
      }
      r.seeds.push_back(at);
    }
  }
  if (m.contains("connectivity")) r.connectivity = connectivity(m);
  r.apply = flag(m, "apply");
  if (m.contains("base")) r.base = integer(m, "base", 0, std::numeric_limits<std::int64_t>::max());
  return r;
}

// An edit of the objects (volseg edit's merge, delete, paint, erase), or
// undo / redo, or save (the labels with their table); `base`: the number of
// edits the page's view holds.
session::EditRequest edit_request(const Json& m) {
  only(m, {"op", "ids", "object", "center", "radius", "base", "connectivity"});
  session::EditRequest r;
  const Json& op = field(m, "op");
  if (!op.is_string()) throw Error("'op' must be merge, delete, paint, erase, undo, redo or save");
  r.op = op.get<std::string>();
  const auto want = [&](std::initializer_list<const char*> needed) {
    for (const char* name : {"ids", "object", "center", "radius"}) {
      const bool wanted = std::find_if(needed.begin(), needed.end(),
                                       [&](const char* n) { return std::string_view(n) == name; }) != needed.end();
      if (wanted != m.contains(name)) throw Error("edit " + r.op + (wanted ? " needs '" : " takes no '") + name + "'");
    }
  };
  if (r.op == "merge" || r.op == "delete") {
    want({"ids"});
    const Json& ids = field(m, "ids");
    if (!ids.is_array() || ids.empty() || ids.size() > 10000) throw Error("'ids' must be 1 to 10000 object ids");
    for (const auto& id : ids) {
      if (!id.is_number_integer() || id.get<std::int64_t>() < 1) throw Error("'ids' must be object ids, from 1");
      r.ids.push_back(id.get<std::int64_t>());
    }
  } else if (r.op == "paint" || r.op == "erase") {
    if (r.op == "paint")
      want({"object", "center", "radius"});
    else
      want({"center", "radius"});
    if (r.op == "paint") r.id = integer(m, "object", 1, std::numeric_limits<std::int64_t>::max());
    const Json& center = field(m, "center");
    if (!center.is_array() || center.size() != 3) throw Error("'center' must be a voxel [z, y, x]");
    for (std::size_t k = 0; k < 3; ++k) {
      if (!center[k].is_number_integer() || center[k].get<std::int64_t>() < 0)
        throw Error("'center' must be voxel indices, whole numbers from 0");
      r.center[k] = center[k].get<std::int64_t>();
    }
    r.radius = number(m, "radius");
  } else if (r.op == "undo" || r.op == "redo" || r.op == "save") {
    want({});
  } else {
    throw Error("'op' must be merge, delete, paint, erase, undo, redo or save, not '" + r.op + "'");
  }
  if (m.contains("base")) r.base = integer(m, "base", 0, std::numeric_limits<std::int64_t>::max());
  if (m.contains("connectivity")) r.connectivity = connectivity(m);
  return r;
}

session::DrawRequest frame_request(const Json& m) {
  only(m, {"width", "height", "camera", "lo", "hi"});
  const Json& c = field(m, "camera");
  if (!c.is_object()) throw Error("'camera' must be an object");
  for (const auto& [key, value] : c.items())
    if (key != "azimuth" && key != "elevation" && key != "zoom") throw Error("unknown field 'camera." + key + "'");
  session::DrawRequest r;
  r.zoom = c.contains("zoom") ? number(c, "zoom") : 1.0;
  if (r.zoom < 0.05 || r.zoom > 100) throw Error("'camera.zoom' must be in 0.05..100");
  r.width = static_cast<int>(integer(m, "width", 16, 2048));
  r.height = static_cast<int>(integer(m, "height", 16, 2048));
  if (c.contains("azimuth")) r.azimuth = number(c, "azimuth");
  if (c.contains("elevation")) r.elevation = number(c, "elevation");
  r.volume = false;  // the page draws the mask (or, before one exists, the band's surface)
  r.annotations = false;
  r.threshold = band(m);
  return r;
}

session::SlicesRequest slices_request(const Json& m) {
  only(m, {"at"});
  const Json& at = field(m, "at");
  if (!at.is_array() || at.size() != 3) throw Error("'at' must be 3 numbers");
  session::SlicesRequest r;
  for (std::size_t k = 0; k < 3; ++k) {
    const Json& v = at[k];
    if (!v.is_number() || !(v.get<double>() >= 0 && v.get<double>() <= 1))
      throw Error("'at' must be 3 numbers in [0, 1]");
    r.at[k] = v.get<double>();
  }
  return r;
}

}  // namespace

Message parse_message(const std::string& text, const Roots& roots, const std::string& file) {
  if (text.size() > max_message_bytes)
    throw Error("message of " + std::to_string(text.size()) + " bytes is over the limit of " +
                std::to_string(max_message_bytes));
  const Json m = Json::parse(text, nullptr, false);
  if (m.is_discarded()) throw Error("message is not JSON");
  if (!m.is_object()) throw Error("message is not a JSON object");
  Message message;
  message.type = string(m, "type", 32);
  message.id = integer(m, "id", 0, std::int64_t{1} << 53);
  const std::string& t = message.type;
  if (t == "hello" || t == "cancel")
    only(m, {});
  else if (t == "open")
    message.request = open_request(m, roots, file);
  else if (t == "segment")
    message.request = segment_request(m, roots);
  else if (t == "label")
    message.request = label_request(m, roots);
  else if (t == "surface")
    message.request = surface_request(m);
  else if (t == "split")
    message.request = split_request(m);
  else if (t == "edit")
    message.request = edit_request(m);
  else if (t == "frame")
    message.request = frame_request(m);
  else if (t == "slices")
    message.request = slices_request(m);
  else
    throw Error("unknown message type '" + t + "'");
  // The page's types are the session's table's (requests.hpp's kinds).
  if (message.request && session::kind_of(*message.request).page_type != t)
    throw Error("message type '" + t + "' is not the page type of request '" +
                std::string(session::kind_of(*message.request).name) + "'");
  return message;
}

std::int64_t message_id(const std::string& text) {
  if (text.size() > max_message_bytes) return 0;
  const Json m = Json::parse(text, nullptr, false);
  if (!m.is_object() || !m.contains("id") || !m.at("id").is_number_integer()) return 0;
  return m.at("id").get<std::int64_t>();
}

std::string binary_frame(const Json& header, const std::vector<const std::string*>& parts) {
  std::string head = header.dump();
  head.append((4 - head.size() % 4) % 4, ' ');
  const auto n = static_cast<std::uint32_t>(head.size());
  std::string frame;
  std::size_t size = 4 + head.size();
  for (const auto* p : parts) size += p->size();
  frame.reserve(size);
  for (int i = 0; i < 4; ++i) frame += static_cast<char>((n >> (8 * i)) & 0xff);
  frame += head;
  for (const auto* p : parts) frame += *p;
  return frame;
}

namespace {
template <class T>
std::string bytes_of(const std::vector<T>& v) {
  return std::string(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(T));
}
}  // namespace

std::string surface_frame(const Json& header, const session::Surface& surface) {
  Json h = header;
  h["points"] = surface.points.size() / 3;
  h["triangles"] = surface.triangles.size() / 3;
  h["bounds"] = surface.bounds;
  h["level"] = surface.level;
  if (surface.object) h["object"] = surface.object;
  const std::string points = bytes_of(surface.points), normals = bytes_of(surface.normals),
                    triangles = bytes_of(surface.triangles);
  return binary_frame(h, {&points, &normals, &triangles});
}

std::string slices_frame(Json header, const session::Planes& planes, const std::array<double, 2>& range) {
  header["level"] = planes.level;
  header["dims"] = planes.dims;
  header["at"] = planes.at;
  header["spacing"] = planes.spacing;
  header["range"] = range;
  header["planes"] = Json::array();
  const bool with_mask = !planes.mask[0].empty();
  header["mask"] = with_mask;
  const bool with_labels = !planes.labels[0].empty();
  header["labels"] = with_labels;
  std::string values, mask, labels;
  const double scale = range[1] > range[0] ? 254.0 / (range[1] - range[0]) : 0.0;
  for (std::size_t p = 0; p < 3; ++p) {
    header["planes"].push_back({{"rows", planes.rows[p]}, {"columns", planes.columns[p]}});
    for (const float v : planes.values[p])
      values += std::isfinite(v) ? static_cast<char>(static_cast<unsigned char>(
                                       std::lround(std::clamp((v - range[0]) * scale, 0.0, 254.0))))
                                 : static_cast<char>(255);
    if (with_mask)
      for (const std::uint8_t m : planes.mask[p]) mask += static_cast<char>(m ? 1 : 0);
    if (with_labels)  // little-endian u32, as the page's Uint32Array reads them (x86 and ARM alike)
      for (const std::uint32_t id : planes.labels[p])
        for (int k = 0; k < 4; ++k) labels += static_cast<char>((id >> (8 * k)) & 0xff);
  }
  return binary_frame(header, {&values, &mask, &labels});
}

namespace {
struct JpegError {
  jpeg_error_mgr manager;
  std::jmp_buf jump;
  char message[JMSG_LENGTH_MAX];
};
void on_jpeg_error(j_common_ptr info) {
  auto* e = reinterpret_cast<JpegError*>(info->err);
  (*info->err->format_message)(info, e->message);
  std::longjmp(e->jump, 1);
}
}  // namespace

std::string jpeg(const render::Image& image, int quality) {
  if (image.width < 1 || image.height < 1) throw Error("no image to encode");
  jpeg_compress_struct info{};
  JpegError error{};
  info.err = jpeg_std_error(&error.manager);
  error.manager.error_exit = on_jpeg_error;
  unsigned char* buffer = nullptr;
  unsigned long size = 0;
  std::vector<unsigned char> row(static_cast<std::size_t>(image.width) * 3);
  if (setjmp(error.jump)) {
    jpeg_destroy_compress(&info);
    std::free(buffer);
    throw Error(std::string("JPEG: ") + error.message);
  }
  jpeg_create_compress(&info);
  jpeg_mem_dest(&info, &buffer, &size);
  info.image_width = static_cast<JDIMENSION>(image.width);
  info.image_height = static_cast<JDIMENSION>(image.height);
  info.input_components = 3;
  info.in_color_space = JCS_RGB;
  jpeg_set_defaults(&info);
  jpeg_set_quality(&info, quality, TRUE);
  jpeg_start_compress(&info, TRUE);
  for (int y = 0; y < image.height; ++y) {
    const std::uint8_t* rgba = image.rgba.data() + static_cast<std::size_t>(y) * image.width * 4;
    for (int x = 0; x < image.width; ++x)
      for (int c = 0; c < 3; ++c) row[static_cast<std::size_t>(x) * 3 + c] = rgba[x * 4 + c];
    JSAMPROW rows[1] = {row.data()};
    jpeg_write_scanlines(&info, rows, 1);
  }
  jpeg_finish_compress(&info);
  std::string out(reinterpret_cast<const char*>(buffer), size);
  jpeg_destroy_compress(&info);
  std::free(buffer);
  return out;
}

}  // namespace volseg::web
