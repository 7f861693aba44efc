// SPDX-License-Identifier: MIT
// Rank 0's last step: the background under the blended image, then the
// colour bar, the axes and the title over it.
#pragma once

#include <vtkNew.h>
#include <vtkRenderWindow.h>
#include <vtkRenderer.h>

#include <vector>

#include "volseg/render/render.hpp"

class vtkCamera;

namespace volseg::render {

class Annotations {
 public:
  Annotations();
  // blended: premultiplied RGBA floats, rows from the bottom. Returns the
  // finished opaque image, rows from the top.
  Image finish(const std::vector<float>& blended, const FrameSettings& settings, const Piece& piece,
               vtkCamera& camera);

 private:
  vtkNew<vtkRenderWindow> window_;
  vtkNew<vtkRenderer> overlay_, axes_;
};

}  // namespace volseg::render
