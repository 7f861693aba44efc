// SPDX-License-Identifier: MIT
// Property tests of the twophase backend through the registry, on 1 to 5
// ranks.
//
// Volume level (the registry's backends): random lists of non-overlapping
// extents of a 13x17x19 volume, several dtypes (two of them byte-swapped),
// written with twophase (every partitioner x exchange, varied hints) and
// with posix and mpiio; data files and headers must be byte-identical and
// equal to a model of the volume. Random overlapping extents read with
//
// read_all through all three must equal the model.

#include <fcntl.h>
#include <gtest/gtest.h>
#include <mpi.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <numeric>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "property_support.hpp"
#include "support/temp_dir.hpp"
#include "volseg/io/error.hpp"
#include "volseg/io/hints.hpp"
#include "volseg/io/nrrd.hpp"
#include "volseg/io/registry.hpp"
#include "volseg/io/twophase.hpp"

using namespace volseg;
using namespace volseg::io;
using namespace volseg::twophase_testing;

namespace {
const Index3 kDims{13, 17, 19};

struct Volume {
  DType dtype;
  ByteOrder order;
};

// A well-defined value of the dtype for voxel i and a salt, in native order.
void store_value(DType dtype, std::byte* to, std::uint64_t i, std::uint64_t salt) {
  std::uint64_t h = (i + 1) * 0x9e3779b97f4a7c15ull ^ (salt * 0xbf58476d1ce4e5b9ull);
  h ^= h >> 31;
  h *= 0x94d049bb133111ebull;
  h ^= h >> 29;
  const std::size_t size = dtype_size(dtype);
  if (dtype == DType::f32) {
    const float value = static_cast<float>(static_cast<std::int64_t>(h % 2000001) - 1000000) / 64.0f;
    std::memcpy(to, &value, 4);
  } else if (dtype == DType::f64) {
    const double value = static_cast<double>(static_cast<std::int64_t>(h % 200000001) - 100000000) / 1024.0;
    std::memcpy(to, &value, 8);
  } else {
    std::memcpy(to, &h, size);  // every bit pattern is an integer (little-endian host: the low bytes)
  }
}

std::size_t voxel_index(std::int64_t z, std::int64_t y, std::int64_t x) {
  return static_cast<std::size_t>((z * kDims[1] + y) * kDims[2] + x);
}

// Non-overlapping extents: the volume cut into a random grid of boxes, each
// box shrunk at random, given to a random rank or left out; one rank (when
// there are several) gets nothing. Lists are shuffled.
std::vector<std::vector<Extent>> random_extents(std::mt19937_64& random, int ranks) {
  std::array<std::vector<std::int64_t>, 3> cuts;
  for (std::size_t axis = 0; axis < 3; ++axis) {
    auto& c = cuts[axis];
    c = {0, kDims[axis]};
    const int extra = static_cast<int>(random() % 4);
    for (int k = 0; k < extra; ++k)
      c.push_back(1 + static_cast<std::int64_t>(random() % static_cast<std::uint64_t>(kDims[axis] - 1)));
    std::sort(c.begin(), c.end());
    c.erase(std::unique(c.begin(), c.end()), c.end());
  }
  std::vector<std::vector<Extent>> lists(static_cast<std::size_t>(ranks));
  const int idle = ranks > 1 ? static_cast<int>(random() % static_cast<unsigned>(ranks)) : -1;
  for (std::size_t i = 0; i + 1 < cuts[0].size(); ++i)
    for (std::size_t j = 0; j + 1 < cuts[1].size(); ++j)
      for (std::size_t k = 0; k + 1 < cuts[2].size(); ++k) {
        Extent e{{cuts[0][i], cuts[1][j], cuts[2][k]},
                 {cuts[0][i + 1] - cuts[0][i], cuts[1][j + 1] - cuts[1][j], cuts[2][k + 1] - cuts[2][k]}};
        if (random() % 5 == 0) continue;  // a hole
        if (random() % 3 == 0)            // shrunk inside its box
          for (std::size_t a = 0; a < 3; ++a) {
            const auto cut = static_cast<std::int64_t>(random() % static_cast<std::uint64_t>(e.count[a]));
            e.offset[a] += cut / 2;
            e.count[a] -= cut;
          }
        int owner = static_cast<int>(random() % static_cast<unsigned>(ranks));
        if (owner == idle) owner = (owner + 1) % ranks;
        lists[static_cast<std::size_t>(owner)].push_back(e);
      }
  for (auto& list : lists) std::shuffle(list.begin(), list.end(), random);
  return lists;
}

// Random extents anywhere (overlapping, some empty, now and then the whole
// volume or one voxel); now and then a rank with none.
std::vector<std::vector<Extent>> random_read_extents(std::mt19937_64& random, int ranks) {
  std::vector<std::vector<Extent>> lists(static_cast<std::size_t>(ranks));
  const int idle = ranks > 1 && random() % 2 ? static_cast<int>(random() % static_cast<unsigned>(ranks)) : -1;
  for (int r = 0; r < ranks; ++r) {
    if (r == idle) continue;
    const int count = 1 + static_cast<int>(random() % 6);
    for (int n = 0; n < count; ++n) {
      Extent e;
      const auto kind = random() % 8;
      if (kind == 0) {
        e = Extent{{0, 0, 0}, kDims};
      } else {
        for (std::size_t a = 0; a < 3; ++a) {
          e.offset[a] = static_cast<std::int64_t>(random() % static_cast<std::uint64_t>(kDims[a]));
          const auto room = static_cast<std::uint64_t>(kDims[a] - e.offset[a]);
          e.count[a] = kind == 1 ? 1 : kind == 2 && a == 1 ? 0 : static_cast<std::int64_t>(1 + random() % room);
        }
      }
      lists[static_cast<std::size_t>(r)].push_back(e);
    }
  }
  return lists;
}

// The hints of one twophase configuration of the volume sweep.
std::vector<std::string> volume_hints(std::mt19937_64& random, int size, const std::string& partition,
                                      const std::string& exchange, int number) {
  static const char* buffers[] = {"7", "100", "4096", "16M"};
  static const char* locks[] = {"16", "64", "24"};
  std::vector<std::string> hints = {"partition=" + partition,
                                    "exchange=" + exchange,
                                    "ds=" + std::string(kSieving[number % 3]),
                                    "cb_buffer_size=" + std::string(buffers[number % 4]),
                                    "lock_size=" + std::string(locks[random() % 3]),
                                    "io_servers=" + std::to_string(1 + random() % 3),
                                    "fs_profile=" + std::string(random() % 2 ? "lustre" : "gpfs")};
  const int nodes = number % 4;
  static const char* aggregation[] = {"enable", "automatic", "disable"};
  hints.push_back(std::string("cb_read=") + aggregation[random() % 3]);
  hints.push_back(std::string("cb_write=") + aggregation[random() % 3]);
  if (nodes == 0)
    hints.push_back("cb_nodes=1");
  else if (nodes == 1)
    hints.push_back("cb_nodes=" + std::to_string(size));
  else if (nodes == 2)
    hints.push_back("cb_nodes=" + std::to_string(size + 3));
  else
    hints.push_back("cb_config=" + std::to_string(size - 1) + (size > 2 ? ",0" : ""));
  return hints;
}

class TwoPhaseVolume : public TwoPhaseFixture {
 protected:
  // Creates dir/name/ on rank 0 (each backend writes "v.nhdr" in its own
  // folder, so the headers, which name the data file, can be compared).
  std::string folder(const std::string& name) {
    if (comm_.rank() == 0) std::filesystem::create_directories(dir_.path() / name);
    comm_.barrier();
    return dir_ / (name + "/v.nhdr");
  }

