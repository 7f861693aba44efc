// SPDX-License-Identifier: MIT
// volseg-sim: a real MPI simulation (3D Gray-Scott) coupled to volseg's
// in-situ hook, the way a user's code would be: create the hook with the
// simulation's communicator, publish the field every step, finalize.
//
//   mpirun -np 2 volseg-sim --dims 128,128,128 --steps 100 --dump dumps/v_%06d.nc
//       --insitu --lo 0.2 --hi 1 --every 10 --out masks/mask_%06d.nc --stats stats.csv
#include <mpi.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "gray_scott.hpp"
#include "volseg/insitu/insitu.hpp"
#include "volseg/io/comm.hpp"
#include "volseg/io/error.hpp"
#include "volseg/io/files.hpp"
#include "volseg/io/format.hpp"
#include "volseg/io/registry.hpp"
#include "volseg/io/watchdog.hpp"
#include "volseg/version.hpp"

namespace {

using namespace volseg;
using Clock = std::chrono::steady_clock;

double since(Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); }

struct SimOptions {
  io::Index3 dims{64, 64, 64};
  int steps = 100;
  int ghost = 1;
  bool periodic = false;  // every axis wraps around (GrayScott)
  sim::Parameters parameters;
  std::string dump;         // field per in-situ step (pattern with %d)
  std::string dump_format;  // raw | cdf2 | cdf5 | netcdf4; empty: from the extension
  int dump_every = 0;       // 0: the hook's --every (1 without the hook)
  std::string report;
  std::string on_error = "continue";
  bool quiet = false;
  std::optional<insitu::Options> insitu;
};

// "mask_%06d.nc" -> the path of step; the hook's rule, for the dump.
std::string step_path(const std::string& pattern, std::int64_t step) {
  char path[4096];
  const int n = std::snprintf(path, sizeof path, pattern.c_str(), static_cast<int>(step));
  if (n < 0 || n >= static_cast<int>(sizeof path)) throw Error("--dump: bad pattern '" + pattern + "'");
  return path;
}

// Collective: the field of this step through volseg's I/O layer, the same
// writers batch jobs read back.
void dump_field(const Comm& comm, const sim::GrayScott& sim, const insitu::Field& field, const std::string& path,
                const std::string& variable, io::FileFormat format) {
  const io::Writing writing = io::writing_backend(format, "posix");
  collectively(comm, [&] {
    const auto parent = std::filesystem::path(path).parent_path();
    if (comm.rank() == 0 && !parent.empty()) std::filesystem::create_directories(parent);
  });
  auto writer = io::create_writer(writing.backend, {path, insitu::volume_info(field, variable), true}, comm,
                                  io::Hints::parse(writing.hints));
  // The owned points, packed (the array holds ghost layers too).
  const auto& b = sim.box();
  const auto& s = sim.stored();
  std::vector<double> packed(static_cast<std::size_t>(b.voxels()));
  for (std::int64_t z = 0; z < b.count[0]; ++z)
    for (std::int64_t y = 0; y < b.count[1]; ++y) {
      const auto in = ((b.offset[0] - s.offset[0] + z) * s.count[1] + (b.offset[1] - s.offset[1] + y)) * s.count[2] +
                      (b.offset[2] - s.offset[2]);
      std::copy_n(sim.v().data() + in, b.count[2], packed.data() + (z * b.count[1] + y) * b.count[2]);
    }
  const io::Extent extents[1] = {b};
  const void* buffers[1] = {packed.data()};
  collectively(comm, [&] { writer->write_all(extents, buffers); });
  writer->close();
}

