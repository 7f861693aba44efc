// SPDX-License-Identifier: MIT
#include "histogram_view.hpp"

#include <QMouseEvent>
#include <QPainter>
#include <QWheelEvent>

#include <algorithm>
#include <cmath>

namespace volseg::gui {

HistogramView::HistogramView(QWidget* parent) : QWidget(parent) {
  setMinimumHeight(140);
  setMouseTracking(false);
  setToolTip(tr("Drag to choose the range [lo, hi]; wheel to zoom, double-click for the whole range"));
}

void HistogramView::set_histogram(const segment::Histogram& histogram) {
  histogram_ = histogram;
  view_lo_ = histogram.edges().lo;
  view_hi_ = histogram.edges().hi;
  has_range_ = false;
  update();
}

void HistogramView::set_range(double lo, double hi) {
  lo_ = lo;
  hi_ = hi;
  has_range_ = true;
  update();
}

void HistogramView::set_log(bool log) {
  log_ = log;
  update();
}

QRectF HistogramView::plot() const { return QRectF(8, 6, width() - 16, height() - 24); }

double HistogramView::value_at(double x) const {
  const QRectF p = plot();
  return view_lo_ + (x - p.left()) / p.width() * (view_hi_ - view_lo_);
}

int HistogramView::x_of(double value) const {
  const QRectF p = plot();
  return static_cast<int>(std::lround(p.left() + (value - view_lo_) / (view_hi_ - view_lo_) * p.width()));
}

double HistogramView::snapped(double value) const {
  const auto& e = histogram_.edges();
  if (e.integers) return std::clamp(std::round(value), e.lo + 0.5, e.hi - 0.5);
  const double i = std::clamp(std::round((value - e.lo) / e.width()), 0.0, static_cast<double>(e.bins));
  return e.edge(static_cast<int>(i));
}

std::pair<double, double> HistogramView::ordered() const { return {std::min(lo_, hi_), std::max(lo_, hi_)}; }

void HistogramView::paintEvent(QPaintEvent*) {
  QPainter painter(this);
  painter.fillRect(rect(), palette().base());
  const QRectF p = plot();
  const auto& e = histogram_.edges();
  const auto& counts = histogram_.counts();
  if (counts.empty()) {
    painter.drawText(rect(), Qt::AlignCenter, tr("no volume open"));
    return;
  }
  if (has_range_) {
    const auto [lo, hi] = ordered();
    QRectF band(x_of(lo), p.top(), std::max(1, x_of(hi) - x_of(lo)), p.height());
    painter.fillRect(band, QColor(242, 89, 51, 60));
  }
  std::uint64_t top = 1;
  for (int i = 0; i < e.bins; ++i)
    if (e.edge(i + 1) > view_lo_ && e.edge(i) < view_hi_) top = std::max(top, counts[static_cast<std::size_t>(i)]);
  auto height_of = [&](std::uint64_t count) {
    if (count == 0) return 0.0;
    const double f = log_ ? std::log10(1.0 + static_cast<double>(count)) / std::log10(1.0 + static_cast<double>(top))
                          : static_cast<double>(count) / static_cast<double>(top);
    return f * p.height();
  };
  painter.setPen(Qt::NoPen);
  const auto [lo, hi] = ordered();
  for (int i = 0; i < e.bins; ++i) {
    const double a = e.edge(i), b = e.edge(i + 1);
    if (b <= view_lo_ || a >= view_hi_) continue;
    const double x0 = x_of(a), x1 = std::max(x0 + 1.0, static_cast<double>(x_of(b)));
    const double h = height_of(counts[static_cast<std::size_t>(i)]);
    const bool inside = has_range_ && a >= lo - 1e-12 * std::abs(lo) && b <= hi + 1e-12 * std::abs(hi);
    painter.setBrush(inside ? QColor(242, 89, 51) : QColor(90, 110, 150));
    painter.drawRect(QRectF(x0, p.bottom() - h, x1 - x0, h));
  }
  painter.setPen(palette().text().color());
  painter.drawLine(p.bottomLeft(), p.bottomRight());
  if (has_range_) {
    painter.setPen(QPen(QColor(200, 40, 20), 1.5));
    painter.drawLine(QPointF(x_of(lo), p.top()), QPointF(x_of(lo), p.bottom()));
    painter.drawLine(QPointF(x_of(hi), p.top()), QPointF(x_of(hi), p.bottom()));
  }
  painter.setPen(palette().text().color());
  const QString left = QString::number(view_lo_, 'g', 5), right = QString::number(view_hi_, 'g', 5);
  painter.drawText(QRectF(p.left(), p.bottom() + 2, p.width(), 16), Qt::AlignLeft, left);
  painter.drawText(QRectF(p.left(), p.bottom() + 2, p.width(), 16), Qt::AlignRight, right);
  painter.drawText(QRectF(p.left(), p.bottom() + 2, p.width(), 16), Qt::AlignHCenter,
                   log_ ? tr("log count") : tr("count"));
}

void HistogramView::mousePressEvent(QMouseEvent* event) {
  if (event->button() != Qt::LeftButton || histogram_.counts().empty()) return;
  dragging_ = true;
  anchor_ = snapped(value_at(event->pos().x()));
  set_range(anchor_, anchor_);
  const auto [lo, hi] = ordered();
  emit range_dragged(lo, hi);
}

void HistogramView::mouseMoveEvent(QMouseEvent* event) {
  if (!dragging_) return;
  const double v = snapped(value_at(event->pos().x()));
  set_range(std::min(anchor_, v), std::max(anchor_, v));
  emit range_dragged(lo_, hi_);
}

void HistogramView::mouseReleaseEvent(QMouseEvent* event) {
  if (!dragging_ || event->button() != Qt::LeftButton) return;
  dragging_ = false;
  const double v = snapped(value_at(event->pos().x()));
  set_range(std::min(anchor_, v), std::max(anchor_, v));
  emit range_chosen(lo_, hi_);
}

void HistogramView::mouseDoubleClickEvent(QMouseEvent*) {
  view_lo_ = histogram_.edges().lo;
  view_hi_ = histogram_.edges().hi;
  update();
}

void HistogramView::wheelEvent(QWheelEvent* event) {
  if (histogram_.counts().empty()) return;
  const double steps = event->angleDelta().y() / 120.0;
  const double factor = std::pow(0.8, steps);
  const double at = value_at(event->position().x());
  const auto& e = histogram_.edges();
  const double min_span = e.width() * 8;
  double lo = at - (at - view_lo_) * factor, hi = at + (view_hi_ - at) * factor;
  if (hi - lo < min_span) return;
  view_lo_ = std::max(e.lo, lo);
  view_hi_ = std::min(e.hi, hi);
  update();
}

}  // namespace volseg::gui
