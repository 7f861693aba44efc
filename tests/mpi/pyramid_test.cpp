// SPDX-License-Identifier: MIT
// The brick pyramid on 1-4 ranks, checked against a brute-force computation
// from the full-resolution data: level dims and voxels, per-brick statistics,
// histograms, the same bytes whatever the rank count, and the errors.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
#include <vector>

#include "support/temp_dir.hpp"
#include "volseg/datasets/generate.hpp"
#include "volseg/io/error.hpp"
#include "volseg/io/nrrd.hpp"
#include "volseg/io/registry.hpp"
#include "volseg/pyramid/pyramid.hpp"
#include "volseg/segment/decode.hpp"

using namespace volseg;
namespace fs = std::filesystem;

namespace {

std::vector<char> file_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), {}};
}

template <class T>
std::vector<T> read_level(const pyramid::Pyramid& p, int level, const Comm& comm) {
  auto reader = p.open_level(level, comm);
  std::vector<T> values(static_cast<std::size_t>(reader->info().voxels()));
  reader->read(reader->info().whole(), values.data());
  reader->close();
  return values;
}

class Pyramid : public ::testing::Test {
 protected:
  Pyramid() : comm_(MPI_COMM_WORLD), dir_(MPI_COMM_WORLD) {}

  // The shells field as f32, with NaN and fill voxels scattered through it.
  std::string make_volume(const std::string& name) {
    io::VolumeInfo info;
    info.dims = dims_;
    info.dtype = io::DType::f32;
    info.fill_value = fill_;
    info.spacing = {0.5, 1, 2};
    const std::string path = dir_ / name;
    {
      auto writer = io::create_writer("posix", {path, info, false}, comm_);
      datasets::generate(comm_, {datasets::Field::shells, 5, 1}, *writer, segment::ProgressMode::none);
      writer->close();
    }
    // Rank 0 marks voxels invalid in place; planes 2 and 3 where x < 8
    // so some level voxels have no valid voxel at all.
    if (comm_.rank() == 0) {
      std::fstream data(io::data_path_for_header(path), std::ios::in | std::ios::out | std::ios::binary);
      for (std::int64_t i = 0; i < info.voxels(); ++i) {
        const std::int64_t x = i % dims_[2], z = i / (dims_[1] * dims_[2]);
        float value;
        if (i % 7 == 3)
          value = std::numeric_limits<float>::quiet_NaN();
        else if (i % 11 == 5 || ((z == 2 || z == 3) && x < 8))
          value = fill_;
        else
          continue;
        data.seekp(i * 4);
        data.write(reinterpret_cast<const char*>(&value), 4);
      }
      EXPECT_FALSE(data.fail());
    }
    comm_.barrier();
    return path;
  }

  // The whole volume decoded (NaN where invalid), read by every rank.
  std::vector<double> full_resolution(const std::string& path) {
    auto reader = io::open_reader("posix", {path, {}}, comm_);
    std::vector<float> raw(static_cast<std::size_t>(reader->info().voxels()));
    reader->read(reader->info().whole(), raw.data());
    std::vector<double> values(raw.size());
    segment::Decoder(reader->info()).to_double(raw.data(), static_cast<std::int64_t>(raw.size()), values.data());
    reader->close();
    return values;
  }

  pyramid::Pyramid build(const Comm& comm, const std::string& input, const std::string& directory, bool force = false,
                         std::optional<pyramid::Reduction> reduction = {}) {
    pyramid::BuildOptions options;
    options.input = input;
    options.directory = directory;
    options.brick = brick_;
    options.force = force;
    options.reduction = reduction;
    options.progress = segment::ProgressMode::none;
    return pyramid::build(comm, options);
  }

  Comm comm_;
  volseg::testing::SharedTempDir dir_;
  const io::Index3 dims_{37, 50, 64};
  const std::int64_t brick_ = 16;
  const float fill_ = -777.0f;
};

