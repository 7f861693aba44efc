// SPDX-License-Identifier: MIT
#include "compositor.hpp"

#include <IceT.h>
#include <IceTMPI.h>

#include <algorithm>

#include "volseg/io/error.hpp"

namespace volseg::render {

struct Compositor::Impl {
  Comm comm;
  IceTCommunicator icet_comm = nullptr;
  IceTContext context = nullptr;
  int width = 0, height = 0;
  explicit Impl(const Comm& parent) : comm(parent.duplicate()) {}
};

Compositor::Compositor(const Comm& comm) : impl_(new Impl(comm)) {
  impl_->icet_comm = icetCreateMPICommunicator(impl_->comm.get());
  impl_->context = icetCreateContext(impl_->icet_comm);
  icetDiagnostics(ICET_DIAG_ERRORS | ICET_DIAG_ROOT_NODE);
  icetSetColorFormat(ICET_IMAGE_COLOR_RGBA_UBYTE);
  icetSetDepthFormat(ICET_IMAGE_DEPTH_NONE);
  icetCompositeMode(ICET_COMPOSITE_MODE_BLEND);
  icetEnable(ICET_ORDERED_COMPOSITE);
  // The background is blended on rank 0 after compositing (the ranks'
  // images are transparent there), so IceT must not correct for one.
  icetDisable(ICET_CORRECT_COLORED_BACKGROUND);
  icetStrategy(ICET_STRATEGY_REDUCE);
  icetSingleImageStrategy(ICET_SINGLE_IMAGE_STRATEGY_AUTOMATIC);
}

Compositor::~Compositor() {
  icetSetContext(impl_->context);
  icetDestroyContext(impl_->context);
  icetDestroyMPICommunicator(impl_->icet_comm);
  delete impl_;
}

std::span<const std::uint8_t> Compositor::blend(const std::uint8_t* rgba, int width, int height,
                                                const std::vector<int>& order) {
  icetSetContext(impl_->context);
  if (width != impl_->width || height != impl_->height) {
    icetResetTiles();
    icetAddTile(0, 0, width, height, 0);  // one tile, shown by rank 0
    icetPhysicalRenderSize(width, height);
    impl_->width = width;
    impl_->height = height;
  }
  if (static_cast<int>(order.size()) != impl_->comm.size())
    throw Error("compositing order names " + std::to_string(order.size()) + " ranks, not " +
                std::to_string(impl_->comm.size()));
  icetCompositeOrder(order.data());
  const IceTInt viewport[4] = {0, 0, width, height};
  // Matrices only serve IceT's culling by bounds, which is not used (no
  // icetBoundingBox): identity.
  const IceTDouble identity[16] = {1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1};
  const IceTFloat background[4] = {0, 0, 0, 0};
  IceTImage image = icetCompositeImage(rgba, nullptr, viewport, identity, identity, background);
  // A null image comes back empty; the caller throws where every rank agrees.
  if (impl_->comm.rank() != 0 || icetImageIsNull(image)) return {};
  return {icetImageGetColorcub(image), static_cast<std::size_t>(width) * static_cast<std::size_t>(height) * 4};
}

}  // namespace volseg::render
