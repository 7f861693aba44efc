// SPDX-License-Identifier: MIT
// Where the merge's nodes lie (private to label_merge.cpp). With periodic
// axes a node's frame is its voxels moved by whole periods of the volume;
// an object that reaches itself moved by a period wraps along that axis.
// Within a rank (step 1) the frames are DisjointSet<std::uint64_t, 3>'s
// offsets (disjoint_set.hpp); across ranks (step 3) Forest keeps the roots
// joined across ranks, keyed by global node, as they travel up the tree of
// ranks.
#pragma once

#include <algorithm>
#include <climits>
#include <cstdint>
#include <unordered_map>
#include <utility>
#include <vector>

#include "label_merge.hpp"

namespace volseg::segment::detail {

// The axes along which two frames of one object differ: it reaches itself
// moved by a period (ObjectPart::wraps_z, ...).
inline std::uint32_t wrap_flags(const Periods& difference) {
  std::uint32_t flags = 0;
  for (int a = 0; a < 3; ++a)
    if (difference[static_cast<std::size_t>(a)] != 0) flags |= ObjectPart::wraps_z << a;
  return flags;
}

inline Periods plus(const Periods& a, const Periods& b) { return {a[0] + b[0], a[1] + b[1], a[2] + b[2]}; }
inline Periods minus(const Periods& a, const Periods& b) { return {a[0] - b[0], a[1] - b[1], a[2] - b[2]}; }

// The ranks an object reaches, as an interval (the tree's groups are
// intervals of ranks).
struct Span {
  std::int32_t lo = INT_MAX, hi = INT_MIN;
  void add(int rank) {
    lo = std::min(lo, rank);
    hi = std::max(hi, rank);
  }
  void add(const Span& other) {
    lo = std::min(lo, other.lo);
    hi = std::max(hi, other.hi);
  }
  bool within(int begin, int end) const { return lo >= begin && hi < end; }
};

// One node of a Forest as it travels: its root, its own span, its frame
// moved into its root's (periodic axes) and its root's wrap flags.
struct ForestRecord {
  std::uint64_t node, root;
  Span span;
  Periods offset;
  std::uint32_t wraps;
};

// A node of an object resolved across ranks, told to the node's rank: its
// representative, its frame moved into the representative's and the
// object's wrap flags.
struct Resolved {
  std::uint64_t node, representative;
  Periods offset;
  std::uint32_t wraps;
};

// Union-find over the roots joined across ranks that one rank holds, keyed
// by global node; the smaller node wins, and a root's span is its object's.
// With periodic axes each node also knows where its frame lies in its
// parent's (offset), and a root the axes along which its object reaches
// itself (wraps).
//
// Not DisjointSet (disjoint_set.hpp), the union-find of the rest of the
// labelling, whose elements are the dense indices 0..n-1 and whose smaller
// index wins. These nodes are sparse global ids that arrive in any order
// (absorb) and leave a whole set at a time, every round, when their object
// is resolved; the representative is the object's smallest global node. On
// DisjointSet that takes a map from ids to indices beside its arrays, the
// smallest node kept apart from the root, and the arrays rebuilt (or their
// dead entries kept) after each round's resolve: more bytes a root, and a
// copy of them every round, on rank 0, which holds every root that crosses
// ranks with cyclic or random assignment (docs/label.md: about 60 bytes a
// root, one hash-map node each here).
class Forest {
 public:
  bool empty() const { return nodes_.empty(); }
  void add(std::uint64_t node, const Span& span) {
    auto [it, inserted] = nodes_.try_emplace(node, Node{node, span, {}, 0});
    if (!inserted) nodes_.at(find(node).first).span.add(span);
  }
  // b's frame moved by shift lies in a's.
  void join(std::uint64_t a, std::uint64_t b, const Periods& shift = {}) {
    const auto [ra, pa] = find(a);
    const auto [rb, pb] = find(b);
    const Periods rb_in_ra = minus(plus(pa, shift), pb);
    if (ra == rb) {
      nodes_.at(ra).wraps |= wrap_flags(rb_in_ra);
      return;
    }
    const bool a_wins = ra < rb;
    Node& winner = nodes_.at(a_wins ? ra : rb);
    Node& loser = nodes_.at(a_wins ? rb : ra);
    loser.parent = a_wins ? ra : rb;
    loser.offset = a_wins ? rb_in_ra : Periods{-rb_in_ra[0], -rb_in_ra[1], -rb_in_ra[2]};
    winner.span.add(loser.span);
    winner.wraps |= loser.wraps;
  }
  // Every node, to hand to another rank; the forest is emptied.
  std::vector<ForestRecord> take() {
    std::vector<ForestRecord> records;
    records.reserve(nodes_.size());
    for (auto& [node, entry] : nodes_) {
      const auto [root, offset] = find(node);
      records.push_back({node, root, entry.span, offset, nodes_.at(root).wraps});
    }
    std::unordered_map<std::uint64_t, Node>().swap(nodes_);
    return records;
  }
  void absorb(const ForestRecord& record) {
    add(record.node, record.span);
    if (record.root != record.node) {
      add(record.root, Span{});
      join(record.root, record.node, record.offset);
    }
    nodes_.at(find(record.node).first).wraps |= record.wraps;
  }
  // The objects that reach no rank outside [begin, end): every member with
  // its representative (the object's smallest node), removed from the forest.
  std::vector<Resolved> resolve(int begin, int end) {
    std::vector<Resolved> done;
    for (const auto& entry : nodes_) {
      const auto [root, offset] = find(entry.first);
      const Node& r = nodes_.at(root);
      if (r.span.within(begin, end)) done.push_back({entry.first, root, offset, r.wraps});
    }
    for (const auto& resolved : done) nodes_.erase(resolved.node);
    std::sort(done.begin(), done.end(), [](const Resolved& a, const Resolved& b) { return a.node < b.node; });
    return done;
  }

 private:
  struct Node {
    std::uint64_t parent;
    Span span;
    Periods offset;  // this node's frame in its parent's
    std::uint32_t wraps;
  };
  // x's root, and x's frame moved into the root's.
  std::pair<std::uint64_t, Periods> find(std::uint64_t x) {
    Periods to_root{};
    for (;;) {
      Node& n = nodes_.at(x);
      if (n.parent == x) return {x, to_root};
      Node& up = nodes_.at(n.parent);
      to_root = plus(to_root, n.offset);
      if (up.parent != n.parent) {  // halving: skip to the grandparent
        n.offset = plus(n.offset, up.offset);
        n.parent = up.parent;
        to_root = plus(to_root, up.offset);
      }
      x = up.parent;
    }
  }
  std::unordered_map<std::uint64_t, Node> nodes_;
};

}  // namespace volseg::segment::detail
