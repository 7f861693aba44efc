// SPDX-License-Identifier: MIT
// The merge: from parts of objects to numbered objects, with no rank
// holding more than its share (private to the segment library; label_merge.cpp;
// docs/label.md, "The merge").
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "label_kernel.hpp"
#include "volseg/io/comm.hpp"
#include "volseg/segment/label.hpp"

namespace volseg::segment::detail {

// Nodes are the parts of objects, numbered rank by rank: rank r's are
// [rank_base[r], rank_base[r + 1]).
struct NodeRanges {
  std::vector<std::uint64_t> rank_base;  // per rank, and the end
  int owner(std::uint64_t node) const;
};

// Whole periods of the volume along z, y and x (--periodic): a part's
// voxels moved by that many times the volume's size lie in another's frame.
using Periods = std::array<std::int32_t, 3>;

// Moves a part and its value records (values[first], ... count of them) by
// `periods` times dims: its sums, box, value-weighted sums and second
// moments (the first record's shape), as if its voxels lay there. Sums are
// modulo 2^64: a part may pass below 0 on the way, as long as its object
// ends at or above it.
void translate(ObjectPart& part, Chunked<ObjectValues>& values, std::size_t first, std::size_t count,
               const Periods& periods, const io::Index3& dims);

// A join of one of this rank's nodes (local: its index among this rank's)
// to another's, or this rank's, node.
struct LocalEdge {
  std::uint64_t a, b;  // local indices
};
struct CrossEdge {
  std::uint64_t remote;  // another rank's node (global)
  std::uint64_t local;   // this rank's node (local index)
};

// This rank's share of the merge: the parts of its nodes (index = local
// node) and, with values, their values (MergeRules::records a part, in the
// parts' order); the joins it found. The merge takes them apart on the way.
// Part: ObjectPart, or PartCore when there is no table, no values and no
// periodic axis (the merge then counts objects and voxels, and numbers).
template <class Part>
struct MergeInput {
  Chunked<Part> parts;
  Chunked<ObjectValues> values;
  std::vector<LocalEdge> local_edges;
  std::vector<CrossEdge> cross_edges;
  // With periodic axes, per edge: b's (local's) frame moved by shift lies
  // in a's (remote's); empty without.
  std::vector<Periods> local_shifts, cross_shifts;
};

// The same on every rank.
struct MergeRules {
  io::Index3 dims{};        // the volume's: first voxels fall in its z planes
  KeepRule keep;            // objects it does not keep are dropped (id 0)
  std::size_t records = 0;  // input.values holds that many records a part (0: none)
  bool with_table = false;  // the summary gets this rank's slice of the table
  // Axes along which the volume wraps: the table's objects are unwrapped
  // (each part moved by the periods its joins carry; the box's low corner
  // then moved into the volume), and one that reaches itself along an axis
  // is flagged (ObjectPart::wraps_z, ...).
  std::array<bool, 3> periodic{};
};

// What the merge gives back.
struct MergedObjects {
  std::vector<std::uint64_t> ids;  // per local node: its object's id, 0 when dropped
  // On every rank the figures; with_table, this rank's slice of the table
  // (table.first_id its first row's id).
  LabelSummary summary;
};

// Collective. One function per step (label_merge.cpp):
//
// 1. Each rank joins its own nodes (union-find; the smaller index wins) and
//    merges their measures into each root: an object that lies in this
//    rank's bricks is finished here and never leaves.
// 2. A join across ranks names the other rank's node; that rank names its
//    root, so every such join links two roots.
// 3. Roots joined across ranks are merged up a binary tree of ranks
//    (Harrison, Childs & Gaither's multi-stage union-find; io::reduce_tree):
//    at each level a rank hands the roots still open to the rank 2^level
//    below it. A group of ranks that holds every rank an object reaches
//    resolves it: its smallest node is its representative, told to each
//    member's rank.
// 4. Members send their measures to the representative's rank.
// 5. Objects are numbered by their first voxel: each goes to the rank that
//    holds its range of z planes (ranges balanced on the objects'
//    histogram), which sorts them; a prefix sum of the counts gives each
//    rank its first id. The ids go back to the representatives, then to the
//    members.
template <class Part>
MergedObjects merge_objects(const Comm& comm, const NodeRanges& nodes, MergeInput<Part> input, const MergeRules& rules);

}  // namespace volseg::segment::detail