TEST_F(Pyramid, LevelsStatsAndHistogramsMatchBruteForce) {
  const std::string input = make_volume("shells.nhdr");
  const auto p = build(comm_, input, "");
  EXPECT_EQ(p.directory(), dir_ / "shells.pyramid");
  EXPECT_EQ(p.reduction(), pyramid::Reduction::mean);
  ASSERT_TRUE(fs::exists(dir_ / "shells.pyramid/index.json"));
  const auto full = full_resolution(input);
  std::uint64_t valid_total = 0;
  double low = INFINITY, high = -INFINITY;
  for (double v : full)
    if (!std::isnan(v)) {
      ++valid_total;
      low = std::min(low, v);
      high = std::max(high, v);
    }
  ASSERT_LT(valid_total, full.size());  // the test data do have invalid voxels

  // Levels until the largest dim fits one brick: 64 -> 32 -> 16.
  ASSERT_EQ(p.levels().size(), 3u);
  EXPECT_EQ(p.brick_grid(), (io::Index3{3, 4, 4}));
  for (int k = 0; k < 3; ++k) {
    const io::Index3 expected{(37 + (1 << k) - 1) >> k, (50 + (1 << k) - 1) >> k, (64 + (1 << k) - 1) >> k};
    EXPECT_EQ(p.levels()[static_cast<std::size_t>(k)].dims, expected) << k;
  }
  for (int k = 1; k < 3; ++k) {
    SCOPED_TRACE("level " + std::to_string(k));
    const auto values = read_level<float>(p, k, comm_);
    const auto& d = p.levels()[static_cast<std::size_t>(k)].dims;
    std::int64_t empty_voxels = 0;
    for (std::int64_t z = 0; z < d[0]; ++z)
      for (std::int64_t y = 0; y < d[1]; ++y)
        for (std::int64_t x = 0; x < d[2]; ++x) {
          double sum = 0;
          std::int64_t n = 0;
          for (std::int64_t fz = z << k; fz < std::min(dims_[0], (z + 1) << k); ++fz)
            for (std::int64_t fy = y << k; fy < std::min(dims_[1], (y + 1) << k); ++fy)
              for (std::int64_t fx = x << k; fx < std::min(dims_[2], (x + 1) << k); ++fx) {
                const double v = full[static_cast<std::size_t>((fz * dims_[1] + fy) * dims_[2] + fx)];
                if (!std::isnan(v)) {
                  sum += v;
                  ++n;
                }
              }
          const float got = values[static_cast<std::size_t>((z * d[1] + y) * d[2] + x)];
          if (n == 0) {
            ++empty_voxels;
            ASSERT_TRUE(std::isnan(got)) << z << "," << y << "," << x;
          } else {
            ASSERT_NEAR(got, sum / static_cast<double>(n), 1e-5) << z << "," << y << "," << x;
          }
        }
    if (k == 1) {
      EXPECT_GT(empty_voxels, 0);  // the all-fill stripe
    }
  }
  // Every level opens with ParaView's spacing, doubled per level.
  {
    auto reader = p.open_level(2, comm_);
    EXPECT_DOUBLE_EQ(reader->info().spacing[0], 2.0);
    EXPECT_DOUBLE_EQ(reader->info().spacing[2], 8.0);
    reader->close();
  }
  // Per-brick statistics of the full-resolution voxels.
  std::uint64_t histogram_total = 0;
  for (std::int64_t b = 0; b < p.brick_count(); ++b) {
    const auto extent = p.brick_extent(b, 0);
    double bmin = INFINITY, bmax = -INFINITY;
    std::uint64_t valid = 0;
    for (std::int64_t z = 0; z < extent.count[0]; ++z)
      for (std::int64_t y = 0; y < extent.count[1]; ++y)
        for (std::int64_t x = 0; x < extent.count[2]; ++x) {
          const double v = full[static_cast<std::size_t>(
              ((z + extent.offset[0]) * dims_[1] + y + extent.offset[1]) * dims_[2] + x + extent.offset[2])];
          if (std::isnan(v)) continue;
          ++valid;
          bmin = std::min(bmin, v);
          bmax = std::max(bmax, v);
        }
    const auto& s = p.stats(b);
    EXPECT_EQ(s.voxels, static_cast<std::uint64_t>(extent.voxels())) << b;
    EXPECT_EQ(s.valid, valid) << b;
    if (valid > 0) {
      EXPECT_EQ(s.min, bmin) << b;
      EXPECT_EQ(s.max, bmax) << b;
    }
    EXPECT_EQ(p.histogram(b).total(), valid) << b;
    histogram_total += p.histogram(b).total();
  }
  EXPECT_EQ(histogram_total, valid_total);
  // f32 data: equal bins over [min, max] of the valid voxels (a first pass,
  // since no valid_range is declared); counts between two bin edges are
  // exact (lo <= v < hi: the bin opening at hi is not counted).
  const auto whole = p.histogram();
  EXPECT_FALSE(p.edges().integers);
  EXPECT_EQ(p.edges().lo, low);
  EXPECT_EQ(p.edges().hi, high);
  EXPECT_EQ(whole.total(), valid_total);
  const double a = p.edges().edge(256), b = p.edges().edge(512);
  std::uint64_t between = 0;
  for (double v : full) between += !std::isnan(v) && v >= a && v < b;
  ASSERT_GT(between, 0u);
  const auto counted = whole.count_between(a, b);
  EXPECT_TRUE(counted.exact);
  EXPECT_EQ(counted.voxels, static_cast<double>(between));

  // Brick extents of every level tile the level exactly.
  for (int k = 0; k < 3; ++k) {
    std::int64_t voxels = 0;
    for (std::int64_t brick = 0; brick < p.brick_count(); ++brick) voxels += p.brick_extent(brick, k).voxels();
    const auto& d = p.levels()[static_cast<std::size_t>(k)].dims;
    EXPECT_EQ(voxels, d[0] * d[1] * d[2]) << k;
  }
  // load() and find() give the same pyramid back.
  const auto loaded = pyramid::load(p.directory());
  EXPECT_EQ(loaded.brick_count(), p.brick_count());
  EXPECT_EQ(loaded.edges(), p.edges());
  auto found = pyramid::find(input);
  ASSERT_TRUE(found.has_value());
  EXPECT_EQ(found->levels().size(), 3u);
}

