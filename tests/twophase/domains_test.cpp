// SPDX-License-Identifier: MIT
// The file domains of every partitioner against brute force, byte by byte:
// over many random small regions, aggregator counts, lock sizes and I/O
// server counts, every byte of the region has exactly one owner; piece_end
// is where the owner (or segment) changes; coordinate() counts the bytes an
// aggregator owns below a byte; owned() agrees. Then what each method
// promises on top: even is ROMIO's ceil(len/n) split, aligned cuts at lock
// multiples, static-cyclic deals by absolute block, group-cyclic follows
// Liao & Choudhary's formula (1) and keeps an aggregator on one server, persistent
// answers the same for every call from byte 0, auto picks per file system
// and direction. Bad names and hint values are refused with volseg::Error.
//
// Runs under the MPI gtest main but uses no communication; one rank is
// enough (more ranks run the same, deterministic, checks).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <map>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "volseg/io/error.hpp"
#include "volseg/io/hints.hpp"
#include "volseg/io/twophase.hpp"
#include "volseg/io/twophase/domains.hpp"
#include "volseg/io/twophase/partitioner.hpp"

using namespace volseg;
using namespace volseg::io;
using namespace volseg::io::twophase;

namespace {

const char* kMethods[] = {"even", "aligned", "static-cyclic", "group-cyclic", "persistent", "auto"};
const std::uint64_t kSeed = 0x5eed0003;

std::string describe_case(const std::string& method, const Region& region, Direction direction,
                          const PartitionContext& context, std::uint64_t seed, int iteration) {
  std::ostringstream text;
  text << method << " region [" << region.begin << "," << region.end << ") "
       << (direction == Direction::read ? "read" : "write") << " n=" << context.aggregators
       << " lock=" << context.lock_size << " io_servers=" << context.io_servers << " file_size=" << context.file_size
       << " realm_size=" << context.realm_size << " fs=" << context.fs_profile << " (seed " << seed << " iteration "
       << iteration << ")";
  return text.str();
}

// The segments that hold byte x, by a linear scan (no binary search).
int segments_holding(const FileDomains& domains, std::uint64_t x) {
  int count = 0;
  for (const auto& segment : domains.segments()) count += segment.begin <= x && x < segment.end;
  return count;
}
int segment_index(const FileDomains& domains, std::uint64_t x) {
  for (std::size_t s = 0; s < domains.segments().size(); ++s)
    if (domains.segments()[s].begin <= x && x < domains.segments()[s].end) return static_cast<int>(s);
  return -1;
}

// Brute-force facts about one domain set over [from, to): the owner of
// every byte (-1 where no segment holds it).
struct Brute {
  std::uint64_t from = 0, to = 0;
  std::vector<int> owner;    // per byte in [from, to)
  std::vector<int> segment;  // per byte
  int at(std::uint64_t x) const { return owner[x - from]; }
};

Brute brute_force(const FileDomains& domains, std::uint64_t from, std::uint64_t to) {
  Brute brute;
  brute.from = from;
  brute.to = to;
  brute.owner.resize(to - from, -1);
  brute.segment.resize(to - from, -1);
  for (std::uint64_t x = from; x < to; ++x) {
    const int s = segment_index(domains, x);
    brute.segment[x - from] = s;
    if (s >= 0) brute.owner[x - from] = domains.owner(x);
  }
  return brute;
}

// The invariants every partitioner's answer must satisfy, checked per byte.
// Stops (fatal failure) at the first broken invariant.
void check_invariants(const FileDomains& domains, const Region& region, int n, const std::string& what) {
  ASSERT_EQ(domains.aggregators(), n) << what;
  // Segments sorted, disjoint, each aggregator in at most one.
  std::set<int> seen;
  for (std::size_t s = 0; s < domains.segments().size(); ++s) {
    const auto& segment = domains.segments()[s];
    ASSERT_LT(segment.begin, segment.end) << what;
    if (s > 0) {
      ASSERT_LE(domains.segments()[s - 1].end, segment.begin) << what;
    }
    ASSERT_FALSE(segment.members.empty()) << what;
    for (int member : segment.members) {
      ASSERT_GE(member, 0) << what;
      ASSERT_LT(member, n) << what;
      ASSERT_TRUE(seen.insert(member).second) << "aggregator " << member << " in two segments: " << what;
    }
  }
  // Brute force over the region and one extra block on either side, so
  // piece_end/coordinate are checked where the region stops too.
  std::uint64_t margin = 1;
  for (const auto& segment : domains.segments()) margin = std::max(margin, segment.block);
  const std::uint64_t first = domains.segments().empty() ? region.begin : domains.segments().front().begin;
  const std::uint64_t from = std::min(first, region.begin);
  const std::uint64_t to = region.end + 2 * margin;
  const Brute brute = brute_force(domains, from, to);

  // Every byte of the region has exactly one owner, a valid aggregator.
  for (std::uint64_t x = region.begin; x < region.end; ++x) {
    ASSERT_EQ(segments_holding(domains, x), 1) << "byte " << x << ": " << what;
    const int owner = brute.at(x);
    ASSERT_GE(owner, 0) << "byte " << x << ": " << what;
    ASSERT_LT(owner, n) << "byte " << x << ": " << what;
    // The owner is a member of the segment that holds x.
    const auto& members = domains.segments()[static_cast<std::size_t>(brute.segment[x - from])].members;
    ASSERT_NE(std::find(members.begin(), members.end(), owner), members.end()) << "byte " << x << ": " << what;
  }
  // Bytes outside every segment are refused.
  for (std::uint64_t x = from; x < to; ++x) {
    if (brute.segment[x - from] < 0) {
      ASSERT_THROW(domains.owner(x), Error) << "byte " << x << ": " << what;
    }
  }

  // piece_end: the first byte after x where the owner or the segment
  // changes; piece_key: shared inside a piece, distinct between pieces.
  const std::size_t bytes = static_cast<std::size_t>(to - from);
  auto same = [&](std::size_t i, std::size_t j) {
    return brute.owner[i] == brute.owner[j] && brute.segment[i] == brute.segment[j];
  };
  std::vector<std::uint64_t> change(bytes), start_of(bytes);  // first byte after i of another piece; piece start
  change[bytes - 1] = to;
  for (std::size_t i = bytes - 1; i-- > 0;) change[i] = same(i, i + 1) ? change[i + 1] : from + i + 1;
  start_of[0] = from;
  for (std::size_t i = 1; i < bytes; ++i) start_of[i] = same(i, i - 1) ? start_of[i - 1] : from + i;
  std::map<std::pair<int, std::uint64_t>, std::uint64_t> piece_of_key;  // (owner, key) -> piece start
  for (std::uint64_t x = region.begin; x < region.end; ++x) {
    const int owner = brute.at(x);
    const std::uint64_t y = change[x - from];
    const std::uint64_t end = domains.piece_end(x);
    if (y < to) {
      ASSERT_EQ(end, y) << "piece_end(" << x << "): " << what;
    } else {
      ASSERT_GE(end, to) << "piece_end(" << x << "): " << what;
    }
    const std::uint64_t start = start_of[x - from];
    const auto key = domains.piece_key(x);
    auto [it, inserted] = piece_of_key.emplace(std::pair(owner, key), start);
    if (!inserted) {
      ASSERT_EQ(it->second, start) << "piece_key(" << x << ")=" << key << " shared by two pieces of aggregator "
                                   << owner << ": " << what;
    }
  }

  // coordinate(a, x): the bytes a owns in [first segment's begin, x);
  // owned(a, b, e): the bytes a owns in [b, e).
  std::vector<std::uint64_t> count(static_cast<std::size_t>(n), 0);
  std::uint64_t total = 0;
  for (std::uint64_t x = from; x <= region.end; ++x) {
    if (x >= first) {
      for (int a = 0; a < n; ++a)
        ASSERT_EQ(domains.coordinate(a, x), count[static_cast<std::size_t>(a)])
            << "coordinate(" << a << ", " << x << "): " << what;
    }
    if (x < region.end && brute.at(x) >= 0) ++count[static_cast<std::size_t>(brute.at(x))];
  }
  for (int a = 0; a < n; ++a) {
    // Bytes of the region, by brute force, per aggregator.
    std::uint64_t mine = 0;
    for (std::uint64_t x = region.begin; x < region.end; ++x) mine += brute.at(x) == a;
    ASSERT_EQ(domains.owned(a, region.begin, region.end), mine) << "owned(" << a << ") over the region: " << what;
    total += mine;
  }
  ASSERT_EQ(total, region.end - region.begin) << what;
}

PartitionContext random_context(std::mt19937_64& random) {
  static const std::uint64_t locks[] = {1, 3, 7, 16, 64, 100, 512, 4096};
  static const char* profiles[] = {"local", "gpfs", "lustre"};
  PartitionContext context;
  context.aggregators = 1 + static_cast<int>(random() % 9);
  context.lock_size = locks[random() % std::size(locks)];
  context.io_servers = 1 + static_cast<int>(random() % 5);
  context.file_size = random() % 3 == 0 ? 0 : random() % 9000;
  context.realm_size = random() % 3 == 0 ? 1 + random() % 700 : 0;
  context.fs_profile = profiles[random() % 3];
  return context;
}

Region random_region(std::mt19937_64& random) {
  const std::uint64_t begin = random() % 4 == 0 ? 0 : random() % 5000;
  const std::uint64_t length = 1 + (random() % 2 ? random() % 60 : random() % 3000);
  return Region{begin, begin + length};
}

TEST(TwoPhaseDomains, EveryMethodPassesTheBruteForceChecks) {
  std::mt19937_64 random(kSeed);
  for (const char* method : kMethods) {
    for (int iteration = 0; iteration < 150; ++iteration) {
      const PartitionContext context = random_context(random);
      const Region region = random_region(random);
      const Direction direction = random() % 2 ? Direction::read : Direction::write;
      const std::string what = describe_case(method, region, direction, context, kSeed, iteration);
      auto partitioner = make_partitioner(method);
      EXPECT_EQ(partitioner->name(), method);
      FileDomains domains;
      ASSERT_NO_THROW(domains = partitioner->partition(region, direction, context)) << what;
      check_invariants(domains, region, context.aggregators, what);
      if (::testing::Test::HasFatalFailure()) return;
    }
  }
}

TEST(TwoPhaseDomains, EvenIsRomiosCeilingSplit) {
  std::mt19937_64 random(kSeed + 1);
  for (int iteration = 0; iteration < 400; ++iteration) {
    const PartitionContext context = random_context(random);
    const Region region = random_region(random);
    const int n = context.aggregators;
    const std::string what = describe_case("even", region, Direction::read, context, kSeed + 1, iteration);
    const auto domains = make_even_partitioner()->partition(region, Direction::read, context);
    const std::uint64_t length = region.end - region.begin;
    const std::uint64_t share = (length + static_cast<std::uint64_t>(n) - 1) / static_cast<std::uint64_t>(n);
    for (int i = 0; i < n; ++i) {
      const std::uint64_t begin = std::min(region.end, region.begin + share * static_cast<std::uint64_t>(i));
      const std::uint64_t end = std::min(region.end, begin + share);
      ASSERT_EQ(even_boundary(region, n, i), begin) << "boundary " << i << ": " << what;
      ASSERT_EQ(domains.owned(i, region.begin, region.end), end - begin) << "aggregator " << i << ": " << what;
      if (begin < end) {
        ASSERT_EQ(domains.owner(begin), i) << what;
        ASSERT_EQ(domains.owner(end - 1), i) << what;
        ASSERT_EQ(domains.piece_end(begin), end) << what;
      }
    }
    ASSERT_EQ(even_boundary(region, n, n), region.end) << what;
  }
  // ROMIO's worked case: 10 bytes over 4 aggregators is 3, 3, 3, 1.
  const auto domains = make_even_partitioner()->partition(Region{100, 110}, Direction::write, PartitionContext{4});
  EXPECT_EQ(domains.owned(0, 100, 110), 3u);
  EXPECT_EQ(domains.owned(1, 100, 110), 3u);
  EXPECT_EQ(domains.owned(2, 100, 110), 3u);
  EXPECT_EQ(domains.owned(3, 100, 110), 1u);
  // 2 bytes over 4: the last two aggregators own nothing.
  const auto few = make_even_partitioner()->partition(Region{0, 2}, Direction::write, PartitionContext{4});
  EXPECT_EQ(few.owned(2, 0, 2) + few.owned(3, 0, 2), 0u);
  EXPECT_EQ(few.owner(0), 0);
  EXPECT_EQ(few.owner(1), 1);
}

TEST(TwoPhaseDomains, AlignedCutsOnlyAtLockMultiplesInAggregatorOrder) {
  std::mt19937_64 random(kSeed + 2);
  for (int iteration = 0; iteration < 400; ++iteration) {
    PartitionContext context = random_context(random);
    const Region region = random_region(random);
    const std::string what = describe_case("aligned", region, Direction::write, context, kSeed + 2, iteration);
    const auto domains = make_aligned_partitioner()->partition(region, Direction::write, context);
    int previous = domains.owner(region.begin);
    for (std::uint64_t x = region.begin + 1; x < region.end; ++x) {
      const int owner = domains.owner(x);
      if (owner == previous) continue;
      ASSERT_EQ(x % context.lock_size, 0u) << "inner boundary at " << x << ": " << what;
      ASSERT_GT(owner, previous) << "domains out of aggregator order at " << x << ": " << what;
      // The nearest lock boundary to the even boundary it replaces.
      const std::uint64_t even = even_boundary(region, context.aggregators, owner);
      const std::uint64_t distance = x > even ? x - even : even - x;
      ASSERT_LE(2 * distance, context.lock_size) << "boundary " << x << " far from even " << even << ": " << what;
      previous = owner;
    }
  }
  // Region [100, 1100) over 4 with 256 B locks: the even boundaries 350,
  // 600 and 850 move to the nearest lock boundaries 256, 512 and 768.
  PartitionContext context{4, 256};
  const auto domains = make_aligned_partitioner()->partition(Region{100, 1100}, Direction::write, context);
  EXPECT_EQ(domains.owner(255), 0);
  EXPECT_EQ(domains.owner(256), 1);
  EXPECT_EQ(domains.owner(511), 1);
  EXPECT_EQ(domains.owner(512), 2);
  EXPECT_EQ(domains.owner(767), 2);
  EXPECT_EQ(domains.owner(768), 3);
  EXPECT_EQ(domains.owner(1099), 3);
}

TEST(TwoPhaseDomains, StaticCyclicDealsAbsoluteBlocksWhateverTheRegion) {
  std::mt19937_64 random(kSeed + 3);
  for (int iteration = 0; iteration < 300; ++iteration) {
    const PartitionContext context = random_context(random);
    const Region one = random_region(random), two = random_region(random);
    const std::string what = describe_case("static-cyclic", one, Direction::write, context, kSeed + 3, iteration);
    const auto first = make_static_cyclic_partitioner()->partition(one, Direction::write, context);
    const auto second = make_static_cyclic_partitioner()->partition(two, Direction::read, context);
    const auto n = static_cast<std::uint64_t>(context.aggregators);
    for (std::uint64_t x = one.begin; x < one.end; ++x) {
      ASSERT_EQ(static_cast<std::uint64_t>(first.owner(x)), x / context.lock_size % n) << "byte " << x << ": " << what;
      if (x >= two.begin && x < two.end) {
        ASSERT_EQ(first.owner(x), second.owner(x)) << "byte " << x << " changes owner between calls: " << what;
      }
    }
  }
}

TEST(TwoPhaseDomains, GroupCyclicFollowsFormulaOneAndKeepsAnAggregatorOnOneServer) {
  // Liao & Choudhary Fig. 5: 8 aggregators, 4 I/O servers, the region starting at
  // stripe 7: the first aggregator is 7 mod 8 = 7, so group 0 is
  // {7, 0, 1, 2} and group 1 is {3, 4, 5, 6}.
  const std::uint64_t stripe = 64;
  PartitionContext context;
  context.aggregators = 8;
  context.io_servers = 4;
  context.lock_size = stripe;
  const Region region{7 * stripe + 10, 7 * stripe + 10 + 40 * stripe};
  const auto domains = make_group_cyclic_partitioner()->partition(region, Direction::write, context);
  ASSERT_EQ(domains.segments().size(), 2u) << domains.describe();
  EXPECT_EQ(domains.segments()[0].members, (std::vector<int>{7, 0, 1, 2})) << domains.describe();
  EXPECT_EQ(domains.segments()[1].members, (std::vector<int>{3, 4, 5, 6})) << domains.describe();
  EXPECT_EQ(domains.owner(region.begin), 7);  // stripe 7 goes to the first aggregator of group 0
  // The first half of the region's stripes belongs to group 0, the rest to
  // group 1; the odd stripe goes to the first group.
  const std::set<int> group0{7, 0, 1, 2}, group1{3, 4, 5, 6};
  const std::uint64_t middle = (7 + 21) * stripe;  // 41 stripes touched, split 21 / 20
  for (std::uint64_t x = region.begin; x < region.end; ++x) {
    const int owner = domains.owner(x);
    if (x < middle) {
      ASSERT_TRUE(group0.count(owner)) << "byte " << x << " owner " << owner << ": " << domains.describe();
    } else {
      ASSERT_TRUE(group1.count(owner)) << "byte " << x << " owner " << owner << ": " << domains.describe();
    }
    // k = a (mod io_servers).
    ASSERT_EQ(x / stripe % 4, static_cast<std::uint64_t>(owner % 4)) << "byte " << x << ": " << domains.describe();
  }
  check_invariants(domains, region, 8, "Liao & Choudhary Fig. 5");

  // At random, whenever the aggregators are a multiple of io_servers.
  std::mt19937_64 random(kSeed + 4);
  int checked = 0;
  for (int iteration = 0; iteration < 500; ++iteration) {
    PartitionContext c = random_context(random);
    c.io_servers = 1 + static_cast<int>(random() % 4);
    c.aggregators = c.io_servers * (1 + static_cast<int>(random() % 4));
    const Region r = random_region(random);
    const std::string what = describe_case("group-cyclic", r, Direction::write, c, kSeed + 4, iteration);
    const auto d = make_group_cyclic_partitioner()->partition(r, Direction::write, c);
    const auto g = static_cast<std::uint64_t>(c.io_servers);
    const auto n = static_cast<std::uint64_t>(c.aggregators);
    // The first stripe goes to floor(start / stripe) mod n, when every
    // group gets a stripe (see FirstStripeWithFewerStripesThanGroups).
    const std::uint64_t stripes = (r.end - 1) / c.lock_size - r.begin / c.lock_size + 1;
    if (stripes >= n / g) {
      ASSERT_EQ(static_cast<std::uint64_t>(d.owner(r.begin)), r.begin / c.lock_size % n) << what;
    }
    for (std::uint64_t x = r.begin; x < r.end; ++x)
      ASSERT_EQ(x / c.lock_size % g, static_cast<std::uint64_t>(d.owner(x)) % g) << "byte " << x << ": " << what;
    // Groups are whole stripes: a segment boundary inside the region is a stripe multiple.
    for (std::size_t s = 1; s < d.segments().size(); ++s) ASSERT_EQ(d.segments()[s].begin % c.lock_size, 0u) << what;
    ++checked;
  }
  EXPECT_EQ(checked, 500);

  // n <= io_servers: static-cyclic.
  PartitionContext few;
  few.aggregators = 3;
  few.io_servers = 4;
  few.lock_size = 16;
  const auto cyclic = make_group_cyclic_partitioner()->partition(Region{5, 900}, Direction::write, few);
  for (std::uint64_t x = 5; x < 900; ++x) ASSERT_EQ(cyclic.owner(x), static_cast<int>(x / 16 % 3));
}

// docs/twophase.md and partition_group_cyclic.cpp: "the first aggregator
// is floor(start / stripe) mod n (formula (1))", also when the region
// touches fewer stripes than there are groups: here 8 aggregators in 4
// groups of 2, a region inside stripes 0 and 1 (lock 4096). (A split by
// floor(stripes * k / groups) once left the first groups empty and gave
// stripe 0 to aggregator 2.)
TEST(TwoPhaseDomains, FirstStripeWithFewerStripesThanGroups) {
  PartitionContext context;
  context.aggregators = 8;
  context.io_servers = 2;
  context.lock_size = 4096;
  const Region region{3222, 6105};
  const auto domains = make_group_cyclic_partitioner()->partition(region, Direction::write, context);
  EXPECT_EQ(domains.owner(region.begin), 0) << domains.describe();
}

TEST(TwoPhaseDomains, PersistentRealmsAreAnchoredAtZeroAndNeverChange) {
  std::mt19937_64 random(kSeed + 5);
  for (int iteration = 0; iteration < 200; ++iteration) {
    const PartitionContext context = random_context(random);
    const Region one = random_region(random), two = random_region(random);
    const std::string what = describe_case("persistent", one, Direction::write, context, kSeed + 5, iteration);
    auto partitioner = make_persistent_partitioner();
    const auto first = partitioner->partition(one, Direction::write, context);
    const auto second = partitioner->partition(two, Direction::read, context);
    ASSERT_EQ(first.segments().size(), 1u) << what;
    ASSERT_EQ(second.segments().size(), 1u) << what;
    const auto& a = first.segments()[0];
    const auto& b = second.segments()[0];
    EXPECT_EQ(a.begin, 0u) << "realms not anchored at byte 0: " << what;
    EXPECT_EQ(a.end, end_of_file) << what;
    EXPECT_EQ(a.begin, b.begin) << what;
    EXPECT_EQ(a.end, b.end) << what;
    EXPECT_EQ(a.block, b.block) << what;
    EXPECT_EQ(a.phase, b.phase) << what;
    EXPECT_EQ(a.members, b.members) << what;
    // Realms are whole lock units; the hint sets them, else the extent split n ways.
    const std::uint64_t realm = a.members.size() == 1 ? 0 : a.block;
    if (a.members.size() > 1) {
      EXPECT_EQ(realm % context.lock_size, 0u) << what;
      const auto n = static_cast<std::uint64_t>(context.aggregators);
      const std::uint64_t extent = std::max(context.file_size, one.end);
      std::uint64_t want = context.realm_size ? context.realm_size : std::max<std::uint64_t>((extent + n - 1) / n, 1);
      want = (want + context.lock_size - 1) / context.lock_size * context.lock_size;
      EXPECT_EQ(realm, want) << what;
    }
    // The same owner for every byte of both regions, from both answers.
    for (std::uint64_t x = std::min(one.begin, two.begin); x < std::max(one.end, two.end); ++x)
      ASSERT_EQ(first.owner(x), second.owner(x)) << "byte " << x << ": " << what;
    check_invariants(second, two, context.aggregators, what);
    if (::testing::Test::HasFatalFailure()) return;
  }
}

TEST(TwoPhaseDomains, AutoPicksPerFileSystemAndDirection) {
  struct Case {
    const char* profile;
    Direction direction;
    const char* method;
  };
  const Case cases[] = {{"local", Direction::read, "even"},     {"local", Direction::write, "even"},
                        {"gpfs", Direction::read, "aligned"},   {"gpfs", Direction::write, "aligned"},
                        {"lustre", Direction::read, "aligned"}, {"lustre", Direction::write, "group-cyclic"}};
  std::mt19937_64 random(kSeed + 6);
  auto partitioner = make_auto_partitioner();  // one object across calls, as a File keeps it
  EXPECT_EQ(partitioner->name(), "auto");
  for (int iteration = 0; iteration < 120; ++iteration) {
    const Case& c = cases[random() % std::size(cases)];
    PartitionContext context = random_context(random);
    context.fs_profile = c.profile;
    const Region region = random_region(random);
    const std::string what = describe_case("auto", region, c.direction, context, kSeed + 6, iteration);
    const auto chosen = partitioner->partition(region, c.direction, context);
    EXPECT_EQ(partitioner->chosen(), std::string("auto:") + c.method) << what;
    const auto direct = make_partitioner(c.method)->partition(region, c.direction, context);
    for (std::uint64_t x = region.begin; x < region.end; ++x)
      ASSERT_EQ(chosen.owner(x), direct.owner(x)) << "byte " << x << ": " << what;
  }
  PartitionContext nfs;
  nfs.fs_profile = "nfs";
  EXPECT_THROW(make_auto_partitioner()->partition(Region{0, 10}, Direction::read, nfs), Error);
}

TEST(TwoPhaseDomains, DomainShapesAreChecked) {
  using S = Segment;
  EXPECT_THROW(FileDomains({S{10, 10, 0, 0, {0}}}, 1), Error);                       // empty
  EXPECT_THROW(FileDomains({S{0, 10, 0, 0, {0}}, S{5, 20, 0, 0, {1}}}, 2), Error);   // overlapping
  EXPECT_THROW(FileDomains({S{0, 10, 0, 0, {}}}, 1), Error);                         // no members
  EXPECT_THROW(FileDomains({S{0, 10, 0, 0, {0, 1}}}, 2), Error);                     // dealt, block 0
  EXPECT_THROW(FileDomains({S{0, 10, 0, 0, {2}}}, 2), Error);                        // missing aggregator
  EXPECT_THROW(FileDomains({S{0, 10, 0, 0, {0}}, S{10, 20, 0, 0, {0}}}, 1), Error);  // in two segments
  const FileDomains gap({S{0, 10, 0, 0, {0}}, S{20, 30, 4, 1, {2, 1}}}, 3);
  EXPECT_THROW(gap.owner(10), Error);
  EXPECT_THROW(gap.owner(30), Error);
  EXPECT_EQ(gap.owner(20), 2);  // block 5, phase 1: members[(5 - 1) mod 2] = members[0]
  EXPECT_EQ(gap.owner(24), 1);  // block 6: members[1]
  EXPECT_EQ(gap.piece_end(21), 24u);
  EXPECT_EQ(gap.piece_end(28), 30u);  // the segment's end cuts the block
  EXPECT_EQ(gap.piece_end(3), 10u);
  EXPECT_EQ(gap.coordinate(2, 30), 6u);  // [20, 24) and [28, 30)
  EXPECT_EQ(gap.coordinate(1, 30), 4u);  // [24, 28)
  EXPECT_EQ(gap.coordinate(0, 1000), 10u);
}

TEST(TwoPhaseDomains, BadNamesAndHintValuesAreRefused) {
  EXPECT_THROW(make_partitioner("diagonal"), Error);
  EXPECT_THROW(make_partitioner(""), Error);
  EXPECT_THROW(make_partitioner("Even"), Error);
  for (const char* method : kMethods) EXPECT_NO_THROW(make_partitioner(method)) << method;
  const std::vector<std::string> bad = {"partition=diagonal",
                                        "partition=",
                                        "exchange=carrier-pigeon",
                                        "ds=sometimes",
                                        "fs_profile=nfs",
                                        "cb_nodes=-1",
                                        "cb_nodes=two",
                                        "cb_buffer_size=0",
                                        "cb_buffer_size=2G",
                                        "cb_buffer_size=-5",
                                        "cb_buffer_size=12parsecs",
                                        "lock_size=-1",
                                        "lock_size=big",
                                        "io_servers=0",
                                        "io_servers=-3",
                                        "ds_threshold=-1",
                                        "realm_size=-64",
                                        "cb_config=",
                                        "cb_config=1,1",
                                        "cb_config=0,x",
                                        "cb_config=-1",
                                        "cb_config=0,,1",
                                        "cb_config=1.5"};
  for (const auto& item : bad) {
    Hints hints;
    ASSERT_NO_THROW(hints = Hints::parse({item})) << item;
    EXPECT_THROW(Options::from_hints(hints), Error) << item;
  }
  // And the good ones land where they should.
  const Hints hints = Hints::parse({"cb_nodes=3", "cb_config=4,0,2", "cb_buffer_size=4KiB", "exchange=p2p",
                                    "partition=group-cyclic", "lock_size=1M", "io_servers=2", "fs_profile=lustre",
                                    "ds=never", "ds_threshold=100", "realm_size=64K"});
  const Options options = Options::from_hints(hints);
  EXPECT_NO_THROW(hints.reject_unused("twophase"));
  EXPECT_EQ(options.cb_nodes, 3);
  EXPECT_EQ(options.cb_config, (std::vector<int>{4, 0, 2}));
  EXPECT_EQ(options.cb_buffer_size, 4096u);
  EXPECT_EQ(options.exchange, Exchange::p2p);
  EXPECT_EQ(options.partition, "group-cyclic");
  EXPECT_EQ(options.lock_size, 1u << 20);
  EXPECT_EQ(options.io_servers, 2);
  EXPECT_EQ(options.fs_profile, "lustre");
  EXPECT_EQ(options.sieving, Sieving::never);
  EXPECT_EQ(options.ds_threshold, 100u);
  EXPECT_EQ(options.realm_size, 65536u);
  for (const char* key : {"cb_nodes", "cb_config", "cb_buffer_size", "exchange", "partition", "lock_size", "io_servers",
                          "fs_profile", "ds", "ds_threshold", "realm_size"})
    EXPECT_TRUE(Options::is_hint(key)) << key;
  EXPECT_FALSE(Options::is_hint("striping_unit"));
  // Defaults.
  const Options defaults = Options::from_hints(Hints{});
  EXPECT_EQ(defaults.partition, "auto");
  EXPECT_EQ(defaults.exchange, Exchange::alltoallw);
  EXPECT_EQ(defaults.sieving, Sieving::conditional);
  EXPECT_TRUE(defaults.cb_config.empty());
}

}  // namespace
