// SPDX-License-Identifier: MIT
// `volseg backends`: the I/O backends and whether this build has them.
#include <cstdio>

#include "command.hpp"
#include "volseg/io/registry.hpp"

namespace volseg::cli {
namespace {

class BackendsCommand final : public Command {
 public:
  CLI::App* add_to(CLI::App& app) override {
    return app.add_subcommand("backends", "List the I/O backends and whether this build has them");
  }

  void run(const Context& context) override {
    if (context.comm.rank() != 0) return;
    for (const auto& backend : io::builtin_registry().all()) {
      std::printf("%-12s %-28s %s%s\n", backend.name.c_str(), backend.formats.c_str(), backend.description.c_str(),
                  backend.open ? "" : ("  [unavailable: " + backend.unavailable + "]").c_str());
    }
  }
};

}  // namespace

std::unique_ptr<Command> make_backends_command() { return std::make_unique<BackendsCommand>(); }

}  // namespace volseg::cli
