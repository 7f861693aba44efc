// SPDX-License-Identifier: MIT
// Rank 0's last step: the background under the blended image, then the
// colour bar, the axes and the title over it.
#pragma once

#include <vtkNew.h>
#include <vtkRenderWindow.h>
#include <vtkRenderer.h>

#include <span>
#include <vector>

#include "volseg/render/render.hpp"

class vtkCamera;

namespace volseg::render {

class Annotations {
 public:
  // Draws into the rank's own render window (a second window would hold a
  // second set of framebuffers: about 48 MiB at 1024^2 with llvmpipe).
  explicit Annotations(vtkRenderWindow* window) : window_(window) {}
  // blended: premultiplied RGBA bytes, rows from the bottom. Returns the
  // finished opaque image, rows from the top.
  Image finish(std::span<const std::uint8_t> blended, const FrameSettings& settings, const Piece& piece,
               vtkCamera& camera);

 private:
  vtkRenderWindow* window_;
  vtkNew<vtkRenderer> overlay_, axes_;
};

}  // namespace volseg::render
