// SPDX-License-Identifier: MIT
// The segmentation engine on 1-4 ranks: every backend, assignment and brick
// shape must give the same mask bytes, and the in-range count must equal the
// exact lattice count of the shells field.
#include <gtest/gtest.h>

#include <array>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <tuple>
#include <vector>

#include "support/temp_dir.hpp"
#include "volseg/datasets/generate.hpp"
#include "volseg/io/error.hpp"
#include "volseg/io/nrrd.hpp"
#include "volseg/io/registry.hpp"
#include "volseg/segment/segment.hpp"

using namespace volseg;

namespace {

std::vector<char> file_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), {}};
}

class Segment : public ::testing::Test {
 protected:
  Segment() : comm_(MPI_COMM_WORLD), dir_(MPI_COMM_WORLD) {}

  std::string make_shells(const std::string& name, io::DType dtype, io::ByteOrder order) {
    io::VolumeInfo info;
    info.dims = dims_;
    info.dtype = dtype;
    info.byte_order = order;
    std::string path = dir_ / name;
    auto writer = io::create_writer("posix", {path, info, false}, comm_);
    datasets::generate(comm_, {datasets::Field::shells, width_, 1}, *writer, segment::ProgressMode::none);
    writer->close();
    return path;
  }

  // The shells field written by a backend (hints pick the format).
  std::string make_shells_with(const std::string& name, const std::string& backend, std::vector<std::string> hints) {
    io::VolumeInfo info;
    info.dims = dims_;
    info.dtype = io::DType::i16;
    info.variable = "shells";
    std::string path = dir_ / name;
    auto writer = io::create_writer(backend, {path, info, false}, comm_, io::Hints::parse(hints));
    datasets::generate(comm_, {datasets::Field::shells, width_, 1}, *writer, segment::ProgressMode::none);
    writer->close();
    return path;
  }

  segment::SegmentResult run(const std::string& input, const std::string& output, const std::string& backend,
                             segment::Assignment assignment, std::optional<io::Index3> brick,
                             std::size_t collective_batch_bytes = std::size_t{32} << 20) {
    segment::SegmentOptions options;
    options.collective_batch_bytes = collective_batch_bytes;
    options.input = input;
    options.output = output;
    options.backend = backend;
    options.lo = lo_;
    options.hi = hi_;
    options.assignment = assignment;
    options.seed = 11;
    options.brick_shape = brick;
    options.progress = segment::ProgressMode::none;
    return segment::run_segment(comm_, options);
  }

  Comm comm_;
  volseg::testing::SharedTempDir dir_;
  const io::Index3 dims_{29, 34, 41};
  const std::int64_t width_ = 3;
  const double lo_ = 2, hi_ = 5;
};

TEST_F(Segment, EveryBackendAssignmentAndShapeGivesTheSameExactMask) {
  int case_number = 0;
  for (auto [dtype, order] : {std::pair{io::DType::f32, io::ByteOrder::little}, {io::DType::i16, io::ByteOrder::big}}) {
    const std::string input =
        make_shells(std::string("shells_") + std::string(io::dtype_name(dtype)) + ".nhdr", dtype, order);
    const std::uint64_t exact = datasets::shells_in_range(dims_, dtype, width_, lo_, hi_);
    ASSERT_GT(exact, 0u);
    std::vector<char> reference;
    for (const std::string backend :
         {"posix", "mmap", "mmap-advise", "mpiio", "twophase", "ranged-mmap", "ranged-uring"}) {
      for (auto assignment : {segment::Assignment::block, segment::Assignment::cyclic, segment::Assignment::random}) {
        for (std::optional<io::Index3> brick :
             {std::optional<io::Index3>{}, std::optional<io::Index3>{io::Index3{7, 9, 11}},
              std::optional<io::Index3>{io::Index3{1, 1, 41}}, std::optional<io::Index3>{io::Index3{5, 34, 41}},
              std::optional<io::Index3>{io::Index3{29, 34, 41}}}) {
          SCOPED_TRACE(backend + " case " + std::to_string(case_number));
          std::string output = dir_ / ("mask_" + std::to_string(case_number++) + ".nhdr");
          // The collective pipeline (twophase, mpiio) also with one brick and
          // with a few bricks per call: rounds end part-filled and ranks run
          // out of bricks at different rounds.
          const std::size_t batch = std::array<std::size_t, 3>{std::size_t{32} << 20, 1, 5000}[case_number % 3];
          auto result = run(input, output, backend, assignment, brick, batch);
          // The ranged backends hand bricks out as they arrive (readanyv).
          if (backend.starts_with("ranged-")) {
            EXPECT_EQ(result.pipeline, "any-order");
          }
          EXPECT_EQ(result.stats.in_range, exact);
          EXPECT_EQ(result.stats.voxels, static_cast<std::uint64_t>(dims_[0] * dims_[1] * dims_[2]));
          std::uint64_t histogram_total = 0;
          for (auto count : result.stats.histogram) histogram_total += count;
          EXPECT_EQ(histogram_total, exact);
          if (comm_.rank() == 0) {
            auto bytes = file_bytes(io::data_path_for_header(output));
            ASSERT_EQ(bytes.size(), static_cast<std::size_t>(dims_[0] * dims_[1] * dims_[2]));
            std::uint64_t ones = 0;
            for (char b : bytes) {
              ASSERT_TRUE(b == 0 || b == 1);
              ones += static_cast<std::uint64_t>(b);
            }
            EXPECT_EQ(ones, exact);
            if (reference.empty())
              reference = bytes;
            else
              EXPECT_TRUE(bytes == reference) << "mask differs from the first case";
            ASSERT_EQ(result.ranks.size(), static_cast<std::size_t>(comm_.size()));
            std::int64_t bricks = 0;
            for (const auto& r : result.ranks) bricks += r.bricks;
            EXPECT_EQ(bricks, result.brick_count);
          }
        }
      }
    }
  }
}

