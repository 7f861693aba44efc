// SPDX-License-Identifier: MIT
// The merge: from parts of objects to numbered objects, with no rank holding
// more than its share (label_merge.hpp says the steps; docs/label.md, "The
// merge"), and the object table it leaves.
#include "label_merge.hpp"

#include <mpi.h>

#include <algorithm>
#include <climits>
#include <memory>
#include <numeric>
#include <type_traits>
#include <unordered_map>

#include "disjoint_set.hpp"
#include "label_forest.hpp"
#include "volseg/io/error.hpp"
#include "volseg/io/messages.hpp"
#include "volseg/io/reduce.hpp"
#include "volseg/io/watchdog.hpp"

namespace volseg::segment {

ObjectTable::ObjectTable() noexcept = default;
ObjectTable::ObjectTable(std::uint64_t first, std::unique_ptr<Rows> rows) noexcept
    : first_id(first), rows_(std::move(rows)) {}
ObjectTable::ObjectTable(ObjectTable&&) noexcept = default;
ObjectTable& ObjectTable::operator=(ObjectTable&&) noexcept = default;
ObjectTable::~ObjectTable() = default;
std::size_t ObjectTable::size() const { return rows_ ? rows_->parts.size() : 0; }
const ObjectPart& ObjectTable::part(std::size_t i) const { return rows_->parts[rows_->at(i)]; }
const ObjectValues& ObjectTable::values_of(std::size_t i, std::size_t k) const {
  return rows_->values[rows_->at(i) * rows_->records + k];
}

}  // namespace volseg::segment

