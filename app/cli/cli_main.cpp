// SPDX-License-Identifier: MIT
// What every volseg program's main() does. Only here is MPI_COMM_WORLD named.
//
// The command line is parsed before MPI is initialised: `--help` and usage
// errors then cost no MPI start-up (singleton initialisation alone is a large
// share of a small job), and a command carried out by another program
// (render, which loads VTK) can replace this process while it is still a
// plain one: the launcher's environment passes through exec, and the new
// program initialises MPI itself.
#include <mpi.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>

#include "command.hpp"
#include "volseg/io/comm.hpp"
#include "volseg/io/error.hpp"
#include "volseg/io/memory.hpp"
#include "volseg/io/registry.hpp"
#include "volseg/io/watchdog.hpp"
#include "volseg/segment/cancel.hpp"
#include "volseg/version.hpp"

namespace volseg::cli {
namespace {

// --timeout of the command that runs (every job adds it with Verbosity).
double command_line_timeout = 0;

// --memory of the command that runs, where it reads a volume (add_commands).
std::string command_line_memory;
constexpr const char* memory_help =
    "Memory budget per rank (512MiB, 4GiB): the most one strip, tile, chunk or block of the input may take "
    "decoded; a larger one is refused before it is read (default: VOLSEG_MEMORY, else 1GiB)";

// A command's --memory, when given, bounds what its readers decode at once.
void apply_memory_option(const CLI::App& sub) {
  const CLI::Option* option = sub.get_option_no_throw("--memory");
  if (!option || option->count() == 0) return;
  io::set_piece_budget(io::parse_memory_size("--memory", option->as<std::string>()), "--memory");
}

// Before MPI_Init a process knows its rank only from its launcher's
// environment (Open MPI, PMIx, MPICH's PMI, Slurm's srun); alone it is 0.
int launcher_rank() {
  for (const char* name : {"OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK", "SLURM_PROCID"})
    if (const char* value = std::getenv(name)) return std::atoi(value);
  return 0;
}

std::string command_line_of(int argc, char** argv) {
  std::string line = "volseg";
  for (int i = 1; i < argc; ++i) line += std::string(" ") + argv[i];
  return line;
}

// The program that carries out a command, beside this executable (the build
// tree) or in ../libexec/volseg (an installed tree, as git keeps git-*).
std::filesystem::path find_program(const std::string& name) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::path self = fs::read_symlink("/proc/self/exe", ec);
  if (ec) throw Error("cannot find this program's own path (/proc/self/exe): " + ec.message());
  const fs::path here = self.parent_path();
  for (const fs::path& dir : {here, here / ".." / "libexec" / "volseg"})
    if (::access((dir / name).c_str(), X_OK) == 0) return dir / name;
  throw Error(name + " was not found beside " + self.string() + " nor in " +
              (here / ".." / "libexec" / "volseg").lexically_normal().string() + ": reinstall volseg");
}

// Replaces this process with `program`, with the same arguments.
[[noreturn]] void hand_over(const std::string& program, int argc, char** argv) {
  const std::string path_text = find_program(program).string();
  // argv[0] stays this program's, so usage lines read "volseg render ...".
  std::vector<char*> arguments(argv, argv + argc);
  arguments.push_back(nullptr);
  ::execv(path_text.c_str(), arguments.data());
  throw Error("cannot run " + path_text + ": " + std::strerror(errno));
}

// A failure before any command ran: rank 0 prints it. Through MPI_Init and
// MPI_Finalize, because a process that leaves a launcher's job with a
// non-zero status and no MPI_Finalize may be torn down before the launcher
// forwards what it printed.
int report_and_exit(const std::string& message, int code) {
  prefer_lone_start();
  MPI_Init(nullptr, nullptr);
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  if (rank == 0) std::fprintf(stderr, "%s\n", message.c_str());
  MPI_Finalize();
  return code;
}

// Runs the parsed command on every rank; returns the exit status. The
// watchdog (--timeout, VOLSEG_TIMEOUT) watches it from MPI_Init to before
// MPI_Finalize.
int run_parsed(Command& command, const CLI::App& sub, const std::string& command_line) {
  const std::string name = sub.get_name();
  int code = 0;
  int provided = 0;
  // MULTIPLE lets collective I/O run on an I/O thread beside the compute
  // (segment's collective pipeline); with less, that pipeline runs in turn.
  prefer_checked_mpi_io();  // errors reported, not dropped (OMPIO drops them)
  prefer_lone_start();      // a singleton: no daemon, no fabric probes
  MPI_Init_thread(nullptr, nullptr, MPI_THREAD_MULTIPLE, &provided);
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  {
    Comm world(MPI_COMM_WORLD);
    try {
      // ParaView's VTK links Debian's serial libnetcdf, which can shadow
      // the parallel one volseg needs: refuse to run with the serial
      // library answering (it would fail later, and less clearly).
      io::watchdog::start(command_line_timeout > 0 ? command_line_timeout : io::watchdog::timeout_from_environment(),
                          rank);
      const io::watchdog::Phase phase(name.c_str());
      io::check_parallel_netcdf();
      apply_memory_option(sub);
      command.run(Context{world, command_line});
    } catch (const segment::Interrupted& e) {
      // Not a failure of the job: its scheduler asked it to stop (75: EX_TEMPFAIL).
      if (rank == 0) std::fprintf(stderr, "volseg: %s\n", e.what());
      code = 75;
    } catch (const std::exception& e) {
      if (rank == 0) std::fprintf(stderr, "volseg: error: %s\n", e.what());
      code = 1;
    }
  }
  io::watchdog::stop();
  MPI_Finalize();
  return code;
}

}  // namespace

