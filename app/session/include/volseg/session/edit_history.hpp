// SPDX-License-Identifier: MIT
// The object table a label request gave, followed through the journal's
// edits as their replies come: what the browser page and the Qt window show
// of the labels, and what undo and redo bring back. Both front ends keep
// one; the session's replies are the same for both.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "volseg/session/requests.hpp"

namespace volseg::session {

class EditHistory {
 public:
  // A label reply: the table to follow; the history is forgotten.
  void reset(Json labelled);
  // No labels (a new volume or mask).
  void clear();
  // An applied edit's or split's reply (kind "edit" or "split"); a split's
  // preview changes nothing. Merge and delete are exact; paint and erase
  // are exact in voxels and centroids from the reply's `table_changes`, and
  // keep each box a box that holds its object; a split's rows are its parts;
  // undo and redo bring back the table of before and after.
  void apply(const std::string& kind, const Json& reply);

  // The label reply's fields, kept current (table, objects, output,
  // journal, edits, undone); null before a label reply.
  const Json& labelled() const { return labelled_; }
  bool labelled_yet() const { return labelled_.is_object(); }
  // The journal's length (what an edit request's `base` names).
  std::int64_t edits() const { return labelled_.is_object() ? labelled_.value("edits", std::int64_t{0}) : 0; }
  bool can_undo() const { return !before_.empty(); }
  bool can_redo() const { return !undone_.empty(); }

 private:
  void merge_or_delete(const std::string& op, const std::vector<std::int64_t>& ids);
  void change_rows(const Json& changes);

  Json labelled_;
  std::vector<Json> before_, undone_;  // the labels' state before each edit, and after each undone one
};

}  // namespace volseg::session
