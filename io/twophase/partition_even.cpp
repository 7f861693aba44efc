// SPDX-License-Identifier: MIT
// ROMIO's default (Coloma et al. §5.2, Liao & Choudhary Fig. 2): the aggregate access
// region split evenly into one contiguous domain per aggregator. Nothing
// carries over from one call to the next.
#include "volseg/io/twophase/partitioner.hpp"

namespace volseg::io::twophase {
namespace {

class Even final : public Partitioner {
 public:
  std::string name() const override { return "even"; }
  FileDomains partition(const Region& region, Direction, const PartitionContext& context) override {
    std::vector<Segment> segments;
    for (int i = 0; i < context.aggregators; ++i) {
      const std::uint64_t begin = even_boundary(region, context.aggregators, i);
      const std::uint64_t end = even_boundary(region, context.aggregators, i + 1);
      if (begin < end) segments.push_back(Segment{begin, end, 0, 0, {i}});
    }
    return FileDomains(std::move(segments), context.aggregators);
  }
};

}  // namespace

std::unique_ptr<Partitioner> make_even_partitioner() { return std::make_unique<Even>(); }

}  // namespace volseg::io::twophase
