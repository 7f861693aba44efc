// SPDX-License-Identifier: MIT
// `volseg render`: options to render::RenderOptions, then render::run_render.
#pragma once

#include <CLI/CLI.hpp>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "volseg/io/comm.hpp"
#include "volseg/render/job.hpp"

namespace volseg::cli {

class RenderCommand {
 public:
  // Adds the subcommand; when it is chosen, `chosen` runs it.
  void add_to(CLI::App& app, const Comm& comm, std::function<void()>& chosen);

 private:
  void run(const Comm& comm);

  render::RenderOptions options_;
  std::string variable_, size_ = "1024x1024", camera_, view_, colormap_ = "viridis", memory_ = "512MiB",
              progress_ = "auto", mask_color_, background_, slice_at_;
  std::optional<std::int64_t> time_;
  std::vector<std::string> modes_, hints_;
  std::vector<double> iso_;
  std::optional<double> tf_lo_, tf_hi_, zoom_;
  bool parallel_ = false, no_annotations_ = false, no_shade_ = false, no_cull_ = false, quiet_ = false;
};

}  // namespace volseg::cli
