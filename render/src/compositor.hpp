// SPDX-License-Identifier: MIT
// The one compositing step: IceT blends every rank's premultiplied RGBA image
// in a given front-to-back order (ordered compositing) and hands the result
// to rank 0.
#pragma once

#include <vector>

#include "volseg/io/comm.hpp"

namespace volseg::render {

class Compositor {
 public:
  explicit Compositor(const Comm& comm);  // collective
  ~Compositor();
  Compositor(const Compositor&) = delete;
  Compositor& operator=(const Compositor&) = delete;

  // Collective. rgba: width x height premultiplied RGBA floats of this rank
  // (rows from the bottom, as OpenGL reads them); order: ranks front to back,
  // the same on every rank. Returns the blended image on rank 0 (transparent
  // where nothing was drawn), an empty vector elsewhere.
  std::vector<float> blend(const std::vector<float>& rgba, int width, int height, const std::vector<int>& order);

 private:
  struct Impl;
  Impl* impl_;
};

}  // namespace volseg::render
