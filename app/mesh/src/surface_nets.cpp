// SPDX-License-Identifier: MIT
// Naive surface nets over one brick: a vertex in every cell (the cube
// between eight voxel centres) that the surface crosses, at the mean of
// the points where it crosses the cell's edges; a quad, two triangles,
// around every grid edge the surface crosses. A brick owns the edges that
// start at its voxels (and, at the volume's low faces, at the one outside
// them), so two bricks never both make a quad, and the cells they share get
// the same vertex from the same voxels: the pieces meet without cracks.
#include <algorithm>
#include <array>
#include <cstdint>
#include <unordered_map>

#include "volseg/mesh/mesh.hpp"

namespace volseg::mesh {

namespace {

constexpr int kTop = 4096;  // a voxel inside the object, smoothed or not
constexpr int kIso = kTop / 2;
constexpr int kWeights[5] = {1, 4, 6, 4, 1};  // [1 2 1] twice: render's smoothing

// The field an object's surface is the half level of, over a box of grid
// points (some outside the volume, where the object is not).
class Field {
 public:
  Field(const BrickLabels& labels, std::uint64_t id, const io::Extent& box, bool smooth) : box_(box) {
    values_.assign(static_cast<std::size_t>(box.voxels()), 0);
    if (smooth) {
      smoothed(labels, id);
    } else {
      for (std::int64_t z = 0; z < box.count[0]; ++z)
        for (std::int64_t y = 0; y < box.count[1]; ++y)
          for (std::int64_t x = 0; x < box.count[2]; ++x)
            if (labels.at(z + box.offset[0], y + box.offset[1], x + box.offset[2]) == id) values_[index(z, y, x)] = kTop;
    }
  }

  // At box-relative z, y, x.
  int operator()(std::int64_t z, std::int64_t y, std::int64_t x) const { return values_[index(z, y, x)]; }
  std::size_t index(std::int64_t z, std::int64_t y, std::int64_t x) const {
    return static_cast<std::size_t>((z * box_.count[1] + y) * box_.count[2] + x);
  }

 private:
  // The object's 0/1 voxels over the box and two more around it, filtered
  // along x, then y, then z: integers, so every brick computes the same.
  void smoothed(const BrickLabels& labels, std::uint64_t id) {
    const auto& n = box_.count;
    const io::Index3 g{n[0] + 4, n[1] + 4, n[2] + 4};
    std::vector<std::uint16_t> in(static_cast<std::size_t>(g[0] * g[1] * g[2]));
    for (std::int64_t z = 0; z < g[0]; ++z)
      for (std::int64_t y = 0; y < g[1]; ++y)
        for (std::int64_t x = 0; x < g[2]; ++x)
          in[static_cast<std::size_t>((z * g[1] + y) * g[2] + x)] =
              labels.at(z + box_.offset[0] - 2, y + box_.offset[1] - 2, x + box_.offset[2] - 2) == id;
    std::vector<std::uint16_t> along_x(static_cast<std::size_t>(g[0] * g[1] * n[2]));
    for (std::int64_t zy = 0; zy < g[0] * g[1]; ++zy)
      for (std::int64_t x = 0; x < n[2]; ++x) {
        int sum = 0;
        for (int d = 0; d < 5; ++d) sum += kWeights[d] * in[static_cast<std::size_t>(zy * g[2] + x + d)];
        along_x[static_cast<std::size_t>(zy * n[2] + x)] = static_cast<std::uint16_t>(sum);
      }
    std::vector<std::uint16_t> along_y(static_cast<std::size_t>(g[0] * n[1] * n[2]));
    for (std::int64_t z = 0; z < g[0]; ++z)
      for (std::int64_t y = 0; y < n[1]; ++y)
        for (std::int64_t x = 0; x < n[2]; ++x) {
          int sum = 0;
          for (int d = 0; d < 5; ++d) sum += kWeights[d] * along_x[static_cast<std::size_t>((z * g[1] + y + d) * n[2] + x)];
          along_y[static_cast<std::size_t>((z * n[1] + y) * n[2] + x)] = static_cast<std::uint16_t>(sum);
        }
    for (std::int64_t z = 0; z < n[0]; ++z)
      for (std::int64_t yx = 0; yx < n[1] * n[2]; ++yx) {
        int sum = 0;
        for (int d = 0; d < 5; ++d) sum += kWeights[d] * along_y[static_cast<std::size_t>((z + d) * n[1] * n[2] + yx)];
        values_[static_cast<std::size_t>(z * n[1] * n[2] + yx)] = static_cast<std::uint16_t>(sum);
      }
  }