io::Index3 parse_dims(const std::string& text) {
  io::Index3 dims{};
  int parsed = 0;
  std::size_t start = 0;
  while (parsed < 3) {
    const auto comma = text.find(',', start);
    const std::string part = text.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    try {
      std::size_t used = 0;
      dims[parsed] = std::stoll(part, &used);
      if (used != part.size() || dims[parsed] < 1) throw std::invalid_argument(part);
    } catch (const std::exception&) {
      throw Error("--dims: '" + text + "' is not Z,Y,X (three positive numbers)");
    }
    ++parsed;
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  if (parsed == 1)
    dims = {dims[0], dims[0], dims[0]};
  else if (parsed != 3 || text.find(',', start) != std::string::npos)
    throw Error("--dims: '" + text + "' is not Z,Y,X (or one number N for N,N,N)");
  return dims;
}

// argv up to --insitu is the simulation's, the rest the hook's.
SimOptions parse(int argc, char** argv) {
  std::vector<std::string> own{argv[0]}, hook;
  bool in_hook = false;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (!in_hook && arg == "--insitu")
      in_hook = true;
    else
      (in_hook ? hook : own).push_back(arg);
  }
  SimOptions o;
  CLI::App app{
      "volseg-sim: 3D Gray-Scott reaction-diffusion on MPI ranks, with volseg's in-situ hook.\n"
      "Options after --insitu go to the hook (--insitu-help lists them)."};
  std::string dims = "64,64,64";
  bool insitu_help = false;
  app.add_option("--dims", dims, "global grid Z,Y,X (or N)")->capture_default_str();
  app.add_option("--steps", o.steps, "time steps")->check(CLI::PositiveNumber)->capture_default_str();
  app.add_option("--ghost", o.ghost, "ghost layers kept towards neighbours (and published)")
      ->check(CLI::Range(1, 8))
      ->capture_default_str();
  app.add_flag("--periodic", o.periodic,
               "a periodic domain: every axis wraps around, and the seed cube sits on the grid's corner, across "
               "every face (default: zero-flux faces, the seed in the middle)");
  app.add_option("--F", o.parameters.F, "feed rate")->capture_default_str();
  app.add_option("--k", o.parameters.k, "kill rate")->capture_default_str();
  app.add_option("--noise", o.parameters.noise, "noise added to u each step")->capture_default_str();
  app.add_option("--dump", o.dump, "write v of every in-situ step: pattern with %d (.nhdr, .nc, .nc4)");
  app.add_option("--dump-format", o.dump_format, "raw | cdf2 | cdf5 | netcdf4 (default: from --dump's extension)");
  app.add_option("--dump-every", o.dump_every, "dump every K steps (default: the hook's --every, else 1)")
      ->check(CLI::PositiveNumber);
  app.add_option("--report", o.report, "JSON: wall time, time in the hook, steps");
  app.add_option("--insitu-errors", o.on_error,
                 "when the hook fails: continue (finish without it, exit 3) or stop (exit 1 now)")
      ->check(CLI::IsMember({"continue", "stop"}))
      ->capture_default_str();
  app.add_flag("--insitu-help", insitu_help, "the hook's options");
  app.add_flag("--quiet", o.quiet, "no progress lines");
  app.set_version_flag("--version", std::string("volseg-sim ") + version(), "which volseg this is");
  std::vector<const char*> args;
  for (auto& a : own) args.push_back(a.c_str());
  try {
    app.parse(static_cast<int>(args.size()), args.data());
  } catch (const CLI::CallForHelp&) {
    throw CLI::CallForHelp();
  } catch (const CLI::CallForVersion&) {
    throw;
  } catch (const CLI::ParseError& e) {
    throw Error(e.what());
  }
  if (insitu_help) throw insitu::Options{};  // caught in main: print the hook's help
  o.dims = parse_dims(dims);
  if (in_hook) o.insitu = insitu::parse_options(hook);
  if (!o.dump.empty()) io::output_format(o.dump, o.dump_format, std::nullopt, false, "--dump"), step_path(o.dump, 0);
  if (o.dump_every == 0) o.dump_every = o.insitu ? o.insitu->every : 1;
  if (!o.dump.empty() && o.insitu && o.insitu->async &&
      io::output_format(o.dump, o.dump_format, std::nullopt, false, "--dump") != io::FileFormat::raw)
    throw Error(
        "--dump: with the hook's --async its thread writes while the simulation dumps, and netCDF and HDF5 "
        "are not thread-safe: dump raw (.nhdr), or use --analysis-ranks");
  return o;
}

// The hook's side of a run: the hook while it lives, what it cost, the
// records it kept, and its error and the step it failed at (0: creation), if any.
struct HookRun {
  std::unique_ptr<insitu::Hook> hook;
  double seconds = 0, create_seconds = 0, first_publish = -1;
  std::string error;
  std::int64_t failed_at = -1;
  std::vector<insitu::StepRecord> records;
  std::optional<insitu::HandOff> hand_off;  // --async, --analysis-ranks
};

// Collective: creates the hook on the simulation's communicator.
void start_hook(const Comm& comm, const insitu::Options& options, HookRun& run) {
  const auto t = Clock::now();
  try {
    run.hook = std::make_unique<insitu::Hook>(comm.get(), options);
  } catch (const std::exception& e) {
    run.error = e.what();
    run.failed_at = 0;
  }
  run.create_seconds = run.seconds = since(t);
}

