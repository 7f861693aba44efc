// SPDX-License-Identifier: MIT
// Joining bricks' labels into objects (docs/label.md).
//
// Each brick keeps the labels of the faces it shares with a neighbour that
// is labelled later, or on another rank, until that neighbour has been
// joined to it. Two bricks touch across a face, an edge or a corner: the
// voxels that can be neighbours lie on one face of each (the first axis on
// which they touch), so six face planes per brick serve all 26 neighbours.
// A join compares the two faces voxel by voxel over the connectivity's
// stencil and records enough pairs of labels to join what touches (a
// spanning forest of the contacts).
//
// Joins between bricks of one rank happen as the later brick is labelled;
// those across ranks after the last brick, by the rank of the later brick,
// which receives the earlier brick's face. The parts and joins then become
// numbered objects with no rank holding more than its share
// (label_objects.hpp), and each rank gets the ids of its bricks' labels.
#include <mpi.h>

#include <algorithm>
#include <bit>
#include <functional>
#include <optional>
#include <span>
#include <tuple>
#include <unordered_map>

#include "disjoint_set.hpp"
#include "label_objects.hpp"
#include "volseg/io/error.hpp"
#include "volseg/io/messages.hpp"
#include "volseg/io/watchdog.hpp"
#include "volseg/segment/label.hpp"

namespace volseg::segment {

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

// Offsets a neighbour may differ by in how many axes: 1, 2 or 3.
int axes_allowed(int connectivity) { return connectivity == 6 ? 1 : connectivity == 18 ? 2 : 3; }

// How brick b sits beside brick a on each axis: +1 b follows a, -1 b
// precedes it, 0 they overlap; nullopt when the two do not touch.
std::optional<std::array<int, 3>> contact(const io::Extent& a, const io::Extent& b, int connectivity) {
  std::array<int, 3> side{};
  int touching = 0;
  for (int axis = 0; axis < 3; ++axis) {
    const std::int64_t a0 = a.offset[axis], a1 = a0 + a.count[axis];
    const std::int64_t b0 = b.offset[axis], b1 = b0 + b.count[axis];
    if (b0 == a1)
      side[axis] = 1;
    else if (b1 == a0)
      side[axis] = -1;
    else if (b0 < a1 && a0 < b1)
      side[axis] = 0;
    else
      return std::nullopt;
    touching += side[axis] != 0;
  }
  // 6: faces only; 18: faces and edges; 26: corners too.
  if (touching == 0 || touching > axes_allowed(connectivity)) return std::nullopt;
  return side;
}

// The face of a brick that looks at a neighbour: (axis * 2 + high).
int facing(const std::array<int, 3>& side) {
  for (int axis = 0; axis < 3; ++axis)
    if (side[axis] != 0) return axis * 2 + (side[axis] > 0);
  return -1;
}

int opposite(int face) { return face ^ 1; }

struct Pair {
  std::uint32_t a, b;
};

// A face plane's foreground, a bit per voxel, rows padded with a word of
// zeros so that 64 bits from any offset read two words.
class FaceBits {
 public:
  FaceBits(const std::vector<std::uint32_t>& plane, std::int64_t rows, std::int64_t width)
      : words_((width + 63) / 64 + 1), bits_(static_cast<std::size_t>(rows * words_), 0) {
    for (std::int64_t r = 0; r < rows; ++r) {
      const std::uint32_t* row = plane.data() + r * width;
      std::uint64_t* out = bits_.data() + r * words_;
      for (std::int64_t x = 0; x < width; ++x) out[x >> 6] |= static_cast<std::uint64_t>(row[x] != 0) << (x & 63);
    }
  }
  // The 64 bits of row from offset (0 <= offset < the width).
  std::uint64_t get(std::int64_t row, std::int64_t offset) const {
    const std::uint64_t* w = bits_.data() + row * words_ + (offset >> 6);
    const int shift = static_cast<int>(offset & 63);
    return shift == 0 ? w[0] : (w[0] >> shift) | (w[1] << (64 - shift));
  }

