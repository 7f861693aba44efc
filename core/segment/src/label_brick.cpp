// SPDX-License-Identifier: MIT
// One brick's connected components. The foreground of each row (z, y) is cut
// into runs along x; a run joins the runs of the rows before it that it
// touches (the row above in y, and with 18 or 26 the rows of the plane
// before in z), by union-find over run indices where the smaller index wins
// (detail::DisjointSet). A component's root is then its first run in file
// order, so numbering the roots in run order numbers objects by their first
// voxel, as a scan of the whole volume would. Cost: one pass over the bytes
// (8 at a time) and one over the runs per neighbouring row. Here too: the
// arithmetic of the measures (parts and values merged, object_shape).
#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <utility>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "disjoint_set.hpp"
#include "label_kernel.hpp"
#include "volseg/io/dtype_dispatch.hpp"
#include "volseg/io/error.hpp"
#include "volseg/segment/label.hpp"

namespace volseg::segment {

int check_connectivity(int connectivity) {
  if (connectivity != 6 && connectivity != 18 && connectivity != 26)
    throw Error("connectivity must be 6, 18 or 26 (faces; faces and edges; faces, edges and corners), not " +
                std::to_string(connectivity));
  return connectivity;
}

void ObjectPart::merge(const ObjectPart& other) {
  first = std::min(first, other.first);
  voxels += other.voxels;
  for (int a = 0; a < 3; ++a) {
    sum[a] += other.sum[a];
    lo[a] = std::min(lo[a], other.lo[a]);
    hi[a] = std::max(hi[a], other.hi[a]);
  }
  border |= other.border;
}

void ObjectValues::merge(const ObjectValues& other) {
  min = std::min(min, other.min);
  max = std::max(max, other.max);
  sum += other.sum;
  for (int a = 0; a < 3; ++a) weighted[a] += other.weighted[a];
  for (int i = 0; i < 6; ++i) moments[i] += other.moments[i];
  for (int a = 0; a < 3; ++a) faces[a] += other.faces[a];
}

namespace {

// Eigenvalues of a symmetric 3x3 matrix by Jacobi rotations, descending.
std::array<double, 3> symmetric_eigenvalues(double m[3][3]) {
  for (int sweep = 0; sweep < 50; ++sweep) {
    const double off = m[0][1] * m[0][1] + m[0][2] * m[0][2] + m[1][2] * m[1][2];
    if (off < 1e-30 * (m[0][0] * m[0][0] + m[1][1] * m[1][1] + m[2][2] * m[2][2]) || off == 0) break;
    for (int p = 0; p < 2; ++p)
      for (int q = p + 1; q < 3; ++q) {
        if (m[p][q] == 0) continue;
        const double theta = (m[q][q] - m[p][p]) / (2 * m[p][q]);
        const double t = (theta >= 0 ? 1.0 : -1.0) / (std::abs(theta) + std::sqrt(theta * theta + 1));
        const double c = 1 / std::sqrt(t * t + 1), s = t * c;
        for (int k = 0; k < 3; ++k) {  // columns p, q
          const double kp = m[k][p], kq = m[k][q];
          m[k][p] = c * kp - s * kq;
          m[k][q] = s * kp + c * kq;
        }
        for (int k = 0; k < 3; ++k) {  // rows p, q
          const double pk = m[p][k], qk = m[q][k];
          m[p][k] = c * pk - s * qk;
          m[q][k] = s * pk + c * qk;
        }
      }
  }
  std::array<double, 3> e{m[0][0], m[1][1], m[2][2]};
  std::sort(e.begin(), e.end(), std::greater<>());
  for (double& v : e) v = std::max(v, 0.0);  // as scikit-image clips rounding below zero
  return e;
}

}  // namespace

ObjectShape object_shape(const ObjectPart& part, const ObjectValues& measures, const std::array<double, 3>& spacing) {
  ObjectShape shape;
  const double pi = std::acos(-1.0);
  const double n = static_cast<double>(part.voxels);
  const double sz = spacing[2], sy = spacing[1], sx = spacing[0];
  shape.surface_area = static_cast<double>(measures.faces[0]) * sy * sx +
                       static_cast<double>(measures.faces[1]) * sz * sx +
                       static_cast<double>(measures.faces[2]) * sz * sy;
  shape.equivalent_diameter = std::cbrt(6 * n / pi);
  const double volume = n * sx * sy * sz;
  shape.sphericity = shape.surface_area > 0 ? std::cbrt(pi) * std::pow(6 * volume, 2.0 / 3.0) / shape.surface_area : 0;
  if ((part.border & (ObjectPart::wraps_z | ObjectPart::wraps_y | ObjectPart::wraps_x)) != 0) {
    // Across periodic faces it reaches itself: no moments about a centre.
    const double nan = std::numeric_limits<double>::quiet_NaN();
    shape.inertia[0] = shape.inertia[1] = shape.inertia[2] = shape.major_axis = shape.minor_axis = nan;
    return shape;
  }
  // Central second moments over N, exact to the last step: (N S_ij - S_i S_j) / N^2.
  const auto big_n = static_cast<__int128>(part.voxels);
  auto central = [&](int m, int i, int j) {
    const __int128 numerator = big_n * static_cast<__int128>(measures.moments[m]) -
                               static_cast<__int128>(part.sum[i]) * static_cast<__int128>(part.sum[j]);
    return static_cast<double>(numerator) / (n * n);
  };
  const double zz = central(0, 0, 0), yy = central(1, 1, 1), xx = central(2, 2, 2);
  const double zy = central(3, 0, 1), zx = central(4, 0, 2), yx = central(5, 1, 2);
  double tensor[3][3] = {{yy + xx, -zy, -zx}, {-zy, zz + xx, -yx}, {-zx, -yx, zz + yy}};
  const auto e = symmetric_eigenvalues(tensor);
  for (int a = 0; a < 3; ++a) shape.inertia[a] = e[static_cast<std::size_t>(a)];
  // Inertia's triangle inequality (e1 + e2 >= e0) keeps both at or above
  // zero; rounding may not, for a line of voxels (e2 = 0, e0 = e1).
  shape.major_axis = std::sqrt(std::max(0.0, 10 * (e[0] + e[1] - e[2])));
  shape.minor_axis = std::sqrt(std::max(0.0, 10 * (-e[0] + e[1] + e[2])));
  return shape;
}

BrickLabeler::BrickLabeler(int connectivity) : connectivity_(check_connectivity(connectivity)) {}

namespace {

// Bit i set when byte i of the 64 at p is nonzero.
inline std::uint64_t foreground64(const std::uint8_t* p) {
#if defined(__SSE2__)
  const __m128i zero = _mm_setzero_si128();
  auto bits16 = [&](int at) {
    const __m128i bytes = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + at));
    return static_cast<std::uint64_t>(static_cast<std::uint16_t>(~_mm_movemask_epi8(_mm_cmpeq_epi8(bytes, zero))));
  };
  return bits16(0) | bits16(16) << 16 | bits16(32) << 32 | bits16(48) << 48;
#else
  std::uint64_t bits = 0;
  for (int i = 0; i < 64; ++i) bits |= static_cast<std::uint64_t>(p[i] != 0) << i;
  return bits;
#endif
}

}  // namespace

