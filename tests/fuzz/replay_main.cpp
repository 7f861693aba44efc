// SPDX-License-Identifier: MIT
// A fuzz target's input replayer for builds without libFuzzer (gcc, the
// normal test suite): `replay_TARGET FILE|FOLDER...` runs the target's
// LLVMFuzzerTestOneInput once on every file, in name order, as libFuzzer
// would. A target stops on a broken invariant (abort) as it does under
// libFuzzer; here the process's peak RSS is also checked against
// --rss-limit-mb (default 1024, the fuzzers' -rss_limit_mb), so an input
// whose header makes a reader allocate fails the suite without clang.
#include <sys/resource.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size);
extern "C" __attribute__((weak)) int LLVMFuzzerInitialize(int* argc, char*** argv);

namespace {

long peak_rss_mib() {
  rusage usage{};
  if (::getrusage(RUSAGE_SELF, &usage) != 0) return 0;
  return usage.ru_maxrss / 1024;
}

std::vector<std::filesystem::path> inputs_of(const std::vector<std::string>& arguments) {
  std::vector<std::filesystem::path> inputs;
  for (const auto& argument : arguments) {
    if (!std::filesystem::is_directory(argument)) {
      inputs.emplace_back(argument);
      continue;
    }
    std::vector<std::filesystem::path> files;
    for (const auto& entry : std::filesystem::directory_iterator(argument))
      if (entry.is_regular_file()) files.push_back(entry.path());
    std::sort(files.begin(), files.end());
    inputs.insert(inputs.end(), files.begin(), files.end());
  }
  return inputs;
}

}  // namespace

int main(int argc, char** argv) {
  long limit_mib = 1024;
  std::vector<std::string> arguments;
  for (int i = 1; i < argc; ++i) {
    const std::string argument = argv[i];
    if (argument.rfind("--rss-limit-mb=", 0) == 0)
      limit_mib = std::atol(argument.c_str() + 15);
    else
      arguments.push_back(argument);
  }
  if (arguments.empty()) {
    std::fprintf(stderr, "usage: %s [--rss-limit-mb=N] FILE|FOLDER...\n", argv[0]);
    return 2;
  }
  if (LLVMFuzzerInitialize) LLVMFuzzerInitialize(&argc, &argv);
  const auto inputs = inputs_of(arguments);
  for (const auto& input : inputs) {
    std::ifstream file(input, std::ios::binary);
    if (!file) {
      std::fprintf(stderr, "replay: cannot read %s\n", input.c_str());
      return 1;
    }
    const std::vector<char> bytes((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
    LLVMFuzzerTestOneInput(reinterpret_cast<const std::uint8_t*>(bytes.data()), bytes.size());
    if (const long peak = peak_rss_mib(); peak > limit_mib) {
      std::fprintf(stderr, "replay: %s took the process to %ld MiB of RSS, past the %ld MiB limit\n", input.c_str(),
                   peak, limit_mib);
      return 1;
    }
  }
  std::printf("replayed %zu inputs, peak RSS %ld MiB (limit %ld MiB)\n", inputs.size(), peak_rss_mib(), limit_mib);
  return 0;
}
