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
#include "volseg/io/comm.hpp"
#include "volseg/io/error.hpp"
#include "volseg/io/registry.hpp"
#include "volseg/segment/cancel.hpp"

int main(int argc, char** argv) {
  int provided = 0;
  // MULTIPLE lets collective I/O run on an I/O thread beside the compute
  // (segment's collective pipeline); with less, that pipeline runs in turn.
  volseg::prefer_checked_mpi_io();  // errors reported, not dropped (OMPIO drops them)
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
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
      // DEPENDENCIES.md pitfall 2: refuse to run with the serial netCDF
      // library answering (it would fail later, and less clearly).
      volseg::io::check_parallel_netcdf();
      commands.run();
    } catch (const CLI::CallForHelp& e) {
      if (rank == 0) app.exit(e);
    } catch (const CLI::CallForAllHelp& e) {
      if (rank == 0) app.exit(e);
    } catch (const CLI::ParseError& e) {
      // A usage error is bad input like any other: one line, status 2.
      if (rank == 0) std::fprintf(stderr, "volseg: error: %s (see 'volseg --help')\n", e.what());
      code = 2;
    } catch (const volseg::segment::Interrupted& e) {
      // Not a failure of the job: its scheduler asked it to stop (75: EX_TEMPFAIL).
      if (rank == 0) std::fprintf(stderr, "volseg: %s\n", e.what());
      code = 75;
    } catch (const std::exception& e) {
      if (rank == 0) std::fprintf(stderr, "volseg: error: %s\n", e.what());
      code = 1;
    }
  }
  MPI_Finalize();
  return code;
}
