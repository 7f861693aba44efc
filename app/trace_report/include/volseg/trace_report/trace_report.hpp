// SPDX-License-Identifier: MIT
// `volseg trace-report`: what a trace written by io::trace says, laid out
// as Smirni et al. ("I/O Requirements of Scientific Applications: An
// Evolutionary View", docs/references.md) present their traces: the share of I/O time per
// operation (their Table 2), the request sizes as a histogram in Darshan's ten
// buckets and as CDFs by count and by bytes (their Fig. 2), and each rank's
// I/O time and span.
#pragma once

#include <array>
#include <cstdint>
#include <iosfwd>
#include <string>
#include <string_view>
#include <vector>

#include "volseg/io/trace.hpp"

namespace volseg::trace_report {

using io::trace::Op;
using io::trace::Record;

// Parses the CSV that io::trace::write_gathered writes. Throws volseg::Error
// naming `name`, the line number and what is wrong with it.
std::vector<Record> parse(std::istream& in, const std::string& name);
std::vector<Record> read(const std::string& path);

// Darshan's access-size buckets (DARSHAN_BUCKET_INC): each upper edge
// belongs to its bucket, so 100 B is in 0-100 and 101 B in 100-1K.
inline constexpr int bucket_count = 10;
int size_bucket(std::uint64_t bytes);
std::string_view bucket_label(int bucket);

struct OpSummary {
  Op op;
  std::uint64_t count = 0;
  double seconds = 0;
  std::uint64_t bytes = 0;
};

// The request size at which a share of the requests (by count) or of the
// bytes they moved is reached: the smallest size s such that requests of at
// most s bytes are at least `fraction` of all.
struct Quantile {
  double fraction = 0;
  std::uint64_t by_count = 0, by_bytes = 0;
};

// Request sizes of one kind (reads or writes).
struct SizeDistribution {
  std::uint64_t requests = 0, bytes = 0;
  std::array<std::uint64_t, bucket_count> histogram{};
  std::vector<Quantile> quantiles;   // at 10, 25, 50, 75, 90 and 100 %
  std::vector<std::uint64_t> sizes;  // sorted, for the CDF plots
};

struct RankSummary {
  int rank = 0;
  std::uint64_t ops = 0;
  double seconds = 0;  // sum of the durations (overlapping calls of I/O threads add up)
  std::uint64_t read_bytes = 0, write_bytes = 0, mapped_bytes = 0;
  double first_s = 0, last_s = 0;  // start of the first call, end of the last
};

struct Summary {
  std::size_t records = 0;
  double io_seconds = 0;
  std::vector<OpSummary> ops;  // operations that occur, in Op order
  SizeDistribution reads, writes;
  std::vector<RankSummary> ranks;  // ranks that have records, by rank
};

Summary summarize(const std::vector<Record>& records);

// The report as text; `name` is the trace's path, for the title.
std::string format(const Summary& summary, const std::string& name);

// Writes DIR/histogram.csv and DIR/cdf.csv, then runs scripts/trace_plots.py
// (with /usr/bin/python3) on them and the trace to draw DIR/*.png. Returns
// the PNGs' paths. Throws volseg::Error if the script fails.
std::vector<std::string> write_plots(const Summary& summary, const std::string& trace_path, const std::string& dir);

}  // namespace volseg::trace_report
