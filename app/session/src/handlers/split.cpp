// SPDX-License-Identifier: MIT
// split: one labelled object cut into parts as `volseg edit`'s split does.
// A preview works the parts out from the labels shown; apply adds the split
// to the session's journal (beside the labels a label request wrote) and
// writes the edited labels from the journal, as the command the page shows
// (`volseg edit LABELS --edits JOURNAL --out EDITED`) does in batch.
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>

#include "../state.hpp"
#include "volseg/io/error.hpp"
#include "volseg/io/files.hpp"
#include "volseg/segment/edit.hpp"
#include "volseg/session/command_line.hpp"

namespace volseg::session::detail {
namespace {

// Each part's row, as the object table gives them (x, y, z order).
Json part_rows(const segment::SplitPreview& preview, const io::Index3& dims) {
  struct Sums {
    std::int64_t voxels = 0;
    std::array<double, 3> sum{};
    std::array<std::int64_t, 3> lo{INT64_MAX, INT64_MAX, INT64_MAX}, hi{-1, -1, -1};
  };
  std::map<std::uint64_t, Sums> parts;
  const auto& b = preview.box;
  std::size_t i = 0;
  for (std::int64_t z = 0; z < b.count[0]; ++z)
    for (std::int64_t y = 0; y < b.count[1]; ++y)
      for (std::int64_t x = 0; x < b.count[2]; ++x, ++i) {
        const std::uint64_t id = preview.labels[i];
        if (!id) continue;
        Sums& s = parts[id];
        const std::array<std::int64_t, 3> at{b.offset[0] + z, b.offset[1] + y, b.offset[2] + x};
        ++s.voxels;
        for (int a = 0; a < 3; ++a) {
          s.sum[a] += static_cast<double>(at[a]);
          s.lo[a] = std::min(s.lo[a], at[a]);
          s.hi[a] = std::max(s.hi[a], at[a]);
        }
      }
  Json rows = Json::array();
  for (const std::uint64_t id : preview.ids) {
    const Sums& s = parts.at(id);
    const auto n = static_cast<double>(s.voxels);
    bool border = false;
    for (int a = 0; a < 3; ++a) border = border || s.lo[a] == 0 || s.hi[a] == dims[a] - 1;
    rows.push_back({{"id", id},
                    {"voxels", s.voxels},
                    {"centroid", {s.sum[2] / n, s.sum[1] / n, s.sum[0] / n}},
                    {"box", {{s.lo[2], s.lo[1], s.lo[0]}, {s.hi[2], s.hi[1], s.hi[0]}}},
                    {"border", border ? 1 : 0}});
  }
  return rows;
}

// The box's middle plane along z, each voxel its part's place in the list
// (1, 2, ...; 0 outside the object), every `step`-th voxel at most 192 a side.
Json preview_plane(const segment::SplitPreview& preview) {
  const auto& b = preview.box;
  const std::int64_t step = std::max<std::int64_t>(1, (std::max(b.count[1], b.count[2]) + 191) / 192);
  const std::int64_t z = b.count[0] / 2, height = (b.count[1] + step - 1) / step,
                     width = (b.count[2] + step - 1) / step;
  std::map<std::uint64_t, int> place;
  for (std::size_t k = 0; k < preview.ids.size(); ++k) place[preview.ids[k]] = static_cast<int>(k) + 1;
  Json cells = Json::array();
  for (std::int64_t y = 0; y < b.count[1]; y += step)
    for (std::int64_t x = 0; x < b.count[2]; x += step) {
      const std::uint64_t id = preview.labels[static_cast<std::size_t>((z * b.count[1] + y) * b.count[2] + x)];
      cells.push_back(id ? place[id] : 0);
    }
  return {{"z", b.offset[0] + z}, {"width", width}, {"height", height}, {"step", step}, {"cells", cells}};
}

Json edit_json(const SplitRequest& request) {
  Json edit{{"op", "split"}, {"id", request.object}};
  if (request.h)
    edit["h"] = *request.h;
  else
    edit["seeds"] = request.seeds;
  return edit;
}

}  // namespace

void handle(State& state, const SplitRequest& request, const Hooks&, Reply& reply) {
  if (state.labels.empty()) throw Error("label first: there are no objects to split");
  const Comm& comm = state.comm;
  if (request.connectivity != 6 && request.connectivity != 18 && request.connectivity != 26)
    throw Error("split: connectivity must be 6, 18 or 26");
  if (request.h && !(*request.h > 0)) throw Error("split: h must be above 0");
  if (!request.h && request.seeds.size() < 2) throw Error("split: give h, or 2 or more seeds");
  // The object's box: rank 0 holds the table's.
  std::array<std::int64_t, 7> known{};
  if (comm.rank() == 0)
    if (const auto it = state.boxes.find(request.object); it != state.boxes.end()) {
      known[0] = 1;
      std::copy(it->second.begin(), it->second.end(), known.begin() + 1);
    }
  check_mpi(MPI_Bcast(known.data(), 7, MPI_INT64_T, 0, comm.get()), "MPI_Bcast");
  if (!known[0]) throw Error("no object " + std::to_string(request.object) + " in the table");
  io::Extent box;
  for (int a = 0; a < 3; ++a) box.offset[a] = known[1 + a], box.count[a] = known[4 + a] - known[1 + a] + 1;
  segment::Edit edit;
  edit.op = segment::Edit::Op::split;
  edit.id = static_cast<std::uint64_t>(request.object);
  edit.h = request.h;
  for (const auto& s : request.seeds) edit.seeds.push_back({s[0], s[1], s[2]});
  const segment::SplitPreview preview =
      segment::preview_split(comm, state.labels, {}, box, edit, state.max_id + 1, request.connectivity);
  Json data;
  if (comm.rank() == 0) {
    data = {{"object", request.object},
            {"parts", part_rows(preview, preview.dims)},
            {"plane", preview_plane(preview)},
            {"edit", edit_json(request)},
            {"applied", false}};
  }
  if (request.apply) {
    if (request.base && *request.base != static_cast<std::int64_t>(state.edits.size()))
      throw Error("split: the labels have " + std::to_string(state.edits.size()) + " edits, not the " +
                  std::to_string(*request.base) + " this view holds (another page edited them): reload, then split");
    std::vector<std::string> edits = state.edits;
    edits.push_back(edit_json(request).dump());
    Json applied;
    if (!apply_in_place(state, "split", edit_json(request), &preview, edits, {}, applied)) {
      applied = apply_journal(state, std::move(edits), request.connectivity);
      state.undone.clear();
      shift_patches(state, "split");
    }
    if (comm.rank() == 0) {
      // Each box stays a superset of its object's voxels whatever is undone
      // next: the parts' boxes join what the ids held before (the object's
      // whole box stays its own; an id an undone split gave comes back).
      for (const auto& row : data["parts"]) state.add_region(row.at("id").get<std::int64_t>(), box_of_row(row));
      data["applied"] = true;
      data.update(applied);
    }
  }
  if (comm.rank() == 0) reply.data = std::move(data);
}

}  // namespace volseg::session::detail
