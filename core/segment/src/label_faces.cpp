// SPDX-License-Identifier: MIT
// Joining bricks' labels across their faces (label_faces.hpp; docs/label.md,
// "Joins across bricks").
//
// Each brick keeps the labels of the faces it shares with a neighbour that
// is labelled later, or on another rank, until that neighbour has been
// joined to it. Two bricks touch across a face, an edge or a corner: the
// voxels that can be neighbours lie on one face of each (the first axis on
// which they touch), so six face planes per brick serve all 26 neighbours.
// A join compares the two faces voxel by voxel over the connectivity's
// stencil and records enough pairs of labels to join what touches (a
// spanning forest of the contacts). Which faces wait, and where they travel,
// is the Labeling's (labeling.cpp).
#include "label_faces.hpp"

#include <algorithm>
#include <bit>
#include <tuple>
#include <utility>

#include "disjoint_set.hpp"

namespace volseg::segment::detail {
namespace {

// Offsets a neighbour may differ by in how many axes: 1, 2 or 3.
int axes_allowed(int connectivity) { return connectivity == 6 ? 1 : connectivity == 18 ? 2 : 3; }

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

}  // namespace

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

int facing(const std::array<int, 3>& side) {
  for (int axis = 0; axis < 3; ++axis)
    if (side[axis] != 0) return axis * 2 + (side[axis] > 0);
  return -1;
}

io::Extent moved(const BrickMap& map, const Neighbour& n) {
  io::Extent e = map.bricks[static_cast<std::size_t>(n.brick)];
  for (int a = 0; a < 3; ++a) e.offset[a] += n.shift[static_cast<std::size_t>(a)] * map.dims[a];
  return e;
}

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

// A face of a random mask has hundreds of thousands of contacts; collecting
// and sorting them all cost more than the labelling of the face.
std::vector<FacePair> join_faces(const io::Extent& a, const std::vector<std::uint32_t>& a_face, const io::Extent& b,
                                 const std::vector<std::uint32_t>& b_face, const std::array<int, 3>& side,
                                 int connectivity, const std::uint8_t* a_classes, const std::uint8_t* b_classes) {
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
  std::vector<FacePair> pairs;
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
          if (a_classes && a_classes[(row_a - a_face.data()) + k] != b_classes[(row_b - b_face.data()) + k]) continue;
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

void take_face_pairs(const io::Extent& a, const std::vector<std::uint32_t>& a_face, const io::Extent& b,
                     const std::vector<std::uint32_t>& b_face, const std::array<int, 3>& side,
                     Chunked<ObjectValues>& values, std::uint64_t base, std::size_t stride,
                     const std::uint8_t* a_classes, const std::uint8_t* b_classes) {
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
      if (a_classes && a_classes[(row_a - a_face.data()) + (pv - a.offset[v])] !=
                           b_classes[(row_b - b_face.data()) + (pv - b.offset[v])])
        continue;
      if (la != 0 && lb != 0) values[(base + lb - 1) * stride].faces[face_axis] -= 2;
    }
  }
}

}  // namespace volseg::segment::detail