  io::Extent box_;
  std::vector<std::uint16_t> values_;
};

// Builds one object's fragment: vertices on demand, one per crossed cell.
class Net {
 public:
  Net(const Field& field, const io::Extent& box) : field_(field), box_(box) {
    cell_vertex_.assign(static_cast<std::size_t>(box.voxels()), -1);
  }

  // The quad around the edge from box-relative p along axis a, when the
  // surface crosses it.
  void edge(const io::Index3& p, int a) {
    io::Index3 q = p;
    ++q[a];
    const bool in_p = field_(p[0], p[1], p[2]) > kIso, in_q = field_(q[0], q[1], q[2]) > kIso;
    if (in_p == in_q) return;
    const int b = (a + 1) % 3, c = (a + 2) % 3;
    // The cells around the edge lie in the field's box wherever the surface
    // can cross (within one voxel of the object: see surface_nets).
    if (p[b] < 1 || p[c] < 1 || p[b] + 1 >= box_.count[b] || p[c] + 1 >= box_.count[c]) return;
    io::Index3 cells[4] = {p, p, p, p};
    --cells[0][b], --cells[0][c];
    --cells[1][c];
    --cells[3][b];
    std::uint32_t v[4];
    for (int i = 0; i < 4; ++i) v[i] = vertex(cells[i]);
    // Around +a from b to c; axes are z, y, x, so (a, b, c) cyclic is
    // left-handed in x, y, z: wound the other way when p is inside.
    if (in_p) {
      add(v[0], v[3], v[2]);
      add(v[0], v[2], v[1]);
    } else {
      add(v[0], v[1], v[2]);
      add(v[0], v[2], v[3]);
    }
  }

  Fragment take() { return std::move(out_); }

 private:
  void add(std::uint32_t a, std::uint32_t b, std::uint32_t c) {
    out_.triangles.insert(out_.triangles.end(), {a, b, c});
  }

  // The vertex of the cell whose lowest corner is c (box-relative): the mean
  // of the crossings on its twelve edges, in volume voxel coordinates.
  std::uint32_t vertex(const io::Index3& c) {
    int& slot = cell_vertex_[field_.index(c[0], c[1], c[2])];
    if (slot >= 0) return static_cast<std::uint32_t>(slot);
    int f[8];
    for (int i = 0; i < 8; ++i) f[i] = field_(c[0] + (i >> 2 & 1), c[1] + (i >> 1 & 1), c[2] + (i & 1));
    double sum[3] = {0, 0, 0};
    int crossings = 0;
    for (int i = 0; i < 8; ++i)
      for (int bit = 0; bit < 3; ++bit) {
        const int j = i | (1 << bit);
        if (j == i || (f[i] > kIso) == (f[j] > kIso)) continue;
        const double t = static_cast<double>(kIso - f[i]) / (f[j] - f[i]);
        const double at[3] = {static_cast<double>(i >> 2 & 1), static_cast<double>(i >> 1 & 1),
                              static_cast<double>(i & 1)};
        for (int a = 0; a < 3; ++a) sum[a] += at[a] + (a == 2 - bit ? t : 0.0);
        ++crossings;
      }
    for (int a = 2; a >= 0; --a)  // x, y, z
      out_.vertices.push_back(
          static_cast<float>(static_cast<double>(c[a] + box_.offset[a]) + sum[a] / std::max(crossings, 1)));
    slot = static_cast<int>(out_.vertex_count() - 1);
    return static_cast<std::uint32_t>(slot);
  }

