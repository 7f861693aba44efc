// SPDX-License-Identifier: MIT
// Fogal & Krüger §5's ranged API, on both engines: what readanyv hands out is the
// file's bytes, every block exactly once; offsets are relative to the range;
// reading past its end is end of file; misuse and use after finished() are
// refused; a write range extends the file and close() makes it whole.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <fstream>
#include <numeric>
#include <random>
#include <set>

#include "support/temp_dir.hpp"
#include "volseg/io/comm.hpp"
#include "volseg/io/error.hpp"
#include "volseg/io/ranged.hpp"
#include "volseg/io/trace.hpp"

namespace volseg {
namespace {

using io::ranged::Access;
using io::ranged::Block;
using io::ranged::Engine;
using io::ranged::Options;
using io::ranged::Piece;
using io::ranged::View;

std::uint8_t pattern(std::uint64_t offset) { return static_cast<std::uint8_t>((offset * 2654435761u) >> 13); }

class Ranged : public ::testing::TestWithParam<Engine> {
 protected:
  void SetUp() override {
    path_ = dir_ / "data.bin";
    std::vector<std::uint8_t> bytes(kFileBytes);
    for (std::uint64_t i = 0; i < kFileBytes; ++i) bytes[i] = pattern(i);
    std::ofstream(path_, std::ios::binary).write(reinterpret_cast<const char*>(bytes.data()), kFileBytes);
  }
  static std::vector<std::uint8_t> file_bytes(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    return {std::istreambuf_iterator<char>(in), {}};
  }

  static constexpr std::uint64_t kFileBytes = 3 << 20;
  testing::SharedTempDir dir_{MPI_COMM_WORLD};
  std::string path_;
};

// Hands out every block once, and each piece holds the file's bytes at
// range offset + piece offset, for many blocks of scattered pieces, with a
// budget that holds only a few blocks and requests smaller than a piece.
TEST_P(Ranged, ReadanyvHandsOutEveryBlockOnceWithTheFilesBytes) {
  const std::uint64_t start = 4099, length = kFileBytes - start - 777;
  Options options;
  options.queue_depth = 4;
  options.request_bytes = 5000;
  options.max_bytes = 100000;
  auto range = io::ranged::open_range(GetParam(), path_, start, length, Access::read, options);
  EXPECT_EQ(range->length(), length);
  std::mt19937_64 random(7);
  std::vector<Block> blocks(60);
  for (std::size_t b = 0; b < blocks.size(); ++b)
    for (int p = 0; p < 1 + static_cast<int>(b % 4); ++p) {
      const std::uint64_t size = 1 + random() % 30000;
      blocks[b].pieces.push_back(Piece{random() % (length - size), size});
    }
  std::vector<std::size_t> ids(blocks.size());
  std::iota(ids.begin(), ids.end(), 0);
  std::set<std::size_t> seen;
  while (!ids.empty()) {
    std::vector<Block> wanted;
    for (auto id : ids) wanted.push_back(blocks[id]);
    View view = range->readanyv(wanted);
    ASSERT_LT(view.block, wanted.size());
    const std::size_t id = ids[view.block];
    EXPECT_TRUE(seen.insert(id).second) << "block " << id << " handed out twice";
    ASSERT_EQ(view.pieces.size(), blocks[id].pieces.size());
    for (std::size_t p = 0; p < view.pieces.size(); ++p) {
      const Piece& piece = blocks[id].pieces[p];
      ASSERT_EQ(view.pieces[p].size(), piece.length);
      for (std::uint64_t i = 0; i < piece.length; i += 97)
        ASSERT_EQ(static_cast<std::uint8_t>(view.pieces[p][i]), pattern(start + piece.offset + i))
            << "block " << id << " piece " << p << " byte " << i;
      ASSERT_EQ(static_cast<std::uint8_t>(view.pieces[p][piece.length - 1]),
                pattern(start + piece.offset + piece.length - 1));
    }
    range->release(view);
    EXPECT_TRUE(view.pieces.empty());
    ids.erase(ids.begin() + static_cast<std::ptrdiff_t>(view.block));
  }
  EXPECT_EQ(seen.size(), blocks.size());
  range->finished();
  range->close();
}

TEST_P(Ranged, ReadingPastTheEndOfTheRangeIsEndOfFile) {
  Options options;
  options.direct = false;  // uring: buffered here, O_DIRECT in the test above
  auto range = io::ranged::open_range(GetParam(), path_, 1000, 5000, Access::read, options);
  std::vector<Block> blocks{Block{{Piece{4000, 3000}, Piece{6000, 10}, Piece{0, 4}}}};
  View view = range->readanyv(blocks);
  ASSERT_EQ(view.pieces.size(), 3u);
  EXPECT_EQ(view.pieces[0].size(), 1000u);  // [4000, 5000) of the range
  EXPECT_EQ(view.pieces[1].size(), 0u);     // wholly past the end
  EXPECT_EQ(view.pieces[2].size(), 4u);
  EXPECT_EQ(static_cast<std::uint8_t>(view.pieces[0][999]), pattern(1000 + 4999));
  EXPECT_EQ(static_cast<std::uint8_t>(view.pieces[2][0]), pattern(1000));
  range->release(view);
  range->close();
}

TEST_P(Ranged, ARangePastTheEndOfAReadOnlyFileIsRefused) {
  try {
    io::ranged::open_range(GetParam(), path_, kFileBytes - 10, 11, Access::read);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("past the end of the file"), std::string::npos) << e.what();
  }
  EXPECT_NO_THROW(io::ranged::open_range(GetParam(), path_, kFileBytes - 10, 10, Access::read)->close());
  EXPECT_THROW(io::ranged::open_range(GetParam(), dir_ / "missing.bin", 0, 1, Access::read), Error);
}

TEST_P(Ranged, UseAfterFinishedAndMisuseAreDetected) {
  auto range = io::ranged::open_range(GetParam(), path_, 0, 8192, Access::read);
  std::vector<Block> blocks{Block{{Piece{0, 100}}}, Block{{Piece{200, 100}}}};
  View view = range->readanyv(blocks);
  EXPECT_THROW(range->acquire(blocks[0]), Error);  // a read range
  EXPECT_THROW(range->readanyv({}), Error);
  View copy = view;
  range->release(view);
  EXPECT_THROW(range->release(copy), Error);  // twice
  range->finished();
  try {
    range->readanyv(blocks);
    FAIL() << "readanyv after finished() was not detected";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("after finished()"), std::string::npos) << e.what();
  }
  EXPECT_THROW(range->finished(), Error);
  range->close();
  EXPECT_NO_THROW(range->close());  // a second close is a no-op
}

