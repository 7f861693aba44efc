// SPDX-License-Identifier: MIT
// edit: merge, delete, paint and erase labelled objects, undo and redo. Every
// edit goes into the session's journal beside the labels a label request
// wrote, and the edited labels are written again from the labels and the
// whole journal, as the command the page shows (`volseg edit LABELS --edits
// JOURNAL --out EDITED`) does in batch: the same bytes, whatever the order
// of pages and undos that made the journal.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>

#include "../state.hpp"
#include "volseg/io/auto_backend.hpp"
#include "volseg/io/error.hpp"
#include "volseg/io/files.hpp"
#include "volseg/io/label_ids.hpp"
#include "volseg/io/registry.hpp"
#include "volseg/segment/edit.hpp"
#include "volseg/session/command_line.hpp"

namespace volseg::session::detail {
namespace {

// The edited labels beside the labels: NAME.edited.EXT (.ome.zarr kept whole).
std::string edited_path(const std::string& labels) {
  const std::filesystem::path path(labels);
  std::string name = path.filename().string();
  for (const char* ext : {".ome.zarr", ".precomputed"})
    if (name.size() > std::strlen(ext) && name.compare(name.size() - std::strlen(ext), std::string::npos, ext) == 0)
      return (path.parent_path() / (name.substr(0, name.size() - std::strlen(ext)) + ".edited" + ext)).string();
  return (path.parent_path() / (path.stem().string() + ".edited" + path.extension().string())).string();
}

// The journal with `edits`, written under its temporary name (committed
// once the labels it gives are written).
std::string write_journal(const std::string& path, const std::string& labels, const std::vector<std::string>& edits) {
  const std::string temporary = io::temporary_path(path);
  Json journal{{"labels", labels}, {"edits", Json::array()}};
  for (const auto& e : edits) journal["edits"].push_back(Json::parse(e));
  std::ofstream out(temporary, std::ios::binary | std::ios::trunc);
  out << journal.dump(1) << '\n';
  out.close();
  if (!out) throw Error("cannot write the edit journal " + temporary);
  return temporary;
}

// The edit's journal entry, checked as the page gives it (the ids against
// the table, the ball against the volume); the batch parser checks it again.
Json edit_entry(const State& state, const EditRequest& r, const io::Index3& dims) {
  const auto in_table = [&](std::int64_t id) {
    if (id < 1 || (state.comm.rank() == 0 && !state.boxes.count(id)))
      throw Error("edit " + r.op + ": no object " + std::to_string(id) + " in the table");
  };
  if (r.op == "merge" || r.op == "delete") {
    if (r.ids.size() < (r.op == "merge" ? 2u : 1u))
      throw Error("edit " + r.op + ": 'ids' must name " + (r.op == "merge" ? "2 or more objects" : "an object"));
    for (const auto id : r.ids) in_table(id);
    return {{"op", r.op}, {"ids", r.ids}};
  }
  if (!(r.radius > 0) || r.radius > segment::kMostRadius)
    throw Error("edit " + r.op + ": 'radius' must be above 0 and at most " +
                std::to_string(static_cast<int>(segment::kMostRadius)) + " voxels");
  for (int a = 0; a < 3; ++a)
    if (r.center[a] < 0 || r.center[a] >= dims[a])
      throw Error("edit " + r.op + ": 'center' [" + std::to_string(r.center[0]) + ", " + std::to_string(r.center[1]) +
                  ", " + std::to_string(r.center[2]) + "] is outside the volume");
  Json entry{{"op", r.op}, {"center", r.center}, {"radius", r.radius}};
  if (r.op == "paint") {
    if (r.id < 1) throw Error("edit paint: 'id' must be an object's id, from 1");
    entry["id"] = r.id;
  }
  return entry;
}

// What an applied edit does to the boxes rank 0 keeps (State::regions and
// their union, boxes): a superset of each object's voxels (an undo may
// bring an id back).
void grow_boxes(State& state, const EditRequest& r, const io::Index3& dims) {
  if (state.comm.rank() != 0) return;
  if (r.op == "merge") {
    const auto keep = *std::min_element(r.ids.begin(), r.ids.end());
    for (const auto id : r.ids)
      if (id != keep)
        for (const auto box : state.regions.at(id)) state.add_region(keep, box);
  } else if (r.op == "paint") {
    state.add_region(r.id, box_of(ball_extent(r.center, r.radius, dims)));
  }
}

// What a paint or erase does to the object table, from the ball's box of the
// labels before it (rank 0 reads it): for each id whose voxels the ball
// takes or gives, the voxels and the coordinate sums (x, y, z, as the
// table's centroids) gained, negative where lost; for the id painted also
// the box of its new voxels and whether they meet the volume's faces.
Json ball_changes(const State& state, const EditRequest& r, const io::Index3& dims) {
  const Comm self(MPI_COMM_SELF);
  const auto backend = io::resolve_backend(self, "auto", state.labels, io::Access::copy).backend;
  auto reader = io::open_reader(backend, {state.labels, {}}, self);
  const io::DType dtype = reader->info().dtype;
  const io::Extent box = ball_extent(r.center, r.radius, dims);
  const std::size_t element = io::dtype_size(dtype);
  std::vector<std::byte> raw(static_cast<std::size_t>(box.voxels()) * element);
  reader->read(box, raw.data());
  reader->close();
  const std::uint64_t target = r.op == "paint" ? static_cast<std::uint64_t>(r.id) : 0;
  constexpr std::int64_t kFar = std::numeric_limits<std::int64_t>::max();
  struct Change {
    std::int64_t voxels = 0;
    std::array<double, 3> sum{};
    std::array<std::int64_t, 6> box{kFar, kFar, kFar, -1, -1, -1};  // x, y, z lo, then hi
    int border = 0;
  };
  std::map<std::uint64_t, Change> changes;
  const double r2 = r.radius * r.radius;
  std::size_t i = 0;
  for (std::int64_t z = box.offset[0]; z < box.offset[0] + box.count[0]; ++z)
    for (std::int64_t y = box.offset[1]; y < box.offset[1] + box.count[1]; ++y)
      for (std::int64_t x = box.offset[2]; x < box.offset[2] + box.count[2]; ++x, i += element) {
        const double dz = static_cast<double>(z - r.center[0]), dy = static_cast<double>(y - r.center[1]),
                     dx = static_cast<double>(x - r.center[2]);
        if (dz * dz + dy * dy + dx * dx > r2) continue;
        const std::uint64_t old = io::label_id(raw.data() + i, dtype, state.labels);
        if (old == target) continue;
        const std::array<std::int64_t, 3> xyz{x, y, z};
        if (old != 0) {
          auto& c = changes[old];
          c.voxels -= 1;
          for (int k = 0; k < 3; ++k) c.sum[k] -= static_cast<double>(xyz[k]);
        }
        if (target != 0) {
          auto& c = changes[target];
          c.voxels += 1;
          for (int k = 0; k < 3; ++k) {
            c.sum[k] += static_cast<double>(xyz[k]);
            c.box[k] = std::min(c.box[k], xyz[k]);
            c.box[3 + k] = std::max(c.box[3 + k], xyz[k]);
            if (xyz[k] == 0 || xyz[k] == dims[2 - k] - 1) c.border = 1;
          }
        }
      }
  Json out = Json::array();
  for (const auto& [id, c] : changes) {
    Json change{{"id", id}, {"voxels", c.voxels}, {"sum", c.sum}};
    if (id == target) {
      change["box"] = {{c.box[0], c.box[1], c.box[2]}, {c.box[3], c.box[4], c.box[5]}};
      change["border"] = c.border;
    }
    out.push_back(std::move(change));
  }
  return out;
}

}  // namespace

Json apply_journal(State& state, std::vector<std::string> edits, int connectivity, const std::string& stats) {
  const Comm& comm = state.comm;
  if (state.journal.empty()) {
    state.journal = state.labels_source + ".edits.json";
    state.edited = edited_path(state.labels_source);
  }
  io::AtomicCommit journal;  // rank 0's: removed unless the labels are written
  std::string temporary;
  if (comm.rank() == 0) {
    temporary = write_journal(state.journal, state.labels_source, edits);
    journal = io::AtomicCommit(state.journal, temporary);
  }
  temporary = comm.broadcast(temporary);
  segment::EditOptions options;
  options.input = state.labels_source;
  options.journal = temporary;
  options.output = state.edited;
  options.connectivity = connectivity;
  options.force = true;
  options.progress = segment::ProgressMode::none;
  options.stats = stats;
  options.command_line = edit_command_line(state.labels_source, state.journal, state.edited);
  if (!stats.empty()) options.command_line += " --stats " + stats;
  const segment::EditResult result = segment::run_edit(comm, options);
  if (comm.rank() == 0) journal.commit(/*sync_folder=*/true);
  state.edits = std::move(edits);
  state.labels = state.edited;
  state.labels_written();
  state.max_id = result.max_id;  // ever held, after this journal (an undone edit's ids are free again)
  state.surfaces.clear();
  state.pieces.clear();
  Json applied;
  if (comm.rank() == 0)
    applied = {{"output", state.edited},
               {"journal", state.journal},
               {"edits", state.edits.size()},
               {"command", options.command_line},
               {"seconds", result.seconds}};
  if (comm.rank() == 0 && !stats.empty()) {
    applied["table_file"] = stats;
    applied["objects"] = result.objects;
  }
  return applied;
}

namespace {

// Save: the edited labels written again from the journal, with their
// object table beside them (volseg edit --stats): the same bytes, and a
// table of every object, where the window and the page keep the largest.
void save_with_table(State& state, const EditRequest& request, Reply& reply) {
  if (state.edits.empty()) throw Error("save: there are no edits to save (the labels are the label job's)");
  Json applied = apply_journal(state, state.edits, request.connectivity, state.edited + ".objects.csv");
  if (state.comm.rank() == 0) {
    applied["op"] = "save";
    applied["undone"] = state.undone.size();
    reply.data = std::move(applied);
  }
}

}  // namespace

void handle(State& state, const EditRequest& request, const Hooks&, Reply& reply) {
  if (state.labels.empty()) throw Error("label first: there are no objects to edit");
  const std::vector<std::string> ops{"merge", "delete", "paint", "erase", "undo", "redo", "save"};
  if (std::find(ops.begin(), ops.end(), request.op) == ops.end())
    throw Error("edit: unknown op '" + request.op + "' (merge, delete, paint, erase, undo, redo, save)");
  if (request.connectivity != 6 && request.connectivity != 18 && request.connectivity != 26)
    throw Error("edit: connectivity must be 6, 18 or 26");
  if (request.op == "save") return save_with_table(state, request, reply);
  if (request.base && *request.base != static_cast<std::int64_t>(state.edits.size()))
    throw Error("edit " + request.op + ": the labels have " + std::to_string(state.edits.size()) + " edits, not the " +
                std::to_string(*request.base) + " this view holds (another page edited them): reload, then edit");
  std::vector<std::string> edits = state.edits;
  std::vector<std::string> undone = state.undone;
  Json entry;
  io::Index3 dims{};
  if (request.op == "undo") {
    if (edits.empty()) throw Error("edit undo: there is no edit to undo");
    undone.push_back(edits.back());
    edits.pop_back();
  } else if (request.op == "redo") {
    if (undone.empty()) throw Error("edit redo: there is no undone edit to redo");
    edits.push_back(undone.back());
    undone.pop_back();
  } else {
    {
      const auto backend = io::resolve_backend(state.comm, "auto", state.labels_source, io::Access::stream).backend;
      auto reader = io::open_reader(backend, {state.labels_source, {}}, state.comm);
      dims = reader->info().dims;
      reader->close();
    }
    // The table's ids are rank 0's: its verdict goes to every rank.
    collectively(state.comm, [&] { entry = edit_entry(state, request, dims); });
    edits.push_back(entry.dump());
    undone.clear();
  }
  // The table's change, from the labels before the edit (rank 0's reply).
  Json changes;
  if (request.op == "paint" || request.op == "erase")
    collectively(state.comm, [&] {
      if (state.comm.rank() == 0) changes = ball_changes(state, request, dims);
    });
  Json applied;
  if (!apply_in_place(state, request.op, entry, nullptr, edits, undone, applied)) {
    applied = apply_journal(state, std::move(edits), request.connectivity);
    state.undone = std::move(undone);
    shift_patches(state, request.op);
  }
  if (!entry.is_null()) grow_boxes(state, request, dims);
  if (state.comm.rank() == 0) {
    applied["op"] = request.op;
    applied["applied"] = true;
    applied["undone"] = state.undone.size();
    if (!entry.is_null()) applied["edit"] = entry;
    if (!changes.is_null()) applied["table_changes"] = std::move(changes);
    reply.data = std::move(applied);
  }
}

}  // namespace volseg::session::detail