// twophase with every rank aggregating dealt 64-byte blocks through a
// buffer smaller than a row.
const std::vector<std::string> kDealt = {"cb_nodes=8", "partition=static-cyclic", "lock_size=64", "cb_buffer_size=1000",
                                         "exchange=p2p"};

TEST_F(Segment, EveryFormatAndEveryReaderGiveTheSameMask) {
  struct Input {
    std::string path;
    std::vector<std::pair<std::string, std::vector<std::string>>> readers;  // backend, hints
  };
  std::vector<Input> inputs = {
      {make_shells_with("x_raw.nhdr", "posix", {}),
       {{"posix", {}}, {"mmap", {}}, {"mmap-advise", {}}, {"mpiio", {}}, {"twophase", {}}, {"twophase", kDealt}}},
      {make_shells_with("x_cdf2.nc", "pnetcdf", {"format=cdf2"}),
       {{"pnetcdf", {}}, {"pnetcdf", {"nonblocking=1"}}, {"twophase", {}}, {"twophase", kDealt}}},
      {make_shells_with("x_cdf5.nc", "pnetcdf", {"format=cdf5"}),
       {{"pnetcdf", {}}, {"pnetcdf", {"nonblocking=1"}}, {"twophase", {}}}},
      {make_shells_with("x_nc4.nc", "netcdf4", {}), {{"netcdf4", {}}, {"netcdf4", {"access=independent"}}}},
  };
  const std::uint64_t exact = datasets::shells_in_range(dims_, io::DType::i16, width_, lo_, hi_);
  std::vector<char> reference;
  int case_number = 0;
  for (const auto& input : inputs) {
    for (const auto& [backend, hints] : input.readers) {
      SCOPED_TRACE(input.path + " read by " + backend);
      segment::SegmentOptions options;
      options.input = input.path;
      options.output = dir_ / ("x_mask_" + std::to_string(case_number++) + ".nhdr");
      options.backend = backend;
      options.input_hints = hints;
      options.format = "raw";
      options.lo = lo_;
      options.hi = hi_;
      options.brick_shape = io::Index3{7, 9, 53};
      options.progress = segment::ProgressMode::none;
      auto result = segment::run_segment(comm_, options);
      EXPECT_EQ(result.stats.in_range, exact);
      if (backend == "pnetcdf") {  // the report names the format that was read
        const char* kind = input.path.find("cdf2") != std::string::npos ? "CDF-2" : "CDF-5";
        EXPECT_NE(result.implementation.find(kind), std::string::npos) << result.implementation;
      }
      if (comm_.rank() != 0) continue;
      auto bytes = file_bytes(io::data_path_for_header(options.output));
      if (reference.empty()) reference = bytes;
      EXPECT_TRUE(bytes == reference) << "mask differs";
    }
  }
  // A mask in each NetCDF format, read back through its own backend.
  // (twophase writes CDF masks through the variable's byte offset.)
  for (const auto& [format, backend, writer] : {std::tuple{"cdf2", "pnetcdf", "auto"},
                                                {"cdf5", "pnetcdf", "auto"},
                                                {"netcdf4", "netcdf4", "auto"},
                                                {"cdf2", "pnetcdf", "twophase"},
                                                {"cdf5", "pnetcdf", "twophase"}}) {
    SCOPED_TRACE(std::string(format) + " written by " + writer);
    segment::SegmentOptions options;
    options.input = inputs[0].path;
    options.backend = writer;
    options.output = dir_ / (std::string("x_mask_") + format + "_" + writer + ".nc");
    options.format = format;
    options.lo = lo_;
    options.hi = hi_;
    options.progress = segment::ProgressMode::none;
    segment::run_segment(comm_, options);
    auto reader = io::open_reader(backend, {options.output, {}}, comm_);
    EXPECT_EQ(reader->info().variable, "mask");
    std::vector<std::uint8_t> mask(static_cast<std::size_t>(reader->info().voxels()));
    void* pointer = mask.data();
    std::vector<io::Extent> whole;
    if (comm_.rank() == 0) whole.push_back(reader->info().whole());
    reader->read_all(whole, {&pointer, whole.size()});
    reader->close();
    if (comm_.rank() == 0) {
      EXPECT_TRUE(std::equal(mask.begin(), mask.end(), reference.begin(), reference.end()));
    }
  }
}

