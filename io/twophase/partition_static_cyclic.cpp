// SPDX-License-Identifier: MIT
// Liao & Choudhary §III.B: the file cut into lock_size blocks from byte 0, block i
// going to aggregator i mod n, the same in every call; a call's domain is
// the intersection with its aggregate access region.
#include <algorithm>
#include <numeric>

#include "volseg/io/twophase/partitioner.hpp"

namespace volseg::io::twophase {
namespace {

class StaticCyclic final : public Partitioner {
 public:
  std::string name() const override { return "static-cyclic"; }
  FileDomains partition(const Region& region, Direction, const PartitionContext& context) override {
    std::vector<int> members(static_cast<std::size_t>(context.aggregators));
    std::iota(members.begin(), members.end(), 0);
    const std::uint64_t lock = std::max<std::uint64_t>(context.lock_size, 1);
    return FileDomains({Segment{region.begin, region.end, lock, 0, std::move(members)}}, context.aggregators);
  }
};

}  // namespace

std::unique_ptr<Partitioner> make_static_cyclic_partitioner() { return std::make_unique<StaticCyclic>(); }

}  // namespace volseg::io::twophase