  const Field& field_;
  io::Extent box_;
  std::vector<int> cell_vertex_;
  Fragment out_;
};

}  // namespace

std::uint64_t BrickLabels::at(std::int64_t z, std::int64_t y, std::int64_t x) const {
  const auto& o = region.offset;
  const auto& n = region.count;
  if (z < o[0] || y < o[1] || x < o[2] || z >= o[0] + n[0] || y >= o[1] + n[1] || x >= o[2] + n[2]) return 0;
  return ids[static_cast<std::size_t>(((z - o[0]) * n[1] + (y - o[1])) * n[2] + (x - o[2]))];
}

std::vector<ObjectBox> objects_in(const BrickLabels& labels) {
  std::unordered_map<std::uint64_t, std::size_t> where;
  std::vector<ObjectBox> boxes;
  const auto& o = labels.region.offset;
  const auto& n = labels.region.count;
  std::size_t i = 0, last = 0;
  std::uint64_t last_id = 0;
  for (std::int64_t z = 0; z < n[0]; ++z)
    for (std::int64_t y = 0; y < n[1]; ++y)
      for (std::int64_t x = 0; x < n[2]; ++x, ++i) {
        const std::uint64_t id = labels.ids[i];
        if (id == 0) continue;
        if (id != last_id || boxes.empty()) {
          auto [it, added] = where.emplace(id, boxes.size());
          if (added) boxes.push_back({id, {z + o[0], y + o[1], x + o[2]}, {z + o[0], y + o[1], x + o[2]}});
          last = it->second;
          last_id = id;
        }
        auto& box = boxes[last];
        const io::Index3 p{z + o[0], y + o[1], x + o[2]};
        for (std::size_t a = 0; a < 3; ++a) {
          box.lo[a] = std::min(box.lo[a], p[a]);
          box.hi[a] = std::max(box.hi[a], p[a]);
        }
      }
  std::sort(boxes.begin(), boxes.end(), [](const ObjectBox& a, const ObjectBox& b) { return a.id < b.id; });
  return boxes;
}

Fragment surface_nets(const BrickLabels& labels, const ObjectBox& object, bool smooth) {
  // The grid points whose edges the brick owns (at the volume's low faces,
  // the point outside too), and the field's box: those points, one more on
  // every side for the cells around their edges, within two voxels of the
  // object (the smoothing's reach; the half level lies within one).
  io::Index3 own_lo{}, own_hi{};
  io::Extent box;
  for (std::size_t a = 0; a < 3; ++a) {
    own_lo[a] = labels.brick.offset[a] == 0 ? -1 : labels.brick.offset[a];
    own_hi[a] = labels.brick.offset[a] + labels.brick.count[a] - 1;
    const std::int64_t lo = std::max(object.lo[a] - 2, own_lo[a] - 1);
    const std::int64_t hi = std::min(object.hi[a] + 2, own_hi[a] + 1);
    if (hi < lo) return {};
    box.offset[a] = lo;
    box.count[a] = hi - lo + 1;
  }
  const Field field(labels, object.id, box, smooth);
  Net net(field, box);
  for (std::int64_t z = std::max(own_lo[0], box.offset[0]); z <= std::min(own_hi[0], box.offset[0] + box.count[0] - 1); ++z)
    for (std::int64_t y = std::max(own_lo[1], box.offset[1]); y <= std::min(own_hi[1], box.offset[1] + box.count[1] - 1);
         ++y)
      for (std::int64_t x = std::max(own_lo[2], box.offset[2]);
           x <= std::min(own_hi[2], box.offset[2] + box.count[2] - 1); ++x) {
        const io::Index3 p{z - box.offset[0], y - box.offset[1], x - box.offset[2]};
        for (int a = 0; a < 3; ++a)
          if (p[a] + 1 < box.count[a]) net.edge(p, a);
      }
  return net.take();
}

}  // namespace volseg::mesh
