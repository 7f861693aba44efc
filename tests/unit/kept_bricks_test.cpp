// SPDX-License-Identifier: MIT
// KeptBricks: what it keeps paints as the labeler did; it holds no more than
// its cap or the room it is given; shedding drops the last kept first and
// gives whole slabs back; releasing every brick frees every slab.
#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <vector>

#include "kept_bricks.hpp"
#include "label_kernel.hpp"

using namespace volseg;
using namespace volseg::segment;

namespace {

std::vector<std::uint8_t> random_mask(const io::Index3& shape, double density, unsigned seed) {
  std::mt19937 rng(seed);
  std::bernoulli_distribution on(density);
  std::vector<std::uint8_t> mask(static_cast<std::size_t>(shape[0] * shape[1] * shape[2]));
  for (auto& v : mask) v = on(rng) ? 1 : 0;
  return mask;
}

std::vector<std::uint32_t> painted(const BrickLabeler::View& view) {
  std::vector<std::uint64_t> ids(view.objects + 1u);
  for (std::size_t i = 0; i < ids.size(); ++i) ids[i] = i * 7;  // not the identity: every label is looked up
  std::vector<std::uint32_t> out(static_cast<std::size_t>(view.shape[0] * view.shape[1] * view.shape[2]));
  view.paint(std::span<const std::uint64_t>(ids), out.data());
  return out;
}

// What a brick takes once kept (narrowed where it fits).
std::uint64_t kept_bytes(const BrickLabeler& labeler) {
  detail::KeptBricks kept(1ull << 40);
  kept.keep(0, labeler.view(), 1ull << 40);
  return kept.find(0)->bytes();
}

}  // namespace

TEST(KeptBricks, PaintsWhatWasLabelled) {
  const io::Index3 shape{6, 30, 70};
  BrickLabeler labeler(26);
  detail::KeptBricks kept(1ull << 40);
  std::vector<std::vector<std::uint32_t>> want;
  for (int b = 0; b < 5; ++b) {
    const auto mask = random_mask(shape, 0.1 + 0.2 * b, 10u + static_cast<unsigned>(b));
    labeler.label(mask.data(), shape);
    want.push_back(painted(labeler.view()));
    kept.keep(b, labeler.view(), 1ull << 40);
  }
  EXPECT_EQ(kept.used(), detail::KeptBricks::kSlab);  // five small bricks share one slab
  for (int b = 0; b < 5; ++b) {
    const BrickLabeler::View* view = kept.find(b);
    ASSERT_NE(view, nullptr);
    EXPECT_EQ(painted(*view), want[static_cast<std::size_t>(b)]) << "brick " << b;
    kept.release(b);
    EXPECT_EQ(kept.find(b), nullptr);
  }
  EXPECT_EQ(kept.used(), 0u);  // the last release freed the slab
}

TEST(KeptBricks, StaysWithinCapAndRoom) {
  const io::Index3 shape{8, 64, 64};
  BrickLabeler labeler(6);
  const auto mask = random_mask(shape, 0.5, 3);
  labeler.label(mask.data(), shape);
  const std::uint64_t bytes = kept_bytes(labeler);
  {
    detail::KeptBricks kept(bytes / 2);  // a cap below one brick: nothing kept
    kept.keep(0, labeler.view(), 1ull << 40);
    EXPECT_FALSE(kept.holds(0));
    EXPECT_EQ(kept.used(), 0u);
  }
  {
    detail::KeptBricks kept(1ull << 40);
    kept.keep(0, labeler.view(), bytes / 2);  // no room for it
    EXPECT_FALSE(kept.holds(0));
  }
  {
    // A cap of three bricks (and their padding to 8 bytes): a slab of that
    // size, three kept, the fourth not.
    detail::KeptBricks kept(3 * bytes + 64);
    for (int b = 0; b < 4; ++b) kept.keep(b, labeler.view(), 1ull << 40);
    EXPECT_TRUE(kept.holds(0) && kept.holds(1) && kept.holds(2));
    EXPECT_FALSE(kept.holds(3));
    EXPECT_LE(kept.used(), 3 * bytes + 64);
  }
}

TEST(KeptBricks, ShedsTheLastKeptFirstBySlab) {
  // Bricks larger than half a slab: one slab each.
  const io::Index3 shape{48, 512, 512};
  BrickLabeler labeler(6);
  const auto mask = random_mask(shape, 0.5, 4);
  labeler.label(mask.data(), shape);
  ASSERT_GT(kept_bytes(labeler), detail::KeptBricks::kSlab / 2);
  detail::KeptBricks kept(1ull << 40);
  for (int b = 0; b < 3; ++b) kept.keep(b, labeler.view(), 1ull << 40);
  const std::uint64_t all = kept.used();
  const std::uint64_t freed = kept.shed(1);
  EXPECT_EQ(freed, all / 3);  // the last brick's whole slab
  EXPECT_FALSE(kept.holds(2));
  EXPECT_TRUE(kept.holds(0) && kept.holds(1));
  EXPECT_EQ(kept.shed_count(), 1u);
  EXPECT_EQ(painted(*kept.find(1)), painted(labeler.view()));
  kept.release(0);  // pass 2 painted brick 0: its slab goes
  EXPECT_EQ(kept.used(), all / 3);
  EXPECT_EQ(kept.shed(all), all / 3);
  EXPECT_EQ(kept.used(), 0u);
}

TEST(KeptBricks, NarrowsRunsAndLabelsOnlyWhereTheyFit) {
  struct Case {
    io::Index3 shape;
    double density;
    bool narrow_runs, narrow_labels;
  };
  // Small; more than 65535 objects; wider than 65535.
  const Case cases[] = {
      {{4, 40, 90}, 0.3, true, true}, {{8, 512, 512}, 0.1, true, false}, {{1, 3, 70000}, 0.3, false, true}};
  for (const Case& c : cases) {
    BrickLabeler labeler(6);
    const auto mask = random_mask(c.shape, c.density, 6);
    labeler.label(mask.data(), c.shape);
    ASSERT_EQ(c.narrow_labels, labeler.objects() <= 65535u) << labeler.objects();
    detail::KeptBricks kept(1ull << 40);
    kept.keep(0, labeler.view(), 1ull << 40);
    const BrickLabeler::View* view = kept.find(0);
    ASSERT_NE(view, nullptr);
    EXPECT_EQ(view->runs16.empty(), !c.narrow_runs);
    EXPECT_EQ(view->labels16.empty(), !c.narrow_labels);
    EXPECT_EQ(painted(*view), painted(labeler.view())) << c.shape[2] << " wide, " << labeler.objects() << " objects";
    EXPECT_LT(view->bytes(), labeler.view().bytes());
  }
}
