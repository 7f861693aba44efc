// SPDX-License-Identifier: MIT
// volseg: the command line (the subcommands: VOLSEG_CLI_COMMANDS in CMakeLists.txt).
#include "command.hpp"

int main(int argc, char** argv) { return volseg::cli::run_main(argc, argv, volseg::cli::make_commands()); }