// A write range beyond the end of the file extends it; pieces land at range
// offset + piece offset; bytes outside the written pieces are untouched.
TEST_P(Ranged, AWriteRangeExtendsTheFileAndCloseMakesItWhole) {
  const std::uint64_t start = kFileBytes - 4096, length = 3 << 20;
  Options options;
  options.request_bytes = 3000;
  options.max_bytes = 50000;
  options.queue_depth = 3;
  auto range = io::ranged::open_range(GetParam(), path_, start, length, Access::write, options);
  std::vector<std::uint8_t> expected = file_bytes(path_);
  expected.resize(start + length, 0);
  for (std::uint64_t b = 0; b < 40; ++b) {
    Block block{{Piece{b * 70000, 20000}, Piece{b * 70000 + 30000, 7}}};
    View view = range->acquire(block);
    ASSERT_EQ(view.pieces.size(), 2u);
    for (std::size_t p = 0; p < 2; ++p)
      for (std::size_t i = 0; i < view.pieces[p].size(); ++i) {
        const std::uint8_t value = static_cast<std::uint8_t>(b * 31 + p * 7 + i);
        view.pieces[p][i] = std::byte{value};
        expected[start + block.pieces[p].offset + i] = value;
      }
    range->commit(view);
    EXPECT_THROW(range->commit(view), Error);
  }
  EXPECT_THROW(range->acquire(Block{{Piece{length - 1, 2}}}), Error);  // outside the range
  range->finished();
  EXPECT_THROW(range->acquire(Block{{Piece{0, 1}}}), Error);
  range->close();
  EXPECT_TRUE(file_bytes(path_) == expected);
}

