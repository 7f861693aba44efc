// SPDX-License-Identifier: MIT
// A subcommand of `volseg`. Each is one file, NAME_command.cpp, defining
// make_NAME_command(), and one word in VOLSEG_CLI_COMMANDS
// (app/cli/CMakeLists.txt), the one list from which the CLI's and the
// fuzzer's make_commands() is generated (explicit registration: no static
// self-registering objects, so the list is one place a reader can see).
#pragma once

#include <CLI/CLI.hpp>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "volseg/io/comm.hpp"
#include "volseg/io/selection.hpp"
#include "volseg/pyramid/pyramid.hpp"
#include "volseg/segment/operators.hpp"
#include "volseg/segment/progress.hpp"
#include "volseg/segment/series.hpp"

namespace volseg::cli {

// What every command's run() gets.
struct Context {
  const Comm& comm;
  std::string command_line;  // recorded in outputs' history
};

class Command {
 public:
  virtual ~Command() = default;
  // Adds the subcommand and its options; returns it.
  virtual CLI::App* add_to(CLI::App& app) = 0;
  // Runs it once the command line is parsed. Collective over context.comm.
  virtual void run(const Context& context) = 0;
  // A command that another program of volseg carries out (render, so that
  // commands that draw nothing never load VTK): that program's file name,
  // looked up beside this executable and in ../libexec/volseg. The program
  // replaces this process before MPI is initialised. Empty: run() here.
  virtual std::string program() const { return {}; }
};

using CommandList = std::vector<std::unique_ptr<Command>>;

// volseg's subcommands, in VOLSEG_CLI_COMMANDS order (generated: command_list.cpp).
CommandList make_commands();

// The application every entry point (volseg, volseg-render, the fuzzer) parses with.
// Returns each command's subcommand, in order.
std::vector<CLI::App*> add_commands(CLI::App& app, const CommandList& commands);
// Every command's input positional: the formats the io layer reads.
constexpr const char* input_help =
    "Volume: .nhdr, .nii, .nii.gz, .vti, .tif (or a folder of TIFF slices), NetCDF, HDF5, Zarr or OME-Zarr";
constexpr const char* app_description = "volseg: parallel out-of-core threshold segmentation of large volumes";

// main() of a volseg program over `commands`: parses first (--help and usage
// errors need no MPI), hands a command to its program, or initialises MPI and
// runs it. Returns the exit status: 0, 1 (error), 2 (usage), 75 (interrupted).
int run_main(int argc, char** argv, const CommandList& commands);

// --quiet and --progress, as every job has them.
struct Verbosity {
  bool quiet = false;
  std::string progress = "auto";
  void add_to(CLI::App& sub);
  segment::ProgressMode mode() const;  // throws on an unknown --progress
};

// An output named as Neuroglancer and cloud-volume name a precomputed
// volume, precomputed://PATH or precomputed://file://PATH: the folder PATH,
// written in the precomputed format.
void accept_precomputed_url(CLI::Option& out, std::string& format);

// --levels N of a multiscale output (.ome.zarr, precomputed): the writer
// hint levels=N among `output_hints`.
void add_levels_option(CLI::App& sub, std::vector<std::string>& output_hints);

// Which volume of the input file a job reads: --var, --time and (for
// folders of TIFF slices) --glob, with one help text for every command.
struct SelectionOptions {
  std::string variable, glob;
  std::string time;                   // --time N | all | A:B[:S]
  std::string expression, condition;  // --expr, --where: a field computed from the file's variables
  std::vector<std::string> operands;  // --operand NAME=FILE[:VAR]: an expression's variable from another file
  // series: the command runs a job per step (segment, label); else a range
  // is refused with one line.
  void add_to(CLI::App& sub, bool with_glob = true, bool series = false);
  // The selection open_input reads: one step, or none for a range (which
  // a command that is not a series refuses).
  io::Selection selection() const;
  // --time as given, parsed (a range, or one step); nullopt when absent.
  std::optional<segment::StepRange> step_range() const;

 private:
  bool series_ = false;
  std::string command_;
};

// --lo and --hi, as numbers or rules chosen from the input's exact
// histogram (otsu, multiotsu:K:I, pN), and the operators after them
// (--seed-lo/--seed-hi, --open, --close, --fill-holes), as segment and
// label take them.
struct ThresholdOptions {
  std::string lo, hi;
  std::optional<double> seed_lo, seed_hi;
  std::string open = "0", close = "0";
  bool fill_holes = false;
  // required: --lo and --hi must be given; excludes: an option they exclude (--mask-input).
  void add_to(CLI::App& sub, bool required, CLI::Option* excludes = nullptr);
  bool given() const { return !lo.empty() || !hi.empty(); }
  // The operators, parsed and checked (one line for what is wrong).
  segment::MaskOperators operators(int connectivity) const;
  // Collective: lo and hi as numbers. A rule reads the input's histogram
  // (pyramid::histogram: its pyramid's, or one pass) and rank 0 prints the
  // number chosen (unless quiet), so the job can be run again with it.
  using Resolved = pyramid::ChosenThresholds;

  Resolved resolve(const Comm& comm, const std::string& input, const std::string& backend,
                   const io::Selection& selection, const std::vector<std::string>& input_hints, bool quiet) const;

 private:
  // Rank 0: a note when the seed range reaches outside [lo, hi].
  void note_seeds(const Comm& comm, const Resolved& thresholds, bool quiet) const;
};

}  // namespace volseg::cli
