// SPDX-License-Identifier: MIT
// label: the mask's objects labelled on every rank as `volseg label MASK
// --mask-input` does; rank 0 keeps the table's boxes so an object can be
// shown alone (surface requests).
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "../state.hpp"
#include "volseg/io/error.hpp"
#include "volseg/segment/label.hpp"

namespace volseg::session::detail {
namespace {

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
void handle(State& state, const LabelRequest& request, const Hooks& hooks, Reply& reply) {
  if (state.mask.empty()) throw Error("segment first: there is no mask to label");
  const Comm& comm = state.comm;
  segment::LabelOptions options;
  options.input = state.mask;
  options.mask_input = true;
  options.output = request.output;
  if (options.output.empty()) throw Error("no output file named for the labels");
  options.connectivity = request.connectivity;
  options.min_voxels = request.min_voxels;
  options.force = request.force;
  options.progress = segment::ProgressMode::none;
  options.command_line = request.command_line.empty() ? "volseg web" : request.command_line;
  options.stats = shared_temporary(comm, "objects.csv");
  if (comm.rank() == 0) options.on_progress = hooks.progress;
  state.labels.clear();
  state.boxes.clear();
  state.regions.clear();
  const segment::LabelResult result = segment::run_label(comm, options);
  state.labels_written();
  state.labels = options.output;
  state.labels_source = options.output;
  state.journal.clear();
  state.edited.clear();
  state.edits.clear();
  state.undone.clear();
  state.patches.clear();
  state.undone_patches.clear();
  state.max_id = result.summary.objects;
  state.surfaces.clear();
  // Rank 0 reads the table and keeps the boxes: object surfaces are drawn there.
  Json table;
  std::uint64_t total = 0;
  if (comm.rank() == 0) {
    table = read_table(options.stats, 20000, total);
    std::filesystem::remove(options.stats);
    for (const auto& row : table) state.add_region(row.at("id").get<std::int64_t>(), box_of_row(row));
  }
  if (comm.rank() != 0) return;
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

}  // namespace volseg::session::detail
