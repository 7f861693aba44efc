// SPDX-License-Identifier: MIT
#include "objects_panel.hpp"

#include <QComboBox>
#include <QDoubleSpinBox>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QImage>
#include <QLabel>
#include <QLineEdit>
#include <QPixmap>
#include <QPushButton>
#include <QSpinBox>
#include <QTableWidget>
#include <QVBoxLayout>

#include <algorithm>
#include <array>
#include <limits>

#include "volseg/segment/edit.hpp"

namespace volseg::gui {
namespace {

// The parts' colours, as the page draws them.
constexpr std::array<QRgb, 16> kPartColours{0xe6194b, 0x3cb44b, 0x4363d8, 0xf58231, 0x911eb4, 0x46f0f0,
                                            0xf032e6, 0xbcf60c, 0xfabebe, 0x008080, 0xe6beff, 0x9a6324,
                                            0xfffac8, 0x800000, 0xaaffc3, 0x808000};

// A cell that sorts by its number, not its text.
class NumberItem : public QTableWidgetItem {
 public:
  using QTableWidgetItem::QTableWidgetItem;
  bool operator<(const QTableWidgetItem& other) const override {
    return data(Qt::UserRole).toDouble() < other.data(Qt::UserRole).toDouble();
  }
};

QTableWidgetItem* cell(const QString& text, double sort_value) {
  auto* item = new NumberItem(text);
  item->setData(Qt::UserRole, sort_value);
  item->setTextAlignment(Qt::AlignRight | Qt::AlignVCenter);
  item->setFlags(item->flags() & ~Qt::ItemIsEditable);
  return item;
}

}  // namespace

ObjectsPanel::ObjectsPanel(std::function<void(Request)> post, QWidget* parent)
    : QWidget(parent), post_(std::move(post)) {
  auto* layout = new QVBoxLayout(this);
  auto* row = new QHBoxLayout;
  output_ = new QLineEdit(this);
  output_->setToolTip(tr("The labels file (.nhdr, .nc, .zarr, ...)"));
  connectivity_ = new QComboBox(this);
  connectivity_->addItems({"26", "18", "6"});
  label_button_ = new QPushButton(tr("Label"), this);
  label_button_->setEnabled(false);
  row->addWidget(new QLabel(tr("Labels"), this));
  row->addWidget(output_, 1);
  row->addWidget(connectivity_);
  row->addWidget(label_button_);
  layout->addLayout(row);
  status_ = new QLabel(tr("segment first, then label the mask's objects"), this);
  status_->setWordWrap(true);
  layout->addWidget(status_);
  table_ = new QTableWidget(0, 7, this);
  table_->setHorizontalHeaderLabels(
      {tr("id"), tr("voxels"), tr("x"), tr("y"), tr("z"), tr("box (x, y, z)"), tr("edge")});
  table_->setSelectionBehavior(QAbstractItemView::SelectRows);
  table_->setSelectionMode(QAbstractItemView::ExtendedSelection);
  table_->verticalHeader()->hide();
  table_->horizontalHeader()->setStretchLastSection(true);
  layout->addWidget(table_, 1);
  layout->addLayout(build_shown_row());
  auto* split_row = new QHBoxLayout;
  h_ = new QDoubleSpinBox(this);
  h_->setRange(0.05, 1000);
  h_->setSingleStep(0.25);
  h_->setValue(0.5);
  h_->setToolTip(tr("Markers: the maxima of the object's distance at least h above their surroundings"));
  split_button_ = new QPushButton(tr("Split"), this);
  split_button_->setToolTip(tr("Preview the watershed split of the selected object (volseg edit's split)"));
  split_button_->setEnabled(false);
  apply_button_ = new QPushButton(tr("Apply split"), this);
  apply_button_->setEnabled(false);
  split_row->addWidget(new QLabel(tr("split h"), this));
  split_row->addWidget(h_);
  split_row->addWidget(split_button_);
  split_row->addWidget(apply_button_);
  split_row->addStretch(1);
  delete_button_ = new QPushButton(tr("Delete"), this);
  delete_button_->setToolTip(tr("Delete the selected object (volseg edit's delete: its voxels become background)"));
  undo_button_ = new QPushButton(tr("Undo"), this);
  undo_button_->setToolTip(tr("Undo the last edit (the journal loses it; the labels are written again)"));
  merge_button_ = new QPushButton(tr("Merge"), this);
  merge_button_->setToolTip(tr("Merge the selected objects: every voxel of the group takes the smallest id"));
  redo_button_ = new QPushButton(tr("Redo"), this);
  save_button_ = new QPushButton(tr("Save"), this);
  save_button_->setToolTip(
      tr("Write the edited labels again with their whole object table beside them "
         "(NAME.objects.csv, as volseg edit --stats)"));
  for (auto* b : {delete_button_, merge_button_, undo_button_, redo_button_, save_button_}) {
    b->setEnabled(false);
    split_row->addWidget(b);
  }
  layout->addLayout(split_row);
  // The tools of a click in the slices (volseg edit's paint and erase, a
  // split's seeds), as the page's.
  auto* tools = new QHBoxLayout;
  tool_ = new QComboBox(this);
  tool_->addItem(tr("Move"), "move");
  tool_->addItem(tr("Paint"), "paint");
  tool_->addItem(tr("Erase"), "erase");
  tool_->addItem(tr("Seeds"), "seed");
  tool_->setToolTip(tr("What a click in the slices does: move them, paint or erase a ball, or put a split's seed"));
  radius_ = new QDoubleSpinBox(this);
  radius_->setRange(0.5, segment::kMostRadius);
  radius_->setValue(3);
  radius_->setToolTip(tr("The brush: a ball of this radius in voxels"));
  paint_id_ = new QSpinBox(this);
  paint_id_->setRange(0, std::numeric_limits<int>::max());
  paint_id_->setToolTip(tr("The id paint gives: an object's (selecting its row sets it), or a new one"));
  seed_split_button_ = new QPushButton(tr("Split by seeds"), this);
  seed_split_button_->setEnabled(false);
  auto* clear_seeds = new QPushButton(tr("Clear seeds"), this);
  seed_status_ = new QLabel(this);
  tools->addWidget(new QLabel(tr("Click in slices:"), this));
  tools->addWidget(tool_);
  tools->addWidget(new QLabel(tr("radius"), this));
  tools->addWidget(radius_);
  tools->addWidget(new QLabel(tr("id"), this));
  tools->addWidget(paint_id_);
  tools->addWidget(seed_split_button_);
  tools->addWidget(clear_seeds);
  tools->addWidget(seed_status_, 1);
  layout->addLayout(tools);
  connect(seed_split_button_, &QPushButton::clicked, this, &ObjectsPanel::split_by_seeds);
  connect(clear_seeds, &QPushButton::clicked, this, [this] {
    seeds_.clear();
    enable_buttons();
  });
  connect(merge_button_, &QPushButton::clicked, this, [this] { edit("merge"); });
  auto* preview = new QHBoxLayout;
  plane_ = new QLabel(this);
  plane_->setFixedSize(192, 192);
  plane_->setStyleSheet("background: #1f1f29");
  parts_ = new QLabel(this);
  parts_->setFont(QFont("monospace"));
  parts_->setAlignment(Qt::AlignTop | Qt::AlignLeft);
  preview->addWidget(plane_);
  preview->addWidget(parts_, 1);
  layout->addLayout(preview);
  connect(label_button_, &QPushButton::clicked, this, &ObjectsPanel::label);
  connect(split_button_, &QPushButton::clicked, this, [this] { split(false); });
  connect(apply_button_, &QPushButton::clicked, this, [this] { split(true); });
  connect(delete_button_, &QPushButton::clicked, this, [this] { edit("delete"); });
  connect(undo_button_, &QPushButton::clicked, this, [this] { edit("undo"); });
  connect(redo_button_, &QPushButton::clicked, this, [this] { edit("redo"); });
  connect(save_button_, &QPushButton::clicked, this, [this] { edit("save"); });
  connect(table_, &QTableWidget::itemSelectionChanged, this, [this] {
    if (selected() > 0) paint_id_->setValue(static_cast<int>(selected()));
    enable_buttons();
    apply_button_->setEnabled(false);
  });
}

// Show alone and Show all: one object in the 3D view, as the page's row click.
QLayout* ObjectsPanel::build_shown_row() {
  auto* shown_row = new QHBoxLayout;
  alone_button_ = new QPushButton(tr("Show alone"), this);
  alone_button_->setToolTip(tr("Show the selected object alone in the 3D view (or double-click its row)"));
  all_button_ = new QPushButton(tr("Show all"), this);
  all_button_->setToolTip(tr("Show the whole volume again in the 3D view"));
  for (auto* b : {alone_button_, all_button_}) {
    b->setEnabled(false);
    shown_row->addWidget(b);
  }
  shown_row->addStretch(1);
  connect(alone_button_, &QPushButton::clicked, this, [this] { show_alone(selected()); });
  connect(all_button_, &QPushButton::clicked, this, [this] { show_alone(0); });
  connect(table_, &QTableWidget::cellDoubleClicked, this,
          [this](int r, int) { show_alone(table_->item(r, 0)->text().toLongLong()); });
  return shown_row;
}

void ObjectsPanel::set_mask(const std::string& mask, const std::string& labels_default) {
  mask_ = mask;
  label_button_->setEnabled(!mask_.empty() && !busy_);
  if (output_->text().isEmpty() || !mask_.empty()) output_->setText(QString::fromStdString(labels_default));
}

void ObjectsPanel::label() {
  if (mask_.empty() || busy_ || output_->text().isEmpty()) return;
  session::LabelRequest request;
  request.output = output_->text().toStdString();
  request.connectivity = connectivity_->currentText().toInt();
  request.force = true;
  request.command_line = "volseg-gui";
  busy_ = true;
  label_button_->setEnabled(false);
  status_->setText(tr("labelling..."));
  post_(request);
}

std::vector<std::int64_t> ObjectsPanel::selected_ids() const {
  std::vector<std::int64_t> ids;
  if (table_->selectionModel())
    for (const auto& row : table_->selectionModel()->selectedRows())
      ids.push_back(table_->item(row.row(), 0)->text().toLongLong());
  std::sort(ids.begin(), ids.end());
  return ids;
}

void ObjectsPanel::pick_rows(const std::vector<std::int64_t>& ids) {
  table_->clearSelection();
  const auto mode = table_->selectionMode();
  table_->setSelectionMode(QAbstractItemView::MultiSelection);
  for (int r = 0; r < table_->rowCount(); ++r)
    if (std::find(ids.begin(), ids.end(), table_->item(r, 0)->text().toLongLong()) != ids.end()) table_->selectRow(r);
  table_->setSelectionMode(mode);
}

std::int64_t ObjectsPanel::selected() const {
  const auto ids = selected_ids();
  return ids.size() == 1 ? ids.front() : 0;
}

void ObjectsPanel::split(bool apply) {
  const bool from_preview = apply && preview_.is_object();
  const std::int64_t object = from_preview ? preview_.at("object").get<std::int64_t>() : selected();
  if (object <= 0 || busy_) return;
  session::SplitRequest request;
  request.object = object;
  if (from_preview && preview_.at("edit").contains("seeds"))
    request.seeds = preview_.at("edit").at("seeds").get<std::vector<std::array<std::int64_t, 3>>>();
  else
    request.h = h_->value();
  request.apply = apply;
  if (apply) request.base = history_.edits();
  post_split(request);
}

void ObjectsPanel::split_by_seeds() {
  if (seeds_.size() < 2 || busy_) return;
  session::SplitRequest request;
  request.object = seed_object_;
  request.seeds = seeds_;
  post_split(request);
}

void ObjectsPanel::post_split(const session::SplitRequest& request) {
  busy_ = true;
  enable_buttons();
  apply_button_->setEnabled(false);
  status_->setText(request.apply ? tr("splitting object %1...").arg(request.object)
                                 : tr("working out the split of %1...").arg(request.object));
  post_(request);
}

void ObjectsPanel::enable_buttons() {
  const auto ids = selected_ids();
  split_button_->setEnabled(!busy_ && ids.size() == 1);
  delete_button_->setEnabled(!busy_ && !ids.empty());
  merge_button_->setEnabled(!busy_ && ids.size() >= 2);
  undo_button_->setEnabled(!busy_ && history_.can_undo());
  redo_button_->setEnabled(!busy_ && history_.can_redo());
  save_button_->setEnabled(!busy_ && history_.edits() > 0);
  seed_split_button_->setEnabled(!busy_ && seeds_.size() >= 2);
  alone_button_->setEnabled(ids.size() == 1 && ids.front() != shown_);
  all_button_->setEnabled(shown_ != 0);
  seed_status_->setText(seeds_.empty() ? QString() : tr("object %1: %2 seeds").arg(seed_object_).arg(seeds_.size()));
}

void ObjectsPanel::edit(const std::string& op) {
  if (busy_ || !history_.labelled_yet()) return;
  session::EditRequest request;
  request.op = op;
  if (op == "delete" || op == "merge") {
    request.ids = selected_ids();
    if (request.ids.size() < (op == "merge" ? 2u : 1u)) return;
  }
  post_edit(std::move(request));
}

void ObjectsPanel::post_edit(session::EditRequest request) {
  request.base = history_.edits();
  busy_ = true;
  enable_buttons();
  status_->setText(tr("%1...").arg(QString::fromStdString(request.op)));
  post_(std::move(request));
}

QString ObjectsPanel::tool() const { return tool_->currentData().toString(); }

// A click in a slice with a tool on: the voxel (z, y, x, full resolution)
// and the id the slice shows there.
void ObjectsPanel::pick(const std::array<std::int64_t, 3>& zyx, std::uint64_t id_under) {
  if (busy_ || !history_.labelled_yet()) return;
  const QString t = tool();
  if (t == "paint" || t == "erase") {
    session::EditRequest request;
    request.op = t.toStdString();
    request.center = zyx;
    request.radius = radius_->value();
    if (t == "paint") {
      if (paint_id_->value() < 1) {
        status_->setText(tr("paint: give the id to paint (a row's selection sets it), or a new one"));
        return;
      }
      request.id = paint_id_->value();
    }
    post_edit(std::move(request));
  } else if (t == "seed") {
    if (id_under == 0) {
      status_->setText(tr("seeds: click inside an object"));
      return;
    }
    if (!seeds_.empty() && static_cast<std::int64_t>(id_under) != seed_object_) {
      status_->setText(tr("seeds: all seeds lie in one object (%1), not %2").arg(seed_object_).arg(id_under));
      return;
    }
    seed_object_ = static_cast<std::int64_t>(id_under);
    seeds_.push_back(zyx);
    enable_buttons();
  }
}

// The table after an edit follows the journal (session::EditHistory, as
// the page's); the command list ends in the `volseg edit` that redoes it.
void ObjectsPanel::on_edit(const std::string& kind, const Json& d) {
  history_.apply(kind, d);
  if (d.value("op", "") == "save") {
    status_->setText(tr("saved %1 and its table of %2 objects: %3")
                         .arg(QString::fromStdString(d.value("output", "")))
                         .arg(d.value("objects", 0LL))
                         .arg(QString::fromStdString(d.value("table_file", ""))));
    enable_buttons();
    return;
  }
  const std::int64_t edits = history_.edits();
  const std::string label_line = commands_.substr(0, commands_.find('\n') + 1);
  commands_ = label_line + (edits > 0 ? d.value("command", "") + "\n" : std::string());
  if (kind == "split") {
    preview_ = nullptr;
    seeds_.clear();
    parts_->clear();
    plane_->clear();
    status_->setText(tr("split %1 into %2 parts (edit %3) → %4")
                         .arg(d.at("object").get<long long>())
                         .arg(d.at("parts").size())
                         .arg(edits)
                         .arg(QString::fromStdString(d.value("output", ""))));
  } else {
    status_->setText(tr("%1: %2 edits in the journal (%3 undone) → %4")
                         .arg(QString::fromStdString(d.at("op").get<std::string>()))
                         .arg(edits)
                         .arg(d.value("undone", 0LL))
                         .arg(QString::fromStdString(d.value("output", ""))));
  }
  show_table();
  if (shown_ != 0) show_alone(in_table(shown_) ? shown_ : 0);  // its surface after the edit, or all
}

bool ObjectsPanel::in_table(std::int64_t id) const {
  for (const auto& row : history_.labelled().at("table"))
    if (row.at("id").get<std::int64_t>() == id) return true;
  return false;
}

void ObjectsPanel::show_alone(std::int64_t id) {
  if (id < 0 || (id > 0 && !history_.labelled_yet())) return;
  shown_ = id;
  enable_buttons();
  emit alone(id);
}

void ObjectsPanel::on_reply(const Reply& reply) {
  busy_ = false;
  label_button_->setEnabled(!mask_.empty());
  enable_buttons();
  if (!reply.error.empty()) {
    status_->setText(QString::fromStdString(reply.kind + ": " + reply.error));
    return;
  }
  const Json& d = reply.data;
  if (reply.kind == "edit" || (reply.kind == "split" && d.value("applied", false))) {
    on_edit(reply.kind, d);
  } else if (reply.kind == "label") {
    history_.reset(d);
    if (shown_ != 0) show_alone(0);  // new labels: the old ids mean nothing
    preview_ = nullptr;
    seeds_.clear();
    plane_->clear();
    parts_->clear();
    session::SegmentRequest segment;
    segment.output = mask_;
    session::LabelRequest label;
    label.output = d.value("output", "");
    label.connectivity = d.value("connectivity", 26);
    commands_ = session::label_command_line(segment, label) + "\n";
    status_->setText(tr("%1 objects in %2 s: %3")
                         .arg(d.value("objects", 0LL))
                         .arg(d.value("seconds", 0.0), 0, 'f', 2)
                         .arg(QString::fromStdString(label.output)));
    show_table();
  } else {
    show_preview(d);
  }
  emit changed();
}

void ObjectsPanel::show_table() {
  const Json& rows = history_.labelled().at("table");
  table_->setSortingEnabled(false);
  table_->setRowCount(static_cast<int>(rows.size()));
  int r = 0;
  for (const auto& row : rows) {
    const auto& c = row.at("centroid");
    const auto& b = row.at("box");
    const QString box = QString("%1,%2,%3 – %4,%5,%6")
                            .arg(b[0][0].get<long long>())
                            .arg(b[0][1].get<long long>())
                            .arg(b[0][2].get<long long>())
                            .arg(b[1][0].get<long long>())
                            .arg(b[1][1].get<long long>())
                            .arg(b[1][2].get<long long>());
    const auto id = row.at("id").get<long long>();
    const auto voxels = row.at("voxels").get<long long>();
    table_->setItem(r, 0, cell(QString::number(id), static_cast<double>(id)));
    table_->setItem(r, 1, cell(QString::number(voxels), static_cast<double>(voxels)));
    for (int k = 0; k < 3; ++k)
      table_->setItem(r, 2 + k, cell(QString::number(c[k].get<double>(), 'f', 1), c[k].get<double>()));
    table_->setItem(r, 5, cell(box, 0));
    table_->setItem(r, 6, cell(row.value("border", 0) ? tr("yes") : QString(), 0));
    ++r;
  }
  table_->sortItems(1, Qt::DescendingOrder);
  table_->setSortingEnabled(true);
  table_->clearSelection();
  enable_buttons();
}

void ObjectsPanel::show_preview(const Json& split) {
  preview_ = split;
  const Json& parts = split.at("parts");
  const Json& p = split.at("plane");
  const int width = p.at("width").get<int>(), height = p.at("height").get<int>();
  QImage image(width, height, QImage::Format_RGB32);
  image.fill(QColor(0x1f, 0x1f, 0x29));
  const auto& cells = p.at("cells");
  for (int y = 0; y < height; ++y)
    for (int x = 0; x < width; ++x)
      if (const int c = cells[static_cast<std::size_t>(y * width + x)].get<int>())
        image.setPixel(x, y, 0xff000000 | kPartColours[static_cast<std::size_t>(c - 1) % kPartColours.size()]);
  plane_->setPixmap(QPixmap::fromImage(image.scaled(192, 192, Qt::KeepAspectRatio, Qt::FastTransformation)));
  const Json& edit = split.at("edit");
  const QString by = edit.contains("seeds") ? tr("from %1 seeds").arg(edit.at("seeds").size())
                                            : tr("at h %1").arg(edit.at("h").get<double>());
  const auto object = split.at("object").get<long long>();
  QString text = parts.size() < 2 ? tr("object %1: one part %2 (nothing to split)").arg(object).arg(by)
                                  : tr("object %1 → %2 parts %3:\n").arg(object).arg(parts.size()).arg(by);
  for (std::size_t k = 0; k < parts.size() && parts.size() > 1; ++k)
    text += QString("  %1 %2  %3 voxels\n")
                .arg(parts[k].at("id").get<long long>())
                .arg(k == 0 ? tr("(keeps its id)") : tr("(new)"))
                .arg(parts[k].at("voxels").get<long long>());
  parts_->setText(text);
  apply_button_->setEnabled(parts.size() > 1);
  status_->setText(tr("preview: Apply split writes the labels again with it"));
}

QString ObjectsPanel::preview_text() const { return parts_->text(); }

}  // namespace volseg::gui
