// SPDX-License-Identifier: MIT
// The Objects tab: label the mask (as `volseg label MASK --mask-input`),
// the object table, and an object's split (volseg edit's "split"):
// previewed, then applied through the session's journal, as the browser
// page does it (docs/gui.md, "Objects"); Delete, Undo and Redo of the same
// journal.
#pragma once

#include <QWidget>

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "session_types.hpp"

class QComboBox;
class QDoubleSpinBox;
class QLabel;
class QLineEdit;
class QPushButton;
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
  QTableWidget* table() const { return table_; }
  QDoubleSpinBox* h_box() const { return h_; }
  QString preview_text() const;
  const Json& labelled() const { return labelled_; }

 signals:
  void changed();  // the commands or the labels changed

 public slots:
  void label();
  void split(bool apply);
  // An edit of the journal (delete of the selected object, undo, redo),
  // based on the edits this window has seen.
  void edit(const std::string& op);

 private:
  void show_table();
  void on_edit(const Json& edit);
  void enable_buttons();
  void show_preview(const Json& split);
  std::int64_t selected() const;

  std::function<void(Request)> post_;
  std::string mask_, commands_;
  Json labelled_, preview_;
  bool busy_ = false;
  QLineEdit* output_ = nullptr;
  QComboBox* connectivity_ = nullptr;
  QPushButton *label_button_ = nullptr, *split_button_ = nullptr, *apply_button_ = nullptr;
  QPushButton *delete_button_ = nullptr, *undo_button_ = nullptr, *redo_button_ = nullptr;
  // The labels' state before each edit of the journal (undo brings it
  // back) and after each undone one (redo does); the journal's length.
  std::vector<Json> before_, undone_;
  std::int64_t edits_ = 0;
  QTableWidget* table_ = nullptr;
  QDoubleSpinBox* h_ = nullptr;
  QLabel *status_ = nullptr, *plane_ = nullptr, *parts_ = nullptr;
};

}  // namespace volseg::gui
