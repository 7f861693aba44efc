// SPDX-License-Identifier: MIT
// From parts of objects to numbered objects, with no rank holding more than
// its share (private to the segment library; docs/label.md, "The merge").
#pragma once

#include <cstdint>
#include <vector>

#include "volseg/io/comm.hpp"
#include "volseg/segment/label.hpp"

namespace volseg::segment::detail {

// Nodes are the parts of objects, numbered rank by rank: rank r's are
// [rank_base[r], rank_base[r + 1]).
struct NodeRanges {
  std::vector<std::uint64_t> rank_base;  // per rank, and the end
  int owner(std::uint64_t node) const;
};

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
// node) and, with values, their values; the joins it found. The merge takes
// them apart on the way.
struct MergeInput {
  Chunked<ObjectPart> parts;
  Chunked<ObjectValues> values;
  std::vector<LocalEdge> local_edges;
  std::vector<CrossEdge> cross_edges;
};

// The same on every rank.
struct MergeRules {
  io::Index3 dims{};         // the volume's: first voxels fall in its z planes
  KeepRule keep;             // objects it does not keep are dropped (id 0)
  bool with_values = false;  // input.values holds every part's values
  bool with_table = false;   // the summary gets this rank's slice of the table
};

// What the merge gives back.
struct MergedObjects {
  std::vector<std::uint64_t> ids;  // per local node: its object's id, 0 when dropped
  // On every rank the figures; with_table, this rank's slice of the table
  // (table.first_id its first row's id).
  LabelSummary summary;
};

// Collective. One function per step (label_objects.cpp):
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
MergedObjects merge_objects(const Comm& comm, const NodeRanges& nodes, MergeInput input, const MergeRules& rules);

}  // namespace volseg::segment::detail
