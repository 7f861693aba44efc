// SPDX-License-Identifier: MIT
// The in-situ hook's contract on every rank: what a published block gives
// (exact statistics, the mask file), and what bad blocks get (an agreed error
// on every rank, then a disabled hook for the C API). One Catalyst processor
// per process: ctest runs each test in a process of its own (--gtest_filter).
#include <gtest/gtest.h>
#include <mpi.h>
#include <sys/stat.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "../../app/insitu/src/governor.hpp"
#include "volseg/insitu/insitu.hpp"
#include "volseg/insitu/volseg_insitu.h"
#include "volseg/io/error.hpp"

namespace {

using volseg::insitu::Field;
using volseg::insitu::Hook;
using volseg::insitu::parse_options;
namespace io = volseg::io;

int rank() {
  int r = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &r);
  return r;
}
int size() {
  int s = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &s);
  return s;
}

// A shared temporary folder, named on rank 0.
std::string shared_dir(const std::string& name) {
  char path[256] = {};
  if (rank() == 0) {
    auto dir =
        std::filesystem::temp_directory_path() / ("volseg-insitu-test-" + name + "-" + std::to_string(::getpid()));
    std::filesystem::remove_all(dir);
    std::filesystem::create_directories(dir);
    std::snprintf(path, sizeof path, "%s", dir.c_str());
  }
  MPI_Bcast(path, sizeof path, MPI_CHAR, 0, MPI_COMM_WORLD);
  return path;
}

const io::Index3 dims{13, 11, 9};

// Slabs along z, with `ghost` layers towards the neighbours.
struct Block {
  io::Extent box, stored;
  std::vector<float> values;
};

float value_at(std::int64_t z, std::int64_t y, std::int64_t x) {
  return static_cast<float>(std::sin(0.7 * double(z)) + 0.3 * double(y) - 0.2 * double(x));
}

Block make_block(int ghost) {
  Block b;
  const std::int64_t n = dims[0], parts = size(), r = rank();
  const std::int64_t offset = r * (n / parts) + std::min(r, n % parts), count = n / parts + (r < n % parts ? 1 : 0);
  b.box = {{offset, 0, 0}, {count, dims[1], dims[2]}};
  const std::int64_t below = offset > 0 ? ghost : 0, above = offset + count < n ? ghost : 0;
  b.stored = {{offset - below, 0, 0}, {count + below + above, dims[1], dims[2]}};
  for (std::int64_t z = 0; z < b.stored.count[0]; ++z)
    for (std::int64_t y = 0; y < dims[1]; ++y)
      for (std::int64_t x = 0; x < dims[2]; ++x) b.values.push_back(value_at(b.stored.offset[0] + z, y, x));
  return b;
}

Field field_of(const Block& b, int ghost, std::int64_t step = 1) {
  Field f;
  f.step = step;
  f.global_dims = dims;
  f.box = b.box;
  f.ghost = ghost;
  f.dtype = io::DType::f32;
  f.values = b.values.data();
  return f;
}

// Every rank must throw, with the same message naming the problem.
void expect_agreed_error(Hook& hook, const Field& field, const std::string& words) {
  std::string message;
  try {
    hook.publish(field);
  } catch (const volseg::Error& e) {
    message = e.what();
  }
  EXPECT_NE(message.find(words), std::string::npos) << "rank " << rank() << ": '" << message << "'";
}

TEST(InSitu, MaskAndStatisticsAreExactWithGhostLayers) {
  const std::string dir = shared_dir("exact");
  const double lo = 0.1, hi = 1.5;
  Hook hook(MPI_COMM_WORLD, parse_options("--lo 0.1 --hi 1.5 --out " + dir + "/m_%d.nhdr"));
  for (int ghost : {0, 1, 2}) {
    const Block block = make_block(ghost);
    const auto& record = hook.publish(field_of(block, ghost, ghost));
    std::uint64_t expected = 0;
    std::vector<std::uint8_t> mask;
    for (std::int64_t z = 0; z < dims[0]; ++z)
      for (std::int64_t y = 0; y < dims[1]; ++y)
        for (std::int64_t x = 0; x < dims[2]; ++x) {
          const float v = value_at(z, y, x);
          mask.push_back(v >= lo && v <= hi);
          expected += mask.back();
        }
    EXPECT_EQ(record.in_range, expected) << "ghost " << ghost;
    EXPECT_EQ(record.voxels, static_cast<std::uint64_t>(dims[0] * dims[1] * dims[2]));
    std::ifstream raw(dir + "/m_" + std::to_string(ghost) + ".raw", std::ios::binary);
    std::vector<std::uint8_t> written((std::istreambuf_iterator<char>(raw)), std::istreambuf_iterator<char>());
    EXPECT_EQ(written, mask) << "ghost " << ghost;
  }
  hook.finalize();
  MPI_Barrier(MPI_COMM_WORLD);
  if (rank() == 0) std::filesystem::remove_all(dir);
}