// Runs come from the foreground bits 64 voxels at a time: a run starts where
// a bit is set and the one before is not, and ends where the reverse holds;
// the two alternate, so each costs one count-trailing-zeros.
void BrickLabeler::find_runs(const std::uint8_t* mask) {
  const std::int64_t rows = shape_[0] * shape_[1], width = shape_[2];
  runs_.clear();
  row_start_.resize(static_cast<std::size_t>(rows) + 1);
  alignas(16) std::uint8_t tail[64];
  for (std::int64_t r = 0; r < rows; ++r) {
    row_start_[static_cast<std::size_t>(r)] = static_cast<std::uint32_t>(runs_.size());
    const std::uint8_t* row = mask + r * width;
    std::uint64_t before = 0;  // 1: the voxel before this word is foreground
    std::int32_t begin = 0;
    for (std::int64_t x = 0; x < width; x += 64) {
      std::uint64_t bits;
      if (x + 64 <= width) {
        bits = foreground64(row + x);
      } else {  // the row's last, partial word: copy it rather than read past the brick
        std::memset(tail, 0, sizeof tail);
        std::memcpy(tail, row + x, static_cast<std::size_t>(width - x));
        bits = foreground64(tail);
      }
      const std::uint64_t shifted = bits << 1 | before;
      std::uint64_t edges = bits ^ shifted;  // starts (bit set, previous clear) and ends (the reverse)
      before = bits >> 63;
      while (edges != 0) {
        const auto at = static_cast<std::int32_t>(x + std::countr_zero(edges));
        if (bits >> (at - x) & 1)
          begin = at;
        else
          runs_.push_back({begin, at});
        edges &= edges - 1;
      }
    }
    if (before) runs_.push_back({begin, static_cast<std::int32_t>(width)});
  }
  row_start_[static_cast<std::size_t>(rows)] = static_cast<std::uint32_t>(runs_.size());
}

