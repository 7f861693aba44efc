// SPDX-License-Identifier: MIT
// The Objects tab: label the mask (as `volseg label MASK --mask-input`),
// the object table, and an object's split (volseg edit's "split"):
// previewed, then applied through the session's journal, as the browser
// page does it (docs/gui.md, "Objects"); Delete, Merge, Undo and Redo of
// the same journal, and paint, erase and split seeds by a click in the
// slices.
#pragma once

#include <QWidget>

#include <array>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "session_types.hpp"
#include "volseg/session/edit_history.hpp"

class QComboBox;
class QDoubleSpinBox;
class QLabel;
class QLayout;
class QLineEdit;
class QPushButton;
class QSpinBox;
class QTableWidget;

namespace volseg::gui {

class ObjectsPanel : public QWidget {
  Q_OBJECT

 public:
  // post: hands a request to the session's worker.
  ObjectsPanel(std::function<void(Request)> post, QWidget* parent = nullptr);

  // The mask a label request labels; empty: none yet (Label is off).
  void set_mask(const std::string& mask, const std::string& labels_default);
  // A label or split reply (or its error).
  void on_reply(const Reply& reply);
  // The command lines that redo the labels and the splits applied.
  std::string commands() const { return commands_; }
  bool busy() const { return busy_; }

  // For tests: the parts a user touches.
  QPushButton* label_button() const { return label_button_; }
  QPushButton* split_button() const { return split_button_; }
  QPushButton* apply_button() const { return apply_button_; }
  QPushButton* delete_button() const { return delete_button_; }
  QPushButton* undo_button() const { return undo_button_; }
  QPushButton* redo_button() const { return redo_button_; }
  QPushButton* merge_button() const { return merge_button_; }
  QPushButton* save_button() const { return save_button_; }
  QPushButton* seed_split_button() const { return seed_split_button_; }
  QPushButton* alone_button() const { return alone_button_; }
  QPushButton* all_button() const { return all_button_; }
  QComboBox* tool_box() const { return tool_; }
  QDoubleSpinBox* radius_box() const { return radius_; }
  QSpinBox* paint_id_box() const { return paint_id_; }
  const std::vector<std::array<std::int64_t, 3>>& seeds() const { return seeds_; }
  QTableWidget* table() const { return table_; }
  QDoubleSpinBox* h_box() const { return h_; }
  QString preview_text() const;
  const Json& labelled() const { return history_.labelled(); }
  // What a click in the slices does: "move", "paint", "erase" or "seed".
  QString tool() const;
  // A click in a slice with a tool on: the voxel z, y, x at full
  // resolution, and the id the slice shows there.
  void pick(const std::array<std::int64_t, 3>& zyx, std::uint64_t id_under);
  // The objects selected in the table (ascending), and a selection of them.
  std::vector<std::int64_t> picked() const { return selected_ids(); }
  void pick_rows(const std::vector<std::int64_t>& ids);
  // The object the 3D view shows alone (0: all), as the page's row click.
  std::int64_t shown() const { return shown_; }
  void show_alone(std::int64_t id);

 signals:
  void changed();  // the commands or the labels changed
  // Show this object alone in the 3D view (0: the whole volume again); sent
  // again after an edit, whose labels it follows.
  void alone(std::int64_t id);

 public slots:
  void label();
  void split(bool apply);
  // An edit of the journal (delete or merge of the selected objects, undo,
  // redo), based on the edits this window has seen.
  void edit(const std::string& op);
  // The preview of the split of the seeds' object from the seeds put.
  void split_by_seeds();

 private:
  void show_table();
  QLayout* build_shown_row();
  void on_edit(const std::string& kind, const Json& edit);
  void post_edit(session::EditRequest request);
  void post_split(const session::SplitRequest& request);
  std::vector<std::int64_t> selected_ids() const;
  void enable_buttons();
  void show_preview(const Json& split);
  std::int64_t selected() const;
  bool in_table(std::int64_t id) const;

  std::function<void(Request)> post_;
  std::string mask_, commands_;
  session::EditHistory history_;  // the label reply, followed through the journal's edits
  Json preview_;
  bool busy_ = false;
  QLineEdit* output_ = nullptr;
  QComboBox* connectivity_ = nullptr;
  QPushButton *label_button_ = nullptr, *split_button_ = nullptr, *apply_button_ = nullptr;
  QPushButton *delete_button_ = nullptr, *undo_button_ = nullptr, *redo_button_ = nullptr;
  QPushButton *merge_button_ = nullptr, *seed_split_button_ = nullptr, *save_button_ = nullptr;
  QComboBox* tool_ = nullptr;
  QDoubleSpinBox* radius_ = nullptr;
  QSpinBox* paint_id_ = nullptr;
  QLabel* seed_status_ = nullptr;
  std::vector<std::array<std::int64_t, 3>> seeds_;  // z, y, x: the split's seeds, all in seed_object_
  std::int64_t seed_object_ = 0;
  std::int64_t shown_ = 0;  // the object shown alone
  QPushButton *alone_button_ = nullptr, *all_button_ = nullptr;
  QTableWidget* table_ = nullptr;
  QDoubleSpinBox* h_ = nullptr;
  QLabel *status_ = nullptr, *plane_ = nullptr, *parts_ = nullptr;
};

}  // namespace volseg::gui
