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
#include <cstring>
#include <unordered_map>

#include "volseg/mesh/mesh.hpp"

namespace volseg::mesh {

namespace {

constexpr int kTop = 4096;  // a voxel inside the object, smoothed or not
constexpr int kIso = kTop / 2;
constexpr int kWeights[5] = {1, 4, 6, 4, 1};  // [1 2 1] twice: render's smoothing
constexpr std::uint16_t kInsideLeast = kTop * 17 / 32, kOutsideMost = kTop * 15 / 32;

// The object's voxels (0 or `value`) over `box` grown by `grow` on every
// side, row by row from the brick's ids (0 outside them).
std::vector<std::uint16_t> voxels_of(const BrickLabels& labels, std::uint64_t id, const io::Extent& box, int grow,
                                     std::uint16_t value) {
  const io::Index3 g{box.count[0] + 2 * grow, box.count[1] + 2 * grow, box.count[2] + 2 * grow};
  std::vector<std::uint16_t> out(static_cast<std::size_t>(g[0] * g[1] * g[2]), 0);
  const auto& r = labels.region;
  const std::int64_t x0 = box.offset[2] - grow;
  const std::int64_t lo = std::max(x0, r.offset[2]), hi = std::min(x0 + g[2], r.offset[2] + r.count[2]);
  for (std::int64_t z = 0; z < g[0]; ++z) {
    const std::int64_t vz = z + box.offset[0] - grow - r.offset[0];
    if (vz < 0 || vz >= r.count[0]) continue;
    for (std::int64_t y = 0; y < g[1]; ++y) {
      const std::int64_t vy = y + box.offset[1] - grow - r.offset[1];
      if (vy < 0 || vy >= r.count[1]) continue;
      const std::uint64_t* row = labels.ids.data() + (vz * r.count[1] + vy) * r.count[2] - r.offset[2];
      std::uint16_t* o = out.data() + (z * g[1] + y) * g[2] - x0;
      for (std::int64_t x = lo; x < hi; ++x) o[x] = row[x] == id ? value : 0;
    }
  }
  return out;
}

// The field an object's surface is the half level of, over a box of grid
// points (some outside the volume, where the object is not), and which of
// them are inside.
class Field {
 public:
  Field(const BrickLabels& labels, std::uint64_t id, const io::Extent& box, bool smooth) : box_(box) {
    if (smooth) {
      smoothed(voxels_of(labels, id, box, 2, 1));
    } else {
      values_ = voxels_of(labels, id, box, 0, kTop);
    }
    inside_.resize(values_.size());
    for (std::size_t i = 0; i < values_.size(); ++i) inside_[i] = values_[i] > kIso;
  }

  // At box-relative z, y, x.
  int operator()(std::int64_t z, std::int64_t y, std::int64_t x) const { return values_[index(z, y, x)]; }
  std::size_t index(std::int64_t z, std::int64_t y, std::int64_t x) const {
    return static_cast<std::size_t>((z * box_.count[1] + y) * box_.count[2] + x);
  }
  const std::uint8_t* inside_row(std::int64_t z, std::int64_t y) const { return inside_.data() + index(z, y, 0); }