// A device or a pipe given as --stats is written in place: replacing it by a
// rename would leave a regular file where /dev/null was (as root, one that
// fills memory with everything later written to "/dev/null").
TEST(InSitu, StatsToAPipeAreWrittenInPlace) {
  const std::string dir = shared_dir("stream");
  const std::string fifo = dir + "/series.csv";
  if (rank() == 0) ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  MPI_Barrier(MPI_COMM_WORLD);
  std::string lines;
  std::thread reader;
  if (rank() == 0)
    reader = std::thread([&] {
      std::ifstream in(fifo);
      lines.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
    });
  {
    Hook hook(MPI_COMM_WORLD, parse_options("--lo 0 --hi 1 --stats " + fifo));
    hook.publish(field_of(make_block(0), 0));
    hook.publish(field_of(make_block(0), 0));
    hook.finalize();
  }
  if (rank() == 0) {
    reader.join();
    struct stat st {};
    ASSERT_EQ(::stat(fifo.c_str(), &st), 0);
    EXPECT_TRUE(S_ISFIFO(st.st_mode)) << fifo << " is no longer a FIFO";
    EXPECT_EQ(std::count(lines.begin(), lines.end(), '\n'), 3) << lines;  // the header and two steps
    EXPECT_FALSE(std::filesystem::exists(dir + "/series.csv.part"));
    for (const auto& entry : std::filesystem::directory_iterator(dir))
      EXPECT_EQ(entry.path().filename().string().find("volseg-tmp"), std::string::npos) << entry.path();
    EXPECT_FALSE(std::filesystem::exists(dir + "/series.json")) << "no summary beside a pipe";
  }
  MPI_Barrier(MPI_COMM_WORLD);
  if (rank() == 0) std::filesystem::remove_all(dir);
}

TEST(InSitu, StatsToDevNullLeaveTheDevice) {  // one Catalyst per process: a test of its own
  {
    Hook hook(MPI_COMM_WORLD, parse_options("--lo 0 --hi 1 --stats /dev/null"));
    hook.publish(field_of(make_block(0), 0));
    hook.finalize();
  }
  struct stat st {};
  ASSERT_EQ(::stat("/dev/null", &st), 0);
  EXPECT_TRUE(S_ISCHR(st.st_mode)) << "/dev/null is no longer a device";
  EXPECT_FALSE(std::filesystem::exists("/dev/null.json"));
}

TEST(InSitu, BlocksThatDoNotTileTheGridAreRefusedOnEveryRank) {
  Hook hook(MPI_COMM_WORLD, parse_options("--lo 0 --hi 1 --stats /dev/null"));
  Block block = make_block(0);
  if (rank() == size() - 1) --block.box.count[0];  // a plane nobody owns
  expect_agreed_error(hook, field_of(block, 0), "do not tile");
}

TEST(InSitu, OverlappingBlocksAreRefusedOnEveryRank) {
  if (size() < 2) GTEST_SKIP() << "needs two ranks";
  Hook hook(MPI_COMM_WORLD, parse_options("--lo 0 --hi 1 --stats /dev/null"));
  Block block = make_block(1);
  if (rank() == 0) ++block.box.count[0];  // into rank 1's first plane (held in its ghost layer)
  expect_agreed_error(hook, field_of(block, 1), "overlap");
}

TEST(InSitu, RanksDisagreeingOnDimsOrTypeAreRefused) {
  if (size() < 2) GTEST_SKIP() << "needs two ranks";
  Hook hook(MPI_COMM_WORLD, parse_options("--lo 0 --hi 1 --stats /dev/null"));
  const Block block = make_block(0);
  Field field = field_of(block, 0);
  if (rank() == 1) field.global_dims[0] += 1;
  expect_agreed_error(hook, field, "disagree on the global dims");
  field = field_of(block, 0);
  if (rank() == 1) field.dtype = io::DType::i32;
  expect_agreed_error(hook, field, "disagree on the data type");
}