namespace {

// Joins the runs of one row to those of one row before it that they touch:
// the two lists are in x order, so one sweep meets every touching pair.
// Each step moves past the run that ends first. Its branches are well
// predicted where few runs touch (a sparse mask).
template <std::int32_t Reach, class Run>
inline void join_row_pair(const Run* runs, detail::DisjointSet<std::uint32_t>& joined, std::uint32_t i,
                          std::uint32_t end, std::uint32_t k, std::uint32_t k_end) {
  while (i < end && k < k_end) {
    const Run a = runs[i], b = runs[k];
    if (b.end + Reach <= a.begin) {
      ++k;
    } else if (a.end + Reach <= b.begin) {
      ++i;
    } else {
      joined.join(i, k);
      // The one that ends first touches nothing further in the other row.
      if (b.end < a.end)
        ++k;
      else
        ++i;
    }
  }
}

// The same sweep for a dense mask, where whether two runs touch is a coin
// toss: the runs of one row that touch runs of one row before it, as (i, k)
// pairs written to out (at most as many as the two rows' runs); returns
// the end. Without a branch on whether they touch: every step writes its
// pair and counts it only when they do. The joins follow, in a loop of
// their own.
template <std::int32_t Reach, class Run>
inline std::uint32_t* touching_pairs(const Run* runs, std::uint32_t i, std::uint32_t end, std::uint32_t k,
                                     std::uint32_t k_end, std::uint32_t* out) {
  while (i < end && k < k_end) {
    const Run a = runs[i], b = runs[k];
    const bool touch = b.end + Reach > a.begin && a.end + Reach > b.begin;
    out[0] = i;
    out[1] = k;
    out += touch ? 2 : 0;
    const bool b_first = b.end < a.end;  // b touches nothing further in this row
    k += b_first ? 1 : 0;
    i += b_first ? 0 : 1;
  }
  return out;
}

}  // namespace

