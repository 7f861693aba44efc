// SPDX-License-Identifier: MIT
// The one compositing step: IceT blends every rank's premultiplied RGBA image
// in a given front-to-back order (ordered compositing) and hands the result
// to rank 0.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "volseg/io/comm.hpp"

namespace volseg::render {

class Compositor {
 public:
  explicit Compositor(const Comm& comm);  // collective
  ~Compositor();
  Compositor(const Compositor&) = delete;
  Compositor& operator=(const Compositor&) = delete;

  // Collective. rgba: width x height premultiplied RGBA bytes of this rank
  // (rows from the bottom, as OpenGL reads them; the framebuffer holds 8
  // bits a channel, so more would only carry its rounding four times over
  // in memory); order: ranks front to back, the same on every rank. Returns
  // the blended image on rank 0 (transparent where nothing was drawn), empty
  // elsewhere (and on rank 0 if IceT produced none): IceT's own buffer,
  // valid until the next blend.
  std::span<const std::uint8_t> blend(const std::uint8_t* rgba, int width, int height, const std::vector<int>& order);

 private:
  struct Impl;
  Impl* impl_;
};

}  // namespace volseg::render