 private:
  std::int64_t words_;
  std::vector<std::uint64_t> bits_;
};

// Pairs (label in a, label in b) of voxels that touch, from a's face toward
// b: enough of them to join what touches (a spanning forest of the contacts,
// found by a union-find over the two faces' labels), each label that touches
// anything in at least one. A face of a random mask has hundreds of
// thousands of contacts; collecting and sorting them all cost more than the
// labelling of the face.
std::vector<Pair> join_faces(const io::Extent& a, const std::vector<std::uint32_t>& a_face, const io::Extent& b,
                             const std::vector<std::uint32_t>& b_face, const std::array<int, 3>& side,
                             int connectivity) {
  const int most = axes_allowed(connectivity);
  const int face_axis = facing(side) / 2;
  int touching = 0;
  for (int s : side) touching += s != 0;
  // Voxels of a within reach of b, per axis.
  std::int64_t from[3], to[3];
  for (int axis = 0; axis < 3; ++axis) {
    const std::int64_t a0 = a.offset[axis], a1 = a0 + a.count[axis];
    const std::int64_t b0 = b.offset[axis], b1 = b0 + b.count[axis];
    if (side[axis] > 0)
      from[axis] = a1 - 1, to[axis] = a1;
    else if (side[axis] < 0)
      from[axis] = a0, to[axis] = a0 + 1;
    else
      from[axis] = std::max(a0, b0 - 1), to[axis] = std::min(a1, b1 + 1);
  }
  // The stencil: a step of exactly side on touching axes, -1..1 elsewhere.
  std::vector<std::array<int, 3>> steps;
  for (int dz = -1; dz <= 1; ++dz)
    for (int dy = -1; dy <= 1; ++dy)
      for (int dx = -1; dx <= 1; ++dx) {
        const std::array<int, 3> d{dz, dy, dx};
        bool fits = true;
        int nonzero = touching;
        for (int axis = 0; axis < 3; ++axis) {
          if (side[axis] != 0)
            fits &= d[axis] == side[axis];
          else
            nonzero += d[axis] != 0;
        }
        if (fits && nonzero <= most) steps.push_back(d);
      }
  const int u = face_axis == 0 ? 1 : 0, v = face_axis == 2 ? 1 : 2;  // the face's two axes
  std::uint32_t most_a = 0, most_b = 0;
  for (const auto label : a_face) most_a = std::max(most_a, label);
  for (const auto label : b_face) most_b = std::max(most_b, label);
  // Nodes: a's label l is l - 1, b's label l is most_a + l - 1.
  detail::DisjointSet<std::uint32_t> joined(static_cast<std::size_t>(most_a) + most_b);
  std::vector<Pair> pairs;
  std::uint32_t last_a = 0, last_b = 0;
  // Each face's foreground as bits, once: every step then ANDs 64 voxels
  // of a with 64 of b, shifted by the step, and only contacts cost more.
  const FaceBits bits_a(a_face, a.count[u], a.count[v]), bits_b(b_face, b.count[u], b.count[v]);
  // Step by step, over the rectangle of a's face whose voxels land in b: two
  // rows at a time, no bounds to check per voxel.
  for (const auto& d : steps) {
    const std::int64_t landing = from[face_axis] + d[face_axis];
    if (landing < b.offset[face_axis] || landing >= b.offset[face_axis] + b.count[face_axis]) continue;
    std::int64_t lo[3] = {}, hi[3] = {};
    for (const int axis : {u, v}) {
      lo[axis] = std::max(from[axis], b.offset[axis] - d[axis]);
      hi[axis] = std::min(to[axis], b.offset[axis] + b.count[axis] - d[axis]);
    }
    if (lo[u] >= hi[u] || lo[v] >= hi[v]) continue;
    const std::int64_t n = hi[v] - lo[v];
    for (std::int64_t pu = lo[u]; pu < hi[u]; ++pu) {
      const std::uint32_t* row_a =
          &a_face[static_cast<std::size_t>((pu - a.offset[u]) * a.count[v] + (lo[v] - a.offset[v]))];
      const std::uint32_t* row_b =
          &b_face[static_cast<std::size_t>((pu + d[u] - b.offset[u]) * b.count[v] + (lo[v] + d[v] - b.offset[v]))];
      // 64 voxels at a time, a bit for each where both are foreground: a
      // random mask's zeros would mispredict a branch per voxel.
      const std::int64_t ra = pu - a.offset[u], rb = pu + d[u] - b.offset[u];
      const std::int64_t va = lo[v] - a.offset[v], vb = lo[v] + d[v] - b.offset[v];
      for (std::int64_t k0 = 0; k0 < n; k0 += 64) {
        std::uint64_t both = bits_a.get(ra, va + k0) & bits_b.get(rb, vb + k0);
        if (n - k0 < 64) both &= (std::uint64_t{1} << (n - k0)) - 1;
        for (; both != 0; both &= both - 1) {
          const std::int64_t k = k0 + std::countr_zero(both);
          const std::uint32_t la = row_a[k], lb = row_b[k];
          if (la == last_a && lb == last_b) continue;
          last_a = la;
          last_b = lb;
          if (joined.join(la - 1, most_a + lb - 1)) pairs.push_back({la, lb});
        }
      }
    }
  }
  return pairs;
}

// Foreground voxels face to face across two bricks that share a face
// (not an edge or a corner): two exposed faces fewer per pair, both taken
// off b's part of the object (its shape at values[(base + label - 1) *
// stride], stride records a part).
void take_face_pairs(const io::Extent& a, const std::vector<std::uint32_t>& a_face, const io::Extent& b,
                     const std::vector<std::uint32_t>& b_face, const std::array<int, 3>& side,
                     Chunked<ObjectValues>& values, std::uint64_t base, std::size_t stride) {
  int touching = 0;
  for (int s : side) touching += s != 0;
  if (touching != 1) return;
  const int face_axis = facing(side) / 2;
  const int u = face_axis == 0 ? 1 : 0, v = face_axis == 2 ? 1 : 2;
  const std::int64_t u0 = std::max(a.offset[u], b.offset[u]),
                     u1 = std::min(a.offset[u] + a.count[u], b.offset[u] + b.count[u]);
  const std::int64_t v0 = std::max(a.offset[v], b.offset[v]),
                     v1 = std::min(a.offset[v] + a.count[v], b.offset[v] + b.count[v]);
  for (std::int64_t pu = u0; pu < u1; ++pu) {
    const std::uint32_t* row_a = a_face.data() + (pu - a.offset[u]) * a.count[v];
    const std::uint32_t* row_b = b_face.data() + (pu - b.offset[u]) * b.count[v];
    for (std::int64_t pv = v0; pv < v1; ++pv) {
      const std::uint32_t la = row_a[pv - a.offset[v]], lb = row_b[pv - b.offset[v]];
      if (la != 0 && lb != 0) values[(base + lb - 1) * stride].faces[face_axis] -= 2;
    }
  }
}

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

struct KeptFace {
  std::vector<std::uint32_t> plane;
  int uses = 0;
};

}  // namespace

