// SPDX-License-Identifier: MIT
// `volseg render`: carried out by the volseg-render program, which links the
// ParaView SDK's VTK and IceT, so that no other command loads them (start-up
// of every command would pay for them). A build without ParaView has the
// entry still, and it says so, as ADIOS2 keeps an engine it was built without.
#include "command.hpp"
#include "volseg/io/error.hpp"

namespace volseg::cli {
namespace {

constexpr const char* description = "Render a volume, its mask and surfaces on all ranks into PNG images";

class RenderCommand final : public Command {
 public:
  CLI::App* add_to(CLI::App& app) override {
    auto* sub = app.add_subcommand("render", description);
    // Every argument, --help included, goes to volseg-render as it is.
    sub->prefix_command();
    sub->allow_extras();
    sub->set_help_flag();
    return sub;
  }

  void run(const Context&) override {
    throw Error(
        "render: this volseg was built without ParaView (VOLSEG_WITH_PARAVIEW=OFF): rendering needs the "
        "ParaView SDK's VTK and IceT");
  }

#ifdef VOLSEG_RENDER_PROGRAM
  std::string program() const override { return VOLSEG_RENDER_PROGRAM; }
#endif
};

}  // namespace

std::unique_ptr<Command> make_render_command() { return std::make_unique<RenderCommand>(); }

}  // namespace volseg::cli