TEST_F(Pyramid, SameBytesOnOneRankAsOnAll) {
  const std::string input = make_volume("same.nhdr");
  build(comm_, input, dir_ / "all.pyramid");
  // Rank 0 alone builds the same pyramid into another directory.
  MPI_Comm alone = MPI_COMM_NULL;
  MPI_Comm_split(MPI_COMM_WORLD, comm_.rank() == 0 ? 0 : MPI_UNDEFINED, 0, &alone);
  if (alone != MPI_COMM_NULL) {
    {
      Comm one(alone);
      build(one, input, dir_ / "one.pyramid");
    }
    MPI_Comm_free(&alone);
  }
  comm_.barrier();
  if (comm_.rank() == 0) {
    for (const char* name : {"level-1.raw", "level-2.raw", "bricks.bin", "histograms.u32"}) {
      const auto all = file_bytes(dir_ / (std::string("all.pyramid/") + name));
      EXPECT_FALSE(all.empty()) << name;
      EXPECT_EQ(all, file_bytes(dir_ / (std::string("one.pyramid/") + name))) << name;
    }
  }
}

TEST_F(Pyramid, MaskUsesMaxOfItsVoxels) {
  io::VolumeInfo info;
  info.dims = {9, 10, 11};
  info.dtype = io::DType::u8;
  info.attributes["flag_values"] = "0 1";
  const std::string path = dir_ / "mask.nhdr";
  std::vector<std::uint8_t> mask(static_cast<std::size_t>(info.voxels()), 0);
  mask[static_cast<std::size_t>((5 * 10 + 6) * 11 + 7)] = 1;  // one voxel inside
  {
    auto writer = io::create_writer("posix", {path, info, false}, comm_);
    if (comm_.rank() == 0) writer->write(info.whole(), mask.data());
    writer->close();
  }
  pyramid::BuildOptions options;
  options.input = path;
  options.brick = 4;
  options.progress = segment::ProgressMode::none;
  const auto p = pyramid::build(comm_, options);
  EXPECT_EQ(p.reduction(), pyramid::Reduction::max);  // flag_values "0 1": a mask
  ASSERT_EQ(p.levels().size(), 3u);                   // 11 -> 6 -> 3 <= 4
  for (int k = 1; k < 3; ++k) {
    const auto values = read_level<std::uint8_t>(p, k, comm_);
    const auto& d = p.levels()[static_cast<std::size_t>(k)].dims;
    std::size_t ones = 0;
    for (std::size_t i = 0; i < values.size(); ++i) {
      ones += values[i];
      if (values[i]) {
        EXPECT_EQ(i, static_cast<std::size_t>(((5 >> k) * d[1] + (6 >> k)) * d[2] + (7 >> k)));
      }
    }
    EXPECT_EQ(ones, 1u) << k;  // a mean would have made it a fraction, rounded to 0
  }
  EXPECT_TRUE(p.edges().integers);
  EXPECT_EQ(p.histogram().counts()[1], 1u);
}

