// SPDX-License-Identifier: MIT
// Pass 1's labelled bricks (BrickLabeler::View: runs, row starts, labels),
// kept for pass 2 to paint without reading or labelling the input again, as
// many as the memory bound leaves room for.
//
// They are packed one after another into slabs of 32 MiB advised as huge
// pages (io::allocate_huge): a brick of a random mask keeps millions of runs,
// and copying them into fresh 4 KiB pages faulted once per 341 runs. Runs
// and labels narrow to 16 bits where the brick's width and objects allow
// (BrickLabeler::Run16): 6 bytes a run rather than 12. When the
// objects need the room back, the bricks kept last are dropped first, a slab
// at a time (only a whole slab gives memory back); pass 2 reads and labels
// those again (the labelling is deterministic: the same labels). Pass 2
// releases each brick once painted and a slab once all its bricks are.
#pragma once

#include <cstdint>
#include <unordered_map>
#include <vector>

#include "label_kernel.hpp"
#include "volseg/io/memory.hpp"

namespace volseg::segment::detail {

class KeptBricks {
 public:
  // cap: the most bytes of slabs to hold.
  explicit KeptBricks(std::uint64_t cap) : cap_(cap) {}
  // Copies the brick labeler last labelled, unless that would pass cap or
  // room (what the bound leaves now, past what is kept).
  void keep(std::int64_t brick, const BrickLabeler::View& labelled, std::uint64_t room);
  // Drops kept bricks, the last kept first, until at least need bytes of
  // slabs are freed or nothing is kept; returns what it freed.
  std::uint64_t shed(std::uint64_t need);
  // A kept brick, valid until release(brick) or shed(); nullptr when not kept.
  const BrickLabeler::View* find(std::int64_t brick) const;
  // Forgets a kept brick, freeing its slab when it was the slab's last.
  void release(std::int64_t brick);

  std::uint64_t used() const { return used_; }
  std::uint64_t shed_count() const { return shed_; }
  bool holds(std::int64_t brick) const { return kept_.count(brick) != 0; }

  static constexpr std::size_t kSlab = std::size_t{32} << 20;

 private:
  struct Slab {
    io::HugeBuffer memory;
    std::size_t capacity = 0, used = 0, live = 0;
  };
  struct Kept {
    BrickLabeler::View view;
    std::size_t slab;
  };
  void drop_slab_if_empty(std::size_t slab);

  std::uint64_t cap_, used_ = 0, shed_ = 0;
  std::vector<Slab> slabs_;  // a freed slab stays as an empty entry: indices do not move
  std::vector<std::int64_t> order_;
  std::unordered_map<std::int64_t, Kept> kept_;
};

}  // namespace volseg::segment::detail