TEST(InSitu, CApiReportsTheErrorOnEveryRankThenIsDisabled) {
  volseg_insitu* hook = nullptr;
  ASSERT_EQ(volseg_insitu_create(MPI_COMM_WORLD, "--lo 0 --hi 1 --stats /dev/null", &hook), VOLSEG_INSITU_OK)
      << volseg_insitu_last_error(hook);
  Block block = make_block(0);
  const std::int64_t global[3] = {dims[0], dims[1], dims[2]};
  EXPECT_EQ(volseg_insitu_publish(hook, 1, 1.0, global, block.box.offset.data(), block.box.count.data(), 0, "f32",
                                  block.values.data()),
            VOLSEG_INSITU_OK);
  EXPECT_EQ(volseg_insitu_publish(hook, 2, 2.0, global, block.box.offset.data(), block.box.count.data(), 0, "f33",
                                  block.values.data()),
            VOLSEG_INSITU_ERROR);
  EXPECT_NE(std::string(volseg_insitu_last_error(hook)).find("unknown data type 'f33'"), std::string::npos);
  EXPECT_EQ(volseg_insitu_publish(hook, 3, 3.0, global, block.box.offset.data(), block.box.count.data(), 0, "f32",
                                  block.values.data()),
            VOLSEG_INSITU_DISABLED);
  EXPECT_EQ(volseg_insitu_finalize(hook), VOLSEG_INSITU_OK);

  volseg_insitu* refused = nullptr;
  EXPECT_EQ(volseg_insitu_create(MPI_COMM_WORLD, "--lo 1 --hi 0 --stats x.csv", &refused), VOLSEG_INSITU_ERROR);
  EXPECT_NE(std::string(volseg_insitu_last_error(refused)).find("is above --hi"), std::string::npos);
  EXPECT_EQ(volseg_insitu_publish(refused, 1, 1.0, global, block.box.offset.data(), block.box.count.data(), 0, "f32",
                                  block.values.data()),
            VOLSEG_INSITU_DISABLED);
  EXPECT_EQ(volseg_insitu_finalize(refused), VOLSEG_INSITU_OK);
}

// The governor alone: no MPI, no Catalyst.
// volseg_insitu_create_split: the last rank analyses (it returns once the
// others finalize, with no communicator), the others simulate on theirs and
// publish slabs of it; the analysis's statistics count every point once.
// On one rank --analysis-ranks 1 leaves none to simulate: refused on every
// rank, which keep a communicator to go on without the hook.
TEST(InSitu, CApiSplitGivesTheSimulationItsCommunicator) {
  const std::string dir = shared_dir("split");
  const std::string stats = dir + "/stats.csv";
  const std::string options = "--lo -0.5 --hi 1.5 --stats " + stats + " --analysis-ranks 1 --queue 1";
  volseg_insitu* hook = nullptr;
  MPI_Comm simulation = MPI_COMM_NULL;
  const int status = volseg_insitu_create_split(MPI_COMM_WORLD, options.c_str(), &hook, &simulation);
  if (size() == 1) {
    EXPECT_EQ(status, VOLSEG_INSITU_ERROR);
    EXPECT_NE(std::string(volseg_insitu_last_error(hook)).find("leaves none to simulate"), std::string::npos);
    ASSERT_NE(simulation, MPI_COMM_NULL);
    MPI_Comm_free(&simulation);
    volseg_insitu_finalize(hook);
    return;
  }
  ASSERT_EQ(status, VOLSEG_INSITU_OK) << volseg_insitu_last_error(hook);
  EXPECT_EQ(simulation == MPI_COMM_NULL, rank() == size() - 1);
  std::int64_t in_range = 0;  // what the simulation's ranks publish, counted here
  if (simulation != MPI_COMM_NULL) {
    int r = 0, n = 1;
    MPI_Comm_rank(simulation, &r);
    MPI_Comm_size(simulation, &n);
    EXPECT_EQ(n, size() - 1);
    const std::int64_t z0 = r * dims[0] / n, z1 = (r + 1) * dims[0] / n;
    std::vector<float> values;
    for (std::int64_t z = z0; z < z1; ++z)
      for (std::int64_t y = 0; y < dims[1]; ++y)
        for (std::int64_t x = 0; x < dims[2]; ++x) values.push_back(value_at(z, y, x));
    const std::int64_t offset[3] = {z0, 0, 0}, count[3] = {z1 - z0, dims[1], dims[2]};
    for (int step = 0; step < 3; ++step)
      EXPECT_EQ(volseg_insitu_publish(hook, step, step, dims.data(), offset, count, 0, "f32", values.data()),
                VOLSEG_INSITU_OK)
          << volseg_insitu_last_error(hook);
    for (float v : values) in_range += v >= -0.5f && v <= 1.5f;
    MPI_Comm_free(&simulation);
  }
  EXPECT_EQ(volseg_insitu_finalize(hook), VOLSEG_INSITU_OK);
  std::int64_t total = 0;
  MPI_Allreduce(&in_range, &total, 1, MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD);
  if (rank() != 0) return;
  std::ifstream csv(stats);
  std::string line;
  std::getline(csv, line);  // the header
  int steps = 0;
  while (std::getline(csv, line)) {
    // step,time,action,voxels,valid,in_range,...
    std::vector<std::string> cells;
    for (std::size_t start = 0, comma = 0; comma != std::string::npos; start = comma + 1)
      cells.push_back(line.substr(start, (comma = line.find(',', start)) - start));
    EXPECT_EQ(cells[2], "full");
    EXPECT_EQ(std::stoll(cells[3]), dims[0] * dims[1] * dims[2]);
    EXPECT_EQ(std::stoll(cells[5]), total);
    ++steps;
  }
  EXPECT_EQ(steps, 3);
  EXPECT_GT(total, 0);
}

