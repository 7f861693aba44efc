// SPDX-License-Identifier: MIT
#pragma once

#include <CLI/CLI.hpp>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "volseg/io/comm.hpp"
#include "render_command.hpp"
#include "volseg/pyramid/pyramid.hpp"
#include "volseg/segment/label.hpp"
#include "volseg/segment/segment.hpp"

namespace volseg::cli {

// The subcommands and their options; run() runs the one that was chosen.
class Commands {
 public:
  Commands(const Comm& comm, std::string command_line) : comm_(comm), command_line_(std::move(command_line)) {}
  void add_to(CLI::App& app);
  void run();  // collective

 private:
  void add_info(CLI::App& app);
  void add_backends(CLI::App& app);
  void add_generate(CLI::App& app);
  void add_segment(CLI::App& app);
  void add_trace_report(CLI::App& app);
  void add_pyramid(CLI::App& app);
  void add_label(CLI::App& app);  // label_command.cpp
  void run_info();
  void run_backends();
  void run_generate();
  void run_segment();
  void run_trace_report();
  void run_pyramid();
  void run_label();
  // segment --label: label the mask just written
  void label_segment_mask();

  const Comm& comm_;
  std::string command_line_;  // recorded in outputs' history
  std::function<void()> chosen_;
  RenderCommand render_;

  struct {
    std::string path, backend = "auto", variable;
    std::optional<std::int64_t> time;
  } info_;
  struct {
    std::string path, field = "shells", dtype = "f32", endian = "little", dims = "256", backend, format, variable,
        trace;
    std::int64_t shell_width = 8;
    std::uint64_t seed = 1;
    std::vector<std::string> hints;
    bool force = false, quiet = false;
    std::string progress = "auto";
  } generate_;
  segment::SegmentOptions segment_;
  std::string segment_brick_, segment_assign_ = "block", segment_report_, segment_variable_;
  std::optional<std::int64_t> segment_time_;
  std::vector<std::string> segment_input_hints_;
  bool segment_quiet_ = false;
  std::string segment_progress_ = "auto";
  bool segment_pyramid_ = false;        // --pyramid: build the mask's pyramid after a successful job
  std::string segment_pyramid_dir_;     // --pyramid-dir
  struct {
    std::string path, plots;
  } trace_report_;
  segment::LabelOptions label_;
  std::string label_brick_, label_assign_ = "block", label_variable_, label_values_variable_;
  std::optional<std::int64_t> label_time_, label_values_time_;
  std::optional<double> label_lo_, label_hi_;
  bool label_quiet_ = false;
  std::string label_progress_ = "auto";
  // segment --label LABELS [--label-stats CSV] [--connectivity N]
  std::string segment_label_, segment_label_stats_;
  int segment_connectivity_ = 26;
  pyramid::BuildOptions pyramid_;
  std::string pyramid_variable_, pyramid_reduce_, pyramid_progress_ = "auto";
  std::optional<std::int64_t> pyramid_time_;
  bool pyramid_quiet_ = false;
};

// --var/--time reach a backend as the reader hints var= and time=.
std::vector<std::string> selection_hints(const std::string& variable, const std::optional<std::int64_t>& time);

}  // namespace volseg::cli
