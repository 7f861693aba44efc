// SPDX-License-Identifier: MIT
// The last job's per-rank times as stacked bars (open, read, compute, write,
// wait, close) and its I/O trace as a timeline, one lane per rank.
#pragma once

#include <QWidget>

#include <nlohmann/json.hpp>

namespace volseg::gui {

class ReportView : public QWidget {
  Q_OBJECT
 public:
  explicit ReportView(QWidget* parent = nullptr);
  // ranks: [{open, read, ...}] ; trace: [[rank, op, start, duration]]
  void set_report(const nlohmann::json& ranks, const nlohmann::json& trace);
  QSize sizeHint() const override { return {420, 260}; }

 protected:
  void paintEvent(QPaintEvent*) override;

 private:
  nlohmann::json ranks_, trace_;
};

}  // namespace volseg::gui
