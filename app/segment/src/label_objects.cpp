// SPDX-License-Identifier: MIT
// From parts of objects to numbered objects, with no rank holding more than
// its share (label_objects.hpp says the steps; docs/label.md, "The merge").
#include "label_objects.hpp"

#include <mpi.h>

#include <algorithm>
#include <climits>
#include <numeric>
#include <unordered_map>

#include "volseg/io/error.hpp"
#include "volseg/io/messages.hpp"
#include "volseg/io/watchdog.hpp"

namespace volseg::segment::detail {

int NodeRanges::owner(std::uint64_t node) const {
  // The last rank whose range starts at or before node: ranks without nodes
  // share their start with the next.
  return static_cast<int>(std::upper_bound(rank_base.begin(), rank_base.end(), node) - rank_base.begin()) - 1;
}

namespace {

std::uint64_t find_root(std::vector<std::uint64_t>& parent, std::uint64_t x) {
  while (parent[x] != x) {
    parent[x] = parent[parent[x]];
    x = parent[x];
  }
  return x;
}

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
    std::sort(keyed.begin() + static_cast<std::ptrdiff_t>(start[z]), keyed.begin() + static_cast<std::ptrdiff_t>(start[z + 1]));
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
      rank_of[z] = std::min(ranks - 1, static_cast<int>(static_cast<double>(before) / static_cast<double>(total) * ranks));
    before += per_plane[z];
  }
  return rank_of;
}

}  // namespace

