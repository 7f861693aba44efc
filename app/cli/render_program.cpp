// SPDX-License-Identifier: MIT
// volseg-render: the program `volseg render` hands its command line to
// (render_command.cpp). It alone links VTK and IceT; run as
// `volseg-render render ARGS`, it parses and reports as volseg does.
#include "command.hpp"

namespace volseg::cli {
std::unique_ptr<Command> make_render_job_command();
}  // namespace volseg::cli

int main(int argc, char** argv) {
  volseg::cli::CommandList commands;
  commands.push_back(volseg::cli::make_render_job_command());
  return volseg::cli::run_main(argc, argv, commands);
}