// Tracing: a known pattern gives exactly the expected records. io_uring:
// one read per request (pieces cut at request_size), offsets in the file;
// mmap: one map of the range, one advise per piece, one unmap.
TEST_P(Ranged, TracingRecordsEveryRequest) {
  Comm comm(MPI_COMM_WORLD);
  Options options;
  options.direct = false;
  options.request_bytes = 4096;
  const std::uint64_t start = 8192;
  io::trace::enable(comm);
  auto range = io::ranged::open_range(GetParam(), path_, start, 1 << 20, Access::read, options);
  std::vector<Block> blocks{Block{{Piece{0, 10000}, Piece{20480, 4096}}}};
  View view = range->readanyv(blocks);
  range->release(view);
  range->finished();
  range->close();
  io::trace::disable();
  const auto records = io::trace::take_local();
  std::vector<std::pair<io::trace::Op, std::pair<std::int64_t, std::uint64_t>>> got;
  for (const auto& r : records)
    if (r.op != io::trace::Op::wait) got.push_back({r.op, {r.offset, r.bytes}});
  using io::trace::Op;
  const std::int64_t s = static_cast<std::int64_t>(start);
  std::vector<std::pair<Op, std::pair<std::int64_t, std::uint64_t>>> expected;
  if (GetParam() == Engine::uring) {
    expected = {{Op::open, {-1, 0}},          {Op::read, {s, 4096}},         {Op::read, {s + 4096, 4096}},
                {Op::read, {s + 8192, 1808}}, {Op::read, {s + 20480, 4096}}, {Op::close, {-1, 0}}};
  } else {  // the advise spans whole pages: [0, 12288) and [20480, 24576) of the range
    expected = {{Op::open, {-1, 0}},       {Op::map, {s, 1 << 20}},
                {Op::advise, {s, 12288}},  {Op::advise, {s + 20480, 4096}},
                {Op::unmap, {s, 1 << 20}}, {Op::close, {-1, 0}}};
  }
  std::sort(got.begin() + 1, got.end() - 1);  // requests complete in any order
  std::sort(expected.begin() + 1, expected.end() - 1);
  EXPECT_EQ(got, expected);
}

INSTANTIATE_TEST_SUITE_P(Engines, Ranged, ::testing::Values(Engine::mmap, Engine::uring),
                         [](const auto& param_info) { return std::string(io::ranged::engine_name(param_info.param)); });

// readanyv returns a block that is all there before one asked earlier that
// is not: the first block is evicted from the page cache, the second read
// in; the mmap engine must hand out the second first. (Skipped where the
// file system keeps pages it was asked to drop, as tmpfs does.) The race is
// the kernel's: readanyv's own WILLNEED on the first block may bring it all
// in before it looks, on a fast disk or a host's cache, and then the first
// is rightly first. So a try that hands it out is made again (3 in all): an
// engine that ignored residency would hand it out every time, and fails.
TEST(RangedAnyOrder, AResidentBlockComesBeforeAnEarlierColdOne) {
  testing::SharedTempDir dir(MPI_COMM_WORLD);
  const std::string path = dir / "cold.bin";
  const std::uint64_t mib = 1 << 20, size = 16 * mib, cold = 8 * mib, warm = size - 4 * mib;
  {
    std::vector<char> bytes(size, 7);
    std::ofstream(path, std::ios::binary).write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  }
  const std::vector<Block> blocks{Block{{Piece{0, cold}}}, Block{{Piece{warm, 4 * mib}}}};
  std::vector<std::uint64_t> firsts;
  for (int attempt = 0; attempt < 3; ++attempt) {
    const int fd = ::open(path.c_str(), O_RDONLY);
    ASSERT_GE(fd, 0);
    ASSERT_EQ(::fdatasync(fd), 0);
    ASSERT_EQ(::posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED), 0);
    std::vector<char> buffer(4 * mib);
    ASSERT_EQ(::pread(fd, buffer.data(), buffer.size(), static_cast<off_t>(warm)),
              static_cast<ssize_t>(4 * mib));  // block 1 in
    std::byte probe;
    iovec vector{&probe, 1};
    const bool evicted = ::preadv2(fd, &vector, 1, 0, RWF_NOWAIT) < 0 && errno == EAGAIN;
    ::close(fd);
    if (!evicted) GTEST_SKIP() << "this file system did not drop the file's pages";
    auto range = io::ranged::open_range(Engine::mmap, path, 0, size, Access::read);
    View first = range->readanyv(blocks);
    firsts.push_back(first.block);
    range->release(first);
    if (first.block == 1) {
      View second = range->readanyv(std::span(blocks).first(1));
      EXPECT_EQ(second.block, 0u);
      EXPECT_EQ(static_cast<char>(second.pieces[0][cold - 1]), 7);
      range->release(second);
    }
    range->close();
    if (first.block == 1) break;
  }
  EXPECT_EQ(firsts.back(), 1u) << "the cold block came first in every try (" << firsts.size() << ")";
}

TEST(RangedOptions, BadOptionsAndEnginesAreRefused) {
  EXPECT_THROW(io::ranged::parse_engine("aio"), Error);
  EXPECT_EQ(io::ranged::parse_engine("uring"), Engine::uring);
  Options options;
  options.queue_depth = 0;
  EXPECT_THROW(io::ranged::open_range(Engine::uring, "/dev/null", 0, 0, Access::read, options), Error);
  EXPECT_THROW(io::ranged::open_range(Engine::mmap, "/dev/null", UINT64_MAX, 2, Access::read), Error);
}

}  // namespace
}  // namespace volseg
