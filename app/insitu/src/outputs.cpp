// SPDX-License-Identifier: MIT
#include "outputs.hpp"

#include <cerrno>
#include <cstring>
#include <filesystem>

#include <nlohmann/json.hpp>

#include "volseg/io/error.hpp"
#include "volseg/io/files.hpp"
#include "volseg/segment/label.hpp"
#include "volseg/segment/series.hpp"
#include "volseg/version.hpp"

namespace volseg::insitu::detail {

std::string format_step(const std::string& pattern, std::int64_t step) { return segment::step_path(pattern, step); }

namespace {

// objects,largest,label_s: empty without --label.
std::string label_columns(const StepRecord& r) {
  if (!r.objects) return ",,";
  char text[96];
  std::snprintf(text, sizeof text, "%llu,%llu,%.6f", static_cast<unsigned long long>(*r.objects),
                static_cast<unsigned long long>(r.largest), r.label);
  return text;
}

// lo,hi: the step's thresholds; empty for a step that thresholded nothing.
std::string threshold_columns(const StepRecord& r) {
  if (r.action == "skipped" || r.action == "queue-full" || r.action == "off-step") return ",";
  char text[64];
  std::snprintf(text, sizeof text, "%.17g,%.17g", r.lo, r.hi);
  return text;
}

}  // namespace

TimeSeries::TimeSeries(const std::string& path, bool force) : path_(path), stream_(io::is_stream(path)) {
  io::refuse_existing(path, force, io::Streams::written_in_place);
  if (!stream_) commit_ = io::AtomicCommit(path, io::temporary_path(path), io::AtomicCommit::Uncommitted::kept);
  const std::string& target = written();
  if (const auto dir = std::filesystem::path(path).parent_path(); !stream_ && !dir.empty())
    std::filesystem::create_directories(dir);
  file_ = std::fopen(target.c_str(), "w");
  if (!file_) throw_errno("create", target);
  if (std::fputs("step,time,action,voxels,valid,in_range,min,max,segment_s,reduce_s,write_s,render_s,scripts_s,"
                 "total_s,simulation_s,share,script_errors,mask,image,objects,largest,label_s,lo,hi\n",
                 file_) < 0)
    throw_errno("write", target);
}

TimeSeries::~TimeSeries() {
  if (file_) std::fclose(file_);  // error path only; finish() checks the close
}

void TimeSeries::append(const StepRecord& r) {
  if (!file_) return;
  char line[1024];
  const int n = std::snprintf(
      line, sizeof line, "%lld,%.9g,%s,%llu,%llu,%llu,%.9g,%.9g,%.6f,%.6f,%.6f,%.6f,%.6f,%.6f,%.6f,%.6f,%d,",
      static_cast<long long>(r.step), r.time, r.action.c_str(), static_cast<unsigned long long>(r.voxels),
      static_cast<unsigned long long>(r.valid), static_cast<unsigned long long>(r.in_range), r.min, r.max, r.segment,
      r.reduce, r.write, r.render, r.scripts, r.total, r.simulation, r.share, r.script_errors);
  const std::string& target = written();
  if (n < 0 || std::fputs(line, file_) < 0 ||
      std::fputs((r.mask + "," + r.image + "," + label_columns(r) + "," + threshold_columns(r) + "\n").c_str(), file_) <
          0 ||
      std::fflush(file_) != 0)
    throw_errno("write", target);
}

void TimeSeries::finish(const std::vector<StepRecord>& records, double create_seconds, const Options& options) {
  if (!file_) return;
  const std::string& target = written();
  std::FILE* file = std::exchange(file_, nullptr);
  if (std::fclose(file) != 0) throw_errno("close", target);
  // A device or pipe (say /dev/null) took the lines as they came; there is
  // no file beside it for the summary.
  if (stream_) return;
  commit_.commit(false);

  nlohmann::json json;
  json["volseg_version"] = version();
  json["create_seconds"] = create_seconds;
  json["lo"] = options.lo_rule.empty() ? nlohmann::json(options.lo) : nlohmann::json(options.lo_rule);
  json["hi"] = options.hi_rule.empty() ? nlohmann::json(options.hi) : nlohmann::json(options.hi_rule);
  json["every"] = options.every;
  if (options.budget) json["budget"] = *options.budget;
  json["histogram_bins"] = "256 bins over [lo, hi], counting the points in the mask";
  auto& steps = json["steps"] = nlohmann::json::array();
  for (const auto& r : records) {
    steps.push_back({{"step", r.step},
                     {"time", r.time},
                     {"action", r.action},
                     {"voxels", r.voxels},
                     {"valid", r.valid},
                     {"in_range", r.in_range},
                     {"min", r.min},
                     {"max", r.max},
                     {"histogram", r.histogram},
                     {"seconds",
                      {{"segment", r.segment},
                       {"reduce", r.reduce},
                       {"write", r.write},
                       {"render", r.render},
                       {"scripts", r.scripts},
                       {"total", r.total}}},
                     {"simulation_seconds", r.simulation},
                     {"share", r.share},
                     {"script_errors", r.script_errors},
                     {"mask", r.mask},
                     {"image", r.image}});
    if (r.objects)
      steps.back()["labels"] = nlohmann::json{{"objects", *r.objects},
                                              {"largest", r.largest},
                                              {"seconds", r.label},
                                              {"connectivity", options.connectivity},
                                              {"periodic", segment::periodic_text(options.periodic)}};
  }
  std::filesystem::path json_path(path_);
  json_path.replace_extension(".json");
  io::write_file_atomically(json_path.string(), json.dump(1) + "\n");
}

void write_series_index(const std::string& path, const std::vector<StepRecord>& records) {
  const auto dir = std::filesystem::path(path).parent_path();
  nlohmann::json series;
  series["file-series-version"] = "1.0";
  series["files"] = nlohmann::json::array();
  for (const auto& r : records) {
    if (r.mask.empty()) continue;
    const auto name = std::filesystem::path(r.mask).lexically_relative(dir.empty() ? "." : dir).string();
    series["files"].push_back({{"name", name}, {"time", r.time}});
  }
  if (!dir.empty()) std::filesystem::create_directories(dir);  // no mask may have been written yet
  io::write_file_atomically(path, series.dump(1) + "\n");
}

}  // namespace volseg::insitu::detail
