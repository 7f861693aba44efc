// SPDX-License-Identifier: MIT
// What every backend must do, whatever its format: round-trip every dtype in
// both byte orders through extents that touch every face of a volume whose
// sizes divide by nothing, map where it can, refuse what it must.
// Run as: volseg_conformance_tests --backend=NAME (under mpirun).
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "support/temp_dir.hpp"
#include "volseg/io/error.hpp"
#include "volseg/io/nrrd.hpp"
#include "volseg/io/registry.hpp"
#include "volseg/segment/brick_layout.hpp"

namespace volseg::testing {
extern std::vector<std::string> arguments;
}

using namespace volseg;
using namespace volseg::io;

namespace {

std::string backend_name() {
  for (const auto& argument : volseg::testing::arguments)
    if (argument.rfind("--backend=", 0) == 0) return argument.substr(10);
  return "posix";
}

// Backend hints from --hint=key=value arguments (twophase variants).
Hints backend_hints() {
  std::vector<std::string> items;
  for (const auto& argument : volseg::testing::arguments)
    if (argument.rfind("--hint=", 0) == 0) items.push_back(argument.substr(7));
  return Hints::parse(items);
}

const Index3 kDims{13, 17, 19};

// The value every backend must store at (z, y, x), in dtype.
double expected_value(DType dtype, std::int64_t z, std::int64_t y, std::int64_t x) {
  double v = static_cast<double>((z * 131 + y * 31 + x * 7) % 200);
  if (dtype == DType::i8 || dtype == DType::i16 || dtype == DType::i32 || dtype == DType::i64) v -= 100;
  if (dtype_is_float(dtype)) v += 0.25;
  return v;
}

void store(DType dtype, void* buffer, std::int64_t i, double v) {
  switch (dtype) {
    case DType::i8:
      static_cast<std::int8_t*>(buffer)[i] = static_cast<std::int8_t>(v);
      break;
    case DType::u8:
      static_cast<std::uint8_t*>(buffer)[i] = static_cast<std::uint8_t>(v);
      break;
    case DType::u32:
      static_cast<std::uint32_t*>(buffer)[i] = static_cast<std::uint32_t>(v);
      break;
    case DType::i64:
      static_cast<std::int64_t*>(buffer)[i] = static_cast<std::int64_t>(v);
      break;
    case DType::u64:
      static_cast<std::uint64_t*>(buffer)[i] = static_cast<std::uint64_t>(v);
      break;
    case DType::i16:
      static_cast<std::int16_t*>(buffer)[i] = static_cast<std::int16_t>(v);
      break;
    case DType::u16:
      static_cast<std::uint16_t*>(buffer)[i] = static_cast<std::uint16_t>(v);
      break;
    case DType::i32:
      static_cast<std::int32_t*>(buffer)[i] = static_cast<std::int32_t>(v);
      break;
    case DType::f32:
      static_cast<float*>(buffer)[i] = static_cast<float>(v);
      break;
    case DType::f64:
      static_cast<double*>(buffer)[i] = v;
      break;
  }
}

double load(DType dtype, const void* buffer, std::int64_t i) {
  switch (dtype) {
    case DType::i8:
      return static_cast<const std::int8_t*>(buffer)[i];
    case DType::u8:
      return static_cast<const std::uint8_t*>(buffer)[i];
    case DType::u32:
      return static_cast<const std::uint32_t*>(buffer)[i];
    case DType::i64:
      return static_cast<double>(static_cast<const std::int64_t*>(buffer)[i]);
    case DType::u64:
      return static_cast<double>(static_cast<const std::uint64_t*>(buffer)[i]);
    case DType::i16:
      return static_cast<const std::int16_t*>(buffer)[i];
    case DType::u16:
      return static_cast<const std::uint16_t*>(buffer)[i];
    case DType::i32:
      return static_cast<const std::int32_t*>(buffer)[i];
    case DType::f32:
      return static_cast<const float*>(buffer)[i];
    case DType::f64:
      return static_cast<const double*>(buffer)[i];
  }
  return 0;
}

std::vector<std::byte> expected_extent(DType dtype, const Extent& e) {
  std::vector<std::byte> values(static_cast<std::size_t>(e.voxels()) * dtype_size(dtype));
  std::int64_t i = 0;
  for (std::int64_t z = e.offset[0]; z < e.offset[0] + e.count[0]; ++z)
    for (std::int64_t y = e.offset[1]; y < e.offset[1] + e.count[1]; ++y)
      for (std::int64_t x = e.offset[2]; x < e.offset[2] + e.count[2]; ++x)
        store(dtype, values.data(), i++, expected_value(dtype, z, y, x));
  return values;
}

// Extents touching every face, corners, single rows and runs, the interior.
std::vector<Extent> probe_extents() {
  const auto [nz, ny, nx] = kDims;
  return {
      {{0, 0, 0}, kDims},                                               // whole
      {{0, 0, 0}, {1, ny, nx}}, {{nz - 1, 0, 0}, {1, ny, nx}},          // z faces
      {{0, 0, 0}, {nz, 1, nx}}, {{0, ny - 1, 0}, {nz, 1, nx}},          // y faces
      {{0, 0, 0}, {nz, ny, 1}}, {{0, 0, nx - 1}, {nz, ny, 1}},          // x faces
      {{0, 0, 0}, {1, 1, 1}},   {{nz - 1, ny - 1, nx - 1}, {1, 1, 1}},  // corners
      {{3, 4, 5}, {7, 6, 9}},                                           // interior box
      {{6, 2, 3}, {1, 1, 11}},                                          // part of a row
      {{2, 0, 0}, {5, 3, nx}},                                          // whole rows, several planes
      {{4, 4, 4}, {0, 5, 5}},                                           // empty
  };
}

class Conformance : public ::testing::Test {
 protected:
  Conformance() : comm_(MPI_COMM_WORLD), dir_(MPI_COMM_WORLD) {}
  std::string path(const std::string& stem) const { return dir_ / (stem + extension_); }

