// SPDX-License-Identifier: MIT
// detail::DisjointSet: the smaller root wins, so a set's root is its
// smallest element, and take_numbered numbers the sets in the order of
// their smallest elements: the numbering brick labelling relies on.
#include "disjoint_set.hpp"

#include <gtest/gtest.h>

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