// Collective: publishes one step; a failure (on every rank: the hook agrees on
// errors) ends the hook.
void publish_step(const SimOptions& o, const insitu::Field& field, HookRun& run) {
  const auto t = Clock::now();
  try {
    run.hook->publish(field);
  } catch (const std::exception& e) {
    run.error = e.what();
    run.failed_at = field.step;
    run.hook.reset();
  }
  const double spent = since(t);
  run.seconds += spent;
  if (run.first_publish < 0 && field.step % o.insitu->every == 0) run.first_publish = spent;
}

// Collective: the hook's records, then its end.
void finish_hook(const SimOptions& o, HookRun& run) {
  if (!run.hook) return;
  const auto t = Clock::now();
  try {
    run.records = run.hook->records();
    if (o.insitu->async || o.insitu->analysis_ranks > 0) run.hand_off = run.hook->hand_off();
    run.hook->finalize();
  } catch (const std::exception& e) {
    run.error = e.what();
    run.failed_at = o.steps;
  }
  run.seconds += since(t);
  run.hook.reset();
}

struct StepSeconds {
  double simulate = 0, dump = 0;
};

// Collective: the steps, each simulated, dumped when due and published,
// until the last or until a failed hook stops the run (--insitu-errors stop).
// Periodic: the stored blocks without the layers beyond the faces, two of
// each, so a step published stays untouched until the next publish returns
// (what the hook's --borrow relies on; the fields themselves alternate too),
// and alive until the hook's finalize.
struct Packed {
  std::vector<double> v[2], u[2];
};

StepSeconds run_steps(const Comm& comm, const SimOptions& o, int rank, sim::GrayScott& sim, HookRun& run,
                      Packed& packed, Clock::time_point start) {
  const std::string variable = o.insitu ? o.insitu->variable : "v";
  insitu::Field field;
  field.global_dims = sim.dims();
  field.box = sim.box();
  field.ghost = sim.ghost();
  field.dtype = io::DType::f64;
  StepSeconds seconds;
  int next_report = 1;
  for (int step = 1; step <= o.steps && !(run.failed_at >= 0 && o.on_error == "stop"); ++step) {
    io::watchdog::beat();  // with VOLSEG_TIMEOUT: a step is progress; a hang in the hook is not
    auto t = Clock::now();
    sim.step();
    seconds.simulate += since(t);
    field.step = step;
    field.time = step * o.parameters.dt;
    field.values = sim.v().data();
    field.arrays = {{"u", io::DType::f64, sim.u().data()}};  // the other species, for --expr and --where
    if (sim.periodic()) {
      auto &v = packed.v[step % 2], &u = packed.u[step % 2];
      sim.pack(sim.v(), v);
      sim.pack(sim.u(), u);
      field.values = v.data();
      field.arrays = {{"u", io::DType::f64, u.data()}};
    }
    field.source.clear();
    if (!o.dump.empty() && step % o.dump_every == 0) {
      t = Clock::now();
      field.source = step_path(o.dump, step);
      dump_field(comm, sim, field, field.source, variable,
                 io::output_format(o.dump, o.dump_format, std::nullopt, false, "--dump"));
      seconds.dump += since(t);
    }
    if (run.hook) publish_step(o, field, run);
    if (!o.quiet && rank == 0 && step * 10 >= next_report * o.steps) {
      std::cerr << "volseg-sim: step " << step << "/" << o.steps << " (" << since(start) << " s)\n";
      while (next_report * o.steps <= step * 10) ++next_report;
    }
  }
  return seconds;
}

// Collective: the slowest rank's times; rank 0 prints the hook's error and
// the summary, and writes the report (--report).
void report_run(const Comm& comm, const SimOptions& o, int rank, const HookRun& run, const StepSeconds& seconds,
                double wall) {
  double mine[2] = {wall, run.seconds}, slowest[2];
  check_mpi(MPI_Reduce(mine, slowest, 2, MPI_DOUBLE, MPI_MAX, 0, comm.get()), "MPI_Reduce");
  if (rank != 0) return;
  if (!run.error.empty())
    std::cerr << "volseg-sim: in situ "
              << (run.failed_at == 0 ? "not started" : "stopped at step " + std::to_string(run.failed_at)) << ": "
              << run.error << (o.on_error == "continue" ? " (the simulation went on without it)" : "") << "\n";
  if (!o.quiet)
    std::cerr << "volseg-sim: " << o.steps << " steps of " << o.dims[0] << "x" << o.dims[1] << "x" << o.dims[2]
              << " on " << comm.size() << " ranks in " << slowest[0] << " s (in situ " << slowest[1] << " s)\n";
  if (o.report.empty()) return;
  std::map<std::string, int> actions;
  for (const auto& r : run.records) ++actions[r.action];
  nlohmann::json report{{"volseg_version", version()},
                        {"wall_seconds", slowest[0]},
                        {"hook_seconds", slowest[1]},
                        {"hook_create_seconds", run.create_seconds},
                        {"first_publish_seconds", run.first_publish},
                        {"simulate_seconds", seconds.simulate},
                        {"dump_seconds", seconds.dump},
                        {"steps", o.steps},
                        {"ranks", comm.size()},
                        {"dims", o.dims},
                        {"periodic", o.periodic},
                        {"insitu", o.insitu.has_value()},
                        {"actions", actions},
                        {"hook_error", run.error}};
  if (!run.records.empty()) report["final_share"] = run.records.back().share;
  if (run.hand_off) {
    const auto& h = *run.hand_off;  // rank 0's
    report["hand_off"] = {{"steps", h.steps},           {"skipped", h.skipped},       {"seconds", h.seconds},
                          {"longest", h.longest},       {"waited", h.waited},         {"copy", h.copy},
                          {"step_bytes", h.step_bytes}, {"peak_bytes", h.peak_bytes}, {"bound_bytes", h.bound_bytes}};
  }
  io::write_file_atomically(o.report, report.dump(1) + "\n");
}