TEST(Governor, PicksTheRichestWorkTheCreditPaysFor) {
  using namespace volseg::insitu::detail;
  Governor governor(0.05);
  const Wants all{true, true, true, true};
  EXPECT_EQ(governor.choose(all, 0.0), Level::full);  // nothing measured yet: try everything once
  governor.learn(Level::full, {0.01, 0.02, 0.4, 0.1});
  EXPECT_EQ(governor.choose(all, 1.0), Level::full);
  EXPECT_EQ(governor.choose(all, 0.3), Level::small_image);  // 0.01 + 0.02 + 0.1 + 0.4/4
  EXPECT_EQ(governor.choose(all, 0.2), Level::no_image);
  EXPECT_EQ(governor.choose(all, 0.05), Level::no_scripts);
  EXPECT_EQ(governor.choose(all, 0.015), Level::stats_only);
  EXPECT_EQ(governor.choose(all, 0.001), Level::skipped);
  EXPECT_EQ(governor.choose(all, -5.0), Level::skipped);
  // Without a budget, everything always runs.
  EXPECT_EQ(Governor(std::nullopt).choose(all, -5.0), Level::full);
}

TEST(Options, ParsesTheHookOptionsAndRefusesBadOnes) {
  auto o = parse_options("--lo 0.5 --hi 2 --every 4 --out \"a b/m_%03d.nc\" --budget 7.5% --catalyst-script x.py");
  EXPECT_EQ(o.lo, 0.5);
  EXPECT_EQ(o.hi, 2);
  EXPECT_EQ(o.every, 4);
  EXPECT_EQ(o.out, "a b/m_%03d.nc");
  ASSERT_TRUE(o.budget);
  EXPECT_DOUBLE_EQ(*o.budget, 0.075);
  EXPECT_EQ(o.scripts, std::vector<std::string>{"x.py"});
  for (const char* bad :
       {"--lo 0 --hi 1 --stats s --every 0", "--lo 0 --stats s", "--out m_%d.nc --stats s",
        "--lo 0 --hi 1 --stats s --budget 150%", "--lo 0 --hi 1 --stats s --bogus 1", "", "--lo x --hi 1 --stats s"})
    EXPECT_THROW(parse_options(std::string(bad)), volseg::Error) << bad;

  // Off the critical path, and the operators.
  o = parse_options(
      "--lo otsu --hi p99.5 --seed-lo 0.4 --seed-hi 1 --open 2 --fill-holes --stats s --analysis-ranks 3 --queue 4 "
      "--when-full skip");
  EXPECT_EQ(o.lo_rule, "otsu");
  EXPECT_EQ(o.hi_rule, "p99.5");
  ASSERT_TRUE(o.seed);
  EXPECT_EQ(*o.seed, (std::pair<double, double>{0.4, 1}));
  EXPECT_EQ(o.open, 2);
  EXPECT_TRUE(o.fill_holes);
  EXPECT_EQ(o.analysis_ranks, 3);
  EXPECT_EQ(o.queue, 4);
  EXPECT_TRUE(o.skip_when_full);
  o = parse_options("--lo 0 --hi 1 --stats s --async --borrow");
  EXPECT_TRUE(o.async && o.borrow);
  for (const char* bad :
       {"--lo 0 --hi 1 --stats s --async --analysis-ranks 1", "--lo 0 --hi 1 --stats s --queue 2",
        "--lo 0 --hi 1 --stats s --async --queue 0", "--lo 0 --hi 1 --stats s --async --when-full later",
        "--lo 0 --hi 1 --stats s --async --borrow --when-full skip", "--lo 0 --hi 1 --stats s --async --budget 5%",
        "--lo 0 --hi 1 --stats s --seed-lo 1", "--lo 0 --hi 1 --stats s --seed-lo 2 --seed-hi 1",
        "--lo 0 --hi 1 --stats s --open 33", "--lo otsux --hi 1 --stats s", "--image i_%d.png --open 1"})
    EXPECT_THROW(parse_options(std::string(bad)), volseg::Error) << bad;
}

}  // namespace
