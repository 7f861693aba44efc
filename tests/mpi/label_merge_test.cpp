// SPDX-License-Identifier: MIT
// detail::merge_objects on 1-4 ranks, from hand-made parts and joins: each
// rank builds its own share of one known input, and the merged objects (how
// many, their ids, voxels, boxes, centroid sums, values and the summary's
// figures) must come out the same whatever the number of ranks and however
// the parts are dealt to them.
//
// The volume is 8 x 4 x 4 (z, y, x); each part is a box of voxels, placed in
// one of four slots, and a layout deals the slots to the ranks:
//   A  A0 (slot 0) + A1 (slot 1), joined twice: across ranks from 2 ranks
//   B  B0 (slot 0) + B1 (slot 1) + B2 (slot 2): B0 and B2 join only through
//      B1, on a third rank from 3 ranks
//   C  C0 + C1, both in slot 3: one rank only, a join within it
//   D  one voxel, alone (dropped with min_voxels 2)
//   E  E0 (slot 0) + E1 (slot 3): ranks 0 and 3 on 4 ranks, resolved at the
//      top of the tree of ranks
//   F  one part, alone
// Numbered by first voxel: A 0, B 11, D 56, F 64, C 101, E 115.
#include <gtest/gtest.h>
#include <mpi.h>

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "label_merge.hpp"
#include "volseg/io/comm.hpp"
#include "volseg/segment/label.hpp"

using namespace volseg;
using namespace volseg::segment;

