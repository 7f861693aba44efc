// SPDX-License-Identifier: MIT
// Union-find over the indices 0..n-1, as cc3d's: finds halve the path they
// walk (each node skips to its grandparent), and a join makes the smaller
// root the parent of the larger. So a set's root is its smallest index and
// every parent is at most its child, which the labelling relies on: the
// roots, taken in index order, number the sets in the order of their first
// elements (take_numbered), and one ascending pass flattens every node onto
// its root (flatten). Header-only and without checks in find and join: it
// is brick labelling's inner loop.
//
// With Axes > 0 it also places each element (the merge's periodic frames):
// its frame in its parent's, Axes integers summed along the path by place();
// a join says where b's frame lies in a's, and one within a set how far the
// set reaches itself. (The merge's tree of ranks keeps its own union-find,
// over sparse ids: label_forest.hpp's Forest says why.)
#pragma once

#include <array>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <numeric>
#include <type_traits>
#include <utility>
#include <vector>

namespace volseg::segment::detail {

template <std::unsigned_integral T, std::size_t Axes = 0>
class DisjointSet {
 public:
  static constexpr bool placed = Axes != 0;
  using Offset = std::array<std::int32_t, Axes>;  // an element's frame in another's

  DisjointSet() = default;
  explicit DisjointSet(std::size_t n) { reset(n); }

  // n singletons. storage, when given, lends its memory (a set that is
  // reset brick after brick allocates once).
  void reset(std::size_t n, std::vector<T>&& storage = {}) {
    parent_ = std::move(storage);
    parent_.resize(n);
    std::iota(parent_.begin(), parent_.end(), T{0});
    if constexpr (placed) offset_.assign(n, Offset{});
  }
  std::size_t size() const { return parent_.size(); }

  T find(T x) requires(!placed) {
    T* const parent = parent_.data();
    while (parent[x] != x) {
      parent[x] = parent[parent[x]];
      x = parent[x];
    }
    return x;
  }
  // Joins the sets of a and b; false when they were one already.
  bool join(T a, T b) requires(!placed) {
    // Runs of one object mostly share a parent already (a dense mask joins
    // the same two sets over and over): no walk then.
    if (parent_[a] == parent_[b]) return false;
    const T ra = find(a), rb = find(b);
    if (ra == rb) return false;
    if (ra < rb)
      parent_[rb] = ra;
    else
      parent_[ra] = rb;
    return true;
  }

  // With offsets: x's root, and x's frame in the root's.
  std::pair<T, Offset> place(T x) requires placed {
    T* const parent = parent_.data();
    Offset* const offset = offset_.data();
    Offset to_root{};
    while (parent[x] != x) {
      const T up = parent[x];
      if (parent[up] != up) {  // halving, through up's frame
        offset[x] = plus(offset[x], offset[up]);
        parent[x] = parent[up];
      }
      to_root = plus(to_root, offset[x]);
      x = parent[x];
    }
    return {x, to_root};
  }
  // A join with offsets: root took absorbed's set; or they were one set
  // (absorbed == root), and cycle is where b's frame moved by shift lies in
  // the frame the set gives b (nonzero: the set reaches itself).
  struct Joined {
    T root, absorbed;
    Offset cycle;
    bool merged() const { return absorbed != root; }
  };
  // Joins the sets of a and b, b's frame moved by shift lying in a's.
  Joined join(T a, T b, const Offset& shift) requires placed {
    const auto [ra, pa] = place(a);
    const auto [rb, pb] = place(b);
    const Offset rb_in_ra = minus(plus(pa, shift), pb);
    if (ra == rb) return {ra, ra, rb_in_ra};
    if (ra < rb) {
      parent_[rb] = ra;
      offset_[rb] = rb_in_ra;
      return {ra, rb, Offset{}};
    }
    parent_[ra] = rb;
    offset_[ra] = minus(Offset{}, rb_in_ra);
    return {rb, ra, Offset{}};
  }

  // Points every node at its root, in one ascending pass (a node's parent
  // comes before it, so it points at its root already). Then parent(x) is
  // x's root.
  void flatten() requires(!placed) {
    T* const parent = parent_.data();
    for (std::size_t x = 0; x < parent_.size(); ++x) parent[x] = parent[parent[x]];
  }
  T parent(T x) const { return parent_[x]; }
  bool is_root(T x) const { return parent_[x] == x; }

  // Numbers the sets 1, 2, ... in the order of their smallest elements and
  // hands back each element's number (its storage, for the next reset); the
  // set is left empty. sets: how many there were.
  // roots, when given, gets each set's smallest element in that order.
  std::vector<T> take_numbered(T& sets, std::vector<T>* roots = nullptr) requires(!placed) {
    T* const parent = parent_.data();
    sets = 0;
    // In place: a node's parent comes before it, so it holds its number
    // already when the node is reached, and so does its root.
    if (roots == nullptr) {
      for (std::size_t x = 0; x < parent_.size(); ++x) parent[x] = parent[x] == x ? ++sets : parent[parent[x]];
    } else {
      roots->clear();
      for (std::size_t x = 0; x < parent_.size(); ++x) {
        if (parent[x] == x) {
          roots->push_back(static_cast<T>(x));
          parent[x] = ++sets;
        } else {
          parent[x] = parent[parent[x]];
        }
      }
    }
    return std::exchange(parent_, {});
  }

 private:
  static Offset plus(const Offset& a, const Offset& b) {
    Offset sum;
    for (std::size_t i = 0; i < Axes; ++i) sum[i] = a[i] + b[i];
    return sum;
  }
  static Offset minus(const Offset& a, const Offset& b) {
    Offset difference;
    for (std::size_t i = 0; i < Axes; ++i) difference[i] = a[i] - b[i];
    return difference;
  }
  struct NoOffsets {};

  std::vector<T> parent_;
  // With Axes > 0, each element's frame in its parent's.
  [[no_unique_address]] std::conditional_t<placed, std::vector<Offset>, NoOffsets> offset_;
};

}  // namespace volseg::segment::detail
