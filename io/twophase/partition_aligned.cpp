// SPDX-License-Identifier: MIT
// Liao & Choudhary §III.A: the even split with every inner boundary moved to the
// nearest multiple of lock_size, so no lock unit is shared by two
// aggregators (GPFS's token-based locking rewards this most).
#include <algorithm>

#include "volseg/io/twophase/partitioner.hpp"

namespace volseg::io::twophase {
namespace {

class Aligned final : public Partitioner {
 public:
  std::string name() const override { return "aligned"; }
  FileDomains partition(const Region& region, Direction, const PartitionContext& context) override {
    const int n = context.aggregators;
    const std::uint64_t lock = std::max<std::uint64_t>(context.lock_size, 1);
    std::vector<std::uint64_t> bounds(static_cast<std::size_t>(n) + 1);
    bounds[0] = region.begin;
    bounds[static_cast<std::size_t>(n)] = region.end;
    for (int i = 1; i < n; ++i) {
      const std::uint64_t even = even_boundary(region, n, i);
      std::uint64_t nearest = (even + lock / 2) / lock * lock;  // nearest lock boundary
      nearest = std::clamp(nearest, bounds[static_cast<std::size_t>(i) - 1], region.end);
      bounds[static_cast<std::size_t>(i)] = nearest;
    }
    std::vector<Segment> segments;
    for (int i = 0; i < n; ++i) {
      const auto begin = bounds[static_cast<std::size_t>(i)], end = bounds[static_cast<std::size_t>(i) + 1];
      if (begin < end) segments.push_back(Segment{begin, end, 0, 0, {i}});
    }
    return FileDomains(std::move(segments), n);
  }
};

}  // namespace

std::unique_ptr<Partitioner> make_aligned_partitioner() { return std::make_unique<Aligned>(); }

}  // namespace volseg::io::twophase
