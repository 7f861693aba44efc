// SPDX-License-Identifier: MIT
#include "volseg/session/edit_history.hpp"

#include <algorithm>
#include <array>

namespace volseg::session {
namespace {

// A row's box grown to hold `box` ([[x, y, z lo], [x, y, z hi]]).
void join_box(Json& row, const Json& box) {
  for (int k = 0; k < 3; ++k) {
    row["box"][0][k] = std::min(row["box"][0][k].get<std::int64_t>(), box[0][k].get<std::int64_t>());
    row["box"][1][k] = std::max(row["box"][1][k].get<std::int64_t>(), box[1][k].get<std::int64_t>());
  }
}

}  // namespace

void EditHistory::reset(Json labelled) {
  labelled_ = std::move(labelled);
  before_.clear();
  undone_.clear();
}

void EditHistory::clear() { reset(nullptr); }

void EditHistory::apply(const std::string& kind, const Json& reply) {
  if (!labelled_.is_object()) return;
  if (kind == "split" && !reply.value("applied", false)) return;
  const std::string op = kind == "split" ? "split" : reply.at("op").get<std::string>();
  if (op == "save") {  // the same labels, with their table beside them: nothing to undo
    for (const char* key : {"output", "journal", "edits", "table_file"})
      if (reply.contains(key)) labelled_[key] = reply.at(key);
    return;
  }
  if (op == "undo" || op == "redo") {
    auto& from = op == "undo" ? before_ : undone_;
    auto& to = op == "undo" ? undone_ : before_;
    if (!from.empty()) {
      to.push_back(labelled_);
      labelled_ = from.back();
      from.pop_back();
    }
  } else {
    before_.push_back(labelled_);
    undone_.clear();
    if (op == "split") {
      const auto object = reply.at("object").get<std::int64_t>();
      Json table = Json::array();
      for (const auto& row : labelled_["table"])
        if (row.at("id").get<std::int64_t>() != object) table.push_back(row);
      for (const auto& row : reply.at("parts")) table.push_back(row);
      labelled_["objects"] =
          labelled_.value("objects", std::int64_t{0}) + static_cast<std::int64_t>(reply.at("parts").size()) - 1;
      labelled_["table"] = std::move(table);
    } else if (op == "merge" || op == "delete") {
      merge_or_delete(op, reply.at("edit").at("ids").get<std::vector<std::int64_t>>());
    } else if (reply.contains("table_changes")) {
      change_rows(reply.at("table_changes"));
    } else {
      labelled_["table_stale"] = true;
    }
  }
  for (const char* key : {"output", "journal", "edits"})
    if (reply.contains(key)) labelled_[key] = reply.at(key);
  labelled_["undone"] = reply.value("undone", std::int64_t{0});
}

// Merge: the group's rows become the smallest id's (voxels summed,
// centroids weighted, boxes joined); delete: the rows go.
void EditHistory::merge_or_delete(const std::string& op, const std::vector<std::int64_t>& ids) {
  const std::int64_t keep = *std::min_element(ids.begin(), ids.end());
  Json table = Json::array(), merged;
  for (const auto& row : labelled_["table"]) {
    const auto id = row.at("id").get<std::int64_t>();
    if (std::find(ids.begin(), ids.end(), id) == ids.end()) {
      table.push_back(row);
    } else if (op == "merge") {
      if (merged.is_null()) {
        merged = row;
        merged["id"] = keep;
        continue;
      }
      const double a = merged.at("voxels").get<double>(), b = row.at("voxels").get<double>();
      for (int k = 0; k < 3; ++k)
        merged["centroid"][k] =
            (merged["centroid"][k].get<double>() * a + row["centroid"][k].get<double>() * b) / (a + b);
      join_box(merged, row.at("box"));
      merged["voxels"] = merged.at("voxels").get<std::int64_t>() + row.at("voxels").get<std::int64_t>();
      merged["border"] = std::max(merged.value("border", 0), row.value("border", 0));
    }
  }
  const auto gone = static_cast<std::int64_t>(labelled_["table"].size() - table.size()) - (merged.is_null() ? 0 : 1);
  if (!merged.is_null()) table.push_back(merged);
  labelled_["objects"] = labelled_.value("objects", std::int64_t{0}) - gone;
  labelled_["table"] = std::move(table);
}

// Paint and erase: each changed id's voxels and coordinate sums (x, y, z)
// gained or lost, and the box of the voxels it gained. A row left with no
// voxels goes; an id new to the table gets a row.
void EditHistory::change_rows(const Json& changes) {
  Json table = Json::array();
  std::int64_t objects = labelled_.value("objects", std::int64_t{0});
  std::vector<bool> used(changes.size(), false);
  const auto change_of = [&](std::int64_t id) -> std::size_t {
    for (std::size_t k = 0; k < changes.size(); ++k)
      if (changes[k].at("id").get<std::int64_t>() == id) return k;
    return changes.size();
  };
  const auto grow = [](Json& row, const Json& change) {
    const auto voxels = row.at("voxels").get<std::int64_t>() + change.at("voxels").get<std::int64_t>();
    for (int k = 0; k < 3; ++k) {
      const double sum =
          row["centroid"][k].get<double>() * row.at("voxels").get<double>() + change.at("sum")[k].get<double>();
      row["centroid"][k] = voxels > 0 ? sum / static_cast<double>(voxels) : 0.0;
    }
    if (change.contains("box")) join_box(row, change.at("box"));
    row["voxels"] = voxels;
    if (change.value("border", 0)) row["border"] = 1;
  };
  for (auto row : labelled_["table"]) {
    const std::size_t k = change_of(row.at("id").get<std::int64_t>());
    if (k < changes.size()) {
      used[k] = true;
      grow(row, changes[k]);
      if (row.at("voxels").get<std::int64_t>() <= 0) {
        --objects;
        continue;
      }
    }
    table.push_back(std::move(row));
  }
  for (std::size_t k = 0; k < changes.size(); ++k) {
    const Json& change = changes[k];
    // An id the table lacks is new, unless the table holds the largest objects only.
    if (used[k] || change.at("voxels").get<std::int64_t>() <= 0 || !change.contains("box") ||
        labelled_.value("table_truncated", false))
      continue;
    Json row{{"id", change.at("id")},
             {"voxels", 0},
             {"centroid", {0.0, 0.0, 0.0}},
             {"box", change.at("box")},
             {"border", 0}};
    grow(row, change);
    table.push_back(std::move(row));
    ++objects;
  }
  labelled_["objects"] = objects;
  labelled_["table"] = std::move(table);
}

}  // namespace volseg::session
