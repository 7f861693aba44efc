// SPDX-License-Identifier: MIT
// The threshold histogram: the exact full-resolution histogram of the volume
// (the pyramid's, one definition with segment's), linear or log, zoomed with
// the wheel about the pointer (double-click: whole range). Dragging selects
// [lo, hi], snapped to bin edges (integers for integer bins), where the voxel
// count is exact; typed values may fall inside a bin (an estimate).
#pragma once

#include <QWidget>

#include "volseg/segment/histogram.hpp"

namespace volseg::gui {

class HistogramView : public QWidget {
  Q_OBJECT
 public:
  explicit HistogramView(QWidget* parent = nullptr);

  void set_histogram(const segment::Histogram& histogram);
  const segment::Histogram& histogram() const { return histogram_; }
  void set_range(double lo, double hi);  // no signal
  void set_log(bool log);
  // The value at a widget x, snapped to where counts are exact.
  double snapped(double value) const;
  // Widget x of a value (for tests that drag).
  int x_of(double value) const;

  QSize sizeHint() const override { return {420, 180}; }

 signals:
  void range_dragged(double lo, double hi);  // while dragging
  void range_chosen(double lo, double hi);   // on release

 protected:
  void paintEvent(QPaintEvent*) override;
  void mousePressEvent(QMouseEvent*) override;
  void mouseMoveEvent(QMouseEvent*) override;
  void mouseReleaseEvent(QMouseEvent*) override;
  void mouseDoubleClickEvent(QMouseEvent*) override;
  void wheelEvent(QWheelEvent*) override;

 private:
  QRectF plot() const;
  double value_at(double x) const;
  std::pair<double, double> ordered() const;

  segment::Histogram histogram_;
  bool log_ = true, dragging_ = false;
  double view_lo_ = 0, view_hi_ = 1;  // the values shown
  double lo_ = 0, hi_ = 0, anchor_ = 0;
  bool has_range_ = false;
};

}  // namespace volseg::gui