MergedObjects merge_objects(const Comm& comm, const NodeRanges& nodes, const io::Index3& dims,
                            Chunked<ObjectPart>& parts, Chunked<ObjectValues>& values, bool with_values,
                            std::vector<LocalEdge>& local_edges, std::vector<CrossEdge>& cross_edges,
                            std::uint64_t min_voxels, bool with_table, LabelSummary& summary) {
  MPI_Comm mpi = comm.get();
  const int me = comm.rank(), ranks = comm.size();
  const std::uint64_t base = nodes.rank_base[static_cast<std::size_t>(me)];
  const std::uint64_t count = parts.size();
  if (nodes.rank_base[static_cast<std::size_t>(me) + 1] - base != count)
    throw Error("internal error: a rank's parts and its node range differ");
  std::uint64_t figures[5] = {0, 0, 0, 0, local_edges.size() + cross_edges.size()};  // kept, dropped, voxels, joined, joins

  // 1. This rank's own joins; every part's measures go to its root.
  std::vector<std::uint64_t> parent(count);
  std::vector<bool> joined(count, false);
  {
    const io::watchdog::Phase phase("label, the merge: joins within a rank");
    std::iota(parent.begin(), parent.end(), std::uint64_t{0});
    for (const auto& e : local_edges) {
      const std::uint64_t a = find_root(parent, e.a), b = find_root(parent, e.b);
      joined[e.a] = joined[e.b] = true;
      if (a < b) parent[b] = a;
      else if (b < a) parent[a] = b;
    }
    free_vector(local_edges);
    // parent[n] <= n: ascending, a node's parent already names its root.
    for (std::uint64_t n = 0; n < count; ++n) {
      parent[n] = parent[parent[n]];
      if (parent[n] == n) continue;
      parts[parent[n]].merge(parts[n]);
      if (with_values) values[parent[n]].merge(values[n]);
    }
  }

  // 2. Each join across ranks asks the other node's rank for its root.
  std::unordered_map<std::uint64_t, Span> spans;  // this rank's roots joined across ranks
  std::vector<std::pair<std::uint64_t, std::uint64_t>> links;  // (another rank's root, this rank's root)
  {
    const io::watchdog::Phase phase("label, the merge: roots across ranks");
    auto asks = per_rank<std::uint64_t>(ranks);
    for (const auto& e : cross_edges) {
      asks[static_cast<std::size_t>(nodes.owner(e.remote))].push_back(e.remote);
      joined[e.local] = true;
    }
    for (auto& ask : asks) {
      std::sort(ask.begin(), ask.end());
      ask.erase(std::unique(ask.begin(), ask.end()), ask.end());
    }
    const auto asked = asks;
    std::vector<std::uint64_t> from;
    auto questions = io::exchange(mpi, asks, &from);
    auto answers = per_rank<std::uint64_t>(ranks);
    std::size_t at = 0;
    for (int r = 0; r < ranks; ++r)
      for (std::uint64_t k = 0; k < from[static_cast<std::size_t>(r)]; ++k) {
        const std::uint64_t local = questions[at++] - base;
        joined[local] = true;
        const std::uint64_t root = parent[local];
        answers[static_cast<std::size_t>(r)].push_back(base + root);
        auto& span = spans[root];
        span.add(r);
        span.add(me);
      }
    free_vector(questions);
    std::vector<std::uint64_t> replied;
    const auto roots = io::exchange(mpi, answers, &replied);
    std::vector<std::uint64_t> reply_at(static_cast<std::size_t>(ranks) + 1, 0);
    for (int r = 0; r < ranks; ++r) {
      const auto i = static_cast<std::size_t>(r);
      if (replied[i] != asked[i].size()) throw Error("internal error: a rank answered a different number of nodes");
      reply_at[i + 1] = reply_at[i] + replied[i];
    }
    links.reserve(cross_edges.size());
    for (const auto& e : cross_edges) {
      const int owner = nodes.owner(e.remote);
      const auto& list = asked[static_cast<std::size_t>(owner)];
      const auto index = static_cast<std::size_t>(std::lower_bound(list.begin(), list.end(), e.remote) - list.begin());
      const std::uint64_t root = parent[e.local];
      links.emplace_back(roots[reply_at[static_cast<std::size_t>(owner)] + index], root);
      auto& span = spans[root];
      span.add(owner);
      span.add(me);
    }
    free_vector(cross_edges);
    std::sort(links.begin(), links.end());
    links.erase(std::unique(links.begin(), links.end()), links.end());
  }

  // 3. Up the tree of ranks until every object across ranks is resolved.
  std::unordered_map<std::uint64_t, std::uint64_t> representative;  // this rank's root -> its object's
  {
    const io::watchdog::Phase phase("label, the merge: objects across ranks, up a tree of ranks");
    Forest forest;
    for (const auto& [root, span] : spans) forest.add(base + root, span);
    for (const auto& [remote, local] : links) {
      Span span;
      span.add(nodes.owner(remote));
      span.add(me);
      forest.add(remote, span);
      forest.join(remote, base + local);
    }
    free_vector(links);
    for (int step = 1; step < ranks; step *= 2) {
      auto handed = per_rank<ForestRecord>(ranks);
      if (me % (2 * step) == step) handed[static_cast<std::size_t>(me - step)] = forest.take();
      for (const auto& record : io::exchange(mpi, handed)) forest.absorb(record);
      auto told = per_rank<Named>(ranks);
      if (me % (2 * step) == 0)
        for (const auto& [node, root] : forest.resolve(me, std::min(ranks, me + 2 * step)))
          told[static_cast<std::size_t>(nodes.owner(node))].push_back({node, root});
      for (const auto& news : io::exchange(mpi, told)) representative[news.node - base] = news.value;
    }
    if (!forest.empty()) throw Error("internal error: objects across ranks left unresolved");
  }

  // 4. Members' measures to their representatives.
  std::vector<std::pair<std::uint64_t, std::uint64_t>> absorbed;  // (representative, member node)
  {
    auto moving = per_rank<Moved>(ranks);
    for (const auto& [root, rep] : representative)
      if (rep != base + root)
        moving[static_cast<std::size_t>(nodes.owner(rep))].push_back(
            {rep, base + root, parts[root], with_values ? values[root] : ObjectValues{}});
    for (auto& list : moving)  // the sums of values add in one order, whatever the hash map's
      std::sort(list.begin(), list.end(), [](const Moved& a, const Moved& b) { return a.member < b.member; });
    for (const auto& m : io::exchange(mpi, moving)) {
      const std::uint64_t local = m.representative - base;
      parts[local].merge(m.part);
      if (with_values) values[local].merge(m.values);
      absorbed.emplace_back(local, m.member);
    }
  }

  // 5. Numbering by first voxel: each object to the rank of its z range.
  // Those this rank numbers stay in parts, moved forward in place.
  std::vector<bool> absorbed_here(count, false);  // roots whose object another root represents
  for (const auto& [root, rep] : representative) absorbed_here[root] = rep != base + root;
  free_map(representative);
  auto kept_object = [&](std::uint64_t n) {
    return parent[n] == n && !absorbed_here[n] && parts[n].voxels >= min_voxels;
  };
  const std::uint64_t plane = static_cast<std::uint64_t>(dims[1]) * static_cast<std::uint64_t>(dims[2]);
  std::vector<std::uint64_t> per_plane(static_cast<std::size_t>(dims[0]), 0);
  std::uint64_t largest = 0;
  for (std::uint64_t n = 0; n < count; ++n) {
    if (parent[n] != n || absorbed_here[n]) continue;
    const std::uint64_t voxels = parts[n].voxels;
    if (voxels < min_voxels) {
      ++figures[1];
      continue;
    }
    ++figures[0];
    figures[2] += voxels;
    largest = std::max(largest, voxels);
    ++per_plane[static_cast<std::size_t>(parts[n].first / plane)];
  }
  figures[3] = static_cast<std::uint64_t>(std::count(joined.begin(), joined.end(), true));
  free_vector(joined);
  const auto rank_of = plane_ranks(mpi, ranks, per_plane);
  free_vector(per_plane);
  const bool table_values = with_values && with_table;
  std::vector<std::uint64_t> held;  // the node of each object in parts
  bool in_order = true;              // parts' first voxels ascend as they are
  held.reserve(count);
  {
    auto rows_out = per_rank<Row>(ranks);
    auto values_out = per_rank<ObjectValues>(ranks);
    std::uint64_t kept = 0;
    for (std::uint64_t n = 0; n < count; ++n) {
      if (!kept_object(n)) continue;
      const int to = rank_of[static_cast<std::size_t>(parts[n].first / plane)];
      if (to == me) {
        if (kept != n) {
          parts[kept] = parts[n];
          if (table_values) values[kept] = values[n];
        }
        in_order = in_order && (kept == 0 || parts[kept - 1].first < parts[kept].first);
        held.push_back(base + n);
        ++kept;
      } else {
        rows_out[static_cast<std::size_t>(to)].push_back({parts[n], base + n});
        if (table_values) values_out[static_cast<std::size_t>(to)].push_back(values[n]);
      }
    }
    free_vector(absorbed_here);
    parts.shrink(kept);
    values.shrink(table_values ? kept : 0);
    // Rows and their values travel in the same order: they line up again.
    const auto rows = io::exchange(mpi, rows_out);
    const auto row_values = io::exchange(mpi, values_out);
    for (const auto& row : rows) {
      in_order = in_order && (parts.empty() || parts[parts.size() - 1].first < row.part.first);
      parts.push_back(row.part);
      held.push_back(row.node);
    }
    for (const auto& v : row_values) values.push_back(v);
  }
  auto order = in_order ? std::vector<std::uint64_t>{} : order_by_first(parts, plane);
  auto position = [&](std::uint64_t i) { return order.empty() ? i : order[i]; };
  std::uint64_t numbered_here = parts.size(), first_id = 0;
  check_mpi(MPI_Exscan(&numbered_here, &first_id, 1, MPI_UINT64_T, MPI_SUM, mpi), "MPI_Exscan");
  if (me == 0) first_id = 0;

  // The ids to the representatives, then to their members; every node
  // takes its root's.
  MergedObjects merged;
  merged.ids.assign(count, 0);
  auto numbered = per_rank<Named>(ranks);
  for (std::uint64_t i = 0; i < numbered_here; ++i) {
    const std::uint64_t node = held[position(i)], id = first_id + i + 1;
    if (node - base < count) merged.ids[node - base] = id;  // this rank's
    else numbered[static_cast<std::size_t>(nodes.owner(node))].push_back({node, id});
  }
  free_vector(held);
  summary.table = ObjectTable{};
  summary.table.first_id = first_id + 1;
  if (with_table) {
    summary.table.parts = std::move(parts);
    summary.table.values = std::move(values);
    summary.table.order = std::move(order);
  }
  parts.clear();
  values.clear();
  free_vector(order);
  for (const auto& named : io::exchange(mpi, numbered)) merged.ids[named.node - base] = named.value;
  for (const auto& [rep, member] : absorbed) {
    const int owner = nodes.owner(member);
    if (owner == me) merged.ids[member - base] = merged.ids[rep];
    else numbered[static_cast<std::size_t>(owner)].push_back({member, merged.ids[rep]});
  }
  free_vector(absorbed);
  for (const auto& named : io::exchange(mpi, numbered)) merged.ids[named.node - base] = named.value;
  for (std::uint64_t n = 0; n < count; ++n) merged.ids[n] = merged.ids[parent[n]];

  check_mpi(MPI_Allreduce(MPI_IN_PLACE, figures, 5, MPI_UINT64_T, MPI_SUM, mpi), "MPI_Allreduce");
  check_mpi(MPI_Allreduce(MPI_IN_PLACE, &largest, 1, MPI_UINT64_T, MPI_MAX, mpi), "MPI_Allreduce");
  summary.objects = figures[0];
  summary.dropped = figures[1];
  summary.foreground = figures[2];
  summary.boundary_parts = figures[3];
  summary.joins = figures[4];
  summary.largest = largest;
  return merged;
}

}  // namespace volseg::segment::detail