  // Writes the calls' extents with one backend; a barrier orders the calls.
  using Values = std::vector<std::vector<std::vector<std::byte>>>;  // per call, per extent
  void write_volume(const std::string& backend, const std::string& header, const Volume& volume,
                    const std::vector<std::vector<Extent>>& calls, const Values& values,
                    const std::vector<std::string>& hints) {
    VolumeInfo info;
    info.dims = kDims;
    info.dtype = volume.dtype;
    info.byte_order = volume.order;
    auto writer = create_writer(backend, {header, info, false}, comm_, Hints::parse(hints));
    for (std::size_t call = 0; call < calls.size(); ++call) {
      std::vector<const void*> pointers;
      for (const auto& v : values[call]) pointers.push_back(v.data());
      writer->write_all(calls[call], pointers);
      comm_.barrier();
    }
    writer->close();
  }

  // Reads this rank's extents with read_all and compares with the model.
  void check_volume_reads(const std::string& backend, const std::string& header, const std::vector<Extent>& extents,
                          const Volume& volume, const std::vector<std::byte>& model,
                          const std::vector<std::string>& hints, const std::string& what) {
    const std::size_t size = dtype_size(volume.dtype);
    auto reader = open_reader(backend, {header, {}}, comm_, Hints::parse(hints));
    EXPECT_EQ(reader->info().dims, kDims) << what;
    EXPECT_EQ(reader->info().dtype, volume.dtype) << what;
    std::vector<std::vector<std::byte>> buffers;
    std::vector<void*> pointers;
    for (const auto& e : extents) {
      buffers.emplace_back(static_cast<std::size_t>(e.voxels()) * size + 1, std::byte{0xEE});
      pointers.push_back(buffers.back().data());
    }
    reader->read_all(extents, pointers);
    reader->close();
    for (std::size_t n = 0; n < extents.size(); ++n) {
      const Extent& e = extents[n];
      std::size_t i = 0;
      for (std::int64_t z = e.offset[0]; z < e.offset[0] + e.count[0]; ++z)
        for (std::int64_t y = e.offset[1]; y < e.offset[1] + e.count[1]; ++y)
          for (std::int64_t x = e.offset[2]; x < e.offset[2] + e.count[2]; ++x, ++i)
            if (std::memcmp(buffers[n].data() + i * size, model.data() + voxel_index(z, y, x) * size, size) != 0) {
              std::size_t wrong = 0;
              for (std::size_t j = i; j < static_cast<std::size_t>(e.voxels()); ++j) {
                const std::int64_t jz = e.offset[0] + static_cast<std::int64_t>(j) / (e.count[1] * e.count[2]);
                const std::int64_t jy = e.offset[1] + static_cast<std::int64_t>(j) / e.count[2] % e.count[1];
                const std::int64_t jx = e.offset[2] + static_cast<std::int64_t>(j) % e.count[2];
                const auto* want = model.data() + voxel_index(jz, jy, jx) * size;
                wrong += std::memcmp(buffers[n].data() + j * size, want, size) != 0;
              }
              ADD_FAILURE() << backend << " read_all of extent " << n << " of " << extents.size() << ", "
                            << to_string(e) << ", differs at voxel (" << z << ", " << y << ", " << x << ") and "
                            << wrong - 1 << " more (first byte read " << std::to_integer<int>(buffers[n][i * size])
                            << ", expected " << std::to_integer<int>(model[voxel_index(z, y, x) * size])
                            << "): " << what;
              return;
            }
      EXPECT_EQ(buffers[n].back(), std::byte{0xEE})
          << backend << " wrote past the buffer of " << to_string(e) << ": " << what;
    }
  }
};

TEST_F(TwoPhaseVolume, RandomExtentListsMatchPosixAndMpiio) {
  const std::uint64_t seed = base_seed() + 1;
  std::mt19937_64 random(seed);
  const ByteOrder swapped = native_byte_order() == ByteOrder::little ? ByteOrder::big : ByteOrder::little;
  const Volume volumes[] = {{DType::u8, ByteOrder::little},    {DType::i16, swapped}, {DType::u16, native_byte_order()},
                            {DType::f32, native_byte_order()}, {DType::i64, swapped}, {DType::f64, swapped}};
  int number = 0;
  for (const Volume& volume : volumes) {
    const std::size_t size = dtype_size(volume.dtype);
    const std::string kind = std::string(dtype_name(volume.dtype)) + " " + std::string(byte_order_name(volume.order));
    // Two calls: the second may overwrite what the first wrote.
    std::vector<std::vector<Extent>> calls;
    Values values;  // this rank's
    std::vector<std::byte> model(static_cast<std::size_t>(kDims[0] * kDims[1] * kDims[2]) * size, std::byte{0});
    for (int call = 0; call < 2; ++call) {
      const auto lists = random_extents(random, comm_.size());
      const std::uint64_t salt = random();
      calls.push_back(lists[static_cast<std::size_t>(comm_.rank())]);
      values.emplace_back();
      for (int r = 0; r < comm_.size(); ++r)
        for (const auto& e : lists[static_cast<std::size_t>(r)]) {
          std::vector<std::byte> v(static_cast<std::size_t>(e.voxels()) * size);
          std::size_t i = 0;
          for (std::int64_t z = e.offset[0]; z < e.offset[0] + e.count[0]; ++z)
            for (std::int64_t y = e.offset[1]; y < e.offset[1] + e.count[1]; ++y)
              for (std::int64_t x = e.offset[2]; x < e.offset[2] + e.count[2]; ++x, ++i) {
                store_value(volume.dtype, v.data() + i * size, voxel_index(z, y, x), salt);
                std::memcpy(model.data() + voxel_index(z, y, x) * size, v.data() + i * size, size);
              }
          if (r == comm_.rank()) values.back().push_back(std::move(v));
        }
    }
    // The model's bytes as the file holds them.
    std::vector<std::byte> file_bytes = model;
    if (volume.order != native_byte_order())
      for (auto at = file_bytes.begin(); at != file_bytes.end(); at += static_cast<std::ptrdiff_t>(size))
        std::reverse(at, at + static_cast<std::ptrdiff_t>(size));

    const std::string stem = std::string(dtype_name(volume.dtype));
    const std::string posix = folder(stem + "-posix"), mpiio = folder(stem + "-mpiio");
    write_volume("posix", posix, volume, calls, values, {});
    write_volume("mpiio", mpiio, volume, calls, values, {});
    const auto posix_data = slurp(data_path_for_header(posix));
    const auto posix_header = slurp(posix);
    EXPECT_EQ(difference(posix_data, file_bytes), "") << "posix differs from the model (the test is wrong): " << kind;
    EXPECT_EQ(difference(slurp(data_path_for_header(mpiio)), posix_data), "") << "mpiio differs from posix: " << kind;
    if (!everyone_passed(comm_)) return;

    for (const char* partition : kPartitions)
      for (const char* exchange : kExchanges) {
        ++number;
        const auto hints = volume_hints(random, comm_.size(), partition, exchange, number);
        std::string what =
            kind + ", seed " + std::to_string(seed) + " on " + std::to_string(comm_.size()) + " rank(s), hints";
        for (const auto& hint : hints) what += " " + hint;
        const std::string ours = folder(stem + "-twophase-" + std::to_string(number));
        write_volume("twophase", ours, volume, calls, values, hints);
        EXPECT_EQ(difference(slurp(data_path_for_header(ours)), posix_data), "")
            << "twophase data differ from posix and mpiio: " << what;
        EXPECT_EQ(slurp(ours), posix_header) << "twophase header differs from posix's: " << what;
        // Reads of random, overlapping extents through the three backends.
        const auto reads = random_read_extents(random, comm_.size());
        const auto& mine = reads[static_cast<std::size_t>(comm_.rank())];
        check_volume_reads("twophase", ours, mine, volume, model, hints, what);
        check_volume_reads("posix", ours, mine, volume, model, {}, what);
        check_volume_reads("mpiio", ours, mine, volume, model, {}, what);
        if (!everyone_passed(comm_)) return;
      }
  }
}

TEST_F(TwoPhaseVolume, RefusalsReachEveryRankAndLeaveNothingBehind) {
  VolumeInfo info;
  info.dims = kDims;
  info.dtype = DType::u16;
  const std::string header = folder("refused");
  comm_.barrier();
  const auto before = std::distance(std::filesystem::directory_iterator(dir_.path() / "refused"), {});
  const std::string missing = "cb_config=0," + std::to_string(comm_.size());
  EXPECT_THROW(create_writer("twophase", {header, info, false}, comm_, Hints::parse({missing})), Error);
  EXPECT_THROW(create_writer("twophase", {header, info, false}, comm_, Hints::parse({"partition=diagonal"})), Error);
  EXPECT_THROW(create_writer("twophase", {header, info, false}, comm_, Hints::parse({"no_such_hint=1"})), Error);
  comm_.barrier();
  EXPECT_EQ(std::distance(std::filesystem::directory_iterator(dir_.path() / "refused"), {}), before)
      << "a refused writer left files behind";
  // A good volume, then a reader refused for the same reasons.
  write_volume("posix", header, {DType::u16, ByteOrder::little}, {{}}, {{}}, {});
  EXPECT_THROW(open_reader("twophase", {header, {}}, comm_, Hints::parse({missing})), Error);
  EXPECT_THROW(open_reader("twophase", {header, {}}, comm_, Hints::parse({"ds=sometimes"})), Error);
  auto reader =
      open_reader("twophase", {header, {}}, comm_, Hints::parse({"cb_nodes=" + std::to_string(comm_.size() + 3)}));
  EXPECT_NE(reader->implementation().find("clamped"), std::string::npos) << reader->implementation();
  reader->close();
}

}  // namespace
