// SPDX-License-Identifier: MIT
// volseg-web: the program `volseg web` hands its command line to
// (app/cli/web_command.cpp). Run as `volseg-web web ARGS`, it parses and
// reports as volseg does.
#include "command.hpp"

namespace volseg::web {
std::unique_ptr<cli::Command> make_web_job_command();
}  // namespace volseg::web

int main(int argc, char** argv) {
  volseg::cli::CommandList commands;
  commands.push_back(volseg::web::make_web_job_command());
  return volseg::cli::run_main(argc, argv, commands);
}
