// SPDX-License-Identifier: MIT
// Thresholds chosen per step and the mask operators in situ (operators.hpp).
#include "operators.hpp"

#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <system_error>

#include "block.hpp"
#include "volseg/io/error.hpp"
#include "volseg/io/registry.hpp"
#include "volseg/io/rounds.hpp"
#include "volseg/pyramid/pyramid.hpp"
#include "volseg/segment/brick_driver.hpp"
#include "volseg/segment/label.hpp"
#include "volseg/segment/operators.hpp"
#include "volseg/segment/segment.hpp"

namespace volseg::insitu::detail {
namespace {

std::string number_text(double value) {
  char text[64];
  std::snprintf(text, sizeof text, "%.17g", value);
  return text;
}

segment::MaskOperators mask_operators(const Options& o) {
  segment::MaskOperators operators;
  operators.seed = o.seed;
  operators.connectivity = segment::check_connectivity(o.connectivity);
  operators.open = o.open;
  operators.close = o.close;
  operators.fill_holes = o.fill_holes;
  return operators;
}

// Removes a raw volume's header and its data file.
void remove_raw(const std::string& header) {
  std::error_code ignored;
  std::filesystem::remove(header, ignored);
  std::filesystem::remove(std::filesystem::path(header).replace_extension(".raw"), ignored);
}

}  // namespace

StepOperators::StepOperators(const Comm& comm, const Options& options) : comm_(comm), options_(options) {
  chain_ = mask_operators(options).any();
  active_ = chain_ || !options.lo_rule.empty() || !options.hi_rule.empty();
  if (!active_) return;
  collectively(comm_, [&] {
    // One name for every rank: rank 0's process id.
    std::filesystem::path folder(options.scratch);
    if (folder.empty() && !options.out.empty()) folder = std::filesystem::path(options.out).parent_path();
    if (folder.empty()) folder = std::filesystem::current_path();
    const std::string stem = (folder / (".volseg-insitu-" + std::to_string(::getpid()) + "-")).string();
    field_path_ = comm_.broadcast(stem + "field.nhdr");
    mask_path_ = comm_.broadcast(stem + "mask.nhdr");
    if (comm_.rank() == 0) std::filesystem::create_directories(folder);
  });
}

StepOperators::~StepOperators() {
  if (!active_ || comm_.rank() != 0) return;
  remove_raw(field_path_);
  remove_raw(mask_path_);
}

std::pair<double, double> StepOperators::thresholds(const Field& field) {
  // The owned points, packed, through the raw writer (the step's dump, as
  // volseg-sim --dump writes it).
  std::vector<std::byte> packed(static_cast<std::size_t>(field.box.voxels()) * io::dtype_size(field.dtype));
  if (!field.box.empty())
    copy_extent(field.values, io::dtype_size(field.dtype), stored_extent(field), field.box, packed.data());
  io::VolumeInfo info = volume_info(field, options_.variable);
  info.variable.clear();
  auto writer = io::create_writer("posix", {field_path_, info, true}, comm_);
  segment::BrickDriver driver(comm_, {field.box}, {}, {});
  driver.run(writer->capabilities().collective, [&](std::optional<std::size_t> k) {
    io::write_in_round(*writer, k ? &driver.extent(*k) : nullptr, packed.data());
  });
  writer->close();
  if (options_.lo_rule.empty() && options_.hi_rule.empty()) return {options_.lo, options_.hi};
  pyramid::HistogramOptions histogram;
  histogram.input = field_path_;
  const auto chosen = pyramid::choose_thresholds(
      comm_, histogram, options_.lo_rule.empty() ? number_text(options_.lo) : options_.lo_rule,
      options_.hi_rule.empty() ? number_text(options_.hi) : options_.hi_rule);
  return {chosen.lo, chosen.hi};
}

void StepOperators::apply(const Field& field, double lo, double hi, std::vector<std::uint8_t>& mask) {
  segment::SegmentOptions job;
  job.input = field_path_;
  job.output = mask_path_;
  job.lo = lo;
  job.hi = hi;
  job.operators = mask_operators(options_);
  job.force = true;
  job.histogram = false;
  job.progress = segment::ProgressMode::none;
  job.command_line = "volseg_insitu " + options_.text;
  segment::run_segment(comm_, job);
  auto reader = io::open_reader("posix", {mask_path_, {}}, comm_);
  mask.resize(static_cast<std::size_t>(field.box.voxels()));
  collectively(comm_, [&] {
    if (!field.box.empty()) reader->read(field.box, mask.data());
  });
  reader->close();
}

}  // namespace volseg::insitu::detail