template <int Connectivity>
void BrickLabeler::join_rows() {
  const std::int64_t depth = shape_[0], height = shape_[1];
  detail::DisjointSet<std::uint32_t> joined;
  joined.reset(runs_.size(), std::move(labels_));  // the last brick's labels lend their memory
  const Run* const runs = runs_.data();
  const std::uint32_t* const start = row_start_.data();
  constexpr auto before = rows_before<Connectivity>();
  // Dense: more than 3 runs in 20 voxels (a random mask of density 0.1 has
  // 0.09, of 0.3 and up 0.21 or more). Measured on 512^3 random masks
  // (bench/label_bench.py's): the branch-free sweep labels densities 0.3
  // and 0.5 15-20% faster, and density 0.1 about 5% slower.
  const bool dense = runs_.size() * 20 > static_cast<std::size_t>(depth * height * shape_[2]) * 3;
  // A row's pairs with every row before it: at most (its runs + the other's)
  // a row before, each at most (width + 1) / 2 runs.
  if (dense) pairs_.resize(before.size() * 2 * (static_cast<std::size_t>(shape_[2]) + 1) + 2);
  for (std::int64_t z = 0; z < depth; ++z)
    for (std::int64_t y = 0; y < height; ++y) {
      const auto row = static_cast<std::size_t>(z * height + y);
      const std::uint32_t begin = start[row], end = start[row + 1];
      if (begin == end) continue;
      std::uint32_t* out = pairs_.data();  // dense only
      [&]<std::size_t... B>(std::index_sequence<B...>) {
        auto sweep = [&]<std::size_t S>(std::integral_constant<std::size_t, S>) {
          constexpr RowBefore b = before[S];
          const std::int64_t nz = z + b.dz, ny = y + b.dy;
          if (nz < 0 || ny < 0 || ny >= height) return;
          const auto other = static_cast<std::size_t>(nz * height + ny);
          if (dense)
            out = touching_pairs<b.reach>(runs, begin, end, start[other], start[other + 1], out);
          else
            join_row_pair<b.reach>(runs, joined, begin, end, start[other], start[other + 1]);
        };
        (sweep(std::integral_constant<std::size_t, B>{}), ...);
      }
      (std::make_index_sequence<before.size()>{});
      if (dense)
        for (const std::uint32_t* p = pairs_.data(); p != out; p += 2) joined.join(p[0], p[1]);
    }
  // The roots in run order: objects numbered by their first voxels.
  labels_ = joined.take_numbered(objects_, &first_run_);
}

void BrickLabeler::label(const std::uint8_t* mask, const io::Index3& shape) {
  for (int a = 0; a < 3; ++a)
    if (shape[a] <= 0) throw Error("internal error: a brick with no voxels");
  if (shape[0] * shape[1] * shape[2] > std::numeric_limits<std::int32_t>::max())
    throw Error("a brick of " + std::to_string(shape[0] * shape[1] * shape[2]) +
                " voxels is too large to label (at most 2^31 - 1; choose a smaller --brick)");
  shape_ = shape;
  if (classes_) {
    find_class_runs(mask);
    switch (connectivity_) {
      case 6:
        join_class_rows<6>();
        break;
      case 18:
        join_class_rows<18>();
        break;
      default:
        join_class_rows<26>();
        break;
    }
    return;
  }
  run_class_.clear();
  find_runs(mask);
  switch (connectivity_) {
    case 6:
      join_rows<6>();
      break;
    case 18:
      join_rows<18>();
      break;
    default:
      join_rows<26>();
      break;
  }
}

// Labels are numbered in run order, so an object's first run is the first
// with a label past those seen: its part is appended there, with nothing to
// clear beforehand, and later runs only update it. Rows come in (z, y) order,
// so the first run holds the lowest z and the latest the highest.
void BrickLabeler::measure(const io::Extent& extent, const io::Index3& dims, Chunked<ObjectPart>& parts) const {
  const std::size_t base = parts.size();
  std::uint32_t seen = 0;
  const std::int64_t height = shape_[1];
  const auto width = static_cast<std::uint64_t>(dims[2]), plane = static_cast<std::uint64_t>(dims[1]) * width;
  for (std::int64_t z = 0; z < shape_[0]; ++z)
    for (std::int64_t y = 0; y < height; ++y) {
      const std::int64_t gz = extent.offset[0] + z, gy = extent.offset[1] + y;
      const bool row_border = gz == 0 || gz == dims[0] - 1 || gy == 0 || gy == dims[1] - 1;
      const auto z32 = static_cast<std::int32_t>(gz), y32 = static_cast<std::int32_t>(gy);
      for (std::uint32_t i = row_start_[static_cast<std::size_t>(z * height + y)];
           i < row_start_[static_cast<std::size_t>(z * height + y + 1)]; ++i) {
        const std::uint32_t label = labels_[i];
        const std::int64_t x0 = extent.offset[2] + runs_[i].begin, x1 = extent.offset[2] + runs_[i].end;
        const auto length = static_cast<std::uint64_t>(x1 - x0);
        const std::uint32_t border = row_border || x0 == 0 || x1 == dims[2];
        if (label > seen) {  // its first run
          seen = label;
          ObjectPart part;
          part.first = static_cast<std::uint64_t>(gz) * plane + static_cast<std::uint64_t>(gy) * width +
                       static_cast<std::uint64_t>(x0);
          part.voxels = length;
          part.sum[0] = static_cast<std::uint64_t>(gz) * length;
          part.sum[1] = static_cast<std::uint64_t>(gy) * length;
          part.sum[2] = static_cast<std::uint64_t>(x0 + x1 - 1) * length / 2;  // x0 + ... + (x1 - 1)
          part.lo[0] = part.hi[0] = z32;
          part.lo[1] = part.hi[1] = y32;
          part.lo[2] = static_cast<std::int32_t>(x0);
          part.hi[2] = static_cast<std::int32_t>(x1 - 1);
          part.border = border;
          parts.push_back(part);
          continue;
        }
        ObjectPart& part = parts[base + label - 1];
        part.voxels += length;
        part.sum[0] += static_cast<std::uint64_t>(gz) * length;
        part.sum[1] += static_cast<std::uint64_t>(gy) * length;
        part.sum[2] += static_cast<std::uint64_t>(x0 + x1 - 1) * length / 2;
        part.hi[0] = z32;
        part.lo[1] = std::min(part.lo[1], y32);
        part.hi[1] = std::max(part.hi[1], y32);
        part.lo[2] = std::min<std::int32_t>(part.lo[2], static_cast<std::int32_t>(x0));
        part.hi[2] = std::max<std::int32_t>(part.hi[2], static_cast<std::int32_t>(x1 - 1));
        part.border |= border;
      }
    }
  if (seen != objects_)
    throw Error("internal error: a brick measured " + std::to_string(seen) + " objects of " + std::to_string(objects_));
}