  // Every rank writes the bricks it is dealt (cyclic) of an awkward layout.
  void write_volume(const std::string& file, DType dtype, ByteOrder order, bool mapped = false) {
    VolumeInfo info;
    info.dims = kDims;
    info.dtype = dtype;
    info.byte_order = order;
    auto writer = create_writer(backend_, {file, info, false}, comm_, backend_hints());
    segment::BrickLayout layout(kDims, {5, 6, 7});
    const auto bricks = segment::assign_bricks(layout.count(), comm_.rank(), comm_.size(), segment::Assignment::cyclic);
    if (writer->capabilities().collective) {  // ranks hold different numbers of bricks: one write_all
      std::vector<Extent> extents;
      std::vector<std::vector<std::byte>> values;
      std::vector<const void*> pointers;
      for (auto b : bricks) {
        extents.push_back(layout.brick(b));
        values.push_back(expected_extent(dtype, extents.back()));
      }
      for (const auto& v : values) pointers.push_back(v.data());
      writer->write_all(extents, pointers);
      writer->close();
      return;
    }
    for (auto b : bricks) {
      Extent e = layout.brick(b);
      auto values = expected_extent(dtype, e);
      if (mapped && writer->capabilities().map) {
        Mapping m = writer->map(e);
        const std::size_t size = dtype_size(dtype);
        for (const io::Run& run : m.runs()) {
          std::memcpy(run.data, values.data() + run.index * static_cast<std::int64_t>(size),
                      static_cast<std::size_t>(run.count) * size);
          if (m.needs_swap())
            for (std::int64_t i = 0; i < run.count; ++i)
              std::reverse(run.data + i * static_cast<std::int64_t>(size),
                           run.data + (i + 1) * static_cast<std::int64_t>(size));
        }
        m.release();
      } else {
        writer->write(e, values.data());
      }
    }
    writer->close();
  }