std::vector<CLI::App*> add_commands(CLI::App& app, const CommandList& commands) {
  app.require_subcommand(1);
  std::vector<CLI::App*> added;
  for (const auto& command : commands) {
    CLI::App* sub = command->add_to(app);
    // Every command that reads a volume bounds what its readers decode
    // (label and render have a --memory of their own, which does as well).
    if (sub->get_option_no_throw("--var") && !sub->get_option_no_throw("--memory"))
      sub->add_option("--memory", command_line_memory, memory_help);
    added.push_back(sub);
  }
  app.footer(
      "Dimensions and brick shapes are given in file order Z,Y,X (x fastest), as ncdump lists them.\n"
      "Run 'volseg SUBCOMMAND --help' for the options of each.");
  return added;
}

int run_main(int argc, char** argv, const CommandList& commands) {
  // A file-size limit (ulimit -f) must give EFBIG and a clear error, not kill
  // the job half-way through a write.
  std::signal(SIGXFSZ, SIG_IGN);
  const bool speaks = launcher_rank() == 0;
  CLI::App app{app_description};
  app.set_version_flag("--version", std::filesystem::path(argv[0]).filename().string() + " " + version(),
                       "Print which volseg this is and exit");
  const auto subcommands = add_commands(app, commands);
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForVersion& e) {
    return speaks ? app.exit(e) : 0;
  } catch (const CLI::CallForHelp& e) {
    return speaks ? app.exit(e) : 0;
  } catch (const CLI::CallForAllHelp& e) {
    return speaks ? app.exit(e) : 0;
  } catch (const CLI::ParseError& e) {
    // A usage error is bad input like any other: one line, status 2.
    return report_and_exit(std::string("volseg: error: ") + e.what() + " (see 'volseg --help')", 2);
  }
  Command* chosen = nullptr;
  const CLI::App* sub = nullptr;
  for (std::size_t i = 0; i < commands.size(); ++i)
    if (subcommands[i]->parsed()) chosen = commands[i].get(), sub = subcommands[i];
  if (!chosen) return 2;  // require_subcommand(1) makes this unreachable
  if (const auto program = chosen->program(); !program.empty()) {
    try {
      hand_over(program, argc, argv);
    } catch (const std::exception& e) {
      return report_and_exit(std::string("volseg: error: ") + e.what(), 1);
    }
  }
  return run_parsed(*chosen, *sub, command_line_of(argc, argv));
}

