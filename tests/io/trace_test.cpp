// SPDX-License-Identifier: MIT
// io/trace and trace-report: a known access pattern through the posix and
// mmap backends gives exactly the expected records and histogram, on every
// rank count (the ranged engines' records: tests/unit/ranged_test.cpp);
// tracing off records nothing; Darshan's bucket edges; the gathered CSV
// reads back exactly; a damaged trace fails naming its line.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <filesystem>
#include <sstream>
#include <thread>
#include <vector>

#include "support/temp_dir.hpp"
#include "volseg/io/error.hpp"
#include "volseg/io/registry.hpp"
#include "volseg/io/trace.hpp"
#include "volseg/trace_report/trace_report.hpp"

using namespace volseg;
using namespace volseg::io;
namespace report = volseg::trace_report;
using trace::Op;

namespace {

// u16 [z][y][x] of 4 x 64 x 64: a plane is 8 KiB, a row 128 B.
const Index3 kDims{4, 64, 64};

struct Expected {
  Op op;
  std::int64_t offset;
  std::uint64_t bytes;
};

// Three extents of three shapes: whole plane (one run), whole rows (one run
// per plane), parts of rows (one run per row).
std::vector<Extent> extents_of(int rank) {
  return {Extent{{rank, 0, 0}, {1, 64, 64}}, Extent{{2, 1, 0}, {2, 2, 64}}, Extent{{0, 0, 1}, {1, 2, 3}}};
}

std::vector<Expected> expected_reads(int rank) {
  return {{Op::read, rank * 8192, 8192},
          {Op::read, ((2 * 64 + 1) * 64) * 2, 256},
          {Op::read, ((3 * 64 + 1) * 64) * 2, 256},
          {Op::read, 2, 6},
          {Op::read, (64 + 1) * 2, 6}};
}

class Trace : public ::testing::Test {
 protected:
  Trace() : comm_(MPI_COMM_WORLD), dir_(MPI_COMM_WORLD) {}
  void TearDown() override {
    trace::disable();
    trace::take_local();
  }

  // Writes the volume (untraced) and returns its header path.
  std::string make_volume() {
    VolumeInfo info;
    info.dims = kDims;
    info.dtype = DType::u16;
    const std::string path = dir_ / "v.nhdr";
    auto writer = create_writer("posix", {path, info, false}, comm_, Hints{});
    const int planes_per_rank = (4 + comm_.size() - 1) / comm_.size();
    const std::int64_t z0 = std::min<std::int64_t>(4, comm_.rank() * planes_per_rank);
    const std::int64_t z1 = std::min<std::int64_t>(4, z0 + planes_per_rank);
    std::vector<std::uint16_t> values(static_cast<std::size_t>((z1 - z0) * 64 * 64), 7);
    if (z1 > z0) writer->write(Extent{{z0, 0, 0}, {z1 - z0, 64, 64}}, values.data());
    writer->close();
    return path;
  }

  // What this rank's reader records: on rank 0 the header (open, read,
  // read at its end returning 0, close), then on every rank the data file.
  std::vector<Expected> expected_records(int rank, std::uint64_t header_bytes) const {
    std::vector<Expected> list;
    if (rank == 0) {
      list = {{Op::open, -1, 0},
              {Op::read, 0, header_bytes},
              {Op::read, static_cast<std::int64_t>(header_bytes), 0},
              {Op::close, -1, 0}};
    }
    list.push_back({Op::open, -1, 0});
    for (const auto& e : expected_reads(rank)) list.push_back(e);
    list.push_back({Op::close, -1, 0});
    return list;
  }

  void read_pattern(const std::string& path) {
    auto reader = open_reader("posix", {path, {}}, comm_, Hints{});
    std::vector<std::uint16_t> buffer(64 * 64);
    for (const auto& extent : extents_of(comm_.rank())) reader->read(extent, buffer.data());
    reader->close();
  }

