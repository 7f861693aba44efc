// SPDX-License-Identifier: MIT
// Union-find over the indices 0..n-1, as cc3d's: finds halve the path they
// walk (each node skips to its grandparent), and a join makes the smaller
// root the parent of the larger. So a set's root is its smallest index and
// every parent is at most its child, which the labelling relies on: the
// roots, taken in index order, number the sets in the order of their first
// elements (number_sets), and one ascending pass flattens every node onto
// its root (flatten). Header-only and without checks in find and join: it
// is brick labelling's inner loop.
#pragma once

#include <concepts>
#include <cstddef>
#include <numeric>
#include <utility>
#include <vector>

namespace volseg::segment::detail {

template <std::unsigned_integral T>
class DisjointSet {
 public:
  DisjointSet() = default;
  explicit DisjointSet(std::size_t n) { reset(n); }

  // n singletons. storage, when given, lends its memory (a set that is
  // reset brick after brick allocates once).
  void reset(std::size_t n, std::vector<T>&& storage = {}) {
    parent_ = std::move(storage);
    parent_.resize(n);
    std::iota(parent_.begin(), parent_.end(), T{0});
  }
  std::size_t size() const { return parent_.size(); }

  T find(T x) {
    T* const parent = parent_.data();
    while (parent[x] != x) {
      parent[x] = parent[parent[x]];
      x = parent[x];
    }
    return x;
  }
  // Joins the sets of a and b; false when they were one already.
  bool join(T a, T b) {
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

  // Points every node at its root, in one ascending pass (a node's parent
  // comes before it, so it points at its root already). Then parent(x) is
  // x's root.
  void flatten() {
    T* const parent = parent_.data();
    for (std::size_t x = 0; x < parent_.size(); ++x) parent[x] = parent[parent[x]];
  }
  T parent(T x) const { return parent_[x]; }
  bool is_root(T x) const { return parent_[x] == x; }

  // Numbers the sets 1, 2, ... in the order of their smallest elements and
  // hands back each element's number (its storage, for the next reset); the
  // set is left empty. sets: how many there were.
  // roots, when given, gets each set's smallest element in that order.
  std::vector<T> take_numbered(T& sets, std::vector<T>* roots = nullptr) {
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
  std::vector<T> parent_;
};

}  // namespace volseg::segment::detail