void accept_precomputed_url(CLI::Option& out, std::string& format) {
  out.transform(
      [&format](std::string value) {
        for (const std::string_view scheme : {"precomputed://", "file://"})
          if (value.starts_with(scheme)) {
            value = value.substr(scheme.size());
            format = "precomputed";
          }
        return value;
      },
      "", "precomputed URL");
}

void add_levels_option(CLI::App& sub, std::vector<std::string>& output_hints) {
  sub.add_option_function<int>(
      "--levels", [&output_hints](int levels) { output_hints.push_back("levels=" + std::to_string(levels)); },
      "Levels of a multiscale output (.ome.zarr, precomputed), the full resolution counted, each halving every "
      "axis: images by the mean, masks and labels by the mode [0: down to the first that fits one chunk]");
}

void Verbosity::add_to(CLI::App& sub) {
  sub.add_flag("--quiet", quiet, "No progress and no summary");
  sub.add_option("--progress", progress, "auto | bar | lines | none (under mpirun auto means lines)")
      ->capture_default_str();
  sub.add_option("--timeout", command_line_timeout,
                 "End the job, with a line naming the phase, when nothing moves on a rank for SECONDS "
                 "(default: VOLSEG_TIMEOUT, else never)")
      ->check(CLI::PositiveNumber);
}

segment::ProgressMode Verbosity::mode() const {
  return quiet ? segment::ProgressMode::none : segment::parse_progress_mode(progress);
}

void SelectionOptions::add_to(CLI::App& sub, bool with_glob, bool series) {
  sub.add_option("--var", variable,
                 "NetCDF or HDF5 variable (/group/name; 'volseg info' lists them), or a .vti point data array "
                 "(default: the only 3D one)");
  sub.add_option("--time", time,
                 series ? "Step of a 4D variable's first (record/time) dimension, or an ImageJ hyperstack's frame; or "
                          "several: all, A:B[:S] (A to B-1, every S-th, as xarray's isel), one job per step"
                        : "Step of a 4D variable's first (record/time) dimension, or an ImageJ hyperstack's frame");
  series_ = series;
  command_ = sub.get_name();
  auto* expr = sub.add_option("--expr", expression,
                              "A field computed voxel by voxel from the file's variables, used as a stored one: "
                              "'sqrt(u*u + v*v + w*w)' (muparser: + - * / ^, sqrt exp log sin abs min max ..., "
                              "a ? b : c); missing in any operand is missing");
  auto* where = sub.add_option("--where", condition,
                               "A condition on the file's variables, 1 where it holds and 0 where not: "
                               "'T > 10 && S < 34.5' (segment with --lo 1 --hi 1)");
  expr->excludes(where);
  sub.add_option("--operand", operands,
                 "NAME=FILE[:VAR]: the expression's variable NAME read from another file of the same shape (its "
                 "variable VAR, else its only volume), e.g. --expr 'a - b' --operand b=run2.nc:TEMP (repeatable)");
  if (with_glob)
    sub.add_option("--glob", glob,
                   "A folder of TIFF slices: the files that are slices (fnmatch pattern; default *.tif and *.tiff, "
                   "in natural order)");
}

std::optional<segment::StepRange> SelectionOptions::step_range() const {
  if (time.empty()) return std::nullopt;
  return segment::parse_time(time);
}

io::Selection SelectionOptions::selection() const {
  const auto t = step_range();
  if (t && t->range() && !series_)
    throw Error("--time " + time + ": 'volseg " + command_ + "' takes one step (segment and label take a range)");
  if (!operands.empty() && expression.empty() && condition.empty())
    throw Error("--operand names a variable of --expr or --where: give one");
  io::Selection result;
  result.variable = variable;
  result.glob = glob;
  if (t && t->single) result.step = *t->single;
  result.expression = condition.empty() ? expression : condition;
  result.condition = !condition.empty();
  result.operands = operands;
  return result;
}

}  // namespace volseg::cli
