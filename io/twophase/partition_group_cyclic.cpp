// SPDX-License-Identifier: MIT
// Liao & Choudhary §III.C: aggregators in groups of io_servers; the aggregate
// access region is split among the groups at lock (stripe) boundaries, and
// inside a group the stripes are dealt static-cyclically. The first
// aggregator is floor(start / stripe) mod n (the paper's formula (1)), and
// every group deals from the region's first stripe, so when n is a
// multiple of io_servers aggregator a only ever touches stripes k with
// k = a (mod io_servers): one server per aggregator, no interleaving.
// With n <= io_servers it is static-cyclic, as the paper says. When n is
// not a multiple of io_servers the last group takes the leftover
// aggregators.
#include <algorithm>
#include <numeric>

#include "volseg/io/twophase/partitioner.hpp"

namespace volseg::io::twophase {
namespace {

class GroupCyclic final : public Partitioner {
 public:
  std::string name() const override { return "group-cyclic"; }
  FileDomains partition(const Region& region, Direction direction, const PartitionContext& context) override {
    const int n = context.aggregators;
    const int g = std::max(context.io_servers, 1);
    if (n <= g) return make_static_cyclic_partitioner()->partition(region, direction, context);
    const std::uint64_t stripe = std::max<std::uint64_t>(context.lock_size, 1);
    const std::uint64_t first = region.begin / stripe;                    // k0
    const std::uint64_t stripes = (region.end - 1) / stripe + 1 - first;  // stripes the region touches
    const int groups = n / g;
    const int start = static_cast<int>(first % static_cast<std::uint64_t>(n));  // formula (1)
    std::vector<Segment> segments;
    for (int group = 0; group < groups; ++group) {
      // Group k starts at stripe first + k * (stripes / groups) + min(k,
      // stripes % groups): the leftover stripes go one each to the first
      // groups, so the region's first stripe is always group 0's and its
      // owner is formula (1)'s aggregator, even when the region touches
      // fewer stripes than there are groups.
      auto stripe_at = [&](int k) {
        const auto parts = static_cast<std::uint64_t>(groups), index = static_cast<std::uint64_t>(k);
        return first + stripes / parts * index + std::min(index, stripes % parts);
      };
      const std::uint64_t begin = std::max(region.begin, stripe_at(group) * stripe);
      const std::uint64_t end = group + 1 == groups ? region.end : std::min(region.end, stripe_at(group + 1) * stripe);
      const int size = group + 1 == groups ? n - group * g : g;
      std::vector<int> members(static_cast<std::size_t>(size));
      for (int m = 0; m < size; ++m) members[static_cast<std::size_t>(m)] = (start + group * g + m) % n;
      if (begin < end) segments.push_back(Segment{begin, end, stripe, first, std::move(members)});
    }
    return FileDomains(std::move(segments), n);
  }
};

}  // namespace

std::unique_ptr<Partitioner> make_group_cyclic_partitioner() { return std::make_unique<GroupCyclic>(); }

}  // namespace volseg::io::twophase