namespace {

constexpr io::Index3 kDims{8, 4, 4};

struct Box {
  std::int32_t lo[3], hi[3];  // z, y, x inclusive
};

struct PartSpec {
  const char* name;
  char object;
  int slot;
  Box box;
};

const std::vector<PartSpec> kParts = {
    {"A0", 'A', 0, {{0, 0, 0}, {1, 0, 1}}}, {"A1", 'A', 1, {{2, 0, 0}, {3, 0, 1}}},
    {"B0", 'B', 0, {{0, 2, 3}, {0, 3, 3}}}, {"B1", 'B', 1, {{1, 3, 3}, {4, 3, 3}}},
    {"B2", 'B', 2, {{5, 3, 2}, {5, 3, 3}}}, {"C0", 'C', 3, {{6, 1, 1}, {6, 1, 1}}},
    {"C1", 'C', 3, {{6, 2, 1}, {6, 2, 2}}}, {"D", 'D', 2, {{3, 2, 0}, {3, 2, 0}}},
    {"E0", 'E', 0, {{7, 0, 3}, {7, 1, 3}}}, {"E1", 'E', 3, {{7, 2, 3}, {7, 3, 3}}},
    {"F", 'F', 1, {{4, 0, 0}, {7, 0, 0}}},
};

// Joins (index into kParts): the second part's rank records a join across
// ranks, as the later brick's rank does.
const std::vector<std::pair<int, int>> kJoins = {{0, 1}, {1, 0}, {2, 3}, {3, 4}, {5, 6}, {8, 9}};

// What a part measures: its box's voxels.
ObjectPart measure(const Box& box) {
  ObjectPart part;
  part.first = static_cast<std::uint64_t>((box.lo[0] * kDims[1] + box.lo[1]) * kDims[2] + box.lo[2]);
  for (int a = 0; a < 3; ++a) {
    part.lo[a] = box.lo[a];
    part.hi[a] = box.hi[a];
    if (box.lo[a] == 0 || box.hi[a] == kDims[a] - 1) part.border = 1;
  }
  for (std::int32_t z = box.lo[0]; z <= box.hi[0]; ++z)
    for (std::int32_t y = box.lo[1]; y <= box.hi[1]; ++y)
      for (std::int32_t x = box.lo[2]; x <= box.hi[2]; ++x) {
        ++part.voxels;
        part.sum[0] += static_cast<std::uint64_t>(z);
        part.sum[1] += static_cast<std::uint64_t>(y);
        part.sum[2] += static_cast<std::uint64_t>(x);
      }
  return part;
}

// A part's values: the merge must take the minimum, maximum and sum. Field
// k's are the first's times k + 1, so an object's are too.
ObjectValues values_of(int part, int field = 0) {
  const double f = field + 1;
  return {10.0 * part * f, (10.0 * part + 5) * f, (1.0 + part) * f};
}

enum class Layout { Cyclic, Reversed, AllOnLast };

int owner_of(int slot, Layout layout, int ranks) {
  switch (layout) {
    case Layout::Cyclic:
      return slot % ranks;
    case Layout::Reversed:
      return (3 - slot) % ranks;
    default:
      return ranks - 1;
  }
}

struct Dealt {
  detail::NodeRanges nodes;
  detail::MergeInput<ObjectPart> input;
  std::vector<int> mine;  // kParts index of each local node
};

// This rank's share of the input: its parts in kParts order, nodes numbered
// rank by rank.
Dealt deal(const Comm& comm, Layout layout, std::size_t records) {
  const int ranks = comm.size();
  Dealt dealt;
  std::vector<std::uint64_t> global(kParts.size());
  dealt.nodes.rank_base.assign(static_cast<std::size_t>(ranks) + 1, 0);
  for (int r = 0; r < ranks; ++r) {
    std::uint64_t next = dealt.nodes.rank_base[static_cast<std::size_t>(r)];
    for (std::size_t p = 0; p < kParts.size(); ++p)
      if (owner_of(kParts[p].slot, layout, ranks) == r) global[p] = next++;
    dealt.nodes.rank_base[static_cast<std::size_t>(r) + 1] = next;
  }
  const std::uint64_t base = dealt.nodes.rank_base[static_cast<std::size_t>(comm.rank())];
  auto owner = [&](int p) { return owner_of(kParts[static_cast<std::size_t>(p)].slot, layout, ranks); };
  for (int p = 0; p < static_cast<int>(kParts.size()); ++p) {
    if (owner(p) != comm.rank()) continue;
    dealt.mine.push_back(p);
    dealt.input.parts.push_back(measure(kParts[static_cast<std::size_t>(p)].box));
    for (std::size_t k = 0; k < records; ++k) dealt.input.values.push_back(values_of(p, static_cast<int>(k)));
  }
  for (const auto& [a, b] : kJoins) {
    if (owner(b) != comm.rank()) continue;
    const std::uint64_t local_b = global[static_cast<std::size_t>(b)] - base;
    if (owner(a) == comm.rank()) {
      dealt.input.local_edges.push_back({global[static_cast<std::size_t>(a)] - base, local_b});
    } else {
      dealt.input.cross_edges.push_back({global[static_cast<std::size_t>(a)], local_b});
    }
  }
  return dealt;
}

struct Expected {
  char object;
  std::uint64_t voxels, sum[3];
  std::int32_t lo[3], hi[3];
  std::uint32_t border;
  ObjectValues values;
};

// Every object, by id when nothing is dropped.
const std::vector<Expected> kObjects = {
    {'A', 8, {12, 0, 4}, {0, 0, 0}, {3, 0, 1}, 1, {0, 15, 3}},
    {'B', 8, {20, 23, 23}, {0, 2, 2}, {5, 3, 3}, 1, {20, 45, 12}},
    {'D', 1, {3, 2, 0}, {3, 2, 0}, {3, 2, 0}, 1, {70, 75, 8}},
    {'F', 4, {22, 0, 0}, {4, 0, 0}, {7, 0, 0}, 1, {100, 105, 11}},
    {'C', 3, {18, 5, 4}, {6, 1, 1}, {6, 2, 2}, 0, {50, 65, 13}},
    {'E', 4, {28, 6, 12}, {7, 0, 3}, {7, 3, 3}, 1, {80, 95, 19}},
};

struct Case {
  Layout layout;
  std::uint64_t min_voxels;
  std::size_t records;  // values a part: 0 (none), 1 or several fields
};

std::string describe(const Case& c) {
  const char* layouts[] = {"cyclic", "reversed", "all on the last rank"};
  return std::string(layouts[static_cast<int>(c.layout)]) + ", min_voxels " + std::to_string(c.min_voxels) +
         (c.records != 0 ? ", " + std::to_string(c.records) + " fields" : "");
}

class LabelMerge : public ::testing::TestWithParam<Case> {
 protected:
  LabelMerge() : comm_(MPI_COMM_WORLD) {}
  Comm comm_;
};

TEST_P(LabelMerge, ObjectsAreTheSameOnAnyNumberOfRanks) {
  const Case c = GetParam();
  SCOPED_TRACE(describe(c) + ", " + std::to_string(comm_.size()) + " ranks");
  Dealt dealt = deal(comm_, c.layout, c.records);
  const detail::MergeRules rules{kDims, KeepRule{c.min_voxels}, c.records, true};
  const auto merged = detail::merge_objects(comm_, dealt.nodes, std::move(dealt.input), rules);

  // Kept objects by id, in first-voxel order.
  std::vector<Expected> kept;
  for (const auto& object : kObjects)
    if (object.voxels >= c.min_voxels) kept.push_back(object);
  auto id_of = [&](char object) -> std::uint64_t {
    for (std::size_t i = 0; i < kept.size(); ++i)
      if (kept[i].object == object) return i + 1;
    return 0;
  };
  const bool drops_d = c.min_voxels == 2;
  EXPECT_EQ(id_of('D'), drops_d ? 0u : 3u);
  EXPECT_EQ(id_of('E'), drops_d ? 5u : 6u);

  ASSERT_EQ(merged.ids.size(), dealt.mine.size());
  for (std::size_t n = 0; n < dealt.mine.size(); ++n) {
    const PartSpec& part = kParts[static_cast<std::size_t>(dealt.mine[n])];
    EXPECT_EQ(merged.ids[n], id_of(part.object)) << "part " << part.name;
  }

  const LabelSummary& summary = merged.summary;
  EXPECT_EQ(summary.objects, drops_d ? 5u : 6u);
  EXPECT_EQ(summary.dropped, drops_d ? 1u : 0u);
  EXPECT_EQ(summary.foreground, drops_d ? 27u : 28u);
  EXPECT_EQ(summary.largest, 8u);
  EXPECT_EQ(summary.joins, kJoins.size());
  EXPECT_EQ(summary.boundary_parts, 9u);  // every part but D and F

  // The table: this rank's slice, the slices in rank order cover the ids once.
  const ObjectTable& table = summary.table;
  std::uint64_t rows = table.size(), before = 0, all = 0;
  ASSERT_EQ(MPI_Exscan(&rows, &before, 1, MPI_UINT64_T, MPI_SUM, comm_.get()), MPI_SUCCESS);
  ASSERT_EQ(MPI_Allreduce(&rows, &all, 1, MPI_UINT64_T, MPI_SUM, comm_.get()), MPI_SUCCESS);
  if (comm_.rank() == 0) before = 0;
  EXPECT_EQ(table.first_id, before + 1);
  EXPECT_EQ(all, kept.size());
  for (std::size_t i = 0; i < table.size(); ++i) {
    const std::uint64_t id = table.first_id + i;
    ASSERT_LE(id, kept.size());
    const Expected& want = kept[id - 1];
    const ObjectPart& got = table.part(i);
    SCOPED_TRACE(std::string("object ") + want.object + ", id " + std::to_string(id));
    EXPECT_EQ(got.voxels, want.voxels);
    for (int a = 0; a < 3; ++a) {
      EXPECT_EQ(got.sum[a], want.sum[a]) << "axis " << a;  // the centroid is sum / voxels
      EXPECT_EQ(got.lo[a], want.lo[a]) << "axis " << a;
      EXPECT_EQ(got.hi[a], want.hi[a]) << "axis " << a;
    }
    EXPECT_EQ(got.border, want.border);
    for (std::size_t k = 0; k < c.records; ++k) {
      const double f = static_cast<double>(k + 1);
      EXPECT_EQ(table.values_of(i, k).min, want.values.min * f) << "field " << k;
      EXPECT_EQ(table.values_of(i, k).max, want.values.max * f) << "field " << k;
      EXPECT_EQ(table.values_of(i, k).sum, want.values.sum * f) << "field " << k;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Layouts, LabelMerge,
                         ::testing::Values(Case{Layout::Cyclic, 0, 0}, Case{Layout::Cyclic, 2, 1},
                                           Case{Layout::Reversed, 0, 1}, Case{Layout::Reversed, 2, 0},
                                           Case{Layout::AllOnLast, 2, 1}, Case{Layout::Cyclic, 0, 3},
                                           Case{Layout::Reversed, 2, 2}, Case{Layout::AllOnLast, 0, 3}));

// Without a table the figures and ids are the same, and no rank keeps rows.
TEST(LabelMergeWithoutTable, KeepsNoRows) {
  const Comm comm(MPI_COMM_WORLD);
  Dealt dealt = deal(comm, Layout::Cyclic, 0);
  const detail::MergeRules rules{kDims, KeepRule{}, 0, false};
  const auto merged = detail::merge_objects(comm, dealt.nodes, std::move(dealt.input), rules);
  EXPECT_EQ(merged.summary.objects, 6u);
  EXPECT_EQ(merged.summary.table.size(), 0u);
  for (std::size_t n = 0; n < dealt.mine.size(); ++n)
    EXPECT_NE(merged.ids[n], 0u) << kParts[static_cast<std::size_t>(dealt.mine[n])].name;
}

// 16-byte parts (no table: the objects numbered in their bricks): the same
// ids and figures as the full parts, on every layout, with an object
// dropped and without.
TEST(LabelMergeWithoutTable, CoresNumberAsFullParts) {
  const Comm comm(MPI_COMM_WORLD);
  for (const Layout layout : {Layout::Cyclic, Layout::Reversed, Layout::AllOnLast})
    for (const std::uint64_t min_voxels : {std::uint64_t{0}, std::uint64_t{2}}) {
      SCOPED_TRACE(describe({layout, min_voxels, 0}) + ", " + std::to_string(comm.size()) + " ranks");
      const detail::MergeRules rules{kDims, KeepRule{min_voxels}, 0, false};
      Dealt full = deal(comm, layout, 0);
      detail::MergeInput<PartCore> cores;
      for (std::size_t n = 0; n < full.input.parts.size(); ++n) {
        const ObjectPart& part = full.input.parts[n];
        PartCore core;
        core.first = part.first;
        core.voxels = static_cast<std::uint32_t>(part.voxels);  // a few voxels
        core.border = static_cast<std::uint16_t>(part.border);
        cores.parts.push_back(core);
      }
      cores.local_edges = full.input.local_edges;
      cores.cross_edges = full.input.cross_edges;
      const auto want = detail::merge_objects(comm, full.nodes, std::move(full.input), rules);
      const auto got = detail::merge_objects(comm, full.nodes, std::move(cores), rules);
      EXPECT_EQ(got.ids, want.ids);
      EXPECT_EQ(got.summary.objects, min_voxels == 2 ? 5u : 6u);
      EXPECT_EQ(got.summary.objects, want.summary.objects);
      EXPECT_EQ(got.summary.dropped, want.summary.dropped);
      EXPECT_EQ(got.summary.foreground, want.summary.foreground);
      EXPECT_EQ(got.summary.largest, want.summary.largest);
      EXPECT_EQ(got.summary.joins, want.summary.joins);
      EXPECT_EQ(got.summary.boundary_parts, want.summary.boundary_parts);
    }
}

// A 16-byte part counts past 2^32 voxels, and keeps its flags apart.
TEST(PartCore, CountsPastFourBillionVoxels) {
  PartCore a, b;
  a.first = 7;
  a.voxels = 3'000'000'000u;
  a.border = ObjectPart::touches_boundary;
  b.first = 5;
  b.voxels = 4'000'000'000u;
  b.border = ObjectPart::seeded;
  a.merge(b);
  EXPECT_EQ(a.first, 5u);
  EXPECT_EQ(static_cast<std::uint64_t>(a.voxels), 7'000'000'000u);
  EXPECT_EQ(static_cast<std::uint32_t>(a.border), ObjectPart::touches_boundary | ObjectPart::seeded);
  EXPECT_TRUE(KeepRule(6'999'999'999u).keeps(a));
  EXPECT_FALSE(KeepRule(7'000'000'001u).keeps(a));
}

}  // namespace