 private:
  // The 0/1 voxels over the box and two more around it, filtered along x,
  // then y, then z: integers, so every brick computes the same.
  void smoothed(const std::vector<std::uint16_t>& in) {
    const auto& n = box_.count;
    const io::Index3 g{n[0] + 4, n[1] + 4, n[2] + 4};
    std::vector<std::uint16_t> along_x(static_cast<std::size_t>(g[0] * g[1] * n[2]));
    for (std::int64_t zy = 0; zy < g[0] * g[1]; ++zy) {
      const std::uint16_t* row = in.data() + zy * g[2];
      std::uint16_t* out = along_x.data() + zy * n[2];
      for (std::int64_t x = 0; x < n[2]; ++x)
        out[x] = static_cast<std::uint16_t>(row[x] + 4 * row[x + 1] + 6 * row[x + 2] + 4 * row[x + 3] + row[x + 4]);
    }
    std::vector<std::uint16_t> along_y(static_cast<std::size_t>(g[0] * n[1] * n[2]));
    for (std::int64_t z = 0; z < g[0]; ++z)
      for (std::int64_t y = 0; y < n[1]; ++y) {
        const std::uint16_t* r = along_x.data() + (z * g[1] + y) * n[2];
        std::uint16_t* out = along_y.data() + (z * n[1] + y) * n[2];
        for (std::int64_t x = 0; x < n[2]; ++x)
          out[x] = static_cast<std::uint16_t>(r[x] + 4 * r[x + n[2]] + 6 * r[x + 2 * n[2]] + 4 * r[x + 3 * n[2]] +
                                              r[x + 4 * n[2]]);
      }
    values_.resize(static_cast<std::size_t>(n[0] * n[1] * n[2]));
    const std::int64_t plane = n[1] * n[2];
    for (std::int64_t z = 0; z < n[0]; ++z) {
      const std::uint16_t* r = along_y.data() + z * plane;
      std::uint16_t* out = values_.data() + z * plane;
      for (std::int64_t i = 0; i < plane; ++i)
        out[i] = static_cast<std::uint16_t>(r[i] + 4 * r[i + plane] + 6 * r[i + 2 * plane] + 4 * r[i + 3 * plane] +
                                            r[i + 4 * plane]);
    }
    // Every voxel kept on its side of the half level, as render keeps a
    // mask's: the surface rounds the staircase off but encloses exactly the
    // object's voxels, and an object of one voxel keeps a surface.
    for (std::int64_t z = 0; z < n[0]; ++z)
      for (std::int64_t y = 0; y < n[1]; ++y) {
        const std::uint16_t* voxel = in.data() + ((z + 2) * g[1] + y + 2) * g[2] + 2;
        std::uint16_t* out = values_.data() + (z * n[1] + y) * n[2];
        for (std::int64_t x = 0; x < n[2]; ++x)
          out[x] = voxel[x] ? std::max(out[x], kInsideLeast) : std::min(out[x], kOutsideMost);
      }
  }

  io::Extent box_;
  std::vector<std::uint16_t> values_;
  std::vector<std::uint8_t> inside_;
};

// Builds one object's fragment: vertices on demand, one per crossed cell.
class Net {
 public:
  Net(const Field& field, const io::Extent& box) : field_(field), box_(box) {
    cell_vertex_.assign(static_cast<std::size_t>(box.voxels()), -1);
  }

  // The quad around the edge from box-relative p along axis a, which the
  // surface crosses (in_p: p is inside).
  void edge(const io::Index3& p, int a, bool in_p) {
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
  // Rows of edges the surface does not cross (most of them) cost a compare.
  const io::Index3 first{std::max(own_lo[0], box.offset[0]) - box.offset[0],
                         std::max(own_lo[1], box.offset[1]) - box.offset[1],
                         std::max(own_lo[2], box.offset[2]) - box.offset[2]};
  const io::Index3 last{std::min(own_hi[0], box.offset[0] + box.count[0] - 1) - box.offset[0],
                        std::min(own_hi[1], box.offset[1] + box.count[1] - 1) - box.offset[1],
                        std::min(own_hi[2], box.offset[2] + box.count[2] - 1) - box.offset[2]};
  const std::int64_t x_last_edge = std::min(last[2], box.count[2] - 2);
  for (std::int64_t z = first[0]; z <= last[0]; ++z)
    for (std::int64_t y = first[1]; y <= last[1]; ++y) {
      const std::uint8_t* row = field.inside_row(z, y);
      for (std::int64_t x = first[2]; x <= x_last_edge; ++x)
        if (row[x] != row[x + 1]) net.edge({z, y, x}, 2, row[x]);
      const std::size_t width = static_cast<std::size_t>(last[2] - first[2] + 1);
      for (int a = 0; a < 2; ++a) {
        if ((a == 0 ? z : y) + 1 >= box.count[a]) continue;
        const std::uint8_t* next = a == 0 ? field.inside_row(z + 1, y) : field.inside_row(z, y + 1);
        if (std::memcmp(row + first[2], next + first[2], width) == 0) continue;
        for (std::int64_t x = first[2]; x <= last[2]; ++x)
          if (row[x] != next[x]) net.edge({z, y, x}, a, row[x]);
      }
    }
  return net.take();
}

}  // namespace volseg::mesh
