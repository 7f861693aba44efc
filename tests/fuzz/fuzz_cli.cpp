// SPDX-License-Identifier: MIT
// libFuzzer target: the command line (app/cli). An input is an argument
// vector, one argument per line, without the program name. It goes through
// what main does before running a command: Commands::add_to, then
// CLI::App::parse, and --help's text on a help request. The chosen command
// is not run.
#include <CLI/CLI.hpp>
#include <cstddef>
#include <cstdint>
#include <sstream>
#include <string>
#include <vector>

#include "commands.hpp"
#include "fuzz_support.hpp"
#include "volseg/io/error.hpp"

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
  std::string command_line;
  for (auto& argument : arguments) {
    argv.push_back(argument.data());
    command_line += (command_line.empty() ? "" : " ") + argument;
  }
  argv.push_back(nullptr);

  volseg::cli::Commands commands(volseg::fuzz::world(), command_line);
  CLI::App app{"volseg: parallel out-of-core threshold segmentation of large volumes"};
  app.require_subcommand(1);
  commands.add_to(app);
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
