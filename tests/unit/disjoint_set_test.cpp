// SPDX-License-Identifier: MIT
// detail::DisjointSet: the smaller root wins, so a set's root is its
// smallest element, and take_numbered numbers the sets in the order of
// their smallest elements: the numbering brick labelling relies on. With
// offsets (the merge's periodic frames): each element placed in its root's
// frame, and a join within a set tells how far the set reaches itself.
#include "disjoint_set.hpp"

#include <gtest/gtest.h>

#include <array>
#include <cstdint>
#include <random>
#include <vector>

using volseg::segment::detail::DisjointSet;

TEST(DisjointSet, TheSmallestElementIsTheRoot) {
  DisjointSet<std::uint32_t> set(8);
  EXPECT_EQ(set.size(), 8u);
  for (std::uint32_t x = 0; x < 8; ++x) EXPECT_EQ(set.find(x), x);
  EXPECT_TRUE(set.join(5, 2));
  EXPECT_TRUE(set.join(7, 5));
  EXPECT_TRUE(set.join(6, 1));
  EXPECT_FALSE(set.join(2, 7));  // one set already
  EXPECT_FALSE(set.join(3, 3));
  EXPECT_EQ(set.find(7), 2u);
  EXPECT_EQ(set.find(5), 2u);
  EXPECT_EQ(set.find(6), 1u);
  EXPECT_EQ(set.find(3), 3u);
  EXPECT_TRUE(set.join(7, 6));  // {1, 6} and {2, 5, 7}: 1 wins
  for (std::uint32_t x : {1u, 2u, 5u, 6u, 7u}) EXPECT_EQ(set.find(x), 1u) << x;
  EXPECT_TRUE(set.is_root(1));
  EXPECT_FALSE(set.is_root(2));
}

TEST(DisjointSet, FlattenPointsEveryNodeAtItsRoot) {
  DisjointSet<std::uint64_t> set(10);
  // A long chain, each join linking the new element under the chain's root.
  for (std::uint64_t x = 9; x > 4; --x) set.join(x, x - 1);
  set.join(0, 3);
  set.flatten();
  const std::uint64_t roots[] = {0, 1, 2, 0, 4, 4, 4, 4, 4, 4};
  for (std::uint64_t x = 0; x < 10; ++x) EXPECT_EQ(set.parent(x), roots[x]) << x;
}

TEST(DisjointSet, SetsAreNumberedByTheirSmallestElements) {
  DisjointSet<std::uint32_t> set(8);
  set.join(5, 2);
  set.join(7, 5);
  set.join(1, 6);
  std::uint32_t sets = 99;
  const auto numbers = set.take_numbered(sets);
  EXPECT_EQ(sets, 5u);
  EXPECT_EQ(numbers, (std::vector<std::uint32_t>{1, 2, 3, 4, 5, 3, 2, 3}));
  EXPECT_EQ(set.size(), 0u);
}

TEST(DisjointSet, ResetReusesTheNumbersMemory) {
  DisjointSet<std::uint32_t> set(1000);
  std::uint32_t sets = 0;
  auto numbers = set.take_numbered(sets);
  EXPECT_EQ(sets, 1000u);
  const std::uint32_t* memory = numbers.data();
  set.reset(600, std::move(numbers));
  EXPECT_EQ(set.size(), 600u);
  for (std::uint32_t x = 0; x < 600; ++x) ASSERT_EQ(set.find(x), x);
  const auto again = set.take_numbered(sets);
  EXPECT_EQ(again.data(), memory);
  EXPECT_EQ(sets, 600u);
}