namespace volseg::segment::detail {

int NodeRanges::owner(std::uint64_t node) const {
  // The last rank whose range starts at or before node: ranks without nodes
  // share their start with the next.
  return static_cast<int>(std::upper_bound(rank_base.begin(), rank_base.end(), node) - rank_base.begin()) - 1;
}

void translate(ObjectPart& part, Chunked<ObjectValues>& values, std::size_t first, std::size_t count,
               const Periods& periods, const io::Index3& dims) {
  std::uint64_t d[3];  // voxels, modulo 2^64
  for (int a = 0; a < 3; ++a) {
    const std::int64_t by = static_cast<std::int64_t>(periods[static_cast<std::size_t>(a)]) * dims[a];
    d[a] = static_cast<std::uint64_t>(by);
    part.lo[a] += static_cast<std::int32_t>(by);
    part.hi[a] += static_cast<std::int32_t>(by);
  }
  const std::uint64_t n = part.voxels, s[3] = {part.sum[0], part.sum[1], part.sum[2]};
  for (int a = 0; a < 3; ++a) part.sum[a] = s[a] + n * d[a];
  for (std::size_t k = 0; k < count; ++k) {
    ObjectValues& v = values[first + k];
    for (int a = 0; a < 3; ++a) v.weighted[a] += v.sum * static_cast<double>(static_cast<std::int64_t>(d[a]));
  }
  if (count == 0) return;
  // sum (p + d)(q + e) = sum pq + e sum p + d sum q + n d e, for z*z, y*y,
  // x*x, z*y, z*x, y*x.
  static constexpr int kPairs[6][2] = {{0, 0}, {1, 1}, {2, 2}, {0, 1}, {0, 2}, {1, 2}};
  auto& moments = values[first].moments;
  for (int i = 0; i < 6; ++i) {
    const int p = kPairs[i][0], q = kPairs[i][1];
    moments[i] += d[q] * s[p] + d[p] * s[q] + n * d[p] * d[q];
  }
}

namespace {

struct Named {
  std::uint64_t node, value;
};

// A member's measures on their way to its representative (its values
// travel beside it, MergeRules::records each).
template <class Part>
struct Moved {
  std::uint64_t representative, member;
  Part part;
};

// An object on its way to the rank that numbers its z range.
template <class Part>
struct Row {
  Part part;
  std::uint64_t node;
};

// The positions of parts in the order of their first voxels (the caller
// skips this when they are in that order already, as one rank's slab of
// whole planes is): counted into z planes, then sorted within each (a
// plane's objects fit in cache).
template <class Part>
std::vector<std::uint64_t> order_by_first(const Chunked<Part>& parts, std::uint64_t plane) {
  const std::size_t n = parts.size();
  std::uint64_t z0 = UINT64_MAX, z1 = 0;
  for (std::size_t i = 0; i < n; ++i) {
    z0 = std::min(z0, parts[i].first / plane);
    z1 = std::max(z1, parts[i].first / plane);
  }
  std::vector<std::uint64_t> start(z1 - z0 + 2, 0);
  for (std::size_t i = 0; i < n; ++i) ++start[parts[i].first / plane - z0 + 1];
  std::partial_sum(start.begin(), start.end(), start.begin());
  std::vector<std::pair<std::uint64_t, std::uint64_t>> keyed(n);  // (first voxel, position)
  {
    auto next = start;
    for (std::size_t i = 0; i < n; ++i) keyed[next[parts[i].first / plane - z0]++] = {parts[i].first, i};
  }
  for (std::size_t z = 0; z + 1 < start.size(); ++z)
    std::sort(keyed.begin() + static_cast<std::ptrdiff_t>(start[z]),
              keyed.begin() + static_cast<std::ptrdiff_t>(start[z + 1]));
  std::vector<std::uint64_t> order(n);
  for (std::size_t i = 0; i < n; ++i) order[i] = keyed[i].second;
  return order;
}

template <class T>
std::vector<std::vector<T>> per_rank(int ranks) {
  return std::vector<std::vector<T>>(static_cast<std::size_t>(ranks));
}

template <class T>
void free_vector(std::vector<T>& v) {
  std::vector<T>().swap(v);
}

template <class K, class V>
void free_map(std::unordered_map<K, V>& map) {
  std::unordered_map<K, V>().swap(map);
}

// Which rank numbers the objects whose first voxel lies in each z plane:
// consecutive planes, about the same number of objects per rank.
std::vector<int> plane_ranks(MPI_Comm comm, int ranks, std::vector<std::uint64_t>& per_plane) {
  io::sum_in_place(comm, per_plane);
  std::uint64_t total = 0;
  for (const auto n : per_plane) total += n;
  std::vector<int> rank_of(per_plane.size(), 0);
  std::uint64_t before = 0;
  for (std::size_t z = 0; z < per_plane.size(); ++z) {
    if (total > 0)
      rank_of[z] =
          std::min(ranks - 1, static_cast<int>(static_cast<double>(before) / static_cast<double>(total) * ranks));
    before += per_plane[z];
  }
  return rank_of;
}

// The summary's figures: counted on each rank, summed over the ranks (the
// largest object: their maximum).
struct LabelFigures {
  std::uint64_t kept = 0;     // objects numbered
  std::uint64_t dropped = 0;  // objects the keep rule drops
  std::uint64_t voxels = 0;   // of the kept objects
  std::uint64_t joined = 0;   // nodes that take part in a join
  std::uint64_t joins = 0;    // joins found, within and across ranks
  std::uint64_t largest = 0;  // voxels of the largest kept object