void BrickLabeler::measure_in_brick(const io::Extent& extent, const io::Index3& dims,
                                    const std::vector<std::uint8_t>& shared, const KeepRule& keep,
                                    std::vector<std::uint32_t>& slots, Chunked<PartCore>& parts,
                                    InBrick& figures) const {
  // Each object's first voxel, row (its first run's: the root of its runs),
  // voxels, and, for a rule that needs it, whether it touches the volume's
  // boundary. Tight loops, no branch per run: a random mask has almost a
  // new object per run.
  struct Object {
    std::uint64_t first;
    std::uint32_t voxels, row;
    std::uint32_t border;
  };
  static thread_local std::vector<Object> objects;  // reused brick after brick
  objects.resize(objects_);
  const std::int64_t height = shape_[1], rows = shape_[0] * shape_[1];
  const auto width = static_cast<std::uint64_t>(dims[2]), plane = static_cast<std::uint64_t>(dims[1]) * width;
  {
    std::size_t next = 0;  // the next object's first run
    for (std::int64_t r = 0; r < rows && next < objects_; ++r) {
      const std::uint64_t row_first = static_cast<std::uint64_t>(extent.offset[0] + r / height) * plane +
                                      static_cast<std::uint64_t>(extent.offset[1] + r % height) * width +
                                      static_cast<std::uint64_t>(extent.offset[2]);
      for (; next < objects_ && first_run_[next] < row_start_[static_cast<std::size_t>(r + 1)]; ++next)
        objects[next] = {row_first + static_cast<std::uint64_t>(runs_[first_run_[next]].begin), 0,
                         static_cast<std::uint32_t>(r), 0};
    }
  }
  Object* const by_label = objects.data() - 1;
  for (std::size_t i = 0; i < runs_.size(); ++i)
    by_label[labels_[i]].voxels += static_cast<std::uint32_t>(runs_[i].end - runs_[i].begin);
  if (keep.inside) {
    for (std::int64_t r = 0; r < rows; ++r) {
      const std::int64_t gz = extent.offset[0] + r / height, gy = extent.offset[1] + r % height;
      const bool row_border = gz == 0 || gz == dims[0] - 1 || gy == 0 || gy == dims[1] - 1;
      for (std::uint32_t i = row_start_[static_cast<std::size_t>(r)]; i < row_start_[static_cast<std::size_t>(r + 1)];
           ++i)
        if (row_border || extent.offset[2] + runs_[i].begin == 0 || extent.offset[2] + runs_[i].end == dims[2])
          by_label[labels_[i]].border = ObjectPart::touches_boundary;
    }
  }
  // In label order, which is file order: parts, and segments between them.
  const bool whole_planes = shape_[1] == dims[1] && shape_[2] == dims[2];
  slots.resize(objects_);
  const std::size_t base = parts.size();
  std::size_t segment = SIZE_MAX;  // the open segment's index in parts, if any
  std::uint32_t segment_row = 0;
  for (std::uint32_t label = 1; label <= objects_; ++label) {
    const Object& o = objects[label - 1];
    PartCore part;
    part.first = o.first;
    part.voxels = o.voxels;
    part.border = static_cast<std::uint16_t>(o.border);
    if (shared[label]) {
      slots[label - 1] = static_cast<std::uint32_t>(parts.size() - base);
      parts.push_back(part);
      segment = SIZE_MAX;
      continue;
    }
    if (!keep.keeps(part)) {
      slots[label - 1] = kNoSlot;
      ++figures.dropped;
      continue;
    }
    figures.kept_voxels += o.voxels;
    figures.largest = std::max<std::uint64_t>(figures.largest, o.voxels);
    if (segment != SIZE_MAX && (whole_planes || o.row == segment_row)) {
      ++parts[segment].voxels;
    } else {
      segment = parts.size();
      segment_row = o.row;
      part.voxels = 1;
      part.border = ObjectPart::segment;
      parts.push_back(part);
    }
    slots[label - 1] = static_cast<std::uint32_t>(segment - base) | kSegmentSlot;
  }
}