// Against a plain labelling: components by repeated relaxation, each
// numbered by its smallest element's rank among the components' smallest.
TEST(DisjointSet, MatchesAPlainLabellingOnRandomJoins) {
  std::mt19937 random(45);
  auto below = [&](std::uint32_t n) { return static_cast<std::uint32_t>(random() % n); };
  for (int trial = 0; trial < 50; ++trial) {
    const std::uint32_t n = 1 + below(200);
    const std::uint32_t joins = below(2 * n);
    DisjointSet<std::uint32_t> set(n);
    std::vector<std::uint32_t> smallest(n);
    for (std::uint32_t x = 0; x < n; ++x) smallest[x] = x;
    std::vector<std::pair<std::uint32_t, std::uint32_t>> edges;
    for (std::uint32_t k = 0; k < joins; ++k) {
      const std::uint32_t a = below(n), b = below(n);
      set.join(a, b);
      edges.emplace_back(a, b);
    }
    for (bool changed = true; changed;) {
      changed = false;
      for (const auto& [a, b] : edges) {
        const std::uint32_t m = std::min(smallest[a], smallest[b]);
        changed = changed || smallest[a] != m || smallest[b] != m;
        smallest[a] = smallest[b] = m;
      }
    }
    std::vector<std::uint32_t> expected(n), number_of(n, 0);
    std::uint32_t count = 0;
    for (std::uint32_t x = 0; x < n; ++x) {
      if (smallest[x] == x) number_of[x] = ++count;
      expected[x] = number_of[smallest[x]];
      EXPECT_EQ(set.find(x), smallest[x]);
    }
    std::uint32_t sets = 0;
    EXPECT_EQ(set.take_numbered(sets), expected) << "trial " << trial;
    EXPECT_EQ(sets, count);
  }
}

using Placed = DisjointSet<std::uint64_t, 3>;
using Offset = Placed::Offset;

TEST(DisjointSetWithOffsets, AJoinWithinASetGivesItsCycle) {
  Placed set(4);
  EXPECT_EQ(set.size(), 4u);
  // 1's frame moved by (0, 0, 1) lies in 0's; 2's by (0, 2, 0) in 1's.
  auto joined = set.join(0, 1, Offset{0, 0, 1});
  EXPECT_TRUE(joined.merged());
  EXPECT_EQ(joined.root, 0u);
  EXPECT_EQ(joined.absorbed, 1u);
  joined = set.join(2, 1, Offset{0, -2, 0});  // 2 then lies at (0, 2, 1) in the root's, 0's
  EXPECT_TRUE(joined.merged());
  EXPECT_EQ(joined.root, 0u);
  EXPECT_EQ(joined.absorbed, 2u);
  EXPECT_EQ(set.place(1), (std::pair<std::uint64_t, Offset>{0, Offset{0, 0, 1}}));
  EXPECT_EQ(set.place(2), (std::pair<std::uint64_t, Offset>{0, Offset{0, 2, 1}}));
  // Consistent with the frames: no cycle. One period off along z: the set
  // reaches itself moved by it.
  joined = set.join(0, 2, Offset{0, 2, 1});
  EXPECT_FALSE(joined.merged());
  EXPECT_EQ(joined.cycle, (Offset{0, 0, 0}));
  joined = set.join(2, 0, Offset{1, -2, -1});
  EXPECT_FALSE(joined.merged());
  EXPECT_EQ(joined.cycle, (Offset{1, 0, 0}));
  EXPECT_EQ(set.place(3), (std::pair<std::uint64_t, Offset>{3, Offset{}}));
}

// Against positions: element x's frame lies at pos[x]; a join says where
// b's frame lies in a's (pos[b] - pos[a]). Every element is then placed at
// pos[x] - pos[root], and the roots are the plain union-find's.
TEST(DisjointSetWithOffsets, PlacesEveryElementInItsRootsFrame) {
  std::mt19937 random(46);
  auto below = [&](std::uint32_t n) { return static_cast<std::uint32_t>(random() % n); };
  for (int trial = 0; trial < 50; ++trial) {
    const std::uint32_t n = 1 + below(300);
    std::vector<Offset> pos(n);
    for (auto& p : pos)
      for (auto& c : p) c = static_cast<std::int32_t>(below(7)) - 3;
    Placed placed(n);
    DisjointSet<std::uint64_t> plain(n);
    for (std::uint32_t k = 0, joins = below(2 * n); k < joins; ++k) {
      const std::uint32_t a = below(n), b = below(n);
      const Offset shift{pos[b][0] - pos[a][0], pos[b][1] - pos[a][1], pos[b][2] - pos[a][2]};
      const auto joined = placed.join(a, b, shift);
      EXPECT_EQ(joined.merged(), plain.join(a, b));
      if (!joined.merged()) {
        EXPECT_EQ(joined.cycle, (Offset{0, 0, 0}));
      }
    }
    for (std::uint64_t x = 0; x < n; ++x) {
      const auto [root, offset] = placed.place(x);
      ASSERT_EQ(root, plain.find(x)) << "trial " << trial;
      const Offset expected{pos[x][0] - pos[root][0], pos[x][1] - pos[root][1], pos[x][2] - pos[root][2]};
      EXPECT_EQ(offset, expected) << "trial " << trial << ", element " << x;
    }
  }
}
