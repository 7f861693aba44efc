// SPDX-License-Identifier: MIT
#include "report_view.hpp"

#include <QPainter>

#include <algorithm>
#include <array>
#include <map>

namespace volseg::gui {
namespace {
const std::array<const char*, 6> kPhases{"open", "read", "compute", "write", "wait", "close"};
const std::array<QColor, 6> kPhaseColours{QColor(150, 150, 150), QColor(66, 133, 244), QColor(52, 168, 83),
                                          QColor(234, 67, 53),   QColor(251, 188, 5),  QColor(120, 80, 160)};
QColor op_colour(const std::string& op) {
  static const std::map<std::string, QColor> colours{
      {"read", QColor(66, 133, 244)},  {"write", QColor(234, 67, 53)},  {"exchange", QColor(251, 188, 5)},
      {"wait", QColor(200, 160, 40)},  {"map", QColor(52, 168, 83)},    {"unmap", QColor(30, 120, 60)},
      {"open", QColor(150, 150, 150)}, {"close", QColor(120, 80, 160)}, {"advise", QColor(0, 172, 193)}};
  auto it = colours.find(op);
  return it == colours.end() ? QColor(90, 90, 90) : it->second;
}
}  // namespace

ReportView::ReportView(QWidget* parent) : QWidget(parent) { setMinimumHeight(200); }

void ReportView::set_report(const nlohmann::json& ranks, const nlohmann::json& trace) {
  ranks_ = ranks;
  trace_ = trace;
  update();
}

void ReportView::paintEvent(QPaintEvent*) {
  QPainter painter(this);
  painter.fillRect(rect(), palette().base());
  painter.setPen(palette().text().color());
  if (!ranks_.is_array() || ranks_.empty()) {
    painter.drawText(rect(), Qt::AlignCenter, tr("no job yet"));
    return;
  }
  const int n = static_cast<int>(ranks_.size());
  const QRectF bars(60, 22, width() - 70, height() / 2.0 - 34);
  const QRectF lanes(60, height() / 2.0 + 20, width() - 70, height() / 2.0 - 30);
  // Per-rank phase times, stacked.
  double longest = 1e-9;
  for (const auto& r : ranks_) {
    double sum = 0;
    for (const char* phase : kPhases) sum += r.value(phase, 0.0);
    longest = std::max(longest, sum);
  }
  painter.drawText(QRectF(0, 2, width(), 18), Qt::AlignHCenter,
                   tr("seconds per rank, 0 .. %1 s").arg(longest, 0, 'g', 3));
  const double lane = bars.height() / n;
  for (int i = 0; i < n; ++i) {
    const auto& r = ranks_[static_cast<std::size_t>(i)];
    double x = bars.left();
    painter.setPen(palette().text().color());
    painter.drawText(QRectF(0, bars.top() + i * lane, 56, lane), Qt::AlignRight | Qt::AlignVCenter,
                     tr("rank %1").arg(i));
    painter.setPen(Qt::NoPen);
    for (std::size_t p = 0; p < kPhases.size(); ++p) {
      const double w = r.value(kPhases[p], 0.0) / longest * bars.width();
      painter.setBrush(kPhaseColours[p]);
      painter.drawRect(QRectF(x, bars.top() + i * lane + lane * 0.15, w, lane * 0.7));
      x += w;
    }
  }
  double legend = bars.left();
  for (std::size_t p = 0; p < kPhases.size(); ++p) {
    painter.setBrush(kPhaseColours[p]);
    painter.setPen(Qt::NoPen);
    painter.drawRect(QRectF(legend, bars.bottom() + 4, 10, 10));
    painter.setPen(palette().text().color());
    painter.drawText(QPointF(legend + 13, bars.bottom() + 13), kPhases[p]);
    legend += 70;
  }
  // The trace: every call as a tick in its rank's lane.
  if (!trace_.is_array() || trace_.empty()) return;
  double end = 1e-9;
  for (const auto& row : trace_) end = std::max(end, row[2].get<double>() + row[3].get<double>());
  painter.setPen(palette().text().color());
  painter.drawText(QRectF(0, lanes.top() - 18, width(), 16), Qt::AlignHCenter,
                   tr("I/O trace, 0 .. %1 s (blue read, red write, yellow exchange)").arg(end, 0, 'g', 3));
  const double h = lanes.height() / n;
  for (const auto& row : trace_) {
    const int rank = row[0].get<int>();
    if (rank < 0 || rank >= n) continue;
    const double x0 = lanes.left() + row[2].get<double>() / end * lanes.width();
    const double w = std::max(1.0, row[3].get<double>() / end * lanes.width());
    painter.fillRect(QRectF(x0, lanes.top() + rank * h + h * 0.1, w, h * 0.8), op_colour(row[1].get<std::string>()));
  }
  for (int i = 0; i < n; ++i)
    painter.drawText(QRectF(0, lanes.top() + i * h, 56, h), Qt::AlignRight | Qt::AlignVCenter, tr("rank %1").arg(i));
}

}  // namespace volseg::gui