  Comm comm_;
  volseg::testing::SharedTempDir dir_;
};

void expect_records(const std::vector<trace::Record>& got, const std::vector<Expected>& want, int rank) {
  ASSERT_EQ(got.size(), want.size()) << "rank " << rank;
  double previous_start = -1;
  for (std::size_t i = 0; i < want.size(); ++i) {
    SCOPED_TRACE("record " + std::to_string(i) + " of rank " + std::to_string(rank));
    EXPECT_EQ(got[i].rank, rank);
    EXPECT_EQ(trace::name(got[i].op), trace::name(want[i].op));
    EXPECT_EQ(got[i].offset, want[i].offset);
    EXPECT_EQ(got[i].bytes, want[i].bytes);
    EXPECT_GE(got[i].duration_s, 0.0);
    EXPECT_GE(got[i].start_s, previous_start);  // in order of start
    previous_start = got[i].start_s;
  }
}

TEST_F(Trace, KnownPatternGivesExactlyTheExpectedRecords) {
  const std::string path = make_volume();
  const auto header_bytes = std::filesystem::file_size(path);
  trace::enable(comm_);
  read_pattern(path);
  trace::disable();
  const auto records = trace::take_local();
  expect_records(records, expected_records(comm_.rank(), header_bytes), comm_.rank());
}

// The mmap backends: one map and one unmap per extent, over the page-aligned
// window from the extent's first byte to its last; mmap-advise adds one
// advise per run of the extent it is told it will need.
TEST_F(Trace, MappedReadsRecordTheirWindows) {
  const std::string path = make_volume();
  const auto header_bytes = std::filesystem::file_size(path);
  const int rank = comm_.rank();
  // (first page, window length) of each extent of extents_of(rank).
  const std::vector<std::pair<std::int64_t, std::uint64_t>> windows{
      {rank * 8192, 8192}, {16384, ((3 * 64 + 1) * 64) * 2 + 256 - 16384}, {0, (64 + 1) * 2 + 6}};
  for (const std::string backend : {"mmap", "mmap-advise"}) {
    SCOPED_TRACE(backend);
    trace::enable(comm_);
    auto reader = open_reader(backend, {path, {}}, comm_, Hints{});
    std::vector<std::uint16_t> buffer(64 * 64);
    if (backend == "mmap-advise") reader->will_need(extents_of(rank)[1]);
    for (const auto& extent : extents_of(rank)) reader->read(extent, buffer.data());
    reader->close();
    trace::disable();
    std::vector<Expected> want;
    if (rank == 0)
      want = {{Op::open, -1, 0},
              {Op::read, 0, header_bytes},
              {Op::read, static_cast<std::int64_t>(header_bytes), 0},
              {Op::close, -1, 0}};
    want.push_back({Op::open, -1, 0});
    if (backend == "mmap-advise")  // two runs of 256 B
      for (const auto& e : std::vector<Expected>{{Op::advise, ((2 * 64 + 1) * 64) * 2, 256},
                                                 {Op::advise, ((3 * 64 + 1) * 64) * 2, 256}})
        want.push_back(e);
    for (const auto& [first, length] : windows) {
      want.push_back({Op::map, first, length});
      want.push_back({Op::unmap, first, length});
    }
    want.push_back({Op::close, -1, 0});
    expect_records(trace::take_local(), want, rank);
  }
}

TEST_F(Trace, GatheredCsvReadsBackWithExactHistogram) {
  const std::string path = make_volume();
  const auto header_bytes = std::filesystem::file_size(path);
  ASSERT_GT(header_bytes, 100u);  // the header's read lands in bucket 1 below
  ASSERT_LE(header_bytes, 1024u);
  trace::enable(comm_);
  read_pattern(path);
  trace::disable();
  const std::string csv = dir_ / "trace.csv";
  trace::write_gathered(comm_, csv);
  EXPECT_TRUE(trace::take_local().empty());
  if (comm_.rank() != 0) return;
  const auto records = report::read(csv);
  const int n = comm_.size();
  for (int r = 0; r < n; ++r) {
    std::vector<trace::Record> mine;
    std::copy_if(records.begin(), records.end(), std::back_inserter(mine),
                 [r](const trace::Record& x) { return x.rank == r; });
    expect_records(mine, expected_records(r, header_bytes), r);
  }
  const auto summary = report::summarize(records);
  // Per rank: 2 reads of 6 B, 2 of 256 B, 1 of 8 KiB; rank 0 also reads the
  // header (101-1024 B) and 0 B at its end.
  const std::array<std::uint64_t, report::bucket_count> histogram{static_cast<std::uint64_t>(2 * n + 1),
                                                                  static_cast<std::uint64_t>(2 * n + 1),
                                                                  static_cast<std::uint64_t>(n),
                                                                  0,
                                                                  0,
                                                                  0,
                                                                  0,
                                                                  0,
                                                                  0,
                                                                  0};
  EXPECT_EQ(summary.reads.histogram, histogram);
  EXPECT_EQ(summary.writes.requests, 0u);
  ASSERT_EQ(summary.ops.size(), 3u);
  EXPECT_EQ(summary.ops[0].op, Op::open);
  EXPECT_EQ(summary.ops[0].count, static_cast<std::uint64_t>(n + 1));
  EXPECT_EQ(summary.ops[1].op, Op::close);
  EXPECT_EQ(summary.ops[1].count, static_cast<std::uint64_t>(n + 1));
  EXPECT_EQ(summary.ops[2].op, Op::read);
  EXPECT_EQ(summary.ops[2].count, static_cast<std::uint64_t>(5 * n + 2));
  EXPECT_EQ(summary.ops[2].bytes, static_cast<std::uint64_t>(n * (8192 + 512 + 12)) + header_bytes);
  ASSERT_EQ(summary.ranks.size(), static_cast<std::size_t>(n));
  EXPECT_EQ(summary.ranks[0].read_bytes, 8192 + 512 + 12 + header_bytes);
}

TEST_F(Trace, OffRecordsNothing) {
  const std::string path = make_volume();
  trace::disable();
  read_pattern(path);
  { trace::Span span(Op::read, 0, 10); }
  trace::record(Op::write, 0, 1, 0, 10);
  EXPECT_TRUE(trace::take_local().empty());
}

TEST_F(Trace, SpanRecordsOnlyIfEnabledAtConstruction) {
  trace::enable(comm_);
  {
    trace::Span before(Op::sync);
    trace::disable();
  }  // enabled at construction: recorded
  {
    trace::Span after(Op::write, 5, 6);
    trace::enable(comm_);  // clears, and this span began while off
  }
  {
    trace::Span counted(Op::advise, 4096);
    counted.set_bytes(8192);
    counted.set_offset(0);
  }
  trace::disable();
  const auto records = trace::take_local();
  ASSERT_EQ(records.size(), 1u);
  EXPECT_EQ(records[0].op, Op::advise);
  EXPECT_EQ(records[0].offset, 0);
  EXPECT_EQ(records[0].bytes, 8192u);
  EXPECT_EQ(records[0].rank, comm_.rank());
}

TEST_F(Trace, ThreadsRecordEveryCall) {
  trace::enable(comm_);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([t] {
      for (int i = 0; i < 1000; ++i) trace::Span span(Op::write, i, static_cast<std::uint64_t>(t));
    });
  for (auto& thread : threads) thread.join();
  trace::disable();
  const auto records = trace::take_local();
  ASSERT_EQ(records.size(), 4000u);
  std::array<int, 4> per_thread{};
  for (const auto& r : records) ++per_thread[r.bytes];
  EXPECT_EQ(per_thread, (std::array<int, 4>{1000, 1000, 1000, 1000}));
}

TEST(TraceBuckets, DarshanEdgesBelongToTheLowerBucket) {
  const std::vector<std::pair<std::uint64_t, int>> cases{{0, 0},          {99, 0},
                                                         {100, 0},        {101, 1},
                                                         {1023, 1},       {1024, 1},
                                                         {1025, 2},       {10240, 2},
                                                         {10241, 3},      {102400, 3},
                                                         {102401, 4},     {1048576, 4},
                                                         {1048577, 5},    {4194304, 5},
                                                         {4194305, 6},    {10485760, 6},
                                                         {10485761, 7},   {104857600, 7},
                                                         {104857601, 8},  {1073741824, 8},
                                                         {1073741825, 9}, {~std::uint64_t{0}, 9}};
  for (const auto& [bytes, bucket] : cases) EXPECT_EQ(report::size_bucket(bytes), bucket) << bytes << " bytes";
}

TEST(TraceCsv, FormatThenParseIsExact) {
  const std::vector<trace::Record> records{{Op::exchange, 3, 0.5, 0.25, -1, 1024},
                                           {Op::map, 0, 1.000000001, 0.000000002, 4096, 12u << 20},
                                           {Op::wait, 1, 2.125, 0, -1, 0}};
  std::istringstream in(trace::format_csv(records));
  const auto back = report::parse(in, "t.csv");
  ASSERT_EQ(back.size(), records.size());
  for (std::size_t i = 0; i < records.size(); ++i) {
    EXPECT_EQ(back[i].op, records[i].op);
    EXPECT_EQ(back[i].rank, records[i].rank);
    EXPECT_DOUBLE_EQ(back[i].start_s, records[i].start_s);
    EXPECT_DOUBLE_EQ(back[i].duration_s, records[i].duration_s);
    EXPECT_EQ(back[i].offset, records[i].offset);
    EXPECT_EQ(back[i].bytes, records[i].bytes);
  }
}

std::string parse_error(const std::string& text) {
  std::istringstream in(text);
  try {
    report::parse(in, "t.csv");
  } catch (const Error& e) {
    return e.what();
  }
  return "no error";
}

TEST(TraceCsv, DamagedLinesFailNamingTheLine) {
  const std::string head = "# comment\nrank,op,start_s,duration_s,offset,bytes\n0,read,0.1,0.2,0,10\n";
  EXPECT_EQ(parse_error(head + "0,seek,0.1,0.2,0,10\n"),
            "t.csv:4: unknown operation 'seek' (known: open, close, read, write, sync, advise, map, unmap, exchange, "
            "wait)");
  EXPECT_EQ(parse_error(head + "0,read,0.1,0.2,0\n"),
            "t.csv:4: expected 6 comma-separated fields (rank,op,start_s,duration_s,offset,bytes), found 5");
  EXPECT_EQ(parse_error(head + "x,read,0.1,0.2,0,10\n"), "t.csv:4: rank 'x' is not a non-negative integer");
  EXPECT_EQ(parse_error(head + "0,read,0.1,-2,0,10\n"),
            "t.csv:4: duration_s '-2' is not a non-negative number of seconds");
  EXPECT_EQ(parse_error(head + "0,read,0.1,0.2,-5,10\n"), "t.csv:4: offset '-5' is not a byte offset (or -1 for none)");
  EXPECT_EQ(parse_error(head + "0,read,0.1,0.2,0,1e3\n"), "t.csv:4: bytes '1e3' is not a non-negative integer");
  EXPECT_EQ(parse_error("rank,op\n"), "t.csv:1: expected the header line 'rank,op,start_s,duration_s,offset,bytes'");
  EXPECT_EQ(parse_error(""), "t.csv: not a volseg trace (no header line 'rank,op,start_s,duration_s,offset,bytes')");
  EXPECT_EQ(parse_error(head), "no error");
}

TEST(TraceCsv, MissingFileFailsNamingIt) {
  try {
    report::read("/nonexistent/trace.csv");
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()), "open trace /nonexistent/trace.csv: No such file or directory");
  }
}

}  // namespace