struct Labeling::State {
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
      labeler_(connectivity),
      state_(new State) {
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

namespace {

// A brick next to another: with periodic axes, possibly across the
// volume's faces, as its image moved by shift (-1, 0, 1 per axis) times the
// volume's size; a brick that spans a periodic axis is its own neighbour.
struct Neighbour {
  std::int64_t brick;
  std::array<int, 3> shift;
};

io::Extent moved(const BrickMap& map, const Neighbour& n) {
  io::Extent e = map.bricks[static_cast<std::size_t>(n.brick)];
  for (int a = 0; a < 3; ++a) e.offset[a] += n.shift[static_cast<std::size_t>(a)] * map.dims[a];
  return e;
}

// Of the two views of a brick's contact with its own image, the one that
// joins them (the image after it).
bool first_view(const std::array<int, 3>& shift) {
  for (int s : shift)
    if (s != 0) return s > 0;
  return false;
}

std::vector<Neighbour> neighbours(const BrickMap& map, std::int64_t brick, int connectivity) {
  std::vector<Neighbour> found;
  const io::Extent& here = map.bricks[static_cast<std::size_t>(brick)];
  auto try_one = [&](const Neighbour& n) {
    if ((n.brick != brick || n.shift != std::array<int, 3>{}) && contact(here, moved(map, n), connectivity))
      found.push_back(n);
  };
  if (map.grid[0] > 0) {
    const auto& g = map.grid;
    const std::int64_t at[3] = {brick / (g[1] * g[2]), brick / g[2] % g[1], brick % g[2]};
    for (int dz = -1; dz <= 1; ++dz)
      for (int dy = -1; dy <= 1; ++dy)
        for (int dx = -1; dx <= 1; ++dx) {
          const int d[3] = {dz, dy, dx};
          std::int64_t index[3];
          Neighbour n{0, {}};
          bool inside = true;
          for (int a = 0; a < 3; ++a) {
            index[a] = at[a] + d[a];
            if (index[a] >= 0 && index[a] < g[a]) continue;
            if (!map.periodic[static_cast<std::size_t>(a)]) inside = false;
            n.shift[static_cast<std::size_t>(a)] = index[a] < 0 ? -1 : 1;
            index[a] = (index[a] + g[a]) % g[a];
          }
          if (!inside) continue;
          n.brick = (index[0] * g[1] + index[1]) * g[2] + index[2];
          try_one(n);
        }
  } else {
    for (std::size_t other = 0; other < map.bricks.size(); ++other)
      for (int dz = -1; dz <= 1; ++dz)
        for (int dy = -1; dy <= 1; ++dy)
          for (int dx = -1; dx <= 1; ++dx) {
            const std::array<int, 3> shift{dz, dy, dx};
            bool allowed = true;
            for (int a = 0; a < 3; ++a)
              allowed =
                  allowed && (shift[static_cast<std::size_t>(a)] == 0 || map.periodic[static_cast<std::size_t>(a)]);
            if (allowed) try_one({static_cast<std::int64_t>(other), shift});
          }
  }
  std::sort(found.begin(), found.end(), [](const Neighbour& a, const Neighbour& b) {
    return std::tie(a.brick, a.shift) < std::tie(b.brick, b.shift);
  });
  return found;
}

}  // namespace

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
  labeler_.label(mask, extent.count);
  const auto touching = neighbours(map_, brick, connectivity_);
  std::unordered_map<int, std::vector<std::uint32_t>> own;  // this brick's faces, cut once
  auto own_face = [&](int face) -> std::vector<std::uint32_t>& {
    auto it = own.find(face);
    if (it == own.end()) it = own.emplace(face, labeler_.face(face / 2, face % 2)).first;
    return it->second;
  };
  // Joins to bricks of this rank labelled before, by neighbour (touching's
  // order), found before the numbering when it is done in the brick.
  std::vector<std::optional<std::vector<Pair>>> early(touching.size());
  auto labelled_before = [&](const Neighbour& n) {
    return n.brick < brick && map_.owner[static_cast<std::size_t>(n.brick)] == comm_.rank();
  };
  if (s.in_bricks) {
    // The labels that take part in the merge. On a face that only bricks of
    // this rank labelled before look at: those that touch their faces (at
    // density 0.1, a tenth of them). On any other face: every label, as
    // what lies across is not known yet.
    s.shared.assign(static_cast<std::size_t>(labeler_.objects()) + 1, 0);
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
                            connectivity_);
      for (const Pair& pair : *early[k]) s.shared[pair.b] = 1;
    }
    auto& slots = s.slots[s.added];
    labeler_.measure_in_brick(extent, map_.dims, s.shared, *s.in_bricks, slots, s.cores, s.in_brick);
    for (auto& pairs : early)
      if (pairs)
        for (Pair& pair : *pairs) pair.b = slots[pair.b - 1] + 1;
    // Faces name parts from here on (part index + 1), here and on other
    // ranks: every label on an open face is a part. (A closed face is not
    // used again.)
    for (auto& [face, plane] : own)
      if (open[face])
        for (auto& label : plane)
          if (label != 0) label = slots[label - 1] + 1;
  } else {
    labeler_.measure(extent, map_.dims, s.parts);  // appends this brick's parts
  }
  s.part_start.push_back(s.parts.size() + s.cores.size());
  if (records_ != 0) {  // a record per object and field, the shape in the first
    s.brick_values.assign(labeler_.objects() * records_, ObjectValues{});
    for (std::size_t k = 0; k < fields.size(); ++k) {
      const FieldBrick& field = fields[k];
      if (field.data == nullptr) throw Error("internal error: a labeling with values needs each brick's fields");
      labeler_.measure_values(field.data, field.dtype, field.scale, field.offset, extent, s.brick_values.data() + k,
                              records_);
    }
    if (with_shape_) labeler_.measure_shape(extent, s.brick_values.data(), records_);
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
      for (const Pair& pair : join_faces(earlier, plane, extent, own_face(face), back, connectivity_))
        s.edges.push_back({brick, brick, pair.a, pair.b, shift_of(n.shift, -1)});
      if (with_shape_)
        take_face_pairs(earlier, plane, extent, own_face(face), back, s.values, s.part_start[s.added - 1], records_);
      continue;
    }
    if (labelled_before(n)) {  // join now
      auto& kept = s.faces.at(other * 6 + opposite(face));
      const auto back = *contact(earlier, extent, connectivity_);
      const auto pairs = early[k] ? std::move(*early[k])
                                  : join_faces(earlier, kept.plane, extent, own_face(face), back, connectivity_);
      for (const Pair& pair : pairs) s.edges.push_back({other, brick, pair.a, pair.b, shift_of(n.shift, -1)});
      if (with_shape_)
        take_face_pairs(earlier, kept.plane, extent, own_face(face), back, s.values, s.part_start[s.added - 1],
                        records_);
      if (--kept.uses == 0) s.faces.erase(other * 6 + opposite(face));
    } else {  // a later brick of this rank, or another rank's: keep the face
      auto& kept = s.faces[brick * 6 + face];
      if (kept.uses++ == 0) kept.plane = own_face(face);
    }
  }
}