void BrickLabeler::mark_seeds(const std::uint8_t* seeds, Chunked<ObjectPart>& parts, std::size_t base) const {
  const std::int64_t rows = shape_[0] * shape_[1], width = shape_[2];
  for (std::int64_t r = 0; r < rows; ++r) {
    const std::uint8_t* row = seeds + r * width;
    for (std::uint32_t i = row_start_[static_cast<std::size_t>(r)]; i < row_start_[static_cast<std::size_t>(r + 1)];
         ++i) {
      ObjectPart& part = parts[base + labels_[i] - 1];
      if ((part.border & ObjectPart::seeded) != 0) continue;
      if (std::any_of(row + runs_[i].begin, row + runs_[i].end, [](std::uint8_t b) { return b != 0; }))
        part.border |= ObjectPart::seeded;
    }
  }
}

void BrickLabeler::measure_shape(const io::Extent& extent, ObjectValues* values, std::size_t stride) const {
  const std::int64_t nz = shape_[0], ny = shape_[1];
  auto run_range = [&](std::int64_t z, std::int64_t y) {
    const auto r = static_cast<std::size_t>(z * ny + y);
    return std::pair{row_start_[r], row_start_[r + 1]};
  };
  // Pairs of foreground voxels face to face between two rows: their runs'
  // overlaps, taken off both voxels' exposed faces on that axis.
  auto pairs_between = [&](std::int64_t z0, std::int64_t y0, std::int64_t z1, std::int64_t y1, int axis) {
    auto [i, i_end] = run_range(z0, y0);
    auto [j, j_end] = run_range(z1, y1);
    while (i < i_end && j < j_end) {
      const std::int32_t lo = std::max(runs_[i].begin, runs_[j].begin), hi = std::min(runs_[i].end, runs_[j].end);
      if (lo < hi && (!classes_ || run_class_[i] == run_class_[j]))
        values[(labels_[i] - 1) * stride].faces[axis] -= 2 * static_cast<std::int64_t>(hi - lo);
      if (runs_[i].end < runs_[j].end)
        ++i;
      else
        ++j;
    }
  };
  for (std::int64_t z = 0; z < nz; ++z)
    for (std::int64_t y = 0; y < ny; ++y) {
      const auto gz = static_cast<std::uint64_t>(extent.offset[0] + z),
                 gy = static_cast<std::uint64_t>(extent.offset[1] + y);
      auto [i, i_end] = run_range(z, y);
      for (; i < i_end; ++i) {
        ObjectValues& v = values[(labels_[i] - 1) * stride];
        const auto x0 = static_cast<std::uint64_t>(extent.offset[2] + runs_[i].begin),
                   x1 = static_cast<std::uint64_t>(extent.offset[2] + runs_[i].end);
        const std::uint64_t length = x1 - x0;
        const std::uint64_t sum_x = (x0 + x1 - 1) * length / 2;
        // x0^2 + ... + (x1 - 1)^2 = S(x1) - S(x0), S(n) = (n - 1) n (2n - 1) / 6
        auto squares = [](std::uint64_t m) {
          const auto w = static_cast<unsigned __int128>(m);
          return m == 0 ? std::uint64_t{0} : static_cast<std::uint64_t>((w - 1) * w * (2 * w - 1) / 6);
        };
        v.moments[0] += gz * gz * length;
        v.moments[1] += gy * gy * length;
        v.moments[2] += squares(x1) - squares(x0);
        v.moments[3] += gz * gy * length;
        v.moments[4] += gz * sum_x;
        v.moments[5] += gy * sum_x;
        const auto faces = 2 * static_cast<std::int64_t>(length);
        v.faces[0] += faces;
        v.faces[1] += faces;
        v.faces[2] += 2;  // a run's two ends (a run ends where the brick does: the next brick's pair takes it off)
      }
      if (y + 1 < ny) pairs_between(z, y, z, y + 1, 1);
      if (z + 1 < nz) pairs_between(z, y, z + 1, y, 0);
    }
}

