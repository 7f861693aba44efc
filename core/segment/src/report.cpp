// SPDX-License-Identifier: MIT
#include <cstdio>
#include <nlohmann/json.hpp>
#include <sstream>

#include "job_outputs.hpp"
#include "volseg/io/error.hpp"
#include "volseg/io/files.hpp"
#include "volseg/segment/segment.hpp"
#include "volseg/version.hpp"

namespace volseg::segment {
namespace {

// A backend's own figures as the report writes them: its totals by name
// (counts as integers) and its rows per call.
nlohmann::json to_json(const io::Metrics& metrics) {
  nlohmann::json json = nlohmann::json::object();
  for (const auto& metric : metrics.totals)
    json[metric.name] =
        metric.whole ? nlohmann::json(static_cast<std::uint64_t>(metric.value)) : nlohmann::json(metric.value);
  json[metrics.per_call_name] = metrics.per_call;
  return json;
}

// What a role whose backend kept none of these figures reports: the same
// names at zero, no calls.
io::Metrics zeroed(io::Metrics metrics) {
  for (auto& metric : metrics.totals) metric.value = 0;
  metrics.per_call.clear();
  return metrics;
}

nlohmann::json to_json(const RankTimes& t, int rank) {
  nlohmann::json json = {{"rank", rank},
                         {"bricks", t.bricks},
                         {"open_s", t.open},
                         {"read_s", t.read},
                         {"compute_s", t.compute},
                         {"write_s", t.write},
                         {"wait_s", t.wait},
                         {"close_s", t.close},
                         {"total_s", t.total},
                         {"bytes_read", t.bytes_read},
                         {"bytes_written", t.bytes_written}};
  if (t.out_of_order > 0) json["bricks_out_of_order"] = t.out_of_order;
  const io::Metrics &read = t.read_metrics, &write = t.write_metrics;
  if (!read.per_call.empty() || !write.per_call.empty())
    for (const io::Metrics* kept : {&read, &write}) {  // under each source's name ("twophase")
      if (kept->source.empty() || json.contains(kept->source)) continue;
      auto figures = [&](const io::Metrics& role) {
        return to_json(role.source == kept->source ? role : zeroed(*kept));
      };
      json[kept->source] = {{"read", figures(read)}, {"write", figures(write)}};
    }
  return json;
}

}  // namespace

void write_report(const std::string& path, const SegmentOptions& options, const SegmentResult& result) {
  io::write_file_atomically(path, report_json(options, result));
}

std::string report_json(const SegmentOptions& options, const SegmentResult& result) {
  const auto& info = result.input_info;
  nlohmann::json report;
  report["tool"] = "volseg segment";
  report["volseg_version"] = version();
  report["input"] = {{"path", options.input},
                     {"dims_zyx", info.dims},
                     {"dtype", std::string(io::dtype_name(info.dtype))},
                     {"byte_order", std::string(io::byte_order_name(info.byte_order))},
                     {"bytes", info.bytes()}};
  report["output"] = options.output;
  report["backend"] = result.backend;
  detail::add_backend_choice(report, result.backend, result.backend_reason, result.input_resident);
  report["output_backend"] = result.output_backend;
  report["output_format"] = result.output_format;
  report["hints"] = options.hints;
  report["pipeline"] = result.pipeline;
  report["implementation"] = result.implementation;
  report["ranks"] = result.comm_size;
  report["bricks"] = {{"shape_zyx", result.brick_shape},
                      {"grid_zyx", result.brick_grid},
                      {"count", result.brick_count},
                      {"resumed", result.bricks_resumed}};
  report["threshold"] = {
      {"lo", options.lo}, {"hi", options.hi}, {"rules", detail::rules_json(options.lo_rule, options.hi_rule)}};
  if (options.operators.any()) report["operators"] = detail::operators_json(options.operators, options.lo, options.hi);
  const auto& s = result.stats;
  report["stats"] = {
      {"voxels", s.voxels},
      {"valid", s.valid},
      {"in_range", s.in_range},
      {"min", s.min},
      {"max", s.max},
      {"histogram", options.histogram ? nlohmann::json{{"lo", options.lo}, {"hi", options.hi}, {"counts", s.histogram}}
                                      : nlohmann::json(nullptr)}};
  report["seconds"] = result.seconds;
  report["throughput_gb_s"] = result.seconds > 0 ? static_cast<double>(info.bytes()) / result.seconds / 1e9 : 0.0;
  nlohmann::json ranks = nlohmann::json::array();
  for (std::size_t r = 0; r < result.ranks.size(); ++r) ranks.push_back(to_json(result.ranks[r], static_cast<int>(r)));
  report["per_rank"] = ranks;
  report["timing_note"] =
      result.pipeline == "collective" ? "collective pipeline: read_all, compute and write_all in turn on every rank, "
                                        "rounds joined by all ranks"
      : result.pipeline == "mapped"   ? "mapped pipeline: input read in place (faults left after populating the window "
                                        "count as compute); mask writes run on an I/O thread, wait is the time compute "
                                        "waited for them"
                                    : "buffered pipeline: reads and writes run on I/O threads overlapped with compute; "
                                      "wait is the time compute waited for them";
  return report.dump(2) + "\n";
}

std::string summary(const SegmentOptions& options, const SegmentResult& result) {
  const auto& s = result.stats;
  const auto& info = result.input_info;
  std::ostringstream out;
  out.precision(6);
  double fraction = s.voxels ? 100.0 * static_cast<double>(s.in_range) / static_cast<double>(s.voxels) : 0.0;
  double slowest = 0, fastest = result.ranks.empty() ? 0 : result.ranks[0].total;
  for (const auto& r : result.ranks) {
    slowest = std::max(slowest, r.total);
    fastest = std::min(fastest, r.total);
  }
  out << "segmented " << options.input << " (" << info.dims[2] << "x" << info.dims[1] << "x" << info.dims[0] << " "
      << io::dtype_name(info.dtype) << ", " << static_cast<double>(info.bytes()) / 1e9 << " GB) with " << result.backend
      << " on " << result.comm_size << " rank(s), " << result.brick_count << " bricks of " << result.brick_shape[2]
      << "x" << result.brick_shape[1] << "x" << result.brick_shape[0] << "\n";
  if (!result.backend_reason.empty())
    out << "  backend auto: " << result.backend << ", " << result.backend_reason << "\n";
  if (options.operators.any())
    out << "  [" << options.lo << ", " << options.hi << "], then " << options.operators.describe() << ": " << s.in_range
        << " of " << s.voxels << " voxels in the mask (" << fraction << "%), valid " << s.valid << ", min " << s.min
        << ", max " << s.max << "\n";
  else
    out << "  in range [" << options.lo << ", " << options.hi << "]: " << s.in_range << " of " << s.voxels
        << " voxels (" << fraction << "%), valid " << s.valid << ", min " << s.min << ", max " << s.max << "\n";
  out << "  time " << result.seconds << " s, " << static_cast<double>(info.bytes()) / result.seconds / 1e9
      << " GB/s; per rank fastest " << fastest << " s, slowest " << slowest << " s\n"
      << "  mask: " << options.output << "\n";
  if (result.bricks_resumed > 0)
    out << "  resumed: " << result.bricks_resumed << " of " << result.brick_count
        << " bricks were done by an earlier job (time and GB/s count this job's only)\n";
  return out.str();
}

}  // namespace volseg::segment