TEST_F(Pyramid, RefusesToReplaceWithoutForceAndReplacesWithIt) {
  const std::string input = make_volume("again.nhdr");
  build(comm_, input, "");
  try {
    build(comm_, input, "");
    FAIL() << "a second build must refuse";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("exists (use --force to replace it)"), std::string::npos) << e.what();
  }
  EXPECT_TRUE(fs::exists(dir_ / "again.pyramid/index.json"));  // the refused build left the old one alone
  const auto replaced = build(comm_, input, "", true);
  EXPECT_EQ(replaced.levels().size(), 3u);
  // A directory with someone else's files is never replaced.
  if (comm_.rank() == 0) {
    fs::create_directories(dir_ / "foreign");
    std::ofstream(dir_ / "foreign/notes.txt") << "mine";
  }
  comm_.barrier();
  EXPECT_THROW(build(comm_, input, dir_ / "foreign", true), Error);
  EXPECT_TRUE(fs::exists(dir_ / "foreign/notes.txt"));
}

TEST_F(Pyramid, FailedBuildLeavesNoIndex) {
  const std::string input = make_volume("bad.nhdr");
  pyramid::BuildOptions options;
  options.input = input;
  options.progress = segment::ProgressMode::none;
  options.brick = 12;  // not a power of two
  EXPECT_THROW(pyramid::build(comm_, options), Error);
  options.brick = 16;
  options.levels = 5;  // more than log2(16)
  EXPECT_THROW(pyramid::build(comm_, options), Error);
  EXPECT_FALSE(fs::exists(dir_ / "bad.pyramid"));
  // A failure after the old pyramid's index is gone: --force over a
  // pyramid whose level-9.raw cannot be removed (a non-empty directory).
  options.levels = 0;
  options.directory = dir_ / "mid.pyramid";
  build(comm_, input, options.directory);
  if (comm_.rank() == 0) {
    fs::create_directories(dir_ / "mid.pyramid/level-9.raw");
    std::ofstream(dir_ / "mid.pyramid/level-9.raw/x") << "x";
  }
  comm_.barrier();
  options.force = true;
  EXPECT_THROW(pyramid::build(comm_, options), Error);
  EXPECT_FALSE(fs::exists(dir_ / "mid.pyramid/index.json"));
  EXPECT_THROW(pyramid::load(dir_ / "mid.pyramid"), Error);
}

TEST_F(Pyramid, DamagedOrMissingIndexIsAClearError) {
  const std::string input = make_volume("damaged.nhdr");
  const auto p = build(comm_, input, "");
  const std::string dir = p.directory();
  comm_.barrier();
  auto expect_error = [&](const std::string& needle) {
    try {
      pyramid::load(dir);
      ADD_FAILURE() << "load must fail: " << needle;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    }
  };
  if (comm_.rank() == 0) {
    const std::string index = dir + "/index.json";
    const auto text = file_bytes(index);
    // A wrong-sized histograms file.
    fs::resize_file(dir + "/histograms.u32", fs::file_size(dir + "/histograms.u32") - 4);
    expect_error("histograms.u32");
    // A newer format version.
    std::string changed(text.begin(), text.end());
    changed.replace(changed.find("\"version\": 1"), 12, "\"version\": 9");
    std::ofstream(index, std::ios::trunc) << changed;
    expect_error("version 9");
    std::ofstream(index, std::ios::trunc) << "{ not json";
    expect_error("malformed JSON");
    fs::remove(index);
    expect_error("index.json is missing");
    EXPECT_FALSE(pyramid::find(input).has_value());
  }
  comm_.barrier();
}

}  // namespace
