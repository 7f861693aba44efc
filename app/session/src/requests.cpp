// SPDX-License-Identifier: MIT
// Requests as JSON and back: what the worker broadcasts to the other ranks,
// and what a front end that speaks JSON hands the session.
#include "volseg/session/requests.hpp"

#include <set>

#include "volseg/io/error.hpp"

namespace volseg::session {
namespace {

// Reads a request's fields by name, each once; a field of a wrong type is
// one line naming it, and done() refuses a field no one read.
class Fields {
 public:
  Fields(const Json& json, std::string_view kind) : json_(json), kind_(kind) {}

  template <class T>
  void get(const char* name, T& out) {
    read_.insert(name);
    if (!json_.contains(name) || json_.at(name).is_null()) return;
    try {
      out = json_.at(name).get<T>();
    } catch (const Json::exception&) {
      throw Error(std::string(kind_) + ": '" + name + "' has the wrong type (" + json_.at(name).dump() + ")");
    }
  }
  template <class T>
  void get(const char* name, std::optional<T>& out) {
    if (!json_.contains(name) || json_.at(name).is_null()) {
      read_.insert(name);
      return;
    }
    T value{};
    get(name, value);
    out = value;
  }
  void done() const {
    for (const auto& [key, value] : json_.items())
      if (key != "kind" && !read_.count(key)) throw Error(std::string(kind_) + ": unknown field '" + key + "'");
  }

