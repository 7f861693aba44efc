// SPDX-License-Identifier: MIT
// `volseg info`: a volume's dimensions, type, byte order and attributes.
#include <algorithm>
#include <cstdio>
#include <string>

#include "command.hpp"
#include "volseg/io/auto_backend.hpp"
#include "volseg/io/format.hpp"
#include "volseg/io/registry.hpp"
#include "volseg/segment/expression.hpp"

namespace volseg::cli {
namespace {

class InfoCommand final : public Command {
 public:
  CLI::App* add_to(CLI::App& app) override {
    auto* sub = app.add_subcommand("info", "Describe a volume: dimensions, type, byte order, attributes");
    sub->add_option("file", path_, input_help)->required();
    sub->add_option("--backend", backend_, "Backend that opens it (auto: by format)")->capture_default_str();
    selection_.add_to(*sub);
    return sub;
  }

  void run(const Context& context) override {
    const Comm& comm = context.comm;
    const io::FileFormat format = io::detect_format(comm, path_);
    const std::string backend = io::resolve_backend(comm, backend_, format, path_, io::Access::stream).backend;
    const auto& entry = io::builtin_registry().get(backend);
    // What is printed waits until the volume has opened: a file that
    // cannot be read is refused with one line and not described.
    std::string listing;
    if (entry.list_variables) {
      const auto variables = entry.list_variables(path_, comm);
      listing = path_ + " (" + io::format_name(format) + "): variables with 3 or more dimensions\n";
      for (const auto& line : variables) listing += "  " + line + "\n";
      if (variables.size() > 1 && selection_.variable.empty() && selection_.expression.empty() &&
          selection_.condition.empty()) {
        if (comm.rank() == 0) std::fputs((listing + "name one with --var to see its details\n").c_str(), stdout);
        return;
      }
    }
    std::unique_ptr<io::VolumeReader> reader;
    io::OpenRequest request{path_, selection_.selection()};
    try {
      reader = segment::open_input(backend, request, comm, {});
    } catch (const StepRequired&) {
      // A series with no --time: its first step is described (the line
      // "time:" says how many there are); any other error stands.
      const auto error = std::current_exception();
      try {
        reader = segment::open_input(backend, {path_, request.selection.at_step(0)}, comm, {});
      } catch (const Error&) {
        std::rethrow_exception(error);
      }
    }
    const auto& info = reader->info();
    if (comm.rank() == 0) std::fputs((listing + io::describe(path_, format, backend, info)).c_str(), stdout);
    reader->close();
  }

 private:
  std::string path_, backend_ = "auto";
  SelectionOptions selection_;
};

}  // namespace

std::unique_ptr<Command> make_info_command() { return std::make_unique<InfoCommand>(); }

}  // namespace volseg::cli
