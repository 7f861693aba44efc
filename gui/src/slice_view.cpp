// SPDX-License-Identifier: MIT
#include "slice_view.hpp"

#include <QMouseEvent>
#include <QPainter>

#include <algorithm>

namespace volseg::gui {

SliceView::SliceView(QString axis, QWidget* parent) : QWidget(parent), axis_(std::move(axis)) {
  setMinimumSize(160, 160);
  setToolTip(tr("Click or drag to move the cursor through the volume"));
}

void SliceView::set_picture(const QImage& picture, double pixel_aspect, const QString& caption) {
  picture_ = picture;
  aspect_ = pixel_aspect;
  caption_ = caption;
  update();
}

void SliceView::set_cursor(double column, double row) {
  column_ = column;
  row_ = row;
  update();
}

QRectF SliceView::target() const {
  if (picture_.isNull()) return {};
  const QRectF area = QRectF(rect()).adjusted(4, 18, -4, -4);
  const double w = picture_.width(), h = picture_.height() * aspect_;
  const double scale = std::min(area.width() / w, area.height() / h);
  return QRectF(area.center().x() - w * scale / 2, area.center().y() - h * scale / 2, w * scale, h * scale);
}

void SliceView::paintEvent(QPaintEvent*) {
  QPainter painter(this);
  painter.fillRect(rect(), QColor(20, 20, 26));
  painter.setPen(QColor(220, 220, 220));
  painter.drawText(QRectF(4, 0, width() - 8, 16), Qt::AlignLeft | Qt::AlignVCenter,
                   caption_.isEmpty() ? axis_ : caption_);
  if (picture_.isNull()) return;
  const QRectF t = target();
  painter.drawImage(t, picture_);
  painter.setPen(QPen(QColor(255, 220, 0, 200), 1));
  const double x = t.left() + column_ * t.width(), y = t.top() + row_ * t.height();
  painter.drawLine(QPointF(x, t.top()), QPointF(x, t.bottom()));
  painter.drawLine(QPointF(t.left(), y), QPointF(t.right(), y));
}

void SliceView::move_to(const QPointF& point) {
  const QRectF t = target();
  if (t.isEmpty()) return;
  column_ = std::clamp((point.x() - t.left()) / t.width(), 0.0, 1.0);
  row_ = std::clamp((point.y() - t.top()) / t.height(), 0.0, 1.0);
  update();
  emit cursor_moved(column_, row_);
}

void SliceView::mousePressEvent(QMouseEvent* event) {
  if (event->button() != Qt::LeftButton) return;
  const QRectF t = target();
  if (!t.isEmpty() && t.contains(event->pos()))
    emit pressed((event->pos().x() - t.left()) / t.width(), (event->pos().y() - t.top()) / t.height());
  move_to(event->pos());
}

void SliceView::mouseMoveEvent(QMouseEvent* event) {
  if (event->buttons() & Qt::LeftButton) move_to(event->pos());
}

}  // namespace volseg::gui
