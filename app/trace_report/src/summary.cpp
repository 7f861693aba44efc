// SPDX-License-Identifier: MIT
// The numbers of a trace report, and their text.
#include <algorithm>
#include <cstdio>
#include <map>
#include <string>

#include "volseg/trace_report/trace_report.hpp"

namespace volseg::trace_report {
namespace {

constexpr double kFractions[] = {0.10, 0.25, 0.50, 0.75, 0.90, 1.00};

SizeDistribution distribution(std::vector<std::uint64_t> sizes) {
  SizeDistribution d;
  std::sort(sizes.begin(), sizes.end());
  d.requests = sizes.size();
  for (std::uint64_t s : sizes) {
    d.bytes += s;
    ++d.histogram[static_cast<std::size_t>(size_bucket(s))];
  }
  for (double fraction : kFractions) {
    Quantile q{fraction, 0, 0};
    if (!sizes.empty()) {
      // By count: the smallest size with at least `fraction` of the requests at or below it.
      const auto needed = static_cast<std::uint64_t>(fraction * static_cast<double>(sizes.size()) + 0.999999);
      q.by_count = sizes[static_cast<std::size_t>(std::clamp<std::uint64_t>(needed, 1, sizes.size()) - 1)];
      // By bytes: the smallest size whose cumulative bytes reach `fraction` of the total.
      const double target = fraction * static_cast<double>(d.bytes);
      std::uint64_t cumulative = 0;
      q.by_bytes = sizes.back();
      for (std::uint64_t s : sizes) {
        cumulative += s;
        if (static_cast<double>(cumulative) >= target) {
          q.by_bytes = s;
          break;
        }
      }
    }
    d.quantiles.push_back(q);
  }
  d.sizes = std::move(sizes);
  return d;
}

std::string bytes_text(std::uint64_t bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double value = static_cast<double>(bytes);
  int unit = 0;
  while (value >= 1024 && unit < 4) {
    value /= 1024;
    ++unit;
  }
  char text[32];
  if (unit == 0)
    std::snprintf(text, sizeof text, "%llu B", static_cast<unsigned long long>(bytes));
  else
    std::snprintf(text, sizeof text, "%.1f %s", value, units[unit]);
  return text;
}

template <class... Args>
void line(std::string& out, const char* format, Args... args) {
  char text[1024];
  std::snprintf(text, sizeof text, format, args...);
  out += text;
}

void format_ops(std::string& out, const Summary& s) {
  out += "I/O time by operation (Smirni et al., Table 2)\n";
  line(out, "  %-9s %10s %12s %12s %14s\n", "operation", "count", "time (s)", "% I/O time", "bytes");
  for (const auto& op : s.ops)
    line(out, "  %-9s %10llu %12.6f %12.2f %14s\n", std::string(io::trace::name(op.op)).c_str(),
         static_cast<unsigned long long>(op.count), op.seconds,
         s.io_seconds > 0 ? 100.0 * op.seconds / s.io_seconds : 0.0, bytes_text(op.bytes).c_str());
  line(out, "  %-9s %10llu %12.6f %12.2f\n\n", "total", static_cast<unsigned long long>(s.records), s.io_seconds,
       s.io_seconds > 0 ? 100.0 : 0.0);
}

void format_sizes(std::string& out, const Summary& s) {
  out += "Request sizes, reads and writes (Darshan's buckets; an upper edge belongs to its bucket)\n";
  line(out, "  %-14s %10s %10s\n", "size", "reads", "writes");
  for (int b = 0; b < bucket_count; ++b)
    line(out, "  %-14s %10llu %10llu\n", std::string(bucket_label(b)).c_str(),
         static_cast<unsigned long long>(s.reads.histogram[static_cast<std::size_t>(b)]),
         static_cast<unsigned long long>(s.writes.histogram[static_cast<std::size_t>(b)]));
  line(out, "  %-14s %10llu %10llu\n\n", "total", static_cast<unsigned long long>(s.reads.requests),
       static_cast<unsigned long long>(s.writes.requests));

  out +=
      "CDF of request sizes (Smirni et al., Fig. 2): the size at or below which a share of the requests\n"
      "(by count) or of the bytes they moved (by bytes) lies\n";
  line(out, "  %-6s %16s %16s %16s %16s\n", "share", "reads by count", "reads by bytes", "writes by count",
       "writes by bytes");
  for (std::size_t i = 0; i < s.reads.quantiles.size(); ++i) {
    const auto& r = s.reads.quantiles[i];
    const auto& w = s.writes.quantiles[i];
    auto cell = [](const SizeDistribution& d, std::uint64_t v) {
      return d.requests ? bytes_text(v) : std::string("-");
    };
    line(out, "  %5.0f%% %16s %16s %16s %16s\n", 100 * r.fraction, cell(s.reads, r.by_count).c_str(),
         cell(s.reads, r.by_bytes).c_str(), cell(s.writes, w.by_count).c_str(), cell(s.writes, w.by_bytes).c_str());
  }
  out += "\n";
}

void format_ranks(std::string& out, const Summary& s) {
  out += "Per rank (I/O time: sum of call durations; calls of I/O threads may overlap)\n";
  line(out, "  %-5s %9s %12s %12s %12s %12s %11s %11s\n", "rank", "calls", "I/O time (s)", "read", "written", "mapped",
       "first (s)", "last (s)");
  for (const auto& r : s.ranks)
    line(out, "  %-5d %9llu %12.6f %12s %12s %12s %11.6f %11.6f\n", r.rank, static_cast<unsigned long long>(r.ops),
         r.seconds, bytes_text(r.read_bytes).c_str(), bytes_text(r.write_bytes).c_str(),
         bytes_text(r.mapped_bytes).c_str(), r.first_s, r.last_s);
  if (s.ranks.empty()) return;
  auto by_time = [](const RankSummary& a, const RankSummary& b) { return a.seconds < b.seconds; };
  const auto slowest = std::max_element(s.ranks.begin(), s.ranks.end(), by_time);
  const auto fastest = std::min_element(s.ranks.begin(), s.ranks.end(), by_time);
  line(out, "  slowest: rank %d (%.6f s of I/O); fastest: rank %d (%.6f s)\n", slowest->rank, slowest->seconds,
       fastest->rank, fastest->seconds);
}

}  // namespace

Summary summarize(const std::vector<Record>& records) {
  Summary s;
  s.records = records.size();
  std::vector<OpSummary> ops(io::trace::op_count);
  std::map<int, RankSummary> ranks;
  std::vector<std::uint64_t> read_sizes, write_sizes;
  for (const auto& r : records) {
    auto& op = ops[static_cast<std::size_t>(r.op)];
    ++op.count;
    op.seconds += r.duration_s;
    op.bytes += r.bytes;
    s.io_seconds += r.duration_s;
    if (r.op == Op::read) read_sizes.push_back(r.bytes);
    if (r.op == Op::write) write_sizes.push_back(r.bytes);
    auto [it, fresh] = ranks.try_emplace(r.rank);
    RankSummary& rank = it->second;
    if (fresh) {
      rank.rank = r.rank;
      rank.first_s = r.start_s;
      rank.last_s = r.start_s + r.duration_s;
    }
    ++rank.ops;
    rank.seconds += r.duration_s;
    if (r.op == Op::read) rank.read_bytes += r.bytes;
    if (r.op == Op::write) rank.write_bytes += r.bytes;
    if (r.op == Op::map) rank.mapped_bytes += r.bytes;
    rank.first_s = std::min(rank.first_s, r.start_s);
    rank.last_s = std::max(rank.last_s, r.start_s + r.duration_s);
  }
  for (int i = 0; i < io::trace::op_count; ++i) {
    ops[static_cast<std::size_t>(i)].op = static_cast<Op>(i);
    if (ops[static_cast<std::size_t>(i)].count > 0) s.ops.push_back(ops[static_cast<std::size_t>(i)]);
  }
  s.reads = distribution(std::move(read_sizes));
  s.writes = distribution(std::move(write_sizes));
  for (auto& [rank, summary] : ranks) s.ranks.push_back(summary);
  return s;
}

std::string format(const Summary& s, const std::string& name) {
  std::string out;
  line(out, "volseg trace report: %s\n", name.c_str());
  line(out, "  %zu calls on %zu rank(s), %.6f s of I/O in all\n\n", s.records, s.ranks.size(), s.io_seconds);
  format_ops(out, s);
  format_sizes(out, s);
  format_ranks(out, s);
  return out;
}

}  // namespace volseg::trace_report
