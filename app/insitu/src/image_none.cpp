// SPDX-License-Identifier: MIT
// --image in a build without ParaView: refused when the hook is created,
// with one line, as a registry entry that was not built in says so.
#include "image.hpp"

#include "volseg/io/error.hpp"

namespace volseg::insitu::detail {

namespace {
const char* const without = "this volseg_insitu was built without ParaView (VOLSEG_WITH_PARAVIEW=OFF)";
}

void check_image_options(const Options& options) {
  if (!options.image.empty()) throw Error(std::string("in-situ option --image: ") + without);
}

void check_display_for(const Comm&, const Options&) {}

struct ImageOutput::Impl {};

ImageOutput::ImageOutput(const Comm&, const Options&) {
  throw Error(std::string("in-situ option --image: ") + without);
}
ImageOutput::~ImageOutput() = default;

std::string ImageOutput::render(const Field&, const io::Extent&, const std::vector<std::uint8_t>&,
                                const segment::Stats&, bool) {
  throw Error(std::string("in-situ option --image: ") + without);
}

}  // namespace volseg::insitu::detail
