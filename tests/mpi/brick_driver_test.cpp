// SPDX-License-Identifier: MIT
// The brick driver on 1-4 ranks: rank r has r + 1 bricks, so the ranks'
// counts differ. Collective rounds must be as many on every rank as the most
// loaded rank's bricks; a failure, a Cancel or a signal on one rank must end
// the job on every rank with the same typed error, at the same round.
#include <gtest/gtest.h>

#include <mpi.h>

#include <optional>
#include <string>
#include <vector>

#include "volseg/io/error.hpp"
#include "volseg/segment/brick_driver.hpp"

using namespace volseg;

namespace {

class BrickDriverTest : public ::testing::Test {
 protected:
  BrickDriverTest() : comm_(MPI_COMM_WORLD) {}

  // Rank r: r + 1 bricks of one plane each, 10 x 10, at z = 10 r + k.
  std::vector<io::Extent> mine() const {
    std::vector<io::Extent> extents;
    for (int k = 0; k <= comm_.rank(); ++k) extents.push_back({{10 * comm_.rank() + k, 0, 0}, {1, 10, 10}});
    return extents;
  }
  int most() const { return comm_.size(); }

  Comm comm_;
};

// What one rank's step saw: its items in order, then the rounds it joined with nothing.
struct Seen {
  std::vector<std::size_t> items;
  int empty = 0;
  int calls() const { return static_cast<int>(items.size()) + empty; }
};

TEST_F(BrickDriverTest, CollectiveRoundsAreAsManyAsTheMostLoadedRanksBricks) {
  segment::BrickDriver driver(comm_, mine(), {}, {});
  Seen seen;
  driver.run(true, [&](std::optional<std::size_t> k) { k ? seen.items.push_back(*k) : void(++seen.empty); });
  EXPECT_EQ(seen.calls(), most());
  ASSERT_EQ(seen.items.size(), static_cast<std::size_t>(comm_.rank() + 1));
  for (std::size_t k = 0; k < seen.items.size(); ++k) EXPECT_EQ(seen.items[k], k);
  EXPECT_EQ(seen.empty, most() - (comm_.rank() + 1));
  EXPECT_EQ(driver.finished(), comm_.rank() + 1);
}

TEST_F(BrickDriverTest, IndependentRoundsRunOnlyThisRanksBricks) {
  segment::BrickDriver driver(comm_, mine(), {}, {});
  Seen seen;
  driver.run(false, [&](std::optional<std::size_t> k) { k ? seen.items.push_back(*k) : void(++seen.empty); });
  EXPECT_EQ(seen.empty, 0);
  EXPECT_EQ(seen.calls(), comm_.rank() + 1);
}

TEST_F(BrickDriverTest, AFailureOnTheLastRankIsThrownOnEveryRankAfterEveryRound) {
  segment::BrickDriver driver(comm_, mine(), {}, {});
  const bool failing = comm_.rank() == comm_.size() - 1;
  Seen seen;
  try {
    driver.run(true, [&](std::optional<std::size_t> k) {
      k ? seen.items.push_back(*k) : void(++seen.empty);
      if (failing && k && *k == 0) throw Error("brick 0 could not be read");
    });
    ADD_FAILURE() << "no error on rank " << comm_.rank();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("brick 0 could not be read"), std::string::npos) << e.what();
  }
  // The failing rank kept joining the rounds with nothing: no rank was left
  // in a collective call.
  EXPECT_EQ(seen.calls(), most());
  if (failing) {
    EXPECT_EQ(seen.items.size(), 1u);
  }
}

TEST_F(BrickDriverTest, ASignalOnOneRankStopsEveryRankBeforeTheSameRound) {
  segment::Interrupt interrupt{0};
  segment::BrickDriver driver(comm_, mine(), {}, {.interrupt = &interrupt});
  const bool signalled = comm_.rank() == comm_.size() - 1;
  Seen seen;
  std::string error;
  try {
    driver.run(true, [&](std::optional<std::size_t> k) {
      k ? seen.items.push_back(*k) : void(++seen.empty);
      if (signalled) interrupt.store(10);  // SIGUSR1, during the first round
    });
  } catch (const Interrupted& e) {
    error = e.what();
  }
  EXPECT_EQ(seen.calls(), 1);  // every rank ran round 0 and no other
  // On one rank, round 0 was the last: the job is whole, nothing to stop.
  if (comm_.size() == 1) {
    EXPECT_EQ(error, "");
  } else {
    EXPECT_NE(error.find("SIGUSR1"), std::string::npos) << error;
    EXPECT_EQ(driver.stopped(), 10);
  }
}

TEST_F(BrickDriverTest, IndependentRanksStopAtTheirNextBrickButNotAfterTheirLast) {
  segment::Interrupt interrupt{10};
  segment::BrickDriver driver(comm_, mine(), {}, {.interrupt = &interrupt});
  Seen seen;
  std::string error;
  try {
    driver.run(false, [&](std::optional<std::size_t> k) { k ? seen.items.push_back(*k) : void(++seen.empty); });
  } catch (const Interrupted& e) {
    error = e.what();
  }
  // Every rank finished one brick. Rank 0 has nothing left to keep for
  // later; the others stopped; the agreement fails every rank.
  EXPECT_EQ(seen.calls(), 1);
  if (comm_.size() == 1)
    EXPECT_EQ(error, "");
  else
    EXPECT_NE(error.find("SIGUSR1"), std::string::npos) << error;
}

TEST_F(BrickDriverTest, ARoundStagesWhatFitsItsBytesAndAtLeastOneBrick) {
  segment::BrickDriver driver(comm_, mine(), {}, {.round_bytes = 1000});
  EXPECT_EQ(driver.items_per_round(300), 3u);
  EXPECT_EQ(driver.items_per_round(5000), 1u);
  EXPECT_EQ(driver.items_per_round(0), 1000u);
  // Rank r has r + 1 bricks: 2 a round makes ceil(size / 2) rounds on every rank.
  EXPECT_EQ(driver.rounds(2), (comm_.size() + 1) / 2);
}

TEST_F(BrickDriverTest, IdsAreTheLayoutsBrickNumbers) {
  const segment::BrickLayout layout({4, 4, 4}, {2, 2, 2});
  segment::BrickDriver driver(comm_, layout, {7, 2}, {});
  ASSERT_EQ(driver.size(), 2u);
  EXPECT_EQ(driver.id(0), 7);
  EXPECT_EQ(driver.extent(0).offset, layout.brick(7).offset);
  EXPECT_EQ(driver.extent(1).offset, layout.brick(2).offset);
  EXPECT_THROW(segment::BrickDriver(comm_, mine(), {1, 2, 3, 4, 5, 6}, {}), Error);
}

}  // namespace