 private:
  const Json& json_;
  std::string_view kind_;
  std::set<std::string> read_;
};

void read(Fields& f, OpenRequest& r) {
  f.get("path", r.path);
  f.get("backend", r.backend);
  f.get("pyramid_dir", r.pyramid_dir);
  auto& s = r.selection;
  f.get("var", s.variable);
  f.get("time", s.step);
  f.get("glob", s.glob);
  std::string expression, condition;
  f.get("expr", expression);
  f.get("where", condition);
  if (!expression.empty() && !condition.empty()) throw Error("open: an expression or a condition, not both");
  s.expression = expression.empty() ? condition : expression;
  s.condition = !condition.empty();
  f.get("operands", s.operands);
}

void read(Fields& f, CheckRequest& r) {
  f.get("backend", r.backend);
  f.get("hints", r.hints);
}

void read(Fields& f, SegmentRequest& r) {
  f.get("lo", r.lo);
  f.get("hi", r.hi);
  f.get("output", r.output);
  f.get("format", r.format);
  f.get("backend", r.backend);
  f.get("hints", r.hints);
  f.get("force", r.force);
  f.get("command_line", r.command_line);
  auto& o = r.operators;
  f.get("seed", o.seed);
  f.get("open", o.open);
  f.get("close", o.close);
  f.get("fill_holes", o.fill_holes);
  f.get("connectivity", o.connectivity);
}

void read(Fields& f, DrawRequest& r) {
  f.get("width", r.width);
  f.get("height", r.height);
  f.get("azimuth", r.azimuth);
  f.get("elevation", r.elevation);
  f.get("zoom", r.zoom);
  f.get("volume", r.volume);
  f.get("mask", r.mask);
  f.get("slices", r.slices);
  f.get("threshold", r.threshold);
  f.get("slice_at", r.slice_at);
  f.get("annotations", r.annotations);
  f.get("level", r.level);
  f.get("memory", r.memory);
  f.get("opacity", r.opacity);
  f.get("mask_opacity", r.mask_opacity);
  f.get("mask_surface", r.mask_surface);
  f.get("scale", r.scale);
  f.get("title", r.title);
  f.get("meshes", r.meshes);
  f.get("mesh_ids", r.mesh_ids);
}

void read(Fields& f, SlicesRequest& r) {
  f.get("at", r.at);
  f.get("max_side", r.max_side);
}

void read(Fields& f, LabelRequest& r) {
  f.get("output", r.output);
  f.get("connectivity", r.connectivity);
  f.get("min_voxels", r.min_voxels);
  f.get("force", r.force);
  f.get("command_line", r.command_line);
}

void read(Fields& f, SurfaceRequest& r) {
  f.get("band", r.band);
  f.get("object", r.object);
  f.get("max_side", r.max_side);
  f.get("max_triangles", r.max_triangles);
}

void read(Fields&, CloseRequest&) {}
void read(Fields&, QuitRequest&) {}

template <class T>
void put(Json& j, const char* name, const std::optional<T>& value) {
  if (value) j[name] = *value;
}

Json fields(const OpenRequest& r) {
  Json j{{"path", r.path}, {"backend", r.backend}, {"pyramid_dir", r.pyramid_dir}};
  const auto& s = r.selection;
  if (!s.variable.empty()) j["var"] = s.variable;
  put(j, "time", s.step);
  if (!s.glob.empty()) j["glob"] = s.glob;
  if (s.has_expression()) j[s.condition ? "where" : "expr"] = s.expression;
  if (!s.operands.empty()) j["operands"] = s.operands;
  return j;
}

Json fields(const CheckRequest& r) { return {{"backend", r.backend}, {"hints", r.hints}}; }

Json fields(const SegmentRequest& r) {
  Json j{{"lo", r.lo},           {"hi", r.hi},       {"output", r.output}, {"format", r.format},
         {"backend", r.backend}, {"hints", r.hints}, {"force", r.force},   {"command_line", r.command_line}};
  const auto& o = r.operators;
  put(j, "seed", o.seed);
  j["open"] = o.open;
  j["close"] = o.close;
  j["fill_holes"] = o.fill_holes;
  j["connectivity"] = o.connectivity;
  return j;
}

Json fields(const DrawRequest& r) {
  Json j{{"width", r.width},
         {"height", r.height},
         {"azimuth", r.azimuth},
         {"elevation", r.elevation},
         {"zoom", r.zoom},
         {"volume", r.volume},
         {"mask", r.mask},
         {"slices", r.slices},
         {"slice_at", r.slice_at},
         {"annotations", r.annotations},
         {"memory", r.memory},
         {"mask_opacity", r.mask_opacity},
         {"mask_surface", r.mask_surface},
         {"scale", r.scale},
         {"title", r.title},
         {"meshes", r.meshes},
         {"mesh_ids", r.mesh_ids}};
  put(j, "threshold", r.threshold);
  put(j, "level", r.level);
  put(j, "opacity", r.opacity);
  return j;
}

Json fields(const SlicesRequest& r) { return {{"at", r.at}, {"max_side", r.max_side}}; }

Json fields(const LabelRequest& r) {
  return {{"output", r.output},
          {"connectivity", r.connectivity},
          {"min_voxels", r.min_voxels},
          {"force", r.force},
          {"command_line", r.command_line}};
}

Json fields(const SurfaceRequest& r) {
  Json j{{"max_side", r.max_side}, {"max_triangles", r.max_triangles}};
  put(j, "band", r.band);
  put(j, "object", r.object);
  return j;
}

Json fields(const CloseRequest&) { return Json::object(); }
Json fields(const QuitRequest&) { return Json::object(); }

// The request of kind `index` (the variant's order), read from json.
template <std::size_t index = 0>
Request parse_kind(std::size_t kind, const Json& json) {
  if constexpr (index < std::variant_size_v<Request>) {
    if (kind != index) return parse_kind<index + 1>(kind, json);
    std::variant_alternative_t<index, Request> request;
    Fields f(json, kinds[index].name);
    read(f, request);
    f.done();
    return request;
  } else {
    throw Error("unknown request kind");  // not reached: kind < the variant's size
  }
}

}  // namespace

const Kind& kind_of(const Request& request) { return kinds[request.index()]; }

const Kind* kind_of_page_type(std::string_view type) {
  for (const Kind& kind : kinds)
    if (!kind.page_type.empty() && kind.page_type == type) return &kind;
  return nullptr;
}

Json to_json(const Request& request) {
  Json j = std::visit([](const auto& r) { return fields(r); }, request);
  j["kind"] = std::string(kind_of(request).name);
  return j;
}

Request parse_request(const Json& json) {
  if (!json.is_object()) throw Error("a request is a JSON object with a \"kind\"");
  const auto found = json.find("kind");
  if (found == json.end() || !found->is_string()) throw Error("a request names its \"kind\"");
  const std::string name = found->get<std::string>();
  for (std::size_t k = 0; k < kinds.size(); ++k)
    if (kinds[k].name == name) return parse_kind(k, json);
  throw Error("unknown request '" + name + "'");
}

}  // namespace volseg::session
