// SPDX-License-Identifier: MIT
#include "kept_bricks.hpp"

#include <algorithm>
#include <cstring>
#include <limits>

namespace volseg::segment::detail {
namespace {

// Each array starts on 8 bytes (runs are pairs of int32).
constexpr std::size_t aligned(std::size_t bytes) { return (bytes + 7) & ~std::size_t{7}; }

// Runs narrow to 16 bits in a brick at most 65535 wide, labels in one of at
// most 65535 objects: 6 bytes a run rather than 12.
constexpr std::uint64_t kNarrow = std::numeric_limits<std::uint16_t>::max();
bool narrow_runs(const BrickLabeler::View& v) { return v.shape[2] <= static_cast<std::int64_t>(kNarrow); }
bool narrow_labels(const BrickLabeler::View& v) { return v.objects <= kNarrow; }

std::size_t packed_bytes(const BrickLabeler::View& v) {
  const std::size_t runs = v.runs.size();
  return aligned(runs * (narrow_runs(v) ? sizeof(BrickLabeler::Run16) : sizeof(BrickLabeler::Run))) +
         aligned(v.row_start.size_bytes()) + aligned(runs * (narrow_labels(v) ? 2 : 4));
}

template <class T>
std::span<const T> copy_into(std::byte*& at, std::span<const T> from) {
  if (!from.empty()) std::memcpy(at, from.data(), from.size_bytes());
  const std::span<const T> to(reinterpret_cast<const T*>(at), from.size());
  at += aligned(from.size_bytes());
  return to;
}

// from, each element converted to To (which holds it), placed at `at`.
template <class To, class From, class Convert>
std::span<const To> narrow_into(std::byte*& at, std::span<const From> from, Convert convert) {
  To* to = reinterpret_cast<To*>(at);
  for (std::size_t i = 0; i < from.size(); ++i) to[i] = convert(from[i]);
  at += aligned(from.size() * sizeof(To));
  return {to, from.size()};
}

}  // namespace

void KeptBricks::keep(std::int64_t brick, const BrickLabeler::View& labelled, std::uint64_t room) {
  if (holds(brick)) return;
  const std::size_t bytes = packed_bytes(labelled);
  const bool fits = !slabs_.empty() && slabs_.back().memory && slabs_.back().capacity - slabs_.back().used >= bytes;
  if (!fits) {  // a new slab, as large as cap and room allow up to kSlab
    const std::uint64_t avail = std::min(cap_ - std::min(cap_, used_), room);
    if (bytes > avail) return;
    const auto capacity = static_cast<std::size_t>(std::min<std::uint64_t>(std::max(bytes, kSlab), avail));
    // allocate_huge rounds up to 2 MiB; the tail past capacity is never
    // written (a huge page that holds its first bytes may still count it).
    slabs_.push_back({io::allocate_huge(capacity), capacity, 0, 0});
    used_ += capacity;
  }
  Slab& slab = slabs_.back();
  std::byte* at = slab.memory.get() + slab.used;
  BrickLabeler::View view{labelled.shape, {}, {}, {}, labelled.objects, {}, {}};
  if (narrow_runs(labelled))
    view.runs16 = narrow_into<BrickLabeler::Run16>(at, labelled.runs, [](const BrickLabeler::Run& r) {
      return BrickLabeler::Run16{static_cast<std::uint16_t>(r.begin), static_cast<std::uint16_t>(r.end)};
    });
  else
    view.runs = copy_into(at, labelled.runs);
  view.row_start = copy_into(at, labelled.row_start);
  if (narrow_labels(labelled))
    view.labels16 = narrow_into<std::uint16_t>(at, labelled.labels,
                                               [](std::uint32_t label) { return static_cast<std::uint16_t>(label); });
  else
    view.labels = copy_into(at, labelled.labels);
  slab.used += bytes;
  ++slab.live;
  order_.push_back(brick);
  kept_.emplace(brick, Kept{view, slabs_.size() - 1});
}

std::uint64_t KeptBricks::shed(std::uint64_t need) {
  const std::uint64_t before = used_;
  while (before - used_ < need && !order_.empty()) {
    const std::int64_t brick = order_.back();
    order_.pop_back();
    if (!holds(brick)) continue;  // painted already
    release(brick);
    ++shed_;
  }
  return before - used_;
}

const BrickLabeler::View* KeptBricks::find(std::int64_t brick) const {
  const auto it = kept_.find(brick);
  return it == kept_.end() ? nullptr : &it->second.view;
}

void KeptBricks::release(std::int64_t brick) {
  const auto it = kept_.find(brick);
  if (it == kept_.end()) return;
  const std::size_t slab = it->second.slab;
  kept_.erase(it);
  --slabs_[slab].live;
  drop_slab_if_empty(slab);
}

void KeptBricks::drop_slab_if_empty(std::size_t slab) {
  Slab& s = slabs_[slab];
  if (s.live != 0 || !s.memory) return;
  used_ -= s.capacity;
  s.memory.reset();
  s.capacity = s.used = 0;
  while (!slabs_.empty() && !slabs_.back().memory) slabs_.pop_back();
}

}  // namespace volseg::segment::detail
