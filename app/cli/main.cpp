// SPDX-License-Identifier: MIT
// volseg: the command line. Only main names MPI_COMM_WORLD.
#include <mpi.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <string>

#include "commands.hpp"
#include "volseg/io/error.hpp"

int main(int argc, char** argv) {
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided);
  // A file-size limit (ulimit -f) must give EFBIG and a clear error, not kill
  // the job half-way through a write.
  std::signal(SIGXFSZ, SIG_IGN);
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  int code = 0;
  {
    volseg::Comm world(MPI_COMM_WORLD);
    std::string command_line = "volseg";
    for (int i = 1; i < argc; ++i) command_line += std::string(" ") + argv[i];
    volseg::cli::Commands commands(world, command_line);
    CLI::App app{"volseg: parallel out-of-core threshold segmentation of large volumes"};
    app.require_subcommand(1);
    commands.add_to(app);
    try {
      app.parse(argc, argv);
      commands.run();
    } catch (const CLI::ParseError& e) {
      // --help and usage errors: rank 0 speaks for everyone.
      if (rank == 0) code = app.exit(e);
      else code = e.get_exit_code();
    } catch (const std::exception& e) {
      if (rank == 0) std::fprintf(stderr, "volseg: error: %s\n", e.what());
      code = 1;
    }
  }
  MPI_Finalize();
  return code;
}