namespace {

template <class T>
void fold_values(const T* source, const std::vector<std::uint32_t>& label_of_run,
                 const std::vector<std::uint32_t>& row_start, const io::Index3& shape, const io::Extent& extent,
                 const auto& runs, double scale, double offset, ObjectValues* values, std::size_t stride,
                 std::uint32_t objects) {
  std::vector<bool> seen(objects);
  const std::int64_t rows = shape[0] * shape[1], width = shape[2];
  for (std::int64_t r = 0; r < rows; ++r) {
    const auto gz = static_cast<double>(extent.offset[0] + r / shape[1]),
               gy = static_cast<double>(extent.offset[1] + r % shape[1]);
    for (std::uint32_t i = row_start[static_cast<std::size_t>(r)]; i < row_start[static_cast<std::size_t>(r + 1)];
         ++i) {
      const std::uint32_t object = label_of_run[i] - 1;
      ObjectValues& v = values[object * stride];
      const T* p = source + r * width;
      double run_sum = 0, run_x = 0;  // the run's values, and each times its x
      for (std::int32_t x = runs[i].begin; x < runs[i].end; ++x) {
        const double value = static_cast<double>(p[x]) * scale + offset;
        if (!seen[object]) {
          v.min = v.max = value;
          seen[object] = true;
        }
        v.min = std::min(v.min, value);
        v.max = std::max(v.max, value);
        run_sum += value;
        run_x += value * static_cast<double>(extent.offset[2] + x);
      }
      v.sum += run_sum;
      v.weighted[0] += gz * run_sum;
      v.weighted[1] += gy * run_sum;
      v.weighted[2] += run_x;
    }
  }
}

}  // namespace

void BrickLabeler::measure_values(const void* source, io::DType dtype, double scale, double offset,
                                  const io::Extent& extent, ObjectValues* values, std::size_t stride) const {
  io::visit_dtype(dtype, [&]<class T>(std::type_identity<T>) {
    fold_values(static_cast<const T*>(source), labels_, row_start_, shape_, extent, runs_, scale, offset, values,
                stride, objects_);
  });
}

