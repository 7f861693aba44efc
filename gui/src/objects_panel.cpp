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
#include <QTableWidget>
#include <QVBoxLayout>

#include <algorithm>
#include <array>

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
  table_->setSelectionMode(QAbstractItemView::SingleSelection);
  table_->verticalHeader()->hide();
  table_->horizontalHeader()->setStretchLastSection(true);
  layout->addWidget(table_, 1);
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
  redo_button_ = new QPushButton(tr("Redo"), this);
  for (auto* b : {delete_button_, undo_button_, redo_button_}) {
    b->setEnabled(false);
    split_row->addWidget(b);
  }
  layout->addLayout(split_row);
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
  connect(table_, &QTableWidget::itemSelectionChanged, this, [this] {
    enable_buttons();
    apply_button_->setEnabled(false);
  });
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

std::int64_t ObjectsPanel::selected() const {
  const auto rows = table_->selectionModel() ? table_->selectionModel()->selectedRows() : QModelIndexList{};
  if (rows.isEmpty()) return 0;
  return table_->item(rows.first().row(), 0)->text().toLongLong();
}

void ObjectsPanel::split(bool apply) {
  const std::int64_t object = apply && preview_.is_object() ? preview_.at("object").get<std::int64_t>() : selected();
  if (object <= 0 || busy_) return;
  session::SplitRequest request;
  request.object = object;
  request.h = h_->value();
  request.apply = apply;
  busy_ = true;
  split_button_->setEnabled(false);
  apply_button_->setEnabled(false);
  status_->setText(apply ? tr("splitting object %1...").arg(object) : tr("working out the split of %1...").arg(object));
  post_(request);
}

void ObjectsPanel::enable_buttons() {
  split_button_->setEnabled(!busy_ && selected() > 0);
  delete_button_->setEnabled(!busy_ && selected() > 0);
  undo_button_->setEnabled(!busy_ && !before_.empty());
  redo_button_->setEnabled(!busy_ && !undone_.empty());
}

void ObjectsPanel::edit(const std::string& op) {
  if (busy_ || !labelled_.is_object()) return;
  session::EditRequest request;
  request.op = op;
  if (op == "delete") {
    const std::int64_t object = selected();
    if (object <= 0) return;
    request.ids = {object};
  }
  request.base = edits_;
  busy_ = true;
  enable_buttons();
  status_->setText(tr("%1...").arg(QString::fromStdString(op)));
  post_(request);
}

// The table after an edit: the deleted row gone; undo and redo bring back
// the table of before and after.
void ObjectsPanel::on_edit(const Json& d) {
  const std::string op = d.at("op");
  if (op == "undo" && !before_.empty()) {
    undone_.push_back(labelled_);
    labelled_ = before_.back();
    before_.pop_back();
  } else if (op == "redo" && !undone_.empty()) {
    before_.push_back(labelled_);
    labelled_ = undone_.back();
    undone_.pop_back();
  } else if (op == "delete") {
    before_.push_back(labelled_);
    undone_.clear();
    const auto ids = d.at("edit").at("ids").get<std::vector<std::int64_t>>();
    Json table = Json::array();
    for (const auto& row : labelled_.at("table"))
      if (std::find(ids.begin(), ids.end(), row.at("id").get<std::int64_t>()) == ids.end()) table.push_back(row);
    labelled_["objects"] =
        labelled_.value("objects", 0LL) - static_cast<long long>(labelled_.at("table").size() - table.size());
    labelled_["table"] = std::move(table);
  }
  edits_ = d.value("edits", std::int64_t{0});
  labelled_["output"] = d.at("output");
  const std::string label_line = commands_.substr(0, commands_.find('\n') + 1);
  commands_ = label_line + (edits_ > 0 ? d.value("command", "") + "\n" : std::string());
  status_->setText(tr("%1: %2 edits in the journal (%3 undone) → %4")
                       .arg(QString::fromStdString(op))
                       .arg(edits_)
                       .arg(d.value("undone", 0LL))
                       .arg(QString::fromStdString(d.value("output", ""))));
  show_table();
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
  if (reply.kind == "edit") {
    on_edit(d);
  } else if (reply.kind == "label") {
    before_.clear();
    undone_.clear();
    edits_ = 0;
    labelled_ = d;
    preview_ = nullptr;
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
  } else if (d.value("applied", false)) {
    before_.push_back(labelled_);
    undone_.clear();
    edits_ = d.value("edits", std::int64_t{0});
    const auto object = d.at("object").get<std::int64_t>();
    Json table = Json::array();
    for (const auto& row : labelled_.at("table"))
      if (row.at("id").get<std::int64_t>() != object) table.push_back(row);
    for (const auto& row : d.at("parts")) table.push_back(row);
    labelled_["table"] = std::move(table);
    labelled_["objects"] = labelled_.value("objects", 0LL) + static_cast<long long>(d.at("parts").size()) - 1;
    labelled_["output"] = d.at("output");
    const std::string label_line = commands_.substr(0, commands_.find('\n') + 1);
    commands_ = label_line + d.value("command", "") + "\n";
    preview_ = nullptr;
    status_->setText(tr("split %1 into %2 parts (edit %3) → %4")
                         .arg(object)
                         .arg(d.at("parts").size())
                         .arg(d.value("edits", 0))
                         .arg(QString::fromStdString(d.value("output", ""))));
    parts_->clear();
    plane_->clear();
    show_table();
  } else {
    show_preview(d);
  }
  emit changed();
}

void ObjectsPanel::show_table() {
  const Json& rows = labelled_.at("table");
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
  QString text = parts.size() < 2 ? tr("object %1: one part at h %2 (nothing to split; try a smaller h)")
                                        .arg(split.at("object").get<long long>())
                                        .arg(h_->value())
                                  : tr("object %1 → %2 parts at h %3:\n")
                                        .arg(split.at("object").get<long long>())
                                        .arg(parts.size())
                                        .arg(h_->value());
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
