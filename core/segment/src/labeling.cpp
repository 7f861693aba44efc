// SPDX-License-Identifier: MIT
// Labeling: every rank's bricks become numbered objects (docs/label.md).
//
// Each brick is labelled on its own (BrickLabeler, label_brick.cpp) and its
// objects become parts. Joins between bricks of one rank happen as the
// later brick is labelled; those across ranks after the last brick, by the
// rank of the later brick, which receives the earlier brick's face
// (label_faces.hpp). The parts and joins then become numbered objects with
// no rank holding more than its share (detail::merge_objects,
// label_merge.hpp), and each rank gets the ids of its bricks' labels.
#include <mpi.h>

#include <algorithm>
#include <functional>
#include <optional>
#include <span>
#include <unordered_map>

#include "label_faces.hpp"
#include "label_kernel.hpp"
#include "label_merge.hpp"
#include "volseg/io/error.hpp"
#include "volseg/io/messages.hpp"
#include "volseg/io/watchdog.hpp"
#include "volseg/segment/label.hpp"

namespace volseg::segment {

// The faces' geometry and joins (label_faces.hpp).
using detail::contact;
using detail::FacePair;
using detail::facing;
using detail::first_view;
using detail::join_faces;
using detail::moved;
using detail::Neighbour;
using detail::neighbours;
using detail::opposite;
using detail::take_face_pairs;

BrickMap BrickMap::from_layout(const BrickLayout& layout, int comm_size, Assignment assignment, std::uint64_t seed) {
  BrickMap map;
  map.dims = layout.dims();
  map.grid = layout.grid();
  map.shape = layout.shape();
  map.owner.assign(static_cast<std::size_t>(layout.count()), 0);
  for (std::int64_t b = 0; b < layout.count(); ++b) map.bricks.push_back(layout.brick(b));
  for (int rank = 0; rank < comm_size; ++rank)
    for (auto b : assign_bricks(layout.count(), rank, comm_size, assignment, seed))
      map.owner[static_cast<std::size_t>(b)] = rank;
  return map;
}

namespace {

// A join of label_a of brick_a and label_b of brick_b; across periodic
// faces b's voxels moved by shift times the volume's size touch a's.
struct Edge {
  std::int64_t brick_a, brick_b;
  std::uint32_t label_a, label_b;
  std::array<std::int8_t, 3> shift{};
};

std::array<std::int8_t, 3> shift_of(const std::array<int, 3>& periods, int sign) {
  return {static_cast<std::int8_t>(sign * periods[0]), static_cast<std::int8_t>(sign * periods[1]),
          static_cast<std::int8_t>(sign * periods[2])};
}

// A brick's faces, cut from its labeller once each: labels, and with
// classes each voxel's class.
struct OwnFaces {
  explicit OwnFaces(const BrickLabeler& l) : labeler(l) {}
  std::vector<std::uint32_t>& labels(int face) {
    auto it = planes.find(face);
    if (it == planes.end()) it = planes.emplace(face, labeler.face(face / 2, face % 2)).first;
    return it->second;
  }
  const std::uint8_t* classes(int face) {
    if (!labeler.classes()) return nullptr;
    auto it = class_planes.find(face);
    if (it == class_planes.end()) it = class_planes.emplace(face, labeler.face_classes(face / 2, face % 2)).first;
    return it->second.data();
  }
  const BrickLabeler& labeler;
  std::unordered_map<int, std::vector<std::uint32_t>> planes;
  std::unordered_map<int, std::vector<std::uint8_t>> class_planes;
};

struct KeptFace {
  std::vector<std::uint32_t> plane;
  std::vector<std::uint8_t> classes;  // with classes: each voxel's (BrickLabeler::face_classes)
  int uses = 0;
  const std::uint8_t* class_data() const { return classes.empty() ? nullptr : classes.data(); }
};

}  // namespace

struct Labeling::State {
  explicit State(int connectivity) : labeler(connectivity) {}
  BrickLabeler labeler;                                 // the brick labelled last (by add() or paint())
  std::int64_t labelled = -1;                           // that brick
  std::unordered_map<std::int64_t, std::size_t> index;  // brick -> position in mine_
  Chunked<ObjectPart> parts;                            // every brick's, in mine_ order
  Chunked<PartCore> cores;                              // the same, numbered in bricks (parts stays empty)
  Chunked<ObjectValues> values;
  std::vector<ObjectValues> brick_values;
  std::vector<std::uint64_t> part_start;             // per position in mine_, and the end
  std::unordered_map<std::int64_t, KeptFace> faces;  // brick * 6 + face
  std::vector<Edge> edges;
  std::vector<std::uint64_t> ids;  // per brick: 0, then its labels' ids
  std::size_t added = 0;
  bool finished = false;
  // number_in_bricks: the rule, and per brick (position in mine_) each
  // label's slot among the brick's parts and segments; what the bricks kept
  // and dropped themselves; the ids of parts and segments (node order); one
  // brick's ids, as ids() last made them.
  std::optional<KeepRule> in_bricks;
  std::vector<std::vector<std::uint32_t>> slots;
  BrickLabeler::InBrick in_brick;
  std::vector<std::uint8_t> shared;
  mutable std::vector<std::uint64_t> brick_ids;
};

Labeling::Labeling(const Comm& comm, BrickMap map, int connectivity, std::size_t fields, bool with_shape)
    : comm_(comm),
      map_(std::move(map)),
      connectivity_(check_connectivity(connectivity)),
      fields_(fields),
      with_shape_(with_shape),
      records_(fields != 0 || with_shape ? std::max<std::size_t>(fields, 1) : 0),
      state_(new State(connectivity_)) {
  if (map_.owner.size() != map_.bricks.size()) throw Error("internal error: a brick map without owners");
  for (std::size_t b = 0; b < map_.bricks.size(); ++b)
    if (map_.owner[b] == comm_.rank()) {
      state_->index[static_cast<std::int64_t>(b)] = mine_.size();
      mine_.push_back(static_cast<std::int64_t>(b));
    }
  state_->part_start.push_back(0);
}

Labeling::~Labeling() { delete state_; }

std::uint64_t Labeling::face_bytes() const {
  std::uint64_t bytes = 0;
  for (const auto& [key, face] : state_->faces) bytes += face.plane.size() * sizeof(std::uint32_t);
  return bytes;
}

std::uint64_t Labeling::part_count() const { return state_->parts.size() + state_->cores.size(); }

std::uint64_t Labeling::held_bytes() const {
  const State& s = *state_;
  std::uint64_t slots = 0;  // number_in_bricks: 4 bytes a label
  for (const auto& brick : s.slots) slots += brick.size() * sizeof(std::uint32_t);
  // Per node, past its part: the merge's root, joined flag and id (24 bytes).
  return s.parts.size() * (sizeof(ObjectPart) + records_ * sizeof(ObjectValues) + 24) +
         s.cores.size() * (sizeof(PartCore) + 24) + s.edges.size() * sizeof(Edge) + face_bytes() + slots;
}

void Labeling::set_classes(bool on) {
  if (state_->added != 0) throw Error("internal error: set_classes() after the first brick");
  state_->labeler.set_classes(on);
}

void Labeling::number_in_bricks(const KeepRule& keep) {
  State& s = *state_;
  if (s.added != 0 || records_ != 0 || keep.seeded)
    throw Error(
        "internal error: objects numbered in their bricks need a labeling without values, shape or seeds, "
        "before its first brick");
  // PartCore counts voxels in 48 bits: a volume of 2^48 voxels or more
  // keeps the full parts (and numbers every object in the merge).
  if (static_cast<double>(map_.dims[0]) * static_cast<double>(map_.dims[1]) * static_cast<double>(map_.dims[2]) >=
      0x1p48)
    return;
  s.in_bricks = keep;
  s.slots.resize(mine_.size());
}

void Labeling::add(std::int64_t brick, const std::uint8_t* mask, std::span<const FieldBrick> fields) {
  State& s = *state_;
  if (s.added >= mine_.size() || mine_[s.added] != brick)
    throw Error("internal error: bricks must be labelled in the order of mine()");
  if (fields.size() != fields_)
    throw Error("internal error: a labeling of " + std::to_string(fields_) + " fields was given " +
                std::to_string(fields.size()));
  const io::Extent& extent = map_.bricks[static_cast<std::size_t>(brick)];
  BrickLabeler& labeler = s.labeler;
  labeler.label(mask, extent.count);
  s.labelled = brick;
  const auto touching = neighbours(map_, brick, connectivity_);
  OwnFaces own_faces(labeler);
  auto own_face = [&](int face) -> std::vector<std::uint32_t>& { return own_faces.labels(face); };
  auto own_classes = [&](int face) { return own_faces.classes(face); };
  auto& own = own_faces.planes;
  // Joins to bricks of this rank labelled before, by neighbour (touching's
  // order), found before the numbering when it is done in the brick.
  std::vector<std::optional<std::vector<FacePair>>> early(touching.size());
  auto labelled_before = [&](const Neighbour& n) {
    return n.brick < brick && map_.owner[static_cast<std::size_t>(n.brick)] == comm_.rank();
  };
  if (s.in_bricks) {
    // The labels that take part in the merge. On a face that only bricks of
    // this rank labelled before look at: those that touch their faces (at
    // density 0.1, a tenth of them). On any other face: every label, as
    // what lies across is not known yet.
    s.shared.assign(static_cast<std::size_t>(labeler.objects()) + 1, 0);
    std::array<bool, 6> open{};
    std::vector<int> faces(touching.size());
    for (std::size_t k = 0; k < touching.size(); ++k) {
      faces[k] = facing(*contact(extent, moved(map_, touching[k]), connectivity_));
      open[static_cast<std::size_t>(faces[k])] |= !labelled_before(touching[k]);
    }
    for (int face = 0; face < 6; ++face)
      if (open[static_cast<std::size_t>(face)])
        for (const std::uint32_t label : own_face(face)) s.shared[label] = 1;
    for (std::size_t k = 0; k < touching.size(); ++k) {
      const int face = faces[k];
      if (open[static_cast<std::size_t>(face)]) continue;
      const io::Extent earlier = moved(map_, touching[k]);
      const auto& kept = s.faces.at(touching[k].brick * 6 + opposite(face));
      early[k] = join_faces(earlier, kept.plane, extent, own_face(face), *contact(earlier, extent, connectivity_),
                            connectivity_, kept.class_data(), own_classes(face));
      for (const FacePair& pair : *early[k]) s.shared[pair.b] = 1;
    }
    auto& slots = s.slots[s.added];
    labeler.measure_in_brick(extent, map_.dims, s.shared, *s.in_bricks, slots, s.cores, s.in_brick);
    for (auto& pairs : early)
      if (pairs)
        for (FacePair& pair : *pairs) pair.b = slots[pair.b - 1] + 1;
    // Faces name parts from here on (part index + 1), here and on other
    // ranks: every label on an open face is a part. (A closed face is not
    // used again.)
    for (auto& [face, plane] : own)
      if (open[face])
        for (auto& label : plane)
          if (label != 0) label = slots[label - 1] + 1;
  } else {
    labeler.measure(extent, map_.dims, s.parts);  // appends this brick's parts
  }
  s.part_start.push_back(s.parts.size() + s.cores.size());
  if (records_ != 0) {  // a record per object and field, the shape in the first
    s.brick_values.assign(labeler.objects() * records_, ObjectValues{});
    for (std::size_t k = 0; k < fields.size(); ++k) {
      const FieldBrick& field = fields[k];
      if (field.data == nullptr) throw Error("internal error: a labeling with values needs each brick's fields");
      labeler.measure_values(field.data, field.dtype, field.scale, field.offset, extent, s.brick_values.data() + k,
                             records_);
    }
    if (with_shape_) labeler.measure_shape(extent, s.brick_values.data(), records_);
    for (const auto& values : s.brick_values) s.values.push_back(values);
  }
  ++s.added;

  for (std::size_t k = 0; k < touching.size(); ++k) {
    const Neighbour& n = touching[k];
    const std::int64_t other = n.brick;
    const io::Extent earlier = moved(map_, n);  // where it touches this brick
    const auto side = *contact(extent, earlier, connectivity_);
    const int face = facing(side);
    if (other == brick) {  // its own image across periodic faces: join once
      if (!first_view(n.shift)) continue;
      const auto back = *contact(earlier, extent, connectivity_);
      const auto& plane = own_face(opposite(face));  // an unordered_map's elements stay put
      for (const FacePair& pair : join_faces(earlier, plane, extent, own_face(face), back, connectivity_,
                                             own_classes(opposite(face)), own_classes(face)))
        s.edges.push_back({brick, brick, pair.a, pair.b, shift_of(n.shift, -1)});
      if (with_shape_)
        take_face_pairs(earlier, plane, extent, own_face(face), back, s.values, s.part_start[s.added - 1], records_,
                        own_classes(opposite(face)), own_classes(face));
      continue;
    }
    if (labelled_before(n)) {  // join now
      auto& kept = s.faces.at(other * 6 + opposite(face));
      const auto back = *contact(earlier, extent, connectivity_);
      const auto pairs = early[k] ? std::move(*early[k])
                                  : join_faces(earlier, kept.plane, extent, own_face(face), back, connectivity_,
                                               kept.class_data(), own_classes(face));
      for (const FacePair& pair : pairs) s.edges.push_back({other, brick, pair.a, pair.b, shift_of(n.shift, -1)});
      if (with_shape_)
        take_face_pairs(earlier, kept.plane, extent, own_face(face), back, s.values, s.part_start[s.added - 1],
                        records_, kept.class_data(), own_classes(face));
      if (--kept.uses == 0) s.faces.erase(other * 6 + opposite(face));
    } else {  // a later brick of this rank, or another rank's: keep the face
      auto& kept = s.faces[brick * 6 + face];
      if (kept.uses++ == 0) {
        kept.plane = own_face(face);
        if (const std::uint8_t* classes = own_classes(face)) kept.classes.assign(classes, classes + kept.plane.size());
      }
    }
  }
}

void Labeling::seed(const std::uint8_t* seeds) {
  State& s = *state_;
  if (s.added == 0) throw Error("internal error: seed() before add()");
  if (s.in_bricks) throw Error("internal error: seed() on a labeling that numbers objects in their bricks");
  s.labeler.mark_seeds(seeds, s.parts, s.part_start[s.added - 1]);
}

namespace {

// The faces of this rank's bricks that a later brick on another rank
// needs, packed per rank: (brick low, brick high, face, size, plane...),
// and with classes the plane's classes, four a word.
std::vector<std::vector<std::uint32_t>> faces_to_send(const BrickMap& map, const std::vector<std::int64_t>& mine,
                                                      int connectivity,
                                                      const std::unordered_map<std::int64_t, KeptFace>& faces, int me,
                                                      int ranks) {
  std::vector<std::vector<std::uint32_t>> outgoing(static_cast<std::size_t>(ranks));
  for (std::int64_t brick : mine) {
    const io::Extent& extent = map.bricks[static_cast<std::size_t>(brick)];
    std::vector<std::pair<int, int>> sent;  // (rank, face)
    for (const Neighbour& n : neighbours(map, brick, connectivity)) {
      const int rank = map.owner[static_cast<std::size_t>(n.brick)];
      if (rank == me || n.brick < brick) continue;
      const int face = facing(*contact(extent, moved(map, n), connectivity));
      if (std::find(sent.begin(), sent.end(), std::pair{rank, face}) != sent.end()) continue;
      sent.emplace_back(rank, face);
      const auto& plane = faces.at(brick * 6 + face).plane;
      auto& out = outgoing[static_cast<std::size_t>(rank)];
      out.insert(out.end(), {static_cast<std::uint32_t>(brick), static_cast<std::uint32_t>(brick >> 32),
                             static_cast<std::uint32_t>(face), static_cast<std::uint32_t>(plane.size())});
      out.insert(out.end(), plane.begin(), plane.end());
      const auto& classes = faces.at(brick * 6 + face).classes;
      for (std::size_t i = 0; i < classes.size(); i += 4) {
        std::uint32_t word = 0;
        for (std::size_t j = i; j < std::min(i + 4, classes.size()); ++j)
          word |= std::uint32_t{classes[j]} << (8 * (j - i));
        out.push_back(word);
      }
    }
  }
  return outgoing;
}

// Joins each received face to the bricks of this rank that face it.
// With shape, values holds the parts' measures (stride records a part) and
// base_of(brick) where a brick of this rank's parts begin; null without.
void join_received_faces(const std::vector<std::uint32_t>& received, const BrickMap& map, int connectivity, int me,
                         const std::unordered_map<std::int64_t, KeptFace>& faces, std::vector<Edge>& edges,
                         Chunked<ObjectValues>* values, std::size_t stride,
                         const std::function<std::uint64_t(std::int64_t)>& base_of, bool classes) {
  for (std::size_t at = 0; at < received.size();) {
    const std::int64_t other = static_cast<std::int64_t>(received[at]) | static_cast<std::int64_t>(received[at + 1])
                                                                             << 32;
    const int face = static_cast<int>(received[at + 2]);
    const std::size_t size = received[at + 3];
    const std::vector<std::uint32_t> plane(received.begin() + static_cast<std::ptrdiff_t>(at + 4),
                                           received.begin() + static_cast<std::ptrdiff_t>(at + 4 + size));
    at += 4 + size;
    std::vector<std::uint8_t> plane_classes;
    if (classes) {
      plane_classes.resize(size);
      for (std::size_t i = 0; i < size; ++i)
        plane_classes[i] = static_cast<std::uint8_t>(received[at + i / 4] >> (8 * (i % 4)));
      at += (size + 3) / 4;
    }
    const std::uint8_t* theirs = classes ? plane_classes.data() : nullptr;
    const io::Extent& earlier = map.bricks[static_cast<std::size_t>(other)];
    for (const Neighbour& n : neighbours(map, other, connectivity)) {
      const std::int64_t brick = n.brick;
      if (map.owner[static_cast<std::size_t>(brick)] != me || brick < other) continue;
      const io::Extent here = moved(map, n);  // where it touches the earlier brick
      const auto side = *contact(earlier, here, connectivity);
      if (facing(side) != face) continue;
      const auto& kept = faces.at(brick * 6 + opposite(face));
      const auto& mine = kept.plane;
      for (const FacePair& pair : join_faces(earlier, plane, here, mine, side, connectivity, theirs, kept.class_data()))
        edges.push_back({other, brick, pair.a, pair.b, shift_of(n.shift, 1)});
      if (values)
        take_face_pairs(earlier, plane, here, mine, side, *values, base_of(brick), stride, theirs, kept.class_data());
    }
  }
}

// (brick, label) names node base[brick] + label - 1. Nodes go rank by rank,
// each rank's bricks in mine() order.
struct Nodes {
  std::vector<std::uint64_t> base;       // per brick
  std::vector<std::uint64_t> rank_base;  // per rank, and the end
  std::uint64_t count() const { return rank_base.back(); }
};

// Collective: every brick's label count, so that (brick, label) names a node.
Nodes number_nodes(MPI_Comm comm, int ranks, const BrickMap& map, const std::vector<std::int64_t>& mine,
                   const std::vector<std::uint64_t>& part_start) {
  const std::size_t brick_count = map.bricks.size();
  std::vector<std::uint64_t> counts(brick_count, 0);
  Nodes nodes{std::vector<std::uint64_t>(brick_count, 0),
              std::vector<std::uint64_t>(static_cast<std::size_t>(ranks) + 1, 0)};
  for (std::size_t i = 0; i < mine.size(); ++i)
    counts[static_cast<std::size_t>(mine[i])] = part_start[i + 1] - part_start[i];
  io::sum_in_place(comm, counts);
  auto& rank_base = nodes.rank_base;
  std::vector<std::uint64_t> per_rank(static_cast<std::size_t>(ranks), 0);
  for (std::size_t b = 0; b < brick_count; ++b) per_rank[static_cast<std::size_t>(map.owner[b])] += counts[b];
  for (int r = 0; r < ranks; ++r)
    rank_base[static_cast<std::size_t>(r) + 1] =
        rank_base[static_cast<std::size_t>(r)] + per_rank[static_cast<std::size_t>(r)];
  std::vector<std::uint64_t> next(rank_base.begin(), rank_base.end() - 1);
  for (std::size_t b = 0; b < brick_count; ++b) {  // ascending: each rank's bricks in mine() order
    auto& at = next[static_cast<std::size_t>(map.owner[b])];
    nodes.base[b] = at;
    at += counts[b];
  }
  return nodes;
}

}  // namespace

// The steps: faces across ranks are joined; nodes are numbered; the parts
// and joins become objects with no rank holding more than its share
// (detail::merge_objects); each brick's labels get their ids.
LabelSummary Labeling::finish(const KeepRule& keep, bool with_table) {
  State& s = *state_;
  if (s.added != mine_.size()) throw Error("internal error: finish() before every brick was labelled");
  const int ranks = comm_.size(), me = comm_.rank();
  MPI_Comm comm = comm_.get();

  // Faces across ranks: the earlier brick's face goes to the later brick's rank.
  {
    const io::watchdog::Phase phase("label, the merge: faces across ranks");
    auto outgoing = faces_to_send(map_, mine_, connectivity_, s.faces, me, ranks);
    // Faces grow with the volume: they move in pieces; outgoing is freed.
    const auto received = io::exchange(comm, outgoing);
    join_received_faces(
        received, map_, connectivity_, me, s.faces, s.edges, with_shape_ ? &s.values : nullptr, records_,
        [&](std::int64_t brick) { return s.part_start[s.index.at(brick)]; }, s.labeler.classes());
  }
  s.faces.clear();

  const Nodes nodes = number_nodes(comm, ranks, map_, mine_, s.part_start);
  const std::uint64_t count = s.part_start.back();
  // The edges as the merge's joins, this rank's and across ranks.
  auto fill_edges = [&](auto& input) {
    std::vector<ObjectValues>().swap(s.brick_values);
    // (brick, label) is node base[brick] + label - 1; the later brick of a join is always this rank's.
    const std::uint64_t base = nodes.rank_base[static_cast<std::size_t>(me)];
    auto node = [&](std::int64_t brick, std::uint32_t label) {
      return nodes.base[static_cast<std::size_t>(brick)] + label - 1;
    };
    // Only a table places objects: without one the joins' periods are not needed.
    const bool periodic = with_table && map_.periodic != std::array<bool, 3>{};
    for (const Edge& e : s.edges) {
      const std::uint64_t b = node(e.brick_b, e.label_b) - base;
      const bool local = map_.owner[static_cast<std::size_t>(e.brick_a)] == me;
      if (local)
        input.local_edges.push_back({node(e.brick_a, e.label_a) - base, b});
      else
        input.cross_edges.push_back({node(e.brick_a, e.label_a), b});
      if (periodic) (local ? input.local_shifts : input.cross_shifts).push_back({e.shift[0], e.shift[1], e.shift[2]});
    }
    std::vector<Edge>().swap(s.edges);
  };

  if (s.in_bricks &&
      (with_table || keep.min_voxels != s.in_bricks->min_voxels || keep.inside != s.in_bricks->inside || keep.seeded))
    throw Error("internal error: a labeling numbered in its bricks finishes with their keep rule and no table");
  const detail::MergeRules rules{map_.dims, keep, records_, with_table,
                                 with_table ? map_.periodic : std::array<bool, 3>{}};
  // A moved-from Chunked keeps its size: cleared after the move.
  detail::MergedObjects merged;
  if (s.in_bricks) {
    detail::MergeInput<PartCore> input{std::move(s.cores), {}, {}, {}, {}, {}};
    s.cores.clear();
    collectively(comm_, [&] { fill_edges(input); });
    merged = detail::merge_objects(comm_, detail::NodeRanges{nodes.rank_base}, std::move(input), rules);
  } else {
    detail::MergeInput<ObjectPart> input{std::move(s.parts), std::move(s.values), {}, {}, {}, {}};
    s.parts.clear();
    s.values.clear();
    collectively(comm_, [&] { fill_edges(input); });
    merged = detail::merge_objects(comm_, detail::NodeRanges{nodes.rank_base}, std::move(input), rules);
  }
  if (s.in_bricks) {
    // The objects the bricks kept: their voxels, the largest, those dropped.
    std::uint64_t sums[2] = {s.in_brick.kept_voxels, s.in_brick.dropped}, largest = s.in_brick.largest;
    check_mpi(MPI_Allreduce(MPI_IN_PLACE, sums, 2, MPI_UINT64_T, MPI_SUM, comm), "MPI_Allreduce");
    check_mpi(MPI_Allreduce(MPI_IN_PLACE, &largest, 1, MPI_UINT64_T, MPI_MAX, comm), "MPI_Allreduce");
    merged.summary.foreground += sums[0];
    merged.summary.dropped += sums[1];
    merged.summary.largest = std::max(merged.summary.largest, largest);
    s.ids = std::move(merged.ids);  // per part or segment, in node order
    s.finished = true;
    return std::move(merged.summary);
  }
  // Per brick: 0 for the background, then its labels' ids; in place, the
  // last brick first (brick i's ids move up by i + 1).
  s.ids = std::move(merged.ids);
  s.ids.resize(count + mine_.size());
  for (std::size_t i = mine_.size(); i-- > 0;) {
    const auto begin = static_cast<std::ptrdiff_t>(s.part_start[i]),
               end = static_cast<std::ptrdiff_t>(s.part_start[i + 1]);
    std::copy_backward(s.ids.begin() + begin, s.ids.begin() + end,
                       s.ids.begin() + end + static_cast<std::ptrdiff_t>(i) + 1);
    s.ids[s.part_start[i] + i] = 0;
  }
  s.finished = true;
  return std::move(merged.summary);
}

std::span<const std::uint64_t> Labeling::ids(std::int64_t brick) const {
  const State& s = *state_;
  if (!s.finished) throw Error("internal error: ids() before finish()");
  const std::size_t i = s.index.at(brick);
  if (s.in_bricks) {
    // A part's id is its own; a segment's objects take its id and the ones
    // after it, in label order.
    const auto& slots = s.slots[i];
    const std::uint64_t* node_ids = s.ids.data() + s.part_start[i];
    auto& out = s.brick_ids;
    out.resize(slots.size() + 1);
    out[0] = 0;
    std::uint32_t segment = BrickLabeler::kNoSlot;
    std::uint64_t next = 0;
    for (std::size_t label = 1; label <= slots.size(); ++label) {
      const std::uint32_t slot = slots[label - 1];
      if (slot == BrickLabeler::kNoSlot) {
        out[label] = 0;
      } else if ((slot & BrickLabeler::kSegmentSlot) == 0) {
        out[label] = node_ids[slot];
      } else {
        if (slot != segment) {
          segment = slot;
          next = node_ids[slot & ~BrickLabeler::kSegmentSlot];
        }
        out[label] = next++;
      }
    }
    return out;
  }
  const std::size_t begin = s.part_start[i] + i, end = s.part_start[i + 1] + i + 1;
  return {s.ids.data() + begin, end - begin};
}

template <class T>
void Labeling::paint(std::int64_t brick, const std::uint8_t* mask, T* out) {
  State& s = *state_;
  const auto brick_ids = ids(brick);  // after finish(), a brick of this rank's
  if (s.labelled != brick) {          // the labelling is deterministic: the same labels again
    s.labeler.label(mask, map_.bricks[static_cast<std::size_t>(brick)].count);
    s.labelled = brick;
  }
  if (brick_ids.size() != s.labeler.objects() + std::size_t{1})
    throw Error("internal error: a brick labelled differently again");
  s.labeler.paint(brick_ids, out);
}

template void Labeling::paint(std::int64_t, const std::uint8_t*, std::uint8_t*);
template void Labeling::paint(std::int64_t, const std::uint8_t*, std::uint16_t*);
template void Labeling::paint(std::int64_t, const std::uint8_t*, std::uint32_t*);
template void Labeling::paint(std::int64_t, const std::uint8_t*, std::uint64_t*);

const BrickLabeler& detail::LabelingInternals::labeler(const Labeling& labeling) { return labeling.state_->labeler; }

}  // namespace volseg::segment