TEST_F(Segment, MaskHeaderRecordsTheThresholdsAndSource) {
  const std::string input = make_shells("header.nhdr", io::DType::u16, io::ByteOrder::little);
  const std::string output = dir_ / "header_mask.nhdr";
  run(input, output, "posix", segment::Assignment::block, {});
  auto reader = io::open_reader("posix", {output, {}}, comm_);
  const auto& info = reader->info();
  EXPECT_EQ(info.dtype, io::DType::u8);
  EXPECT_EQ(info.dims, dims_);
  EXPECT_EQ(std::stod(info.attributes.at("threshold_lo")), lo_);
  EXPECT_EQ(std::stod(info.attributes.at("threshold_hi")), hi_);
  EXPECT_EQ(info.attributes.at("source_file"), input);
  reader->close();
}

TEST_F(Segment, FailureLeavesNoOutputAndFailsEveryRank) {
  const std::string input = make_shells("fail.nhdr", io::DType::f32, io::ByteOrder::little);
  // lo > hi, an existing output, output over input: refused on every rank.
  const std::string output = dir_ / "fail_mask.nhdr";
  segment::SegmentOptions options;
  options.input = input;
  options.output = output;
  options.progress = segment::ProgressMode::none;
  options.lo = 3;
  options.hi = 1;
  EXPECT_THROW(segment::run_segment(comm_, options), Error);
  options.lo = 1;
  options.hi = 3;
  options.output = input;
  EXPECT_THROW(segment::run_segment(comm_, options), Error);
  options.output = output;
  options.hints = {"no_such_hint=1"};
  EXPECT_THROW(segment::run_segment(comm_, options), Error);
  comm_.barrier();
  EXPECT_FALSE(std::filesystem::exists(output));
  EXPECT_FALSE(std::filesystem::exists(io::data_path_for_header(output)));
  // A cancelled job keeps nothing for --resume either: the user asked for no mask.
  for (const auto& entry : std::filesystem::directory_iterator(dir_.path()))
    for (const char* temporary : {"volseg-tmp", "volseg-partial", "volseg-journal"})
      EXPECT_EQ(entry.path().string().find(temporary), std::string::npos) << entry.path();
}

}  // namespace

// A user's Cancel on rank 0, after its first brick, stops every rank of every
// kind of pipeline (independent bricks, mapped, any-order, collective rounds)
// with "cancelled" and leaves no mask; a job not cancelled is untouched.
TEST_F(Segment, CancelOnRankZeroStopsEveryRankAndLeavesNothing) {
  const std::string input = make_shells("cancel.nhdr", io::DType::f32, io::ByteOrder::little);
  for (const std::string backend : {"posix", "mmap", "ranged-mmap", "twophase", "mpiio"}) {
    SCOPED_TRACE(backend);
    const std::string output = dir_ / ("cancel_" + backend + ".nhdr");
    segment::CancelFlag flag;
    segment::SegmentOptions options;
    options.input = input;
    options.output = output;
    options.backend = backend;
    options.lo = lo_;
    options.hi = hi_;
    options.brick_shape = io::Index3{4, 8, 8};       // many bricks, many rounds
    options.collective_batch_bytes = 4 * 8 * 8 * 4;  // one brick a round
    options.progress = segment::ProgressMode::none;
    options.cancel = &flag;
    std::vector<std::int64_t> last_units;
    options.on_progress = [&](const std::vector<std::int64_t>& units, std::int64_t, bool) {
      last_units = units;
      flag.request();  // at the first report, after rank 0's first brick
    };
    try {
      segment::run_segment(comm_, options);
      ADD_FAILURE() << "a cancelled job returned";
    } catch (const Error& e) {
      EXPECT_STREQ(e.what(), segment::cancelled_message);
    }
    if (comm_.rank() == 0) {
      ASSERT_EQ(static_cast<int>(last_units.size()), comm_.size());  // one count per rank
    }
    comm_.barrier();
    EXPECT_FALSE(std::filesystem::exists(output));
    EXPECT_FALSE(std::filesystem::exists(io::data_path_for_header(output)));
    // The same options without the request run to the end.
    flag.reset();
    options.on_progress = nullptr;
    auto result = segment::run_segment(comm_, options);
    EXPECT_EQ(result.brick_count, result.brick_grid[0] * result.brick_grid[1] * result.brick_grid[2]);
    EXPECT_TRUE(std::filesystem::exists(output));
  }
  // A cancelled job keeps nothing for --resume either: the user asked for no mask.
  for (const auto& entry : std::filesystem::directory_iterator(dir_.path()))
    for (const char* temporary : {"volseg-tmp", "volseg-partial", "volseg-journal"})
      EXPECT_EQ(entry.path().string().find(temporary), std::string::npos) << entry.path();
}