  void reduce(MPI_Comm comm) {
    std::uint64_t sums[] = {kept, dropped, voxels, joined, joins};
    check_mpi(MPI_Allreduce(MPI_IN_PLACE, sums, 5, MPI_UINT64_T, MPI_SUM, comm), "MPI_Allreduce");
    check_mpi(MPI_Allreduce(MPI_IN_PLACE, &largest, 1, MPI_UINT64_T, MPI_MAX, comm), "MPI_Allreduce");
    kept = sums[0];
    dropped = sums[1];
    voxels = sums[2];
    joined = sums[3];
    joins = sums[4];
  }
  void fill(LabelSummary& summary) const {
    summary.objects = kept;
    summary.dropped = dropped;
    summary.foreground = voxels;
    summary.boundary_parts = joined;
    summary.joins = joins;
    summary.largest = largest;
  }
};

// One rank's merge as it goes from step to step.
template <class Part>
struct MergeState {
  MPI_Comm mpi;
  int me, ranks;
  const NodeRanges& nodes;
  std::uint64_t base, count;  // this rank's first node, and its number of nodes
  const MergeRules& rules;
  MergeInput<Part>& input;
  DisjointSet<std::uint64_t> own;  // step 1's joins; then own.parent(n) is n's root
  std::vector<bool> joined;        // the nodes that take part in a join
  LabelFigures figures;
  bool periodic;                // any periodic axis: frames and offsets below
  std::vector<Periods> placed;  // with periodic axes, after step 1: each node's frame in its root's
  static constexpr bool table_part = std::is_same_v<Part, ObjectPart>;  // else PartCore: no sums, no box

