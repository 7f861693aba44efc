// SPDX-License-Identifier: MIT
// What `volseg label` writes beside the labels: the object table (CSV) and
// the JSON report.
#include "label_report.hpp"

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <string_view>

#include "volseg/io/error.hpp"
#include "volseg/io/files.hpp"

namespace volseg::segment {
namespace {

// Where an object sits: its centroid in voxels (z, y, x) and in the file's physical frame.
struct Placement {
  double centroid[3];
  double position[3];
  double volume;
};

Placement place(const ObjectPart& p, const io::VolumeInfo& info) {
  Placement where{};
  const double n = static_cast<double>(p.voxels);
  for (int a = 0; a < 3; ++a) {
    where.centroid[a] = static_cast<double>(p.sum[a]) / n;
    where.position[a] = info.origin[2 - a] + info.spacing[2 - a] * where.centroid[a];  // spacing, origin: x,y,z
  }
  where.volume = n * info.spacing[0] * info.spacing[1] * info.spacing[2];
  return where;
}

// Rows of the object table go out in blocks of about a MiB, numbers in their
// shortest round-trip form: a table of millions of objects is never held as
// text.
class BlockedWriter {
 public:
  explicit BlockedWriter(const std::string& path, bool json) : file_(path), json_(json) {
    text_.reserve(block + 1024);
  }
  BlockedWriter& operator<<(std::string_view text) {
    text_ += text;
    if (text_.size() >= block) flush();
    return *this;
  }
  BlockedWriter& operator<<(std::uint64_t value) { return put(value); }
  BlockedWriter& operator<<(std::int32_t value) { return put(value); }
  BlockedWriter& operator<<(double value) {
    if (json_ && !std::isfinite(value)) return *this << "null";  // JSON has no NaN (a NaN in --values)
    return put(value);
  }
  void commit() {
    flush();
    file_.commit();
  }

 private:
  static constexpr std::size_t block = 1 << 20;
  template <class T>
  BlockedWriter& put(T value) {
    char digits[32];
    const auto end = std::to_chars(digits, digits + sizeof digits, value).ptr;
    return *this << std::string_view(digits, static_cast<std::size_t>(end - digits));
  }
  void flush() {
    file_.write(text_);
    text_.clear();
  }
  io::AtomicFile file_;
  bool json_;
  std::string text_;
};

}  // namespace

void write_object_table(const std::string& path, const LabelSummary& summary, const io::VolumeInfo& info,
                        bool with_values) {
  BlockedWriter out(path, false);
  out << "id,voxels,volume,z_min,y_min,x_min,z_max,y_max,x_max,centroid_z,centroid_y,centroid_x,"
         "position_z,position_y,position_x,touches_boundary"
      << (with_values ? ",value_min,value_mean,value_max\n" : "\n");
  for (std::size_t i = 0; i < summary.table.size(); ++i) {
    const auto& p = summary.table[i];
    const Placement w = place(p, info);
    out << std::uint64_t{i + 1} << "," << p.voxels << "," << w.volume;
    for (int a = 0; a < 3; ++a) out << "," << p.lo[a];
    for (int a = 0; a < 3; ++a) out << "," << p.hi[a];
    for (int a = 0; a < 3; ++a) out << "," << w.centroid[a];
    for (int a = 0; a < 3; ++a) out << "," << w.position[a];
    out << (p.border != 0 ? ",1" : ",0");
    if (with_values) {
      const auto& v = summary.table_values[i];
      out << "," << v.min << "," << v.sum / static_cast<double>(p.voxels) << "," << v.max;
    }
    out << "\n";
  }
  out.commit();
}

// The most objects whose rows the JSON report lists (the CSV has them all).
constexpr std::size_t kReportTableRows = 100000;

void write_label_report(const std::string& path, const LabelOptions& options, const LabelResult& result) {
  const auto& info = result.input_info;
  const auto& s = result.summary;
  nlohmann::json report;
  report["tool"] = "volseg label";
  report["command"] = options.command_line;
  report["input"] = {{"path", options.input},
                     {"dims_zyx", info.dims},
                     {"dtype", std::string(io::dtype_name(info.dtype))},
                     {"mask_input", options.mask_input}};
  if (!options.mask_input) report["input"]["threshold"] = {options.lo, options.hi};
  report["output"] = {{"path", options.output},
                      {"format", result.output_format},
                      {"type", result.label_type},
                      {"backend", result.output_backend}};
  report["backend"] = result.backend;
  if (!result.backend_reason.empty())
    report["backend_choice"] = {{"backend", result.backend},
                                {"reason", result.backend_reason},
                                {"resident_fraction", result.input_resident >= 0 ? nlohmann::json(result.input_resident)
                                                                                : nlohmann::json(nullptr)}};
  report["connectivity"] = options.connectivity;
  report["min_voxels"] = options.min_voxels;
  report["bricks"] = {{"shape_zyx", result.brick_shape}, {"grid_zyx", result.brick_grid}, {"count", result.brick_count}};
  report["objects"] = s.objects;
  report["dropped"] = s.dropped;
  report["foreground_voxels"] = s.foreground;
  report["boundary_parts"] = s.boundary_parts;
  report["joins"] = s.joins;
  report["seconds"] = result.seconds;
  nlohmann::json ranks = nlohmann::json::array();
  for (std::size_t r = 0; r < result.ranks.size(); ++r) {
    const auto& t = result.ranks[r];
    ranks.push_back({{"rank", r}, {"label_s", t.label}, {"merge_s", t.merge}, {"write_s", t.write},
                     {"total_s", t.total}, {"max_rss_bytes", t.max_rss}});
  }
  report["ranks"] = ranks;
  // The report is a summary that people and scripts open whole: its table
  // stops at the first kReportTableRows objects (26 million made a 5.6 GB
  // JSON); --stats writes every row.
  const std::size_t rows = std::min<std::size_t>(s.table.size(), kReportTableRows);
  report["table_rows"] = rows;
  report["table_complete"] = rows == s.table.size();
  // The table streams after the rest: rows in the layout of the CSV's.
  std::string head = report.dump(1);
  head.pop_back();  // the closing brace
  BlockedWriter out(path, true);
  out << head << ",\n \"table\": [";
  const bool values = !options.values.empty();
  auto triple = [&](const char* key, const auto& v) {
    out << ", \"" << key << "\": [" << v[0] << ", " << v[1] << ", " << v[2] << "]";
  };
  for (std::size_t i = 0; i < rows; ++i) {
    const auto& p = s.table[i];
    const Placement w = place(p, info);
    out << (i == 0 ? "\n  {\"id\": " : ",\n  {\"id\": ") << std::uint64_t{i + 1} << ", \"voxels\": " << p.voxels
        << ", \"volume\": " << w.volume;
    triple("bbox_min_zyx", p.lo);
    triple("bbox_max_zyx", p.hi);
    triple("centroid_zyx", w.centroid);
    triple("position_zyx", w.position);
    out << ", \"touches_boundary\": " << (p.border != 0 ? "true" : "false");
    if (values) {
      const auto& v = s.table_values[i];
      out << ", \"values\": {\"min\": " << v.min << ", \"mean\": " << v.sum / static_cast<double>(p.voxels)
          << ", \"max\": " << v.max << "}";
    }
    out << "}";
  }
  out << "\n ]\n}\n";
  out.commit();
}

}  // namespace volseg::segment