  // Rank 0 writes extent; collective backends need every rank in the call.
  void write_from_rank0(VolumeWriter& writer, const Extent& extent, const void* values) {
    if (!writer.capabilities().collective) {
      if (comm_.rank() == 0) writer.write(extent, values);
      return;
    }
    std::vector<Extent> extents;
    std::vector<const void*> pointers;
    if (comm_.rank() == 0) {
      extents.push_back(extent);
      pointers.push_back(values);
    }
    writer.write_all(extents, pointers);
  }

  void expect_reads_back(const std::string& file, DType dtype) {
    auto reader = open_reader(backend_, {file, {}}, comm_, backend_hints());
    ASSERT_EQ(reader->info().dims, kDims);
    ASSERT_EQ(reader->info().dtype, dtype);
    for (const Extent& e : probe_extents()) {
      std::vector<std::byte> got(static_cast<std::size_t>(e.voxels()) * dtype_size(dtype) + 1);
      reader->read(e, got.data());
      got.pop_back();
      auto want = expected_extent(dtype, e);
      for (std::int64_t i = 0; i < e.voxels(); ++i)
        ASSERT_EQ(load(dtype, got.data(), i), load(dtype, want.data(), i)) << to_string(e) << " value " << i;
    }
    reader->close();
  }

  Comm comm_;
  volseg::testing::SharedTempDir dir_;
  std::string backend_ = backend_name();
  std::string extension_ = builtin_registry().get(backend_).extension;
};

TEST_F(Conformance, EveryDtypeAndByteOrderRoundTrips) {
  for (DType dtype : {DType::i8, DType::u8, DType::i16, DType::u16, DType::i32, DType::u32, DType::i64, DType::u64,
                      DType::f32, DType::f64}) {
    for (ByteOrder order : {ByteOrder::little, ByteOrder::big}) {
      SCOPED_TRACE(std::string(dtype_name(dtype)) + " " + std::string(byte_order_name(order)));
      std::string file =
          path(std::string("v_") + std::string(dtype_name(dtype)) + "_" + std::string(byte_order_name(order)));
      write_volume(file, dtype, order);
      expect_reads_back(file, dtype);
      if (extension_ == ".nhdr" && comm_.rank() == 0 && dtype_size(dtype) > 1) {
        // The bytes on disk are in the order the header says.
        std::ifstream raw(data_path_for_header(file), std::ios::binary);
        std::vector<unsigned char> first(dtype_size(dtype));
        raw.seekg(static_cast<std::streamoff>(dtype_size(dtype)));  // voxel (0,0,1) = 7 (+0.25, -100)
        raw.read(reinterpret_cast<char*>(first.data()), static_cast<std::streamsize>(first.size()));
        std::vector<unsigned char> native(dtype_size(dtype));
        store(dtype, native.data(), 0, expected_value(dtype, 0, 0, 1));
        if (order != native_byte_order()) std::reverse(native.begin(), native.end());
        EXPECT_EQ(first, native);
      }
    }
  }
}

TEST_F(Conformance, MappedWritesAndReadsAgreeWithPlainOnes) {
  for (ByteOrder order : {ByteOrder::little, ByteOrder::big}) {
    std::string file = path(std::string("mapped_") + std::string(byte_order_name(order)));
    write_volume(file, DType::f32, order, /*mapped=*/true);
    expect_reads_back(file, DType::f32);
    auto reader = open_reader(backend_, {file, {}}, comm_, backend_hints());
    if (!reader->capabilities().map) {
      EXPECT_THROW(reader->map(Extent{{0, 0, 0}, {1, 1, 1}}), Error);
      reader->close();
      continue;
    }
    for (const Extent& e : probe_extents()) {
      std::vector<std::byte> plain(static_cast<std::size_t>(e.voxels()) * 4);
      reader->read(e, plain.data());
      Mapping m = reader->map(e);
      std::int64_t covered = 0;
      for (const io::Run& run : m.runs()) {
        for (std::int64_t i = 0; i < run.count; ++i) {
          std::uint32_t bits;
          std::memcpy(&bits, run.data + 4 * i, 4);
          if (m.needs_swap()) bits = __builtin_bswap32(bits);
          float value;
          std::memcpy(&value, &bits, 4);
          ASSERT_EQ(value, load(DType::f32, plain.data(), run.index + i)) << to_string(e);
        }
        covered += run.count;
      }
      EXPECT_EQ(covered, e.voxels());
      m.release();
    }
    reader->close();
  }
}

TEST_F(Conformance, ReadAllWithUnevenListsAndPrefetchHints) {
  std::string file = path("read_all");
  write_volume(file, DType::i16, ByteOrder::big);
  auto reader = open_reader(backend_, {file, {}}, comm_, backend_hints());
  auto probes = probe_extents();
  std::vector<Extent> mine(
      probes.begin(),
      probes.begin() + std::min<std::ptrdiff_t>(comm_.rank() * 4, static_cast<std::ptrdiff_t>(probes.size())));
  std::vector<std::vector<std::byte>> buffers;
  std::vector<void*> pointers;
  for (const auto& e : mine) {
    reader->will_need(e);
    buffers.emplace_back(static_cast<std::size_t>(e.voxels()) * 2);
    pointers.push_back(buffers.back().data());
  }
  reader->read_all(mine, pointers);
  for (std::size_t k = 0; k < mine.size(); ++k)
    EXPECT_EQ(buffers[k], expected_extent(DType::i16, mine[k])) << to_string(mine[k]);
  EXPECT_GE(reader->capabilities().prefetch_depth, 0);
  reader->close();
}

// One read_all of many bricks (PnetCDF makes it one collective call: a
// request per brick, one wait): ranks hold different numbers of bricks,
// rank 0 none when there are several, and empty extents among them; the
// buffers lie apart, in an order other than the list's. Every voxel's value
// is its own index, so a brick given another's data, or a shifted one, fails.
TEST_F(Conformance, ReadAllOfManyBricksGivesEachBrickItsOwnValues) {
  const std::string file = path("many_bricks");
  const Extent whole{{0, 0, 0}, kDims};
  std::vector<float> index(static_cast<std::size_t>(whole.voxels()));
  for (std::size_t i = 0; i < index.size(); ++i) index[i] = static_cast<float>(i);
  VolumeInfo info;
  info.dims = kDims;
  info.dtype = DType::f32;
  info.byte_order = ByteOrder::little;
  auto writer = create_writer(backend_, {file, info, false}, comm_, backend_hints());
  write_from_rank0(*writer, whole, index.data());
  writer->close();

  auto reader = open_reader(backend_, {file, {}}, comm_, backend_hints());
  segment::BrickLayout layout(kDims, {4, 5, 6});  // 64 bricks, some cut by the volume's faces
  const int rank = comm_.rank();
  const std::int64_t count = comm_.size() == 1 ? 20 : rank * 5;
  std::vector<Extent> mine;
  for (std::int64_t k = 0; k < count; ++k) {
    mine.push_back(layout.brick((rank * 7 + k * 11) % layout.count()));
    if (k % 4 == 1) mine.push_back(Extent{{1, 2, 3}, {0, 0, 0}});
  }
  std::size_t total = 0;
  for (const auto& e : mine) total += static_cast<std::size_t>(e.voxels()) + 1;  // a guard value after each
  std::vector<float> memory(total, -1.0f);
  std::vector<void*> pointers(mine.size());
  std::vector<std::size_t> at(mine.size());
  for (std::size_t k = mine.size(), next = 0; k-- > 0;) {  // the last extent's buffer first
    at[k] = next;
    pointers[k] = memory.data() + next;
    next += static_cast<std::size_t>(mine[k].voxels()) + 1;
  }
  reader->read_all(mine, pointers);
  // Counted, not asserted: a rank that left early would leave the others in close().
  std::int64_t wrong = 0;
  std::string first;
  for (std::size_t k = 0; k < mine.size(); ++k) {
    const Extent& e = mine[k];
    const float* got = memory.data() + at[k];
    std::int64_t i = 0;
    for (std::int64_t z = e.offset[0]; z < e.offset[0] + e.count[0]; ++z)
      for (std::int64_t y = e.offset[1]; y < e.offset[1] + e.count[1]; ++y)
        for (std::int64_t x = e.offset[2]; x < e.offset[2] + e.count[2]; ++x, ++i)
          if (got[i] != static_cast<float>((z * kDims[1] + y) * kDims[2] + x) && wrong++ == 0)
            first = "brick " + std::to_string(k) + " " + to_string(e) + " value " + std::to_string(i) + " is " +
                    std::to_string(got[i]);
    if (got[e.voxels()] != -1.0f && wrong++ == 0) first = "past brick " + std::to_string(k) + " " + to_string(e);
  }
  EXPECT_EQ(wrong, 0) << first;
  // Every rank the whole volume in one call: the ranks' extents overlap.
  std::vector<float> everything(index.size(), -1.0f);
  void* into = everything.data();
  reader->read_all({&whole, 1}, {&into, 1});
  EXPECT_EQ(everything, index);
  reader->close();
}

TEST_F(Conformance, RefusesExtentsOutsideTheVolume) {
  std::string file = path("outside");
  write_volume(file, DType::u8, ByteOrder::little);
  auto reader = open_reader(backend_, {file, {}}, comm_, backend_hints());
  std::vector<std::byte> buffer(64 * 64 * 64);
  EXPECT_THROW(reader->read({{0, 0, 0}, {kDims[0] + 1, 1, 1}}, buffer.data()), Error);
  EXPECT_THROW(reader->read({{-1, 0, 0}, {1, 1, 1}}, buffer.data()), Error);
  EXPECT_THROW(reader->read({{0, 0, kDims[2]}, {1, 1, 1}}, buffer.data()), Error);
  reader->close();
}

// The message a call throws ("" when it throws none).
template <class Call>
std::string error_of(Call&& call) {
  try {
    call();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

// The public calls check their arguments in the base class, once, so every
// backend refuses a bad call with the same words.
TEST_F(Conformance, EveryBackendRefusesBadCallsWithOneMessage) {
  const std::string file = path("checked");
  write_volume(file, DType::u8, ByteOrder::little);
  const Extent outside{{0, 0, kDims[2] - 1}, {1, 1, 2}};
  const std::string beyond = "extent " + to_string(outside) + " is outside the volume 13x17x19";
  std::vector<std::byte> buffer(64);
  void* pointer = buffer.data();
  auto reader = open_reader(backend_, {file, {}}, comm_, backend_hints());
  EXPECT_EQ(error_of([&] { reader->read(outside, buffer.data()); }), "read: " + beyond);
  EXPECT_EQ(error_of([&] { reader->will_need(outside); }), "will_need: " + beyond);
  EXPECT_EQ(error_of([&] {
              reader->read({{0, 0, 0}, {1, 1, 1}}, nullptr);
            }),
            "read: no buffer for extent " + to_string(Extent{{0, 0, 0}, {1, 1, 1}}));
  // Collective, but refused on every rank alike before any rank joins a call.
  EXPECT_EQ(error_of([&] { reader->read_all({&outside, 1}, {&pointer, 1}); }), "read_all: " + beyond);
  EXPECT_EQ(error_of([&] { reader->read_all({&outside, 1}, {}); }), "read_all: 1 extents and 0 buffers");
  if (reader->capabilities().map)
    EXPECT_EQ(error_of([&] { reader->map(outside); }), "map: " + beyond);
  else
    EXPECT_EQ(error_of([&] { reader->map(outside); }), "backend " + reader->backend_name() + " cannot map extents");
  if (reader->capabilities().read_any)
    EXPECT_EQ(error_of([&] { reader->read_any({&outside, 1}); }), "read_any: " + beyond);
  else
    EXPECT_NE(error_of([&] {
                reader->read_any({&outside, 1});
              }).find("reads extents in order only"),
              std::string::npos);
  reader->close();
  EXPECT_EQ(error_of([&] {
              reader->read({{0, 0, 0}, {1, 1, 1}}, buffer.data());
            }),
            "read after close (backend " + reader->backend_name() + ")");

  VolumeInfo info;
  info.dims = kDims;
  info.dtype = DType::u8;
  auto writer = create_writer(backend_, {path("checked_out"), info, false}, comm_, backend_hints());
  const void* source = buffer.data();
  EXPECT_EQ(error_of([&] { writer->write(outside, buffer.data()); }), "write: " + beyond);
  EXPECT_EQ(error_of([&] { writer->write_all({&outside, 1}, {&source, 1}); }), "write_all: " + beyond);
  write_from_rank0(*writer, info.whole(), std::vector<std::uint8_t>(static_cast<std::size_t>(info.voxels())).data());
  writer->close();
  EXPECT_EQ(error_of([&] {
              writer->write({{0, 0, 0}, {1, 1, 1}}, buffer.data());
            }),
            "write after close (backend " + writer->backend_name() + ")");
  EXPECT_EQ(error_of([&] { writer->close(); }), "close after close (backend " + writer->backend_name() + ")");
}

TEST_F(Conformance, MissingInputFailsOnEveryRank) {
  EXPECT_THROW(open_reader(backend_, {path("does_not_exist"), {}}, comm_, backend_hints()), Error);
}

TEST_F(Conformance, ExistingOutputNeedsOverwrite) {
  std::string file = path("exists");
  write_volume(file, DType::u8, ByteOrder::little);
  VolumeInfo info;
  info.dims = kDims;
  info.dtype = DType::u8;
  EXPECT_THROW(create_writer(backend_, {file, info, false}, comm_, backend_hints()), Error);
  auto writer = create_writer(backend_, {file, info, true}, comm_, backend_hints());
  std::vector<std::uint8_t> ones(static_cast<std::size_t>(info.voxels()), 1);
  write_from_rank0(*writer, info.whole(), ones.data());
  writer->close();
  auto reader = open_reader(backend_, {file, {}}, comm_, backend_hints());
  std::vector<std::uint8_t> got(ones.size());
  reader->read(info.whole(), got.data());
  EXPECT_EQ(got, ones);
  reader->close();
}

TEST_F(Conformance, AbandonedOutputLeavesNothingBehind) {
  comm_.barrier();
  auto before = std::distance(std::filesystem::directory_iterator(dir_.path()), {});
  {
    VolumeInfo info;
    info.dims = kDims;
    info.dtype = DType::f32;
    auto writer = create_writer(backend_, {path("abandoned"), info, false}, comm_, backend_hints());
    auto values = expected_extent(DType::f32, {{0, 0, 0}, {1, kDims[1], kDims[2]}});
    write_from_rank0(*writer, {{0, 0, 0}, {1, kDims[1], kDims[2]}}, values.data());
    // destroyed without close(): a failed job
  }
  comm_.barrier();
  auto after = std::distance(std::filesystem::directory_iterator(dir_.path()), {});
  EXPECT_EQ(before, after);
  EXPECT_FALSE(std::filesystem::exists(path("abandoned")));
}

// A reader that refuses a file after opening it closes it again: a
// long-lived process (the GUI) that meets many bad files must not run out of
// descriptors. NetCDF readers refuse a variable the file lacks, raw ones a
// data file shorter than its header says.
TEST_F(Conformance, RefusedInputIsClosed) {
  auto open_descriptors = [] { return std::distance(std::filesystem::directory_iterator("/proc/self/fd"), {}); };
  const std::string file = path("refused");
  write_volume(file, DType::f32, ByteOrder::little);
  Hints hints = backend_hints();
  if (builtin_registry().get(backend_).list_variables) {
    hints.set("var", "no_such_variable");
  } else if (comm_.rank() == 0) {
    std::filesystem::resize_file(data_path_for_header(file), 100);
  }
  comm_.barrier();
  const auto before = open_descriptors();
  for (int attempt = 0; attempt < 3; ++attempt) EXPECT_THROW(open_reader(backend_, {file, {}}, comm_, hints), Error);
  EXPECT_EQ(open_descriptors(), before);
}

TEST_F(Conformance, UnknownHintIsRefused) {
  Hints hints = Hints::parse({"no_such_hint=1"});
  EXPECT_THROW(open_reader(backend_, {path("whatever"), {}}, comm_, hints), Error);
}

}  // namespace
