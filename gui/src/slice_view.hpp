// SPDX-License-Identifier: MIT
// One axis slice: the values in grey over the volume's range, the threshold
// range tinted, the mask (once segmented) in the mask colour, and the linked
// cursor. A click or drag moves the cursor; the other views follow.
#pragma once

#include <QImage>
#include <QWidget>

namespace volseg::gui {

class SliceView : public QWidget {
  Q_OBJECT
 public:
  SliceView(QString axis, QWidget* parent = nullptr);

  // The slice's picture (rows from the top), its world aspect (height over
  // width per pixel) and a caption.
  void set_picture(const QImage& picture, double pixel_aspect, const QString& caption);
  // The cursor, as fractions of the columns and rows.
  void set_cursor(double column, double row);
  QSize sizeHint() const override { return {240, 240}; }

 signals:
  void cursor_moved(double column, double row);
  // A press of the left button (before cursor_moved), as fractions.
  void pressed(double column, double row);

 protected:
  void paintEvent(QPaintEvent*) override;
  void mousePressEvent(QMouseEvent*) override;
  void mouseMoveEvent(QMouseEvent*) override;

 private:
  QRectF target() const;
  void move_to(const QPointF& point);

  QString axis_, caption_;
  QImage picture_;
  double aspect_ = 1, column_ = 0.5, row_ = 0.5;
};

}  // namespace volseg::gui
