// SPDX-License-Identifier: MIT
#include "annotations.hpp"

#include <vtkAxesActor.h>
#include <vtkCamera.h>
#include <vtkCaptionActor2D.h>
#include <vtkMatrix4x4.h>
#include <vtkProperty.h>
#include <vtkRendererCollection.h>
#include <vtkScalarBarActor.h>
#include <vtkTextActor.h>
#include <vtkTextProperty.h>
#include <vtkUnsignedCharArray.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>

#include "scene.hpp"

namespace volseg::render {

namespace {

// The colour bar of the scalar's transfer function, at the right.
void add_scale_bar(vtkRenderer& overlay, const FrameSettings& s, const Piece& piece) {
  const auto range = colour_range(s, piece);
  vtkNew<vtkScalarBarActor> bar;
  bar->SetLookupTable(make_lookup_table(s.transfer, range[0], range[1]));
  bar->SetTitle(s.scalar_name.c_str());
  bar->SetNumberOfLabels(5);
  bar->SetPosition(0.88, 0.1);
  bar->SetWidth(0.1);
  bar->SetHeight(0.8);
  bar->SetMaximumWidthInPixels(90);
  bar->UnconstrainedFontSizeOn();
  bar->GetTitleTextProperty()->SetFontSize(std::max(10, s.height / 40));
  bar->GetLabelTextProperty()->SetFontSize(std::max(9, s.height / 48));
  overlay.AddViewProp(bar);
}

// The title, at the top left.
void add_title(vtkRenderer& overlay, const FrameSettings& s) {
  vtkNew<vtkTextActor> title;
  title->SetInput(s.title.c_str());
  title->GetTextProperty()->SetFontSize(std::max(10, s.height / 42));
  title->GetTextProperty()->SetColor(0.95, 0.95, 0.95);
  title->GetTextProperty()->SetVerticalJustificationToTop();
  title->SetDisplayPosition(8, s.height - 8);
  overlay.AddViewProp(title);
}

// Beside the triad: what each axis is, where the file says (CF coordinate
// variables): "x: lon (degrees_east)" and so on, "down" for a reversed one.
void add_axis_legend(vtkRenderer& overlay, const FrameSettings& s, const Piece& piece) {
  std::string text;
  const char* names[3] = {"x", "y", "z"};
  for (int a = 2; a >= 0; --a) {
    if (piece.axis_titles[a].empty()) continue;
    text += std::string(text.empty() ? "" : "\n") + names[a] + ": " + piece.axis_titles[a];
    if (piece.display_scale[a] < 0) text += ", drawn reversed";
    if (s.scale[a] != 1) {
      char factor[32];
      std::snprintf(factor, sizeof factor, ", x%g", s.scale[a]);
      text += factor;
    }
  }
  if (text.empty()) return;
  vtkNew<vtkTextActor> legend;
  legend->SetInput(text.c_str());
  legend->GetTextProperty()->SetFontSize(std::max(9, s.height / 60));
  legend->GetTextProperty()->SetColor(0.85, 0.85, 0.85);
  legend->GetTextProperty()->SetVerticalJustificationToBottom();
  legend->SetDisplayPosition(static_cast<int>(0.16 * s.width) + 4, 8);
  overlay.AddViewProp(legend);
}

// The orientation triad, turned as the main camera is.
// Its arrows point along the data's axes as drawn (a reversed axis's arrow
// points the other way).
void add_triad(vtkRenderer& axes_renderer, const FrameSettings& s, const Piece& piece, vtkCamera& camera) {
  vtkNew<vtkAxesActor> axes;
  axes->SetTotalLength(1, 1, 1);
  axes->SetShaftTypeToCylinder();
  if (piece.display_scale[0] < 0 || piece.display_scale[1] < 0 || piece.display_scale[2] < 0) {
    vtkNew<vtkMatrix4x4> flip;
    for (int a = 0; a < 3; ++a) flip->SetElement(a, a, piece.display_scale[a] < 0 ? -1 : 1);
    axes->SetUserMatrix(flip);
    // A mirroring matrix turns the arrows' faces inside out, which lighting
    // draws black: lit by their colour alone.
    for (auto* property : {axes->GetXAxisShaftProperty(), axes->GetYAxisShaftProperty(), axes->GetZAxisShaftProperty(),
                           axes->GetXAxisTipProperty(), axes->GetYAxisTipProperty(), axes->GetZAxisTipProperty()}) {
      property->SetAmbient(1);
      property->SetDiffuse(0);
      property->SetSpecular(0);
    }
  }
  for (auto* caption :
       {axes->GetXAxisCaptionActor2D(), axes->GetYAxisCaptionActor2D(), axes->GetZAxisCaptionActor2D()}) {
    caption->GetCaptionTextProperty()->SetFontSize(std::max(10, s.height / 50));
    caption->GetCaptionTextProperty()->ShadowOff();
  }
  axes_renderer.AddViewProp(axes);
  vtkCamera* triad = axes_renderer.GetActiveCamera();
  double direction[3], up[3];
  camera.GetDirectionOfProjection(direction);
  camera.GetViewUp(up);
  triad->SetFocalPoint(0, 0, 0);
  triad->SetPosition(-direction[0] * 5, -direction[1] * 5, -direction[2] * 5);
  triad->SetViewUp(up);
  triad->SetParallelProjection(0);
  double unit[6] = {-1, 1, -1, 1, -1, 1};  // the arrows, not their captions: long axis titles do not shrink it
  axes_renderer.ResetCamera(unit);
}

// The scene over the background, the overlay over the scene (both
// premultiplied), flipped to rows from the top.
Image compose(std::span<const std::uint8_t> blended, const std::vector<std::uint8_t>& overlay, const FrameSettings& s) {
  Image image;
  image.width = s.width;
  image.height = s.height;
  image.rgba.resize(static_cast<std::size_t>(s.width) * static_cast<std::size_t>(s.height) * 4);
  const float background[3] = {static_cast<float>(s.background.r), static_cast<float>(s.background.g),
                               static_cast<float>(s.background.b)};
  for (int y = 0; y < s.height; ++y) {
    const std::size_t from = static_cast<std::size_t>(y) * static_cast<std::size_t>(s.width) * 4;
    const std::size_t to = static_cast<std::size_t>(s.height - 1 - y) * static_cast<std::size_t>(s.width) * 4;
    for (int x = 0; x < s.width; ++x) {
      const std::uint8_t* c8 = &blended[from + 4 * static_cast<std::size_t>(x)];
      const float c[4] = {c8[0] / 255.0f, c8[1] / 255.0f, c8[2] / 255.0f, c8[3] / 255.0f};
      const std::uint8_t* o8 = &overlay[from + 4 * static_cast<std::size_t>(x)];
      const float o[4] = {o8[0] / 255.0f, o8[1] / 255.0f, o8[2] / 255.0f, o8[3] / 255.0f};
      std::uint8_t* out = &image.rgba[to + 4 * static_cast<std::size_t>(x)];
      for (int k = 0; k < 3; ++k) {
        const float scene = c[k] + (1 - c[3]) * background[k];  // premultiplied "over"
        const float value = o[k] + (1 - o[3]) * scene;
        out[k] = static_cast<std::uint8_t>(std::lround(255 * std::clamp(value, 0.0f, 1.0f)));
      }
      out[3] = 255;
    }
  }
  return image;
}

}  // namespace

Image Annotations::finish(std::span<const std::uint8_t> blended, const FrameSettings& s, const Piece& piece,
                          vtkCamera& camera) {
  const std::size_t pixels = static_cast<std::size_t>(s.width) * static_cast<std::size_t>(s.height);
  // The overlay in 8 bits (premultiplied, like the blended image): text and
  // lines need no more, and a 1024^2 frame keeps 12 MiB less.
  std::vector<std::uint8_t> overlay(pixels * 4, 0);
  if (s.annotations) {
    overlay_->RemoveAllViewProps();
    axes_->RemoveAllViewProps();
    const bool coloured = s.modes.volume || s.modes.slices || !s.modes.iso.empty();
    if (coloured) add_scale_bar(*overlay_, s, piece);
    if (!s.title.empty()) add_title(*overlay_, s);
    add_axis_legend(*overlay_, s, piece);
    add_triad(*axes_, s, piece, camera);
    // The scene's renderers step aside while the annotations draw alone.
    std::vector<vtkSmartPointer<vtkRenderer>> scene;
    auto* renderers = window_->GetRenderers();
    renderers->InitTraversal();
    while (vtkRenderer* r = renderers->GetNextItem()) scene.emplace_back(r);
    for (auto& r : scene) window_->RemoveRenderer(r);
    for (vtkRenderer* r : {overlay_.GetPointer(), axes_.GetPointer()}) {
      r->SetBackground(0, 0, 0);
      r->SetBackgroundAlpha(0.0);
      window_->AddRenderer(r);
    }
    axes_->SetViewport(0.0, 0.0, 0.16, 0.16);
    axes_->InteractiveOff();
    window_->Render();
    vtkNew<vtkUnsignedCharArray> read;
    window_->GetRGBACharPixelData(0, 0, s.width - 1, s.height - 1, 0, read, 0);
    std::copy(read->GetPointer(0), read->GetPointer(0) + pixels * 4, overlay.begin());
    window_->RemoveRenderer(overlay_);
    window_->RemoveRenderer(axes_);
    for (auto& r : scene) window_->AddRenderer(r);
  }
  return compose(blended, overlay, s);
}

}  // namespace volseg::render
