// SPDX-License-Identifier: MIT
// libFuzzer target: the command line (app/cli). An input is an argument
// vector, one argument per line, without the program name. It goes through
// what main does before running a command: the same list of commands
// (make_commands, and for render the command volseg-render parses), then
// CLI::App::parse, and --help's text on a help request. The chosen command
// is not run.
#include <CLI/CLI.hpp>
#include <cstddef>
#include <cstdint>
#include <sstream>
#include <string>
#include <vector>

#include "command.hpp"
#include "fuzz_support.hpp"
#include "volseg/io/error.hpp"

#ifdef VOLSEG_FUZZ_RENDER
namespace volseg::cli {
std::unique_ptr<Command> make_render_job_command();
}  // namespace volseg::cli
#endif

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  (void)volseg::fuzz::world();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::vector<std::string> arguments{"volseg"};
  std::string text(reinterpret_cast<const char*>(data), size);
  std::size_t start = 0;
  while (start < text.size()) {
    std::size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    // argv's strings end at their first NUL, as the kernel would cut them.
    arguments.push_back(text.substr(start, end - start).c_str());
    start = end + 1;
  }
  std::vector<char*> argv;
  for (auto& argument : arguments) argv.push_back(argument.data());
  argv.push_back(nullptr);

  auto commands = volseg::cli::make_commands();
#ifdef VOLSEG_FUZZ_RENDER
  // `volseg render` hands its arguments to volseg-render: parse them as it does.
  if (arguments.size() > 1 && arguments[1] == "render") {
    commands.clear();
    commands.push_back(volseg::cli::make_render_job_command());
  }
#endif
  CLI::App app{volseg::cli::app_description};
  volseg::cli::add_commands(app, commands);
  std::ostringstream out;
  try {
    app.parse(static_cast<int>(arguments.size()), argv.data());
  } catch (const CLI::CallForHelp& e) {
    app.exit(e, out, out);
  } catch (const CLI::CallForAllHelp& e) {
    app.exit(e, out, out);
  } catch (const CLI::ParseError& e) {
    out << e.what();
  } catch (const volseg::Error& e) {
    out << e.what();
  }
  return 0;
}