  MergeState(const Comm& comm, const NodeRanges& node_ranges, MergeInput<Part>& merged, const MergeRules& merge_rules)
      : mpi(comm.get()),
        me(comm.rank()),
        ranks(comm.size()),
        nodes(node_ranges),
        base(nodes.rank_base[static_cast<std::size_t>(me)]),
        count(merged.parts.size()),
        rules(merge_rules),
        input(merged),
        own(count),
        joined(count, false),
        periodic(rules.periodic != std::array<bool, 3>{}) {
    if (!table_part && (periodic || rules.records != 0 || rules.with_table))
      throw Error("internal error: a merge of 16-byte parts with a table, values or periodic axes");
    if (nodes.rank_base[static_cast<std::size_t>(me) + 1] - base != count)
      throw Error("internal error: a rank's parts and its node range differ");
    figures.joins = input.local_edges.size() + input.cross_edges.size();
  }
  std::uint64_t root(std::uint64_t local) const { return own.parent(local); }
  Periods place(std::uint64_t local) const { return periodic ? placed[local] : Periods{}; }
  // Moves node n's part and records by periods (periodic axes only).
  void move(std::uint64_t n, const Periods& periods) {
    if constexpr (table_part) {
      if (periods == Periods{}) return;
      translate(input.parts[n], input.values, n * rules.records, rules.records, periods, rules.dims);
    }
  }
};

// 1. This rank's own joins; every part's measures go to its root.
template <class Part>
void join_within_rank(MergeState<Part>& m) {
  const io::watchdog::Phase phase("label, the merge: joins within a rank");
  for (const auto& e : m.input.local_edges) {
    m.joined[e.a] = m.joined[e.b] = true;
    m.own.join(e.a, e.b);
  }
  if (m.periodic) {  // where each node lies in its root's frame, and the roots that reach themselves
    // The same joins with frames (the smaller node wins, as in own: the
    // same roots), and per root the axes along which its object reaches itself.
    DisjointSet<std::uint64_t, 3> placed(m.count);
    std::vector<std::uint32_t> wraps(m.count, 0);
    for (std::size_t i = 0; i < m.input.local_edges.size(); ++i) {
      const auto joined = placed.join(m.input.local_edges[i].a, m.input.local_edges[i].b, m.input.local_shifts[i]);
      wraps[joined.root] |= joined.merged() ? wraps[joined.absorbed] : wrap_flags(joined.cycle);
    }
    m.placed.resize(m.count);
    for (std::uint64_t n = 0; n < m.count; ++n) {
      const auto [root, offset] = placed.place(n);
      m.placed[n] = offset;
      if (root == n) m.input.parts[n].border |= static_cast<std::uint16_t>(wraps[n]);
    }
    free_vector(m.input.local_shifts);
  }
  free_vector(m.input.local_edges);
  m.own.flatten();
  // Ascending, so the measures of a root add in node order.
  for (std::uint64_t n = 0; n < m.count; ++n) {
    const std::uint64_t root = m.root(n);
    if (root == n) continue;
    m.move(n, m.place(n));
    m.input.parts[root].merge(m.input.parts[n]);
    for (std::size_t k = 0; k < m.rules.records; ++k)
      m.input.values[root * m.rules.records + k].merge(m.input.values[n * m.rules.records + k]);
  }
}

// This rank's roots joined across ranks.
struct CrossLink {
  std::uint64_t remote, local;  // another rank's root (global), this rank's root (local)
  Periods shift;                // the local root's frame in the remote's
  auto key() const { return std::tie(remote, local, shift); }
};
struct CrossRoots {
  std::unordered_map<std::uint64_t, Span> spans;  // by root: the ranks its object reaches
  std::vector<CrossLink> links;
};

// The roots of this rank's nodes that the other ranks ask for (questions,
// from[r] of them from rank r), per asking rank.
// With periodic axes, places gets each asked node's frame in its root's.
template <class Part>
std::vector<std::vector<std::uint64_t>> answer_roots(MergeState<Part>& m, const std::vector<std::uint64_t>& questions,
                                                     const std::vector<std::uint64_t>& from, CrossRoots& cross,
                                                     std::vector<std::vector<Periods>>& places) {
  auto answers = per_rank<std::uint64_t>(m.ranks);
  places = per_rank<Periods>(m.periodic ? m.ranks : 0);
  std::size_t at = 0;
  for (int r = 0; r < m.ranks; ++r)
    for (std::uint64_t k = 0; k < from[static_cast<std::size_t>(r)]; ++k) {
      const std::uint64_t local = questions[at++] - m.base;
      m.joined[local] = true;
      const std::uint64_t root = m.root(local);
      answers[static_cast<std::size_t>(r)].push_back(m.base + root);
      if (m.periodic) places[static_cast<std::size_t>(r)].push_back(m.placed[local]);
      auto& span = cross.spans[root];
      span.add(r);
      span.add(m.me);
    }
  return answers;
}

// Each join across ranks as a link of two roots, from the roots the other
// ranks answered (replied[r] of them from rank r, to asked[r] in order).
// places: with periodic axes, each answered node's frame in its root's.
template <class Part>
void link_roots(MergeState<Part>& m, const std::vector<std::vector<std::uint64_t>>& asked,
                const std::vector<std::uint64_t>& roots, const std::vector<Periods>& places,
                const std::vector<std::uint64_t>& replied, CrossRoots& cross) {
  std::vector<std::uint64_t> reply_at(static_cast<std::size_t>(m.ranks) + 1, 0);
  for (int r = 0; r < m.ranks; ++r) {
    const auto i = static_cast<std::size_t>(r);
    if (replied[i] != asked[i].size()) throw Error("internal error: a rank answered a different number of nodes");
    reply_at[i + 1] = reply_at[i] + replied[i];
  }
  cross.links.reserve(m.input.cross_edges.size());
  for (std::size_t i = 0; i < m.input.cross_edges.size(); ++i) {
    const CrossEdge& e = m.input.cross_edges[i];
    const int owner = m.nodes.owner(e.remote);
    const auto& list = asked[static_cast<std::size_t>(owner)];
    const auto index = static_cast<std::size_t>(std::lower_bound(list.begin(), list.end(), e.remote) - list.begin());
    const std::size_t answer = reply_at[static_cast<std::size_t>(owner)] + index;
    const std::uint64_t root = m.root(e.local);
    // The local root's frame in the remote root's: remote node at pr in
    // its root, local node at pl in its own, local = remote + shift.
    const Periods shift =
        m.periodic ? minus(plus(places[answer], m.input.cross_shifts[i]), m.placed[e.local]) : Periods{};
    cross.links.push_back({roots[answer], root, shift});
    auto& span = cross.spans[root];
    span.add(owner);
    span.add(m.me);
  }
  free_vector(m.input.cross_edges);
  free_vector(m.input.cross_shifts);
  std::sort(cross.links.begin(), cross.links.end(),
            [](const CrossLink& a, const CrossLink& b) { return a.key() < b.key(); });
  cross.links.erase(std::unique(cross.links.begin(), cross.links.end(),
                                [](const CrossLink& a, const CrossLink& b) { return a.key() == b.key(); }),
                    cross.links.end());
}

// 2. Each join across ranks asks the other node's rank for its root.
template <class Part>
CrossRoots roots_across_ranks(MergeState<Part>& m) {
  const io::watchdog::Phase phase("label, the merge: roots across ranks");
  auto asks = per_rank<std::uint64_t>(m.ranks);
  for (const auto& e : m.input.cross_edges) {
    asks[static_cast<std::size_t>(m.nodes.owner(e.remote))].push_back(e.remote);
    m.joined[e.local] = true;
  }
  for (auto& ask : asks) {
    std::sort(ask.begin(), ask.end());
    ask.erase(std::unique(ask.begin(), ask.end()), ask.end());
  }
  const auto asked = asks;
  CrossRoots cross;
  std::vector<std::uint64_t> from;
  auto questions = io::exchange(m.mpi, asks, &from);
  std::vector<std::vector<Periods>> places;
  auto answers = answer_roots(m, questions, from, cross, places);
  free_vector(questions);
  std::vector<std::uint64_t> replied;
  const auto roots = io::exchange(m.mpi, answers, &replied);
  const auto placed = m.periodic ? io::exchange(m.mpi, places) : std::vector<Periods>{};
  link_roots(m, asked, roots, placed, replied, cross);
  return cross;
}

// 3. Up the tree of ranks until every object across ranks is resolved: the
// representative of each of this rank's roots joined across ranks (with
// periodic axes, where the root's frame lies in the representative's, and
// the axes along which the object reaches itself).
using Representatives = std::unordered_map<std::uint64_t, Resolved>;  // by this rank's root (local)
template <class Part>
Representatives resolve_across_ranks(const MergeState<Part>& m, CrossRoots cross) {
  const io::watchdog::Phase phase("label, the merge: objects across ranks, up a tree of ranks");
  Forest forest;
  for (const auto& [root, span] : cross.spans) forest.add(m.base + root, span);
  for (const auto& link : cross.links) {
    Span span;
    span.add(m.nodes.owner(link.remote));
    span.add(m.me);
    forest.add(link.remote, span);
    forest.join(link.remote, m.base + link.local, link.shift);
  }
  cross = CrossRoots{};
  Representatives representative;
  auto resolve_group = [&](const io::TreeRound& round) {
    auto told = per_rank<Resolved>(m.ranks);
    if (round.holds)
      for (const Resolved& resolved : forest.resolve(round.group_begin, round.group_end))
        told[static_cast<std::size_t>(m.nodes.owner(resolved.node))].push_back(resolved);
    for (const auto& news : io::exchange(m.mpi, told)) representative[news.node - m.base] = news;
  };
  io::reduce_tree<ForestRecord>(
      m.mpi, [&] { return forest.take(); }, [&](const ForestRecord& record) { forest.absorb(record); }, resolve_group);
  if (!forest.empty()) throw Error("internal error: objects across ranks left unresolved");
  return representative;
}

// 4. Members' measures to their representatives (moved into its frame);
// gives back the pairs (representative, member node) this rank absorbed.
template <class Part>
std::vector<std::pair<std::uint64_t, std::uint64_t>> move_to_representatives(MergeState<Part>& m,
                                                                             const Representatives& representative) {
  const std::size_t records = m.rules.records;
  auto moving = per_rank<Moved<Part>>(m.ranks);
  for (const auto& [root, resolved] : representative) {
    m.input.parts[root].border |= static_cast<std::uint16_t>(resolved.wraps);  // flags fit PartCore's 16 bits
    const std::uint64_t rep = resolved.representative;
    if (rep == m.base + root) continue;
    m.move(root, resolved.offset);
    moving[static_cast<std::size_t>(m.nodes.owner(rep))].push_back({rep, m.base + root, m.input.parts[root]});
  }
  auto values_out = per_rank<ObjectValues>(m.ranks);
  for (std::size_t r = 0; r < moving.size(); ++r) {
    auto& list = moving[r];  // the sums of values add in one order, whatever the hash map's
    std::sort(list.begin(), list.end(), [](const Moved<Part>& a, const Moved<Part>& b) { return a.member < b.member; });
    for (const Moved<Part>& moved : list)
      for (std::size_t k = 0; k < records; ++k)
        values_out[r].push_back(m.input.values[(moved.member - m.base) * records + k]);
  }
  // Members and their values travel in the same order: they line up again.
  const auto arrived = io::exchange(m.mpi, moving);
  const auto arrived_values = io::exchange(m.mpi, values_out);
  std::vector<std::pair<std::uint64_t, std::uint64_t>> absorbed;
  for (std::size_t i = 0; i < arrived.size(); ++i) {
    const Moved<Part>& moved = arrived[i];
    const std::uint64_t local = moved.representative - m.base;
    m.input.parts[local].merge(moved.part);
    for (std::size_t k = 0; k < records; ++k)
      m.input.values[local * records + k].merge(arrived_values[i * records + k]);
    absorbed.emplace_back(local, moved.member);
  }
  return absorbed;
}

// How many objects an item numbered by first voxel stands for: a segment
// its objects (ObjectPart::segment), an object one.
template <class Part>
std::uint64_t weight(const Part& part) {
  return (part.border & ObjectPart::segment) != 0 ? part.voxels : 1;
}

// 5a. The objects this rank's roots stand for (not those absorbed by
// another root, absorbed_here): counted into the figures, and per z plane
// of their first voxels.
template <class Part>
std::vector<std::uint64_t> count_objects(MergeState<Part>& m, const std::vector<bool>& absorbed_here) {
  const std::uint64_t plane = static_cast<std::uint64_t>(m.rules.dims[1]) * static_cast<std::uint64_t>(m.rules.dims[2]);
  std::vector<std::uint64_t> per_plane(static_cast<std::size_t>(m.rules.dims[0]), 0);
  for (std::uint64_t n = 0; n < m.count; ++n) {
    if (!m.own.is_root(n) || absorbed_here[n]) continue;
    const std::uint64_t voxels = m.input.parts[n].voxels;
    const std::uint64_t objects = weight(m.input.parts[n]);
    if (!m.rules.keep.keeps(m.input.parts[n])) {
      ++m.figures.dropped;
      continue;
    }
    m.figures.kept += objects;
    if (objects == 1 && (m.input.parts[n].border & ObjectPart::segment) == 0) {
      m.figures.voxels += voxels;
      m.figures.largest = std::max(m.figures.largest, voxels);
    }  // a segment's objects are counted by their labeling
    per_plane[static_cast<std::size_t>(m.input.parts[n].first / plane)] += objects;
  }
  m.figures.joined = static_cast<std::uint64_t>(std::count(m.joined.begin(), m.joined.end(), true));
  free_vector(m.joined);
  return per_plane;
}

// The objects this rank numbers, in input.parts (and input.values, for the
// table), and the node of each.
struct HeldObjects {
  std::vector<std::uint64_t> nodes;
  bool in_order = true;  // their first voxels ascend as they are held
};

// 5b. Each kept object to the rank that numbers its z plane (rank_of). Those
// this rank numbers stay in input.parts, moved forward in place.
template <class Part>
HeldObjects gather_objects(MergeState<Part>& m, std::vector<bool>& absorbed_here, const std::vector<int>& rank_of) {
  const std::uint64_t plane = static_cast<std::uint64_t>(m.rules.dims[1]) * static_cast<std::uint64_t>(m.rules.dims[2]);
  const std::size_t records = m.rules.with_table ? m.rules.records : 0;  // values the table keeps
  auto& parts = m.input.parts;
  auto& values = m.input.values;
  HeldObjects held;
  held.nodes.reserve(m.count);
  auto rows_out = per_rank<Row<Part>>(m.ranks);
  auto values_out = per_rank<ObjectValues>(m.ranks);
  std::uint64_t kept = 0;
  for (std::uint64_t n = 0; n < m.count; ++n) {
    if (!m.own.is_root(n) || absorbed_here[n] || !m.rules.keep.keeps(parts[n])) continue;
    const int to = rank_of[static_cast<std::size_t>(parts[n].first / plane)];
    if (to == m.me) {
      if (kept != n) {
        parts[kept] = parts[n];
        for (std::size_t k = 0; k < records; ++k) values[kept * records + k] = values[n * records + k];
      }
      held.in_order = held.in_order && (kept == 0 || parts[kept - 1].first < parts[kept].first);
      held.nodes.push_back(m.base + n);
      ++kept;
    } else {
      rows_out[static_cast<std::size_t>(to)].push_back({parts[n], m.base + n});
      for (std::size_t k = 0; k < records; ++k)
        values_out[static_cast<std::size_t>(to)].push_back(values[n * records + k]);
    }
  }
  free_vector(absorbed_here);
  parts.shrink(kept);
  values.shrink(kept * records);
  // Rows and their values travel in the same order: they line up again.
  const auto rows = io::exchange(m.mpi, rows_out);
  const auto row_values = io::exchange(m.mpi, values_out);
  for (const auto& row : rows) {
    held.in_order = held.in_order && (parts.empty() || parts[parts.size() - 1].first < row.part.first);
    parts.push_back(row.part);
    held.nodes.push_back(row.node);
  }
  for (const auto& v : row_values) values.push_back(v);
  return held;
}

// With periodic axes, the objects of the table in one frame each: moved by
// whole periods until their box's low corner lies in the volume. Along an
// axis where an object reaches itself it has no such frame: its box is the
// whole axis (and its centroid there is not a number, ObjectPart::wraps_z).
template <class Part>
void unwrap_into_volume(MergeState<Part>& m) {
  for (std::size_t i = 0; i < m.input.parts.size(); ++i) {
    ObjectPart& part = m.input.parts[i];
    Periods back{};
    for (int a = 0; a < 3; ++a) {
      if (!m.rules.periodic[static_cast<std::size_t>(a)]) continue;
      const auto dim = static_cast<std::int32_t>(m.rules.dims[a]);
      if ((part.border & (ObjectPart::wraps_z << a)) != 0) continue;
      back[static_cast<std::size_t>(a)] = -(part.lo[a] >= 0 ? part.lo[a] / dim : -((-part.lo[a] + dim - 1) / dim));
    }
    m.move(i, back);
    for (int a = 0; a < 3; ++a)
      if ((part.border & (ObjectPart::wraps_z << a)) != 0) {
        part.lo[a] = 0;
        part.hi[a] = static_cast<std::int32_t>(m.rules.dims[a]) - 1;
      }
  }
}

// 5c. The ids: this rank's objects in the order of their first voxels
// (order, empty when held in that order) take first_id + 1, first_id + 2,
// ...; then to their representatives, then to the members, and every node
// takes its root's. The table keeps the objects when asked for.
template <class Part>
std::vector<std::uint64_t> hand_out_ids(MergeState<Part>& m, HeldObjects held, std::vector<std::uint64_t> order,
                                        std::uint64_t first_id,
                                        std::vector<std::pair<std::uint64_t, std::uint64_t>> absorbed,
                                        ObjectTable& table) {
  std::vector<std::uint64_t> ids(m.count, 0);
  auto numbered = per_rank<Named>(m.ranks);
  std::uint64_t next_id = first_id + 1;
  for (std::uint64_t i = 0; i < held.nodes.size(); ++i) {
    const std::uint64_t at = order.empty() ? i : order[i];
    const std::uint64_t node = held.nodes[at], id = next_id;
    next_id += weight(m.input.parts[at]);
    if (node - m.base < m.count)
      ids[node - m.base] = id;  // this rank's
    else
      numbered[static_cast<std::size_t>(m.nodes.owner(node))].push_back({node, id});
  }
  free_vector(held.nodes);
  std::unique_ptr<ObjectTable::Rows> rows;
  if constexpr (MergeState<Part>::table_part) {
    if (m.rules.with_table && m.periodic) unwrap_into_volume(m);
    if (m.rules.with_table) {
      rows = std::make_unique<ObjectTable::Rows>();
      rows->parts = std::move(m.input.parts);
      rows->values = std::move(m.input.values);
      rows->records = std::max<std::size_t>(m.rules.records, 1);
      rows->order = std::move(order);
    }
  }
  table = ObjectTable(first_id + 1, std::move(rows));
  m.input.parts.clear();
  m.input.values.clear();
  free_vector(order);
  for (const auto& named : io::exchange(m.mpi, numbered)) ids[named.node - m.base] = named.value;
  for (const auto& [rep, member] : absorbed) {
    const int owner = m.nodes.owner(member);
    if (owner == m.me)
      ids[member - m.base] = ids[rep];
    else
      numbered[static_cast<std::size_t>(owner)].push_back({member, ids[rep]});
  }
  free_vector(absorbed);
  for (const auto& named : io::exchange(m.mpi, numbered)) ids[named.node - m.base] = named.value;
  for (std::uint64_t n = 0; n < m.count; ++n) ids[n] = ids[m.root(n)];
  return ids;
}

// 5. Numbering by first voxel: each object to the rank of its z range, which
// numbers those it holds after the ranks before it.
template <class Part>
std::vector<std::uint64_t> number_objects(MergeState<Part>& m, Representatives representative,
                                          std::vector<std::pair<std::uint64_t, std::uint64_t>> absorbed,
                                          ObjectTable& table) {
  std::vector<bool> absorbed_here(m.count, false);  // roots whose object another root represents
  for (const auto& [root, resolved] : representative) absorbed_here[root] = resolved.representative != m.base + root;
  free_map(representative);
  auto per_plane = count_objects(m, absorbed_here);
  const auto rank_of = plane_ranks(m.mpi, m.ranks, per_plane);
  free_vector(per_plane);
  HeldObjects held = gather_objects(m, absorbed_here, rank_of);
  const std::uint64_t plane = static_cast<std::uint64_t>(m.rules.dims[1]) * static_cast<std::uint64_t>(m.rules.dims[2]);
  auto order = held.in_order ? std::vector<std::uint64_t>{} : order_by_first(m.input.parts, plane);
  std::uint64_t numbered_here = 0, first_id = 0;
  for (std::size_t i = 0; i < m.input.parts.size(); ++i) numbered_here += weight(m.input.parts[i]);
  check_mpi(MPI_Exscan(&numbered_here, &first_id, 1, MPI_UINT64_T, MPI_SUM, m.mpi), "MPI_Exscan");
  if (m.me == 0) first_id = 0;
  return hand_out_ids(m, std::move(held), std::move(order), first_id, std::move(absorbed), table);
}

}  // namespace

template <class Part>
MergedObjects merge_objects(const Comm& comm, const NodeRanges& nodes, MergeInput<Part> input,
                            const MergeRules& rules) {
  MergeState<Part> m(comm, nodes, input, rules);
  join_within_rank(m);
  auto representative = resolve_across_ranks(m, roots_across_ranks(m));
  auto absorbed = move_to_representatives(m, representative);
  MergedObjects merged;
  merged.ids = number_objects(m, std::move(representative), std::move(absorbed), merged.summary.table);
  m.figures.reduce(m.mpi);
  m.figures.fill(merged.summary);
  return merged;
}

template MergedObjects merge_objects(const Comm&, const NodeRanges&, MergeInput<ObjectPart>, const MergeRules&);
template MergedObjects merge_objects(const Comm&, const NodeRanges&, MergeInput<PartCore>, const MergeRules&);

}  // namespace volseg::segment::detail
