// SPDX-License-Identifier: MIT
// An edit journal read and checked (docs/edit.md): one line naming the
// edit's index and field for anything a replay could not do.
#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "volseg/io/error.hpp"
#include "volseg/segment/edit.hpp"

namespace volseg::segment {
namespace {

using Json = nlohmann::json;

class EditReader {
 public:
  EditReader(const Json& json, std::size_t index, const io::Index3& dims, const std::string& source)
      : json_(json), dims_(dims), where_(source + ": edit " + std::to_string(index)) {}

  [[noreturn]] void fail(const std::string& field, const std::string& what) const {
    throw Error(where_ + ": '" + field + "' " + what);
  }
  const Json& field(const char* name) const {
    if (!json_.contains(name)) fail(name, "is missing");
    return json_.at(name);
  }
  std::uint64_t id(const Json& value, const char* name) const {
    if (!value.is_number_integer() || value.get<std::int64_t>() <= 0)
      fail(name, "must hold ids, whole numbers above 0, not " + value.dump());
    return value.get<std::uint64_t>();
  }
  io::Index3 voxel(const Json& value, const char* name) const {
    if (!value.is_array() || value.size() != 3) fail(name, "must be a voxel [z, y, x], not " + value.dump());
    io::Index3 at{};
    for (std::size_t a = 0; a < 3; ++a) {
      if (!value[a].is_number_integer()) fail(name, "must be whole voxel indices [z, y, x], not " + value.dump());
      at[a] = value[a].get<std::int64_t>();
      if (at[a] < 0 || at[a] >= dims_[a])
        fail(name, value.dump() + " is outside the volume (z, y, x below " + std::to_string(dims_[0]) + ", " +
                       std::to_string(dims_[1]) + ", " + std::to_string(dims_[2]) + ")");
    }
    return at;
  }
  double number(const char* name) const {
    const Json& value = field(name);
    if (!value.is_number() || !std::isfinite(value.get<double>())) fail(name, "must be a number, not " + value.dump());
    return value.get<double>();
  }
  void only(std::initializer_list<const char*> names) const {
    for (const auto& [key, value] : json_.items()) {
      bool known = key == "op";
      for (const char* name : names) known = known || key == name;
      if (!known) fail(key, "is not a field of a '" + json_.at("op").get<std::string>() + "' edit");
    }
  }

  Edit read() const {
    if (!json_.is_object()) throw Error(where_ + ": must be an object {\"op\": ...}, not " + json_.dump());
    const Json& op = field("op");
    const std::string name = op.is_string() ? op.get<std::string>() : op.dump();
    Edit edit;
    if (name == "merge" || name == "delete") {
      only({"ids"});
      edit.op = name == "merge" ? Edit::Op::merge : Edit::Op::del;
      const Json& ids = field("ids");
      if (!ids.is_array() || ids.empty()) fail("ids", "must be a list of ids, not " + ids.dump());
      for (const auto& value : ids) edit.ids.push_back(id(value, "ids"));
      if (edit.op == Edit::Op::merge && ids.size() < 2) fail("ids", "must name 2 or more objects to merge");
    } else if (name == "split") {
      only({"id", "h", "seeds"});
      edit.op = Edit::Op::split;
      edit.id = id(field("id"), "id");
      if (json_.contains("h") == json_.contains("seeds")) fail("h", "or 'seeds': a split takes one of the two");
      if (json_.contains("h")) {
        edit.h = number("h");
        if (!(*edit.h > 0)) fail("h", "must be above 0, not " + field("h").dump());
      } else {
        const Json& seeds = field("seeds");
        if (!seeds.is_array() || seeds.size() < 2) fail("seeds", "must list 2 or more voxels [z, y, x]");
        for (const auto& seed : seeds) edit.seeds.push_back(voxel(seed, "seeds"));
      }
    } else if (name == "paint" || name == "erase") {
      edit.op = name == "paint" ? Edit::Op::paint : Edit::Op::erase;
      if (edit.op == Edit::Op::paint) {
        only({"id", "center", "radius"});
        edit.id = id(field("id"), "id");
      } else {
        only({"center", "radius"});
      }
      edit.center = voxel(field("center"), "center");
      edit.radius = number("radius");
      if (!(edit.radius > 0) || edit.radius > kMostRadius) {
        std::ostringstream most;
        most << kMostRadius;
        fail("radius", "must be above 0 and at most " + most.str() + " voxels, not " + field("radius").dump());
      }
    } else {
      fail("op", "is " + op.dump() + ": not merge, delete, split, paint or erase");
    }
    return edit;
  }

 private:
  const Json& json_;
  io::Index3 dims_;
  std::string where_;
};

}  // namespace

std::string read_journal(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error("--edits " + path + ": cannot be read");
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) throw Error("--edits " + path + ": cannot be read");
  return text.str();
}

std::vector<Edit> parse_edits(const std::string& text, const io::Index3& dims, const std::string& source) {
  Json json;
  try {
    json = Json::parse(text);
  } catch (const Json::parse_error& e) {
    throw Error(source + ": not JSON (" + e.what() + ")");
  }
  if (!json.is_object() || !json.contains("edits") || !json.at("edits").is_array())
    throw Error(source + ": a journal is {\"edits\": [...]}");
  for (const auto& [key, value] : json.items())
    if (key != "edits" && key != "base" && key != "labels")
      throw Error(source + ": '" + key + "' is not a field of a journal (edits, and optionally labels, base)");
  std::vector<Edit> edits;
  std::size_t index = 0;
  for (const auto& item : json.at("edits")) edits.push_back(EditReader(item, index++, dims, source).read());
  return edits;
}

}  // namespace volseg::segment
