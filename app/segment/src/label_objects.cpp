// SPDX-License-Identifier: MIT
// From parts of objects to numbered objects, with no rank holding more than
// its share (label_objects.hpp says the steps; docs/label.md, "The merge").
#include "label_objects.hpp"

#include <mpi.h>

#include <algorithm>
#include <climits>
#include <numeric>
#include <unordered_map>

#include "disjoint_set.hpp"
#include "volseg/io/error.hpp"
#include "volseg/io/messages.hpp"
#include "volseg/io/reduce.hpp"
#include "volseg/io/watchdog.hpp"

namespace volseg::segment::detail {

int NodeRanges::owner(std::uint64_t node) const {
  // The last rank whose range starts at or before node: ranks without nodes
  // share their start with the next.
  return static_cast<int>(std::upper_bound(rank_base.begin(), rank_base.end(), node) - rank_base.begin()) - 1;
}

namespace {

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

// One node of a Forest as it travels: its root and its own span.
struct ForestRecord {
  std::uint64_t node, root;
  Span span;
};

// Union-find over the roots joined across ranks that one rank holds, keyed
// by global node; the smaller node wins, and a root's span is its object's.
class Forest {
 public:
  bool empty() const { return nodes_.empty(); }
  void add(std::uint64_t node, const Span& span) {
    auto [it, inserted] = nodes_.try_emplace(node, Node{node, span});
    if (!inserted) nodes_.at(find(node)).span.add(span);
  }
  void join(std::uint64_t a, std::uint64_t b) {
    std::uint64_t ra = find(a), rb = find(b);
    if (ra == rb) return;
    if (rb < ra) std::swap(ra, rb);
    Node& loser = nodes_.at(rb);
    loser.parent = ra;
    nodes_.at(ra).span.add(loser.span);
  }
  // Every node, to hand to another rank; the forest is emptied.
  std::vector<ForestRecord> take() {
    std::vector<ForestRecord> records;
    records.reserve(nodes_.size());
    for (auto& [node, entry] : nodes_) records.push_back({node, find(node), entry.span});
    std::unordered_map<std::uint64_t, Node>().swap(nodes_);
    return records;
  }
  void absorb(const ForestRecord& record) {
    add(record.node, record.span);
    if (record.root != record.node) {
      add(record.root, Span{});
      join(record.node, record.root);
    }
  }
  // The objects that reach no rank outside [begin, end): every member with
  // its representative (the object's smallest node), removed from the forest.
  std::vector<std::pair<std::uint64_t, std::uint64_t>> resolve(int begin, int end) {
    std::vector<std::pair<std::uint64_t, std::uint64_t>> done;
    for (const auto& entry : nodes_) {
      const std::uint64_t root = find(entry.first);
      if (nodes_.at(root).span.within(begin, end)) done.emplace_back(entry.first, root);
    }
    for (const auto& [node, root] : done) nodes_.erase(node);
    std::sort(done.begin(), done.end());
    return done;
  }

