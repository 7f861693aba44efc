// SPDX-License-Identifier: MIT
// `volseg web`: carried out by the volseg-web program, which links the
// ParaView SDK's VTK and IceT and the web server, so that no other command loads them (start-up
// of every command would pay for them). A build without ParaView has the
// entry still, and it says so, as ADIOS2 keeps an engine it was built without.
#include "command.hpp"
#include "volseg/io/error.hpp"

namespace volseg::cli {
namespace {

constexpr const char* description =
    "Serve a browser page that drives this job: histogram, segment, label, 3D view (docs/web.md)";

class WebCommand final : public Command {
 public:
  CLI::App* add_to(CLI::App& app) override {
    auto* sub = app.add_subcommand("web", description);
    // Every argument, --help included, goes to volseg-web as it is.
    sub->prefix_command();
    sub->allow_extras();
    sub->set_help_flag();
    return sub;
  }

  void run(const Context&) override {
    throw Error(
        "web: this volseg was built without ParaView (VOLSEG_WITH_PARAVIEW=OFF): the page draws with the "
        "ParaView SDK's VTK and IceT");
  }

#ifdef VOLSEG_WEB_PROGRAM
  std::string program() const override { return VOLSEG_WEB_PROGRAM; }
#endif
};

}  // namespace

std::unique_ptr<Command> make_web_command() { return std::make_unique<WebCommand>(); }

}  // namespace volseg::cli