// Collective: the whole run; the exit status (0, or 1 when a failed hook
// stopped it, 3 when the simulation went on without it).
int run_simulation(const SimOptions& o) {
  const auto start = Clock::now();
  Comm world(MPI_COMM_WORLD);
  HookRun run;
  if (o.insitu) start_hook(world, *o.insitu, run);
  // With --analysis-ranks K the hook kept the last K ranks: they have served
  // the steps by now. The simulation runs on the others.
  if (run.hook && run.hook->analysis_rank()) return 0;
  Comm comm(run.hook ? run.hook->simulation_comm() : world.get());
  const int rank = comm.rank();
  sim::GrayScott sim(comm.get(), o.dims, o.ghost, o.parameters, o.periodic);
  Packed packed;
  const StepSeconds seconds = run_steps(comm, o, rank, sim, run, packed, start);
  finish_hook(o, run);
  report_run(comm, o, rank, run, seconds, since(start));
  if (run.error.empty()) return 0;
  return o.on_error == "stop" ? 1 : 3;
}

}  // namespace

int main(int argc, char** argv) {
  int provided = 0;
  volseg::prefer_checked_mpi_io();  // errors reported, not dropped (OMPIO drops them)
  volseg::prefer_lone_start();      // a singleton: no daemon, no fabric probes
  // The hook's --async runs MPI on a helper thread beside the simulation's.
  bool async = false;
  for (int i = 1; i < argc; ++i) async = async || std::string(argv[i]) == "--async";
  MPI_Init_thread(&argc, &argv, async ? MPI_THREAD_MULTIPLE : MPI_THREAD_FUNNELED, &provided);
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  int status = 0;
  // VOLSEG_TIMEOUT=SECONDS: a rank where nothing moves for that long (a
  // step, a brick, a hand-off) says where it is and ends the job, as batch
  // jobs do (docs/reliability.md).
  try {
    volseg::io::watchdog::start(volseg::io::watchdog::timeout_from_environment(), rank);
  } catch (const std::exception& e) {
    if (rank == 0) std::cerr << "volseg-sim: " << e.what() << "\n";
    MPI_Finalize();
    return 2;
  }
  {
    SimOptions o;
    try {
      o = parse(argc, argv);
    } catch (const CLI::CallForHelp&) {
      if (rank == 0)
        std::cout << "usage: volseg-sim [--dims Z,Y,X] [--steps N] [--ghost G] [--periodic] [--dump PATTERN] "
                     "[--report FILE] [--insitu-errors continue|stop] [--insitu HOOK OPTIONS...]\n";
      MPI_Finalize();
      return 0;
    } catch (const CLI::CallForVersion&) {
      if (rank == 0) std::cout << "volseg-sim " << version() << "\n";
      MPI_Finalize();
      return 0;
    } catch (const insitu::Options&) {
      if (rank == 0) std::cout << insitu::options_help();
      MPI_Finalize();
      return 0;
    } catch (const std::exception& e) {
      if (rank == 0) std::cerr << "volseg-sim: " << e.what() << "\n";
      MPI_Finalize();
      return 2;
    }
    try {
      status = run_simulation(o);
    } catch (const std::exception& e) {
      if (rank == 0) std::cerr << "volseg-sim: " << e.what() << "\n";
      status = 1;
    }
  }
  volseg::io::watchdog::stop();
  MPI_Finalize();
  return status;
}
