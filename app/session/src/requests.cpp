// SPDX-License-Identifier: MIT
// Requests as JSON and back: what the worker broadcasts to the other ranks,
// and what a front end that speaks JSON hands the session.
#include "volseg/session/requests.hpp"

#include <set>
#include <type_traits>

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

// Each kind's fields, listed once: visit(name, member) for every field,
// read (Reader) and written (Writer) alike. An open's expression is one
// member named by two fields ("expr", or "where" for a condition), which
// visit.expression() reads and writes. R is a request or a const one.
template <class R, class Visit>
void visit_fields(R& r, Visit&& visit) {
  using T = std::remove_const_t<R>;
  if constexpr (std::is_same_v<T, OpenRequest>) {
    visit("path", r.path);
    visit("backend", r.backend);
    visit("pyramid_dir", r.pyramid_dir);
    visit("var", r.selection.variable);
    visit("time", r.selection.step);
    visit("glob", r.selection.glob);
    visit("operands", r.selection.operands);
    visit.expression(r.selection);
  } else if constexpr (std::is_same_v<T, CheckRequest>) {
    visit("backend", r.backend);
    visit("hints", r.hints);
  } else if constexpr (std::is_same_v<T, SegmentRequest>) {
    visit("lo", r.lo);
    visit("hi", r.hi);
    visit("output", r.output);
    visit("format", r.format);
    visit("backend", r.backend);
    visit("hints", r.hints);
    visit("force", r.force);
    visit("command_line", r.command_line);
    visit("seed", r.operators.seed);
    visit("open", r.operators.open);
    visit("close", r.operators.close);
    visit("fill_holes", r.operators.fill_holes);
    visit("connectivity", r.operators.connectivity);
  } else if constexpr (std::is_same_v<T, DrawRequest>) {
    visit("width", r.width);
    visit("height", r.height);
    visit("azimuth", r.azimuth);
    visit("elevation", r.elevation);
    visit("zoom", r.zoom);
    visit("volume", r.volume);
    visit("mask", r.mask);
    visit("slices", r.slices);
    visit("threshold", r.threshold);
    visit("slice_at", r.slice_at);
    visit("annotations", r.annotations);
    visit("level", r.level);
    visit("memory", r.memory);
    visit("opacity", r.opacity);
    visit("mask_opacity", r.mask_opacity);
    visit("mask_surface", r.mask_surface);
    visit("scale", r.scale);
    visit("title", r.title);
    visit("meshes", r.meshes);
    visit("mesh_ids", r.mesh_ids);
  } else if constexpr (std::is_same_v<T, SlicesRequest>) {
    visit("at", r.at);
    visit("max_side", r.max_side);
  } else if constexpr (std::is_same_v<T, LabelRequest>) {
    visit("output", r.output);
    visit("connectivity", r.connectivity);
    visit("min_voxels", r.min_voxels);
    visit("force", r.force);
    visit("command_line", r.command_line);
  } else if constexpr (std::is_same_v<T, SurfaceRequest>) {
    visit("band", r.band);
    visit("object", r.object);
    visit("max_side", r.max_side);
    visit("max_triangles", r.max_triangles);
  } else if constexpr (std::is_same_v<T, SplitRequest>) {
    visit("object", r.object);
    visit("h", r.h);
    visit("seeds", r.seeds);
    visit("connectivity", r.connectivity);
    visit("apply", r.apply);
    visit("base", r.base);
  } else if constexpr (std::is_same_v<T, EditRequest>) {
    visit("op", r.op);
    visit("ids", r.ids);
    visit("id", r.id);
    visit("center", r.center);
    visit("radius", r.radius);
    visit("base", r.base);
    visit("connectivity", r.connectivity);
  }  // close and quit have none
}

// Reads each field into its member.
struct Reader {
  Fields& fields;
  template <class T>
  void operator()(const char* name, T& member) {
    fields.get(name, member);
  }
  void expression(io::Selection& s) {
    std::string expression, condition;
    fields.get("expr", expression);
    fields.get("where", condition);
    if (!expression.empty() && !condition.empty()) throw Error("open: an expression or a condition, not both");
    s.expression = expression.empty() ? condition : expression;
    s.condition = !condition.empty();
  }
};

// Writes each member that holds something (an empty optional is no field).
struct Writer {
  Json& json;
  template <class T>
  void operator()(const char* name, const T& member) {
    json[name] = member;
  }
  template <class T>
  void operator()(const char* name, const std::optional<T>& member) {
    if (member) json[name] = *member;
  }
  void expression(const io::Selection& s) {
    if (s.has_expression()) json[s.condition ? "where" : "expr"] = s.expression;
  }
};

// The request of kind `index` (the variant's order), read from json.
template <std::size_t index = 0>
Request parse_kind(std::size_t kind, const Json& json) {
  if constexpr (index < std::variant_size_v<Request>) {
    if (kind != index) return parse_kind<index + 1>(kind, json);
    std::variant_alternative_t<index, Request> request;
    Fields f(json, kinds[index].name);
    visit_fields(request, Reader{f});
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
  Json j = Json::object();
  std::visit([&](const auto& r) { visit_fields(r, Writer{j}); }, request);
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