void Labeling::seed(const std::uint8_t* seeds) {
  State& s = *state_;
  if (s.added == 0) throw Error("internal error: seed() before add()");
  if (s.in_bricks) throw Error("internal error: seed() on a labeling that numbers objects in their bricks");
  labeler_.mark_seeds(seeds, s.parts, s.part_start[s.added - 1]);
}

namespace {

// The faces of this rank's bricks that a later brick on another rank
// needs, packed per rank: (brick low, brick high, face, size, plane...).
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
                         const std::function<std::uint64_t(std::int64_t)>& base_of) {
  for (std::size_t at = 0; at < received.size();) {
    const std::int64_t other = static_cast<std::int64_t>(received[at]) | static_cast<std::int64_t>(received[at + 1])
                                                                             << 32;
    const int face = static_cast<int>(received[at + 2]);
    const std::size_t size = received[at + 3];
    const std::vector<std::uint32_t> plane(received.begin() + static_cast<std::ptrdiff_t>(at + 4),
                                           received.begin() + static_cast<std::ptrdiff_t>(at + 4 + size));
    at += 4 + size;
    const io::Extent& earlier = map.bricks[static_cast<std::size_t>(other)];
    for (const Neighbour& n : neighbours(map, other, connectivity)) {
      const std::int64_t brick = n.brick;
      if (map.owner[static_cast<std::size_t>(brick)] != me || brick < other) continue;
      const io::Extent here = moved(map, n);  // where it touches the earlier brick
      const auto side = *contact(earlier, here, connectivity);
      if (facing(side) != face) continue;
      const auto& mine = faces.at(brick * 6 + opposite(face)).plane;
      for (const Pair& pair : join_faces(earlier, plane, here, mine, side, connectivity))
        edges.push_back({other, brick, pair.a, pair.b, shift_of(n.shift, 1)});
      if (values) take_face_pairs(earlier, plane, here, mine, side, *values, base_of(brick), stride);
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
    join_received_faces(received, map_, connectivity_, me, s.faces, s.edges, with_shape_ ? &s.values : nullptr,
                        records_, [&](std::int64_t brick) { return s.part_start[s.index.at(brick)]; });
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

}  // namespace volseg::segment
