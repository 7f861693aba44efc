// SPDX-License-Identifier: MIT
// Coloma et al. §5.2 and §6.4, persistent file realms: the realms are set by the
// first collective call for the whole file, anchored at byte 0, and kept
// until the file is closed, so every byte always goes through the same
// aggregator (coherent client caches, I/O locality). Realm i is
// [i*R, (i+1)*R), repeating every n realms; R is the realm_size hint, or
// the file's extent (its size at open, or the first call's end if larger)
// split in n, rounded up to lock_size so realms are aligned (§6.4).
#include <algorithm>
#include <numeric>
#include <optional>

#include "volseg/io/twophase/partitioner.hpp"

namespace volseg::io::twophase {
namespace {

class Persistent final : public Partitioner {
 public:
  std::string name() const override { return "persistent"; }
  FileDomains partition(const Region& region, Direction, const PartitionContext& context) override {
    if (realms_) return *realms_;
    const auto n = static_cast<std::uint64_t>(context.aggregators);
    const std::uint64_t lock = std::max<std::uint64_t>(context.lock_size, 1);
    std::uint64_t realm = context.realm_size;
    if (realm == 0) {
      const std::uint64_t extent = std::max(context.file_size, region.end);
      realm = std::max<std::uint64_t>((extent + n - 1) / n, 1);
    }
    realm = (realm + lock - 1) / lock * lock;
    std::vector<int> members(static_cast<std::size_t>(n));
    std::iota(members.begin(), members.end(), 0);
    realms_ = FileDomains({Segment{0, end_of_file, realm, 0, std::move(members)}}, context.aggregators);
    return *realms_;
  }

 private:
  std::optional<FileDomains> realms_;
};

}  // namespace

std::unique_ptr<Partitioner> make_persistent_partitioner() { return std::make_unique<Persistent>(); }

}  // namespace volseg::io::twophase
