// SPDX-License-Identifier: MIT
// The report's figures: the numbers come from summarize() (one source of
// truth for buckets and CDFs), written as small CSVs; matplotlib, through
// scripts/trace_plots.py, only draws them (and the timeline, from the trace).

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "volseg/io/error.hpp"
#include "volseg/io/files.hpp"
#include "volseg/segment/plot_script.hpp"
#include "volseg/trace_report/trace_report.hpp"

namespace volseg::trace_report {
namespace {

void write_text(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) throw_errno("create", path);
  out << text;
  out.close();
  if (!out) throw_errno("write", path);
}

std::string histogram_csv(const Summary& s) {
  std::string out = "bucket,label,reads,writes\n";
  for (int b = 0; b < bucket_count; ++b) {
    const auto i = static_cast<std::size_t>(b);
    out.append(std::to_string(b)).append(1, ',').append(bucket_label(b)).append(1, ',');
    out.append(std::to_string(s.reads.histogram[i])).append(1, ',').append(std::to_string(s.writes.histogram[i]));
    out.append(1, '\n');
  }
  return out;
}

// One row per distinct size: the CDF's step there, by count and by bytes.
void append_cdf(std::string& out, const char* kind, const SizeDistribution& d) {
  std::uint64_t count = 0, bytes = 0;
  for (std::size_t i = 0; i < d.sizes.size(); ++i) {
    ++count;
    bytes += d.sizes[i];
    if (i + 1 < d.sizes.size() && d.sizes[i + 1] == d.sizes[i]) continue;
    char row[128];
    std::snprintf(row, sizeof row, "%s,%llu,%.9f,%.9f\n", kind, static_cast<unsigned long long>(d.sizes[i]),
                  static_cast<double>(count) / static_cast<double>(d.requests),
                  d.bytes ? static_cast<double>(bytes) / static_cast<double>(d.bytes) : 1.0);
    out += row;
  }
}

// The plot script: installed in ../share/volseg beside the program's bin/
// (relocatable), or in the build tree's share/volseg, copied there by CMake.
}  // namespace

std::vector<std::string> write_plots(const Summary& summary, const std::string& trace_path, const std::string& dir) {
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) throw Error("create plot folder " + dir + ": " + ec.message());
  // Tables and plots are made in a folder of this process's own inside dir,
  // then each is renamed into place: a failed plot leaves dir as it was.
  const std::string scratch = io::temporary_path((fs::path(dir) / "plots").string());
  fs::remove_all(scratch, ec);
  fs::create_directories(scratch, ec);
  if (ec) throw Error("create plot folder " + scratch + ": " + ec.message());
  io::AtomicCommit scratch_folder(scratch, scratch);  // removed on the way out (never committed)
  write_text((fs::path(scratch) / "histogram.csv").string(), histogram_csv(summary));
  std::string cdf = "kind,size,count_fraction,bytes_fraction\n";
  append_cdf(cdf, "read", summary.reads);
  append_cdf(cdf, "write", summary.writes);
  write_text((fs::path(scratch) / "cdf.csv").string(), cdf);
  segment::run_script("trace_plots.py", {scratch, trace_path});
  for (const char* name : {"histogram.png", "cdf.png", "timeline.png"})
    if (!fs::exists(fs::path(scratch) / name))
      throw Error("plot script trace_plots.py did not write " + (fs::path(dir) / name).string());
  std::vector<std::string> pngs;
  for (const char* name : {"histogram.csv", "cdf.csv", "histogram.png", "cdf.png", "timeline.png"}) {
    const std::string path = (fs::path(dir) / name).string();
    io::AtomicCommit(path, (fs::path(scratch) / name).string()).commit(false);
    if (std::string(name).ends_with(".png")) pngs.push_back(path);
  }
  return pngs;
}

}  // namespace volseg::trace_report
