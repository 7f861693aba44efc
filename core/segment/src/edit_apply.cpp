// SPDX-License-Identifier: MIT
#include "edit_apply.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include "distance_kernel.hpp"
#include "split_flood.hpp"
#include "volseg/io/error.hpp"

namespace volseg::segment::detail {
namespace {

// Every voxel of `extent` in the ball of `edit` set to `value`: the voxels
// whose squared distance to the centre is at most radius^2, clipped to the
// extent (the volume clips by the extents that tile it).
void fill_ball(const Edit& edit, const io::Extent& extent, std::uint64_t* labels, std::uint64_t value) {
  const double r2 = edit.radius * edit.radius;
  const auto reach = static_cast<std::int64_t>(std::floor(edit.radius));
  const auto& o = extent.offset;
  const auto& n = extent.count;
  const auto& c = edit.center;
  for (std::int64_t z = std::max(c[0] - reach, o[0]); z <= std::min(c[0] + reach, o[0] + n[0] - 1); ++z)
    for (std::int64_t y = std::max(c[1] - reach, o[1]); y <= std::min(c[1] + reach, o[1] + n[1] - 1); ++y) {
      const double left = r2 - static_cast<double>((z - c[0]) * (z - c[0]) + (y - c[1]) * (y - c[1]));
      if (left < 0) continue;
      auto dx = static_cast<std::int64_t>(std::floor(std::sqrt(left)));
      while (static_cast<double>((dx + 1) * (dx + 1)) <= left) ++dx;
      while (dx > 0 && static_cast<double>(dx * dx) > left) --dx;
      const std::int64_t from = std::max(c[2] - dx, o[2]), to = std::min(c[2] + dx, o[2] + n[2] - 1);
      if (from > to) continue;
      std::uint64_t* row = labels + ((z - o[0]) * n[1] + (y - o[1])) * n[2];
      std::fill(row + (from - o[2]), row + (to - o[2]) + 1, value);
    }
}

// Every voxel whose id is one of `from` (sorted) set to `to`; a run of one
// id is looked up once.
void replace(std::uint64_t* labels, std::int64_t voxels, const std::vector<std::uint64_t>& from, std::uint64_t to) {
  std::uint64_t last = 0;
  bool hit = false;
  for (std::int64_t i = 0; i < voxels; ++i) {
    if (labels[i] != last) {
      last = labels[i];
      hit = std::binary_search(from.begin(), from.end(), last);
    }
    if (hit) labels[i] = to;
  }
}

// The split's new ids over the part of `extent` its box covers.
void paint_split(const SplitParts& parts, const io::Extent& extent, std::uint64_t* labels) {
  io::Index3 lo{}, hi{};
  for (int a = 0; a < 3; ++a) {
    lo[a] = std::max(extent.offset[a], parts.box.offset[a]);
    hi[a] = std::min(extent.offset[a] + extent.count[a], parts.box.offset[a] + parts.box.count[a]);
    if (lo[a] >= hi[a]) return;
  }
  const auto& e = extent;
  const auto& b = parts.box;
  for (std::int64_t z = lo[0]; z < hi[0]; ++z)
    for (std::int64_t y = lo[1]; y < hi[1]; ++y) {
      const std::uint64_t* from = parts.ids.data() + ((z - b.offset[0]) * b.count[1] + (y - b.offset[1])) * b.count[2];
      std::uint64_t* to = labels + ((z - e.offset[0]) * e.count[1] + (y - e.offset[1])) * e.count[2];
      for (std::int64_t x = lo[2]; x < hi[2]; ++x)
        if (const std::uint64_t id = from[x - b.offset[2]]) to[x - e.offset[2]] = id;
    }
}

}  // namespace

void EditChain::apply(const io::Extent& extent, std::uint64_t* labels, std::size_t upto) const {
  const std::int64_t voxels = extent.voxels();
  for (std::size_t k = 0; k < upto && k < edits_.size(); ++k) {
    const Edit& edit = edits_[k];
    switch (edit.op) {
      case Edit::Op::merge: {
        std::vector<std::uint64_t> from = edit.ids;
        std::sort(from.begin(), from.end());
        const std::uint64_t to = from.front();
        from.erase(std::remove(from.begin(), from.end(), to), from.end());
        replace(labels, voxels, from, to);
        break;
      }
      case Edit::Op::del: {
        std::vector<std::uint64_t> from = edit.ids;
        std::sort(from.begin(), from.end());
        replace(labels, voxels, from, 0);
        break;
      }
      case Edit::Op::split:
        paint_split(splits_[k], extent, labels);
        break;
      case Edit::Op::paint:
        fill_ball(edit, extent, labels, edit.id);
        break;
      case Edit::Op::erase:
        fill_ball(edit, extent, labels, 0);
        break;
    }
  }
}

SplitParts split_object(const io::Extent& box, const std::vector<std::uint64_t>& labels, const Edit& edit,
                        const std::array<double, 3>& spacing, int connectivity, std::uint64_t next_id,
                        const std::string& where) {
  const auto [nz, ny, nx] = box.count;
  const auto n = static_cast<std::size_t>(box.voxels());
  std::vector<std::uint8_t> object(n);
  std::size_t first = n;
  for (std::size_t i = 0; i < n; ++i) {
    object[i] = labels[i] == edit.id;
    if (object[i] && first == n) first = i;
  }
  if (first == n) throw Error(where + ": 'id' " + std::to_string(edit.id) + " is no object at this point");
  // The object's distance, outside it background (the volume's outside too).
  ComponentBox component;
  component.shape = {nz + 2, ny + 2, nx + 2};
  const auto padded = static_cast<std::size_t>(component.shape[0] * component.shape[1] * component.shape[2]);
  component.height.assign(padded, 0);
  component.inside.assign(padded, 0);
  {
    std::vector<std::uint16_t> kz(n);
    column_offsets(object.data(), box.count, /*black_border=*/true, kz.data());
    std::vector<float> plane(static_cast<std::size_t>(ny * nx));
    PlaneDistance distance(ny, nx, spacing, /*black_border=*/true);
    for (std::int64_t z = 0; z < nz; ++z) {
      distance.run(kz.data() + z * ny * nx, plane.data());
      for (std::int64_t y = 0; y < ny; ++y)
        for (std::int64_t x = 0; x < nx; ++x) {
          const std::size_t at = component.index(z, y, x), i = static_cast<std::size_t>((z * ny + y) * nx + x);
          component.height[at] = plane[static_cast<std::size_t>(y * nx + x)];
          component.inside[at] = object[i];
        }
    }
  }
  std::vector<std::uint32_t> regions;
  std::uint32_t count = 0;
  if (edit.h) {
    count = h_maxima(component, *edit.h, regions);
  } else {
    regions.assign(padded, 0);
    for (const auto& seed : edit.seeds) {
      bool in = true;
      for (int a = 0; a < 3; ++a) in = in && seed[a] >= box.offset[a] && seed[a] < box.offset[a] + box.count[a];
      const std::size_t at =
          in ? component.index(seed[0] - box.offset[0], seed[1] - box.offset[1], seed[2] - box.offset[2]) : 0;
      if (!in || !component.inside[at])
        throw Error(where + ": 'seeds' [" + std::to_string(seed[0]) + ", " + std::to_string(seed[1]) + ", " +
                    std::to_string(seed[2]) + "] is not a voxel of object " + std::to_string(edit.id));
      if (regions[at] == 0) regions[at] = ++count;
    }
  }
  flood(component, regions, connectivity);
  // A piece of the object that no marker reached: a part of its own.
  const auto steps = neighbour_steps(component.shape, connectivity);
  std::vector<std::size_t> stack;
  for (std::size_t i = 0; i < padded; ++i) {
    if (!component.inside[i] || regions[i] != 0) continue;
    regions[i] = ++count;
    stack.push_back(i);
    while (!stack.empty()) {
      const std::size_t v = stack.back();
      stack.pop_back();
      for (const std::int64_t step : steps) {
        const auto u = static_cast<std::size_t>(static_cast<std::int64_t>(v) + step);
        if (component.inside[u] && regions[u] == 0) regions[u] = count, stack.push_back(u);
      }
    }
  }
  // The parts in file order of their first voxels (the padded box's raster
  // order is the volume's within it).
  constexpr std::size_t kNone = std::numeric_limits<std::size_t>::max();
  std::vector<std::size_t> first_of(count + 1, kNone);
  for (std::size_t i = 0; i < padded; ++i)
    if (component.inside[i] && first_of[regions[i]] == kNone) first_of[regions[i]] = i;
  std::vector<std::uint32_t> order;
  for (std::uint32_t r = 1; r <= count; ++r) order.push_back(r);
  std::sort(order.begin(), order.end(), [&](std::uint32_t a, std::uint32_t b) { return first_of[a] < first_of[b]; });
  const std::int64_t fz = static_cast<std::int64_t>(first) / (ny * nx), fy = static_cast<std::int64_t>(first) / nx % ny,
                     fx = static_cast<std::int64_t>(first) % nx;
  const std::uint32_t keep = regions[component.index(fz, fy, fx)];
  std::vector<std::uint64_t> id_of(count + 1, 0);
  SplitParts parts;
  parts.box = box;
  for (const std::uint32_t r : order) {
    id_of[r] = r == keep ? edit.id : next_id++;
    if (r != keep) parts.given.push_back(id_of[r]);
  }
  parts.ids.assign(n, 0);
  for (std::int64_t z = 0; z < nz; ++z)
    for (std::int64_t y = 0; y < ny; ++y)
      for (std::int64_t x = 0; x < nx; ++x) {
        const std::size_t i = static_cast<std::size_t>((z * ny + y) * nx + x);
        if (object[i]) parts.ids[i] = id_of[regions[component.index(z, y, x)]];
      }
  return parts;
}

}  // namespace volseg::segment::detail
