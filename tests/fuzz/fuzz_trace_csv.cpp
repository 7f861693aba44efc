// SPDX-License-Identifier: MIT
// libFuzzer target: the trace CSV reader of 'volseg trace-report'
// (app/trace_report/src/parse.cpp), then the summary and the text report it
// prints, as the command does without --plots.
#include <cstddef>
#include <cstdint>
#include <sstream>
#include <string>

#include "volseg/io/error.hpp"
#include "volseg/trace_report/trace_report.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::istringstream in(std::string(reinterpret_cast<const char*>(data), size));
  try {
    const auto summary = volseg::trace_report::summarize(volseg::trace_report::parse(in, "fuzz.csv"));
    (void)volseg::trace_report::format(summary, "fuzz.csv");
  } catch (const volseg::Error&) {
  }
  return 0;
}
