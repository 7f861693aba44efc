// SPDX-License-Identifier: MIT
// Reading a trace back: the CSV of io::trace::format_csv, checked field by
// field, so a damaged file fails on its first bad line and says which.
#include <cerrno>
#include <charconv>
#include <cmath>
#include <fstream>
#include <istream>
#include <string>
#include <string_view>
#include <vector>

#include "volseg/io/error.hpp"
#include "volseg/trace_report/trace_report.hpp"

namespace volseg::trace_report {
namespace {

constexpr std::string_view kHeader = "rank,op,start_s,duration_s,offset,bytes";

template <class T>
bool parse_number(std::string_view text, T& value) {
  if (text.empty()) return false;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  return ec == std::errc() && end == text.data() + text.size();
}

std::string known_ops() {
  std::string list;
  for (int i = 0; i < io::trace::op_count; ++i) {
    if (i > 0) list += ", ";
    list += io::trace::name(static_cast<Op>(i));
  }
  return list;
}

class LineParser {
 public:
  LineParser(const std::string& name, std::size_t line) : name_(name), line_(line) {}

  [[noreturn]] void fail(const std::string& what) const {
    throw Error(name_ + ":" + std::to_string(line_) + ": " + what);
  }

  Record record(std::string_view text) const {
    std::vector<std::string_view> fields;
    std::size_t start = 0;
    while (true) {
      const std::size_t comma = text.find(',', start);
      fields.push_back(text.substr(start, comma == std::string_view::npos ? std::string_view::npos : comma - start));
      if (comma == std::string_view::npos) break;
      start = comma + 1;
    }
    if (fields.size() != 6)
      fail("expected 6 comma-separated fields (" + std::string(kHeader) + "), found " + std::to_string(fields.size()));
    Record r{};
    if (!parse_number(fields[0], r.rank) || r.rank < 0)
      fail("rank '" + std::string(fields[0]) + "' is not a non-negative integer");
    if (!io::trace::parse_op(fields[1], r.op))
      fail("unknown operation '" + std::string(fields[1]) + "' (known: " + known_ops() + ")");
    if (!parse_number(fields[2], r.start_s) || !std::isfinite(r.start_s))
      fail("start_s '" + std::string(fields[2]) + "' is not a number of seconds");
    if (!parse_number(fields[3], r.duration_s) || !std::isfinite(r.duration_s) || r.duration_s < 0)
      fail("duration_s '" + std::string(fields[3]) + "' is not a non-negative number of seconds");
    if (!parse_number(fields[4], r.offset) || r.offset < -1)
      fail("offset '" + std::string(fields[4]) + "' is not a byte offset (or -1 for none)");
    if (!parse_number(fields[5], r.bytes)) fail("bytes '" + std::string(fields[5]) + "' is not a non-negative integer");
    return r;
  }

 private:
  const std::string& name_;
  std::size_t line_;
};

}  // namespace

std::vector<Record> parse(std::istream& in, const std::string& name) {
  std::vector<Record> records;
  std::string line;
  std::size_t number = 0;
  bool header_seen = false;
  while (std::getline(in, line)) {
    ++number;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty() || line.front() == '#') continue;
    LineParser parser(name, number);
    if (!header_seen) {
      if (line != kHeader) parser.fail("expected the header line '" + std::string(kHeader) + "'");
      header_seen = true;
      continue;
    }
    records.push_back(parser.record(line));
  }
  if (in.bad()) throw Error(name + ": read error after line " + std::to_string(number));
  if (!header_seen) throw Error(name + ": not a volseg trace (no header line '" + std::string(kHeader) + "')");
  return records;
}

std::vector<Record> read(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw_errno("open trace", path);
  return parse(in, path);
}

int size_bucket(std::uint64_t bytes) {
  // Upper edges, each inside its bucket (Darshan: value < edge + 1).
  static constexpr std::uint64_t edges[bucket_count - 1] = {
      100, 1024, 10 * 1024, 100 * 1024, 1024 * 1024, 4 << 20, 10 << 20, 100 << 20, std::uint64_t{1} << 30};
  for (int b = 0; b < bucket_count - 1; ++b)
    if (bytes <= edges[b]) return b;
  return bucket_count - 1;
}

std::string_view bucket_label(int bucket) {
  static constexpr std::string_view labels[bucket_count] = {"0-100 B",       "100 B-1 KiB", "1-10 KiB", "10-100 KiB",
                                                            "100 KiB-1 MiB", "1-4 MiB",     "4-10 MiB", "10-100 MiB",
                                                            "100 MiB-1 GiB", "1 GiB and up"};
  return bucket >= 0 && bucket < bucket_count ? labels[bucket] : std::string_view("?");
}

}  // namespace volseg::trace_report