 private:
  struct Node {
    std::uint64_t parent;
    Span span;
  };
  std::uint64_t find(std::uint64_t x) {
    for (;;) {
      Node& n = nodes_.at(x);
      if (n.parent == x) return x;
      Node& up = nodes_.at(n.parent);
      n.parent = up.parent;  // halving
      x = up.parent;
    }
  }
  std::unordered_map<std::uint64_t, Node> nodes_;
};

struct Named {
  std::uint64_t node, value;
};

// A member's measures on their way to its representative.
struct Moved {
  std::uint64_t representative, member;
  ObjectPart part;
  ObjectValues values;
};

// An object on its way to the rank that numbers its z range.
struct Row {
  ObjectPart part;
  std::uint64_t node;
};

// The positions of parts in the order of their first voxels (the caller
// skips this when they are in that order already, as one rank's slab of
// whole planes is): counted into z planes, then sorted within each (a
// plane's objects fit in cache).
std::vector<std::uint64_t> order_by_first(const Chunked<ObjectPart>& parts, std::uint64_t plane) {
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
struct MergeState {
  MPI_Comm mpi;
  int me, ranks;
  const NodeRanges& nodes;
  std::uint64_t base, count;  // this rank's first node, and its number of nodes
  const MergeRules& rules;
  MergeInput& input;
  DisjointSet<std::uint64_t> own;  // step 1's joins; then own.parent(n) is n's root
  std::vector<bool> joined;        // the nodes that take part in a join
  LabelFigures figures;

  MergeState(const Comm& comm, const NodeRanges& node_ranges, MergeInput& merged, const MergeRules& merge_rules)
      : mpi(comm.get()),
        me(comm.rank()),
        ranks(comm.size()),
        nodes(node_ranges),
        base(nodes.rank_base[static_cast<std::size_t>(me)]),
        count(merged.parts.size()),
        rules(merge_rules),
        input(merged),
        own(count),
        joined(count, false) {
    if (nodes.rank_base[static_cast<std::size_t>(me) + 1] - base != count)
      throw Error("internal error: a rank's parts and its node range differ");
    figures.joins = input.local_edges.size() + input.cross_edges.size();
  }
  std::uint64_t root(std::uint64_t local) const { return own.parent(local); }
};

// 1. This rank's own joins; every part's measures go to its root.
void join_within_rank(MergeState& m) {
  const io::watchdog::Phase phase("label, the merge: joins within a rank");
  for (const auto& e : m.input.local_edges) {
    m.joined[e.a] = m.joined[e.b] = true;
    m.own.join(e.a, e.b);
  }
  free_vector(m.input.local_edges);
  m.own.flatten();
  // Ascending, so the measures of a root add in node order.
  for (std::uint64_t n = 0; n < m.count; ++n) {
    const std::uint64_t root = m.root(n);
    if (root == n) continue;
    m.input.parts[root].merge(m.input.parts[n]);
    if (m.rules.with_values) m.input.values[root].merge(m.input.values[n]);
  }
}

// This rank's roots joined across ranks.
struct CrossRoots {
  std::unordered_map<std::uint64_t, Span> spans;               // by root: the ranks its object reaches
  std::vector<std::pair<std::uint64_t, std::uint64_t>> links;  // (another rank's root, this rank's root)
};

// The roots of this rank's nodes that the other ranks ask for (questions,
// from[r] of them from rank r), per asking rank.
std::vector<std::vector<std::uint64_t>> answer_roots(MergeState& m, const std::vector<std::uint64_t>& questions,
                                                     const std::vector<std::uint64_t>& from, CrossRoots& cross) {
  auto answers = per_rank<std::uint64_t>(m.ranks);
  std::size_t at = 0;
  for (int r = 0; r < m.ranks; ++r)
    for (std::uint64_t k = 0; k < from[static_cast<std::size_t>(r)]; ++k) {
      const std::uint64_t local = questions[at++] - m.base;
      m.joined[local] = true;
      const std::uint64_t root = m.root(local);
      answers[static_cast<std::size_t>(r)].push_back(m.base + root);
      auto& span = cross.spans[root];
      span.add(r);
      span.add(m.me);
    }
  return answers;
}

// Each join across ranks as a link of two roots, from the roots the other
// ranks answered (replied[r] of them from rank r, to asked[r] in order).
void link_roots(MergeState& m, const std::vector<std::vector<std::uint64_t>>& asked,
                const std::vector<std::uint64_t>& roots, const std::vector<std::uint64_t>& replied, CrossRoots& cross) {
  std::vector<std::uint64_t> reply_at(static_cast<std::size_t>(m.ranks) + 1, 0);
  for (int r = 0; r < m.ranks; ++r) {
    const auto i = static_cast<std::size_t>(r);
    if (replied[i] != asked[i].size()) throw Error("internal error: a rank answered a different number of nodes");
    reply_at[i + 1] = reply_at[i] + replied[i];
  }
  cross.links.reserve(m.input.cross_edges.size());
  for (const auto& e : m.input.cross_edges) {
    const int owner = m.nodes.owner(e.remote);
    const auto& list = asked[static_cast<std::size_t>(owner)];
    const auto index = static_cast<std::size_t>(std::lower_bound(list.begin(), list.end(), e.remote) - list.begin());
    const std::uint64_t root = m.root(e.local);
    cross.links.emplace_back(roots[reply_at[static_cast<std::size_t>(owner)] + index], root);
    auto& span = cross.spans[root];
    span.add(owner);
    span.add(m.me);
  }
  free_vector(m.input.cross_edges);
  std::sort(cross.links.begin(), cross.links.end());
  cross.links.erase(std::unique(cross.links.begin(), cross.links.end()), cross.links.end());
}

// 2. Each join across ranks asks the other node's rank for its root.
CrossRoots roots_across_ranks(MergeState& m) {
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
  auto answers = answer_roots(m, questions, from, cross);
  free_vector(questions);
  std::vector<std::uint64_t> replied;
  const auto roots = io::exchange(m.mpi, answers, &replied);
  link_roots(m, asked, roots, replied, cross);
  return cross;
}

// 3. Up the tree of ranks until every object across ranks is resolved: the
// representative of each of this rank's roots joined across ranks.
std::unordered_map<std::uint64_t, std::uint64_t> resolve_across_ranks(const MergeState& m, CrossRoots cross) {
  const io::watchdog::Phase phase("label, the merge: objects across ranks, up a tree of ranks");
  Forest forest;
  for (const auto& [root, span] : cross.spans) forest.add(m.base + root, span);
  for (const auto& [remote, local] : cross.links) {
    Span span;
    span.add(m.nodes.owner(remote));
    span.add(m.me);
    forest.add(remote, span);
    forest.join(remote, m.base + local);
  }
  cross = CrossRoots{};
  std::unordered_map<std::uint64_t, std::uint64_t> representative;  // this rank's root -> its object's
  auto resolve_group = [&](const io::TreeRound& round) {
    auto told = per_rank<Named>(m.ranks);
    if (round.holds)
      for (const auto& [node, root] : forest.resolve(round.group_begin, round.group_end))
        told[static_cast<std::size_t>(m.nodes.owner(node))].push_back({node, root});
    for (const auto& news : io::exchange(m.mpi, told)) representative[news.node - m.base] = news.value;
  };
  io::reduce_tree<ForestRecord>(
      m.mpi, [&] { return forest.take(); }, [&](const ForestRecord& record) { forest.absorb(record); }, resolve_group);
  if (!forest.empty()) throw Error("internal error: objects across ranks left unresolved");
  return representative;
}

// 4. Members' measures to their representatives; gives back the pairs
// (representative, member node) this rank absorbed.
std::vector<std::pair<std::uint64_t, std::uint64_t>> move_to_representatives(
    MergeState& m, const std::unordered_map<std::uint64_t, std::uint64_t>& representative) {
  auto moving = per_rank<Moved>(m.ranks);
  for (const auto& [root, rep] : representative)
    if (rep != m.base + root)
      moving[static_cast<std::size_t>(m.nodes.owner(rep))].push_back(
          {rep, m.base + root, m.input.parts[root], m.rules.with_values ? m.input.values[root] : ObjectValues{}});
  for (auto& list : moving)  // the sums of values add in one order, whatever the hash map's
    std::sort(list.begin(), list.end(), [](const Moved& a, const Moved& b) { return a.member < b.member; });
  std::vector<std::pair<std::uint64_t, std::uint64_t>> absorbed;
  for (const auto& moved : io::exchange(m.mpi, moving)) {
    const std::uint64_t local = moved.representative - m.base;
    m.input.parts[local].merge(moved.part);
    if (m.rules.with_values) m.input.values[local].merge(moved.values);
    absorbed.emplace_back(local, moved.member);
  }
  return absorbed;
}

// How many objects an item numbered by first voxel stands for: a segment
// its objects (ObjectPart::segment), an object one.
std::uint64_t weight(const ObjectPart& part) { return (part.border & ObjectPart::segment) != 0 ? part.voxels : 1; }

// 5a. The objects this rank's roots stand for (not those absorbed by
// another root, absorbed_here): counted into the figures, and per z plane
// of their first voxels.
std::vector<std::uint64_t> count_objects(MergeState& m, const std::vector<bool>& absorbed_here) {
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
HeldObjects gather_objects(MergeState& m, std::vector<bool>& absorbed_here, const std::vector<int>& rank_of) {
  const std::uint64_t plane = static_cast<std::uint64_t>(m.rules.dims[1]) * static_cast<std::uint64_t>(m.rules.dims[2]);
  const bool table_values = m.rules.with_values && m.rules.with_table;
  auto& parts = m.input.parts;
  auto& values = m.input.values;
  HeldObjects held;
  held.nodes.reserve(m.count);
  auto rows_out = per_rank<Row>(m.ranks);
  auto values_out = per_rank<ObjectValues>(m.ranks);
  std::uint64_t kept = 0;
  for (std::uint64_t n = 0; n < m.count; ++n) {
    if (!m.own.is_root(n) || absorbed_here[n] || !m.rules.keep.keeps(parts[n])) continue;
    const int to = rank_of[static_cast<std::size_t>(parts[n].first / plane)];
    if (to == m.me) {
      if (kept != n) {
        parts[kept] = parts[n];
        if (table_values) values[kept] = values[n];
      }
      held.in_order = held.in_order && (kept == 0 || parts[kept - 1].first < parts[kept].first);
      held.nodes.push_back(m.base + n);
      ++kept;
    } else {
      rows_out[static_cast<std::size_t>(to)].push_back({parts[n], m.base + n});
      if (table_values) values_out[static_cast<std::size_t>(to)].push_back(values[n]);
    }
  }
  free_vector(absorbed_here);
  parts.shrink(kept);
  values.shrink(table_values ? kept : 0);
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

// 5c. The ids: this rank's objects in the order of their first voxels
// (order, empty when held in that order) take first_id + 1, first_id + 2,
// ...; then to their representatives, then to the members, and every node
// takes its root's. The table keeps the objects when asked for.
std::vector<std::uint64_t> hand_out_ids(MergeState& m, HeldObjects held, std::vector<std::uint64_t> order,
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
  table = ObjectTable{};
  table.first_id = first_id + 1;
  if (m.rules.with_table) {
    table.parts = std::move(m.input.parts);
    table.values = std::move(m.input.values);
    table.order = std::move(order);
  }
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
std::vector<std::uint64_t> number_objects(MergeState& m,
                                          std::unordered_map<std::uint64_t, std::uint64_t> representative,
                                          std::vector<std::pair<std::uint64_t, std::uint64_t>> absorbed,
                                          ObjectTable& table) {
  std::vector<bool> absorbed_here(m.count, false);  // roots whose object another root represents
  for (const auto& [root, rep] : representative) absorbed_here[root] = rep != m.base + root;
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

MergedObjects merge_objects(const Comm& comm, const NodeRanges& nodes, MergeInput input, const MergeRules& rules) {
  MergeState m(comm, nodes, input, rules);
  join_within_rank(m);
  auto representative = resolve_across_ranks(m, roots_across_ranks(m));
  auto absorbed = move_to_representatives(m, representative);
  MergedObjects merged;
  merged.ids = number_objects(m, std::move(representative), std::move(absorbed), merged.summary.table);
  m.figures.reduce(m.mpi);
  m.figures.fill(merged.summary);
  return merged;
}

}  // namespace volseg::segment::detail
