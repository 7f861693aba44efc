// SPDX-License-Identifier: MIT
// `volseg trace-report`: the summary of an I/O trace written by --trace.
#include <cstdio>

#include "command.hpp"
#include "volseg/trace_report/trace_report.hpp"

namespace volseg::cli {
namespace {

class TraceReportCommand final : public Command {
 public:
  CLI::App* add_to(CLI::App& app) override {
    auto* sub = app.add_subcommand("trace-report", "Summarise an I/O trace written by --trace (docs/trace.md)");
    sub->add_option("file", path_, "Trace CSV written by 'segment --trace' or 'generate --trace'")->required();
    sub->add_option("--plots", plots_, "Also draw PNGs (histogram, CDFs, per-rank timeline) into DIR");
    return sub;
  }

  // Rank 0 alone reads the trace; the others have nothing to do.
  void run(const Context& context) override {
    if (context.comm.rank() != 0) return;
    const auto summary = trace_report::summarize(trace_report::read(path_));
    std::fputs(trace_report::format(summary, path_).c_str(), stdout);
    if (plots_.empty()) return;
    std::fflush(stdout);
    for (const auto& png : trace_report::write_plots(summary, path_, plots_)) std::printf("wrote %s\n", png.c_str());
  }

 private:
  std::string path_, plots_;
};

}  // namespace

std::unique_ptr<Command> make_trace_report_command() { return std::make_unique<TraceReportCommand>(); }

}  // namespace volseg::cli