std::vector<std::uint32_t> BrickLabeler::face(int axis, bool high) const {
  const std::int64_t depth = shape_[0], height = shape_[1], width = shape_[2];
  const std::int64_t across[3][2] = {{height, width}, {depth, width}, {depth, height}};
  std::vector<std::uint32_t> plane(static_cast<std::size_t>(across[axis][0] * across[axis][1]), 0);
  auto runs_of = [&](std::int64_t z, std::int64_t y) {
    return std::pair{row_start_[static_cast<std::size_t>(z * height + y)],
                     row_start_[static_cast<std::size_t>(z * height + y + 1)]};
  };
  auto fill = [&](std::int64_t z, std::int64_t y, std::uint32_t* out) {
    auto [begin, end] = runs_of(z, y);
    for (std::uint32_t i = begin; i < end; ++i) std::fill(out + runs_[i].begin, out + runs_[i].end, labels_[i]);
  };
  if (axis == 0) {
    const std::int64_t z = high ? depth - 1 : 0;
    for (std::int64_t y = 0; y < height; ++y) fill(z, y, plane.data() + y * width);
  } else if (axis == 1) {
    const std::int64_t y = high ? height - 1 : 0;
    for (std::int64_t z = 0; z < depth; ++z) fill(z, y, plane.data() + z * width);
  } else {
    for (std::int64_t z = 0; z < depth; ++z)
      for (std::int64_t y = 0; y < height; ++y) {
        auto [begin, end] = runs_of(z, y);
        if (begin == end) continue;
        if (!high && runs_[begin].begin == 0) plane[static_cast<std::size_t>(z * height + y)] = labels_[begin];
        if (high && runs_[end - 1].end == width) plane[static_cast<std::size_t>(z * height + y)] = labels_[end - 1];
      }
  }
  return plane;
}

namespace {

// Writes n copies of value at p, and at least 16 (past the n: the caller
// writes over them next). A random mask's runs and gaps are a few voxels:
// one fixed store each, where std::fill's length loop mispredicts.
constexpr std::int64_t kSpill = 16;
template <int Spill, class T>
inline void fill_over(T* p, std::int64_t n, T value) {
  for (int k = 0; k < Spill; ++k) p[k] = value;
  if (n > Spill) std::fill(p + Spill, p + n, value);
}

// Each voxel written once, row by row, gap and run in turn. A row may spill
// up to kSpill voxels into the rows after it, which are written later; the
// rows near the end of the brick are written exactly.
template <class T, class R, class L>
void paint_runs(const io::Index3& shape, const std::uint32_t* row_start, const R* runs, const L* labels,
                std::span<const std::uint64_t> ids, T* out) {
  const std::int64_t rows = shape[0] * shape[1], width = shape[2];
  const auto background = static_cast<T>(ids[0]);
  for (std::int64_t r = 0; r < rows; ++r) {
    T* row = out + r * width;
    const std::uint32_t begin = row_start[r], end = row_start[r + 1];
    if ((r + 1) * width + kSpill > rows * width) {
      std::fill(row, row + width, background);
      for (std::uint32_t i = begin; i < end; ++i)
        std::fill(row + runs[i].begin, row + runs[i].end, static_cast<T>(ids[labels[i]]));
      continue;
    }
    std::int32_t x = 0;
    for (std::uint32_t i = begin; i < end; ++i) {
      const std::int32_t run_begin = runs[i].begin, run_end = runs[i].end;
      fill_over<kSpill>(row + x, run_begin - x, background);
      fill_over<kSpill / 2>(row + run_begin, run_end - run_begin, static_cast<T>(ids[labels[i]]));
      x = run_end;
    }
    fill_over<kSpill>(row + x, width - x, background);
  }
}

}  // namespace

template <class T>
void BrickLabeler::View::paint(std::span<const std::uint64_t> ids, T* out) const {
  auto with_labels = [&](const auto* run_data) {
    if (labels16.empty())
      paint_runs(shape, row_start.data(), run_data, labels.data(), ids, out);
    else
      paint_runs(shape, row_start.data(), run_data, labels16.data(), ids, out);
  };
  if (runs16.empty())
    with_labels(runs.data());
  else
    with_labels(runs16.data());
}

template void BrickLabeler::View::paint(std::span<const std::uint64_t>, std::uint8_t*) const;
template void BrickLabeler::View::paint(std::span<const std::uint64_t>, std::uint16_t*) const;
template void BrickLabeler::View::paint(std::span<const std::uint64_t>, std::uint32_t*) const;
template void BrickLabeler::View::paint(std::span<const std::uint64_t>, std::uint64_t*) const;

}  // namespace volseg::segment
