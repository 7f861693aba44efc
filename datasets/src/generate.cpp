// SPDX-License-Identifier: MIT
#include "volseg/datasets/generate.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <numbers>
#include <optional>
#include <string>
#include <vector>

#include "volseg/io/dtype_dispatch.hpp"
#include "volseg/io/error.hpp"
#include "volseg/segment/progress.hpp"

namespace volseg::datasets {
namespace {

// floor(sqrt(n)) for n >= 0, exact for 64-bit integers.
std::int64_t isqrt(std::int64_t n) {
  if (n <= 0) return 0;
  auto r = static_cast<std::int64_t>(std::sqrt(static_cast<double>(n)));
  while (r * r > n) --r;
  while ((r + 1) * (r + 1) <= n) ++r;
  return r;
}

std::uint64_t splitmix64(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

// Distances are kept in doubled coordinates, d = 2*i - (n-1), so the centre
// of an even-sized axis (a half-integer) stays an integer.
std::int64_t doubled(std::int64_t i, std::int64_t n) { return 2 * i - (n - 1); }

template <class T>
T to_type(double value) {
  if constexpr (std::is_floating_point_v<T>) {
    return static_cast<T>(value);
  } else {
    double rounded = std::round(value);
    if (rounded >= std::ldexp(1.0, std::numeric_limits<T>::digits)) return std::numeric_limits<T>::max();
    if (rounded <= static_cast<double>(std::numeric_limits<T>::lowest())) return std::numeric_limits<T>::lowest();
    return static_cast<T>(rounded);
  }
}

// Scale of the [0, 1] fields for integer types.
template <class T>
double unit_scale() {
  if constexpr (std::is_floating_point_v<T>)
    return 1.0;
  else
    return std::min(static_cast<double>(std::numeric_limits<T>::max()), 65535.0);
}

// ---- spheres ----

std::int64_t squared_distance(const Ball& a, const Ball& b) {
  const std::int64_t dz = a.z - b.z, dy = a.y - b.y, dx = a.x - b.x;
  return dz * dz + dy * dy + dx * dx;
}

// a >= 2 sqrt(d2) for integers a, d2 >= 0, without squaring a (which could
// overflow): with q = floor(sqrt(d2)), 2q+2 > 2 sqrt(d2) >= 2q.
bool at_least_twice_root(std::int64_t a, std::int64_t d2) {
  const std::int64_t q = isqrt(d2);
  if (a >= 2 * q + 2) return true;
  if (a <= 2 * q) return a == 2 * q && q * q == d2;
  return (2 * q + 1) * (2 * q + 1) >= 4 * d2;
}

// The rules between two balls of one group (generate.hpp): at least
// 0.75 (r1+r2) apart, neither centre inside the other ball, and the plane
// where the spheres cross at least one voxel beyond the smaller ball's
// centre: x = (d^2 - (R^2 - r^2)) / 2d >= 1. Balls that do not overlap
// (d >= r1+r2) meet all three, and are not squared further.
bool fit_in_group(const Ball& a, const Ball& b) {
  const std::int64_t d2 = squared_distance(a, b), sum = a.radius + b.radius;
  if (d2 >= sum * sum) return true;
  const std::int64_t big = std::max(a.radius, b.radius), small = std::min(a.radius, b.radius);
  if (16 * d2 < 9 * sum * sum || d2 <= big * big) return false;
  const std::int64_t beyond = d2 - (big * big - small * small);
  return beyond >= 0 && at_least_twice_root(beyond, d2);
}

// Balls of different groups: at least r1+r2+2 apart, so that any voxel of
// one is more than sqrt(3) from any voxel of the other.
bool apart(const Ball& a, const Ball& b) {
  const std::int64_t gap = a.radius + b.radius + 2;
  return squared_distance(a, b) >= gap * gap;
}

// Whether some voxel lies in both balls: row by row over the rows both
// reach, do their runs of x meet.
bool share_a_voxel(const Ball& a, const Ball& b) {
  const std::int64_t z0 = std::max(a.z - a.radius, b.z - b.radius), z1 = std::min(a.z + a.radius, b.z + b.radius);
  const std::int64_t y0 = std::max(a.y - a.radius, b.y - b.radius), y1 = std::min(a.y + a.radius, b.y + b.radius);
  for (std::int64_t z = z0; z <= z1; ++z) {
    for (std::int64_t y = y0; y <= y1; ++y) {
      const std::int64_t ra = a.radius * a.radius - (z - a.z) * (z - a.z) - (y - a.y) * (y - a.y);
      const std::int64_t rb = b.radius * b.radius - (z - b.z) * (z - b.z) - (y - b.y) * (y - b.y);
      if (ra < 0 || rb < 0) continue;
      const std::int64_t ha = isqrt(ra), hb = isqrt(rb);
      if (std::max(a.x - ha, b.x - hb) <= std::min(a.x + ha, b.x + hb)) return true;
    }
  }
  return false;
}

// The placed balls of finished groups, binned in cubes at least as wide as
// the farthest two balls of different groups can be and still break apart().
class BallGrid {
 public:
  BallGrid(const io::Index3& dims, std::int64_t radius_max, std::int64_t count) {
    // Cells as wide as the reach, or wider where that would make more cells
    // than balls (at most 2^22 of them).
    const double volume = static_cast<double>(dims[0]) * static_cast<double>(dims[1]) * static_cast<double>(dims[2]);
    const double per_cell = volume / static_cast<double>(std::min<std::int64_t>(count, std::int64_t{1} << 22));
    side_ = std::max<std::int64_t>(2 * radius_max + 2, static_cast<std::int64_t>(std::ceil(std::cbrt(per_cell))));
    for (int a = 0; a < 3; ++a) cells_[a] = (dims[a] + side_ - 1) / side_;
    head_.assign(static_cast<std::size_t>(cells_[0] * cells_[1] * cells_[2]), -1);
  }

  void add(const Ball& ball) {
    const auto cell = static_cast<std::size_t>(index(ball.z / side_, ball.y / side_, ball.x / side_));
    balls_.push_back(ball);
    next_.push_back(head_[cell]);
    head_[cell] = static_cast<std::int64_t>(balls_.size()) - 1;
  }

  // apart() from every ball held.
  bool apart_from_all(const Ball& ball) const {
    const std::int64_t cz = ball.z / side_, cy = ball.y / side_, cx = ball.x / side_;
    for (std::int64_t z = std::max<std::int64_t>(cz - 1, 0); z <= std::min(cz + 1, cells_[0] - 1); ++z)
      for (std::int64_t y = std::max<std::int64_t>(cy - 1, 0); y <= std::min(cy + 1, cells_[1] - 1); ++y)
        for (std::int64_t x = std::max<std::int64_t>(cx - 1, 0); x <= std::min(cx + 1, cells_[2] - 1); ++x)
          for (std::int64_t i = head_[static_cast<std::size_t>(index(z, y, x))]; i >= 0;
               i = next_[static_cast<std::size_t>(i)])
            if (!apart(ball, balls_[static_cast<std::size_t>(i)])) return false;
    return true;
  }

  std::vector<Ball> take() { return std::move(balls_); }

 private:
  std::int64_t index(std::int64_t z, std::int64_t y, std::int64_t x) const {
    return (z * cells_[1] + y) * cells_[2] + x;
  }

  std::int64_t side_ = 1;
  std::array<std::int64_t, 3> cells_{};
  std::vector<std::int64_t> head_, next_;  // per cell its last ball; per ball the one before it in its cell
  std::vector<Ball> balls_;
};

// Draws of one try: splitmix64 of the seed, the ball, the group's start and
// the try, then one value per draw.
class Draws {
 public:
  Draws(std::uint64_t seed, std::int64_t ball, std::int64_t start, std::int64_t attempt)
      : key_(splitmix64(splitmix64(splitmix64(seed ^ 0x5370686572657321ULL) ^ static_cast<std::uint64_t>(ball)) ^
                        (static_cast<std::uint64_t>(start) << 32 | static_cast<std::uint64_t>(attempt)))) {}
  // Uniform in [lo, hi] (the modulo's bias is below 2^-38: ranges here are under 2^26).
  std::int64_t between(std::int64_t lo, std::int64_t hi) {
    return lo + static_cast<std::int64_t>(splitmix64(key_ + ++drawn_) % static_cast<std::uint64_t>(hi - lo + 1));
  }

 private:
  std::uint64_t key_;
  std::uint64_t drawn_ = 0;
};

constexpr std::int64_t tries_per_ball = 1000;
constexpr std::int64_t starts_per_group = 16;

std::string dims_text(const io::Index3& dims) {
  return std::to_string(dims[2]) + "x" + std::to_string(dims[1]) + "x" + std::to_string(dims[0]);
}

// "MIN-MAX", or "R" when both are R.
std::string range_text(const std::array<std::int64_t, 2>& radii) {
  std::string text = std::to_string(radii[0]);
  if (radii[1] != radii[0]) text.append("-").append(std::to_string(radii[1]));
  return text;
}

// One try at a ball of a group whose earlier balls are `group`: a
// candidate, or nothing when it breaks a rule.
std::optional<Ball> try_ball(Draws& draws, const io::Index3& dims, const std::array<std::int64_t, 2>& radii,
                             const std::vector<Ball>& group, const BallGrid& grid) {
  Ball ball;
  ball.radius = draws.between(radii[0], radii[1]);
  const std::int64_t r = ball.radius;
  const Ball* anchor = nullptr;
  if (group.empty()) {
    // Anywhere the ball is whole, one voxel clear of every face.
    ball.z = draws.between(r + 1, dims[0] - 2 - r);
    ball.y = draws.between(r + 1, dims[1] - 2 - r);
    ball.x = draws.between(r + 1, dims[2] - 2 - r);
  } else {
    // Within reach of an earlier ball of the group, to share a voxel with it.
    anchor = &group[static_cast<std::size_t>(draws.between(0, static_cast<std::int64_t>(group.size()) - 1))];
    const std::int64_t reach = r + anchor->radius;
    ball.z = anchor->z + draws.between(-reach, reach);
    ball.y = anchor->y + draws.between(-reach, reach);
    ball.x = anchor->x + draws.between(-reach, reach);
    for (int a = 0; a < 3; ++a) {
      const std::int64_t c = a == 0 ? ball.z : a == 1 ? ball.y : ball.x;
      if (c < r + 1 || c > dims[a] - 2 - r) return std::nullopt;
    }
  }
  for (const Ball& other : group)
    if (!fit_in_group(ball, other)) return std::nullopt;
  if (!grid.apart_from_all(ball)) return std::nullopt;
  if (anchor && !share_a_voxel(ball, *anchor)) return std::nullopt;
  return ball;
}

// One start of the group of `size` balls from index `first` on: how many of
// them found a place; when all did, they join the grid.
std::int64_t place_group(const FieldSpec& spec, const io::Index3& dims, const std::array<std::int64_t, 2>& radii,
                         std::int64_t first, std::int64_t size, std::int64_t start, BallGrid& grid) {
  std::vector<Ball> group;
  for (std::int64_t b = first; b < first + size; ++b) {
    std::optional<Ball> ball;
    for (std::int64_t attempt = 0; attempt < tries_per_ball && !ball; ++attempt) {
      Draws draws(spec.seed, b, start, attempt);
      ball = try_ball(draws, dims, radii, group, grid);
    }
    if (!ball) return static_cast<std::int64_t>(group.size());
    group.push_back(*ball);
  }
  for (const Ball& ball : group) grid.add(ball);
  return size;
}

// The balls ordered by their first plane, for fill: a piece needs only those
// from the start up to the first that begins below it.
std::vector<Ball> by_first_plane(std::vector<Ball> balls) {
  std::stable_sort(balls.begin(), balls.end(),
                   [](const Ball& a, const Ball& b) { return a.z - a.radius < b.z - b.radius; });
  return balls;
}

// The spheres field over extent: zeros, then each ball that meets the
// extent as runs of x, row by row over the rows of it inside the extent.
template <class T>
void fill_spheres(const std::vector<Ball>& sorted, const io::Extent& extent, T* out) {
  const auto [z0, y0, x0] = extent.offset;
  const auto [nz, ny, nx] = extent.count;
  std::fill(out, out + nz * ny * nx, T(0));
  for (const Ball& ball : sorted) {
    const std::int64_t r = ball.radius;
    if (ball.z - r >= z0 + nz) break;
    if (ball.z + r < z0 || ball.y + r < y0 || ball.y - r >= y0 + ny || ball.x + r < x0 || ball.x - r >= x0 + nx)
      continue;
    for (std::int64_t z = std::max(z0, ball.z - r); z <= std::min(z0 + nz - 1, ball.z + r); ++z) {
      const std::int64_t plane = r * r - (z - ball.z) * (z - ball.z);
      const std::int64_t reach = isqrt(plane);
      for (std::int64_t y = std::max(y0, ball.y - reach); y <= std::min(y0 + ny - 1, ball.y + reach); ++y) {
        const std::int64_t half = isqrt(plane - (y - ball.y) * (y - ball.y));
        const std::int64_t first = std::max(x0, ball.x - half), last = std::min(x0 + nx - 1, ball.x + half);
        if (first > last) continue;
        T* row = out + ((z - z0) * ny + (y - y0)) * nx;
        std::fill(row + (first - x0), row + (last - x0) + 1, T(1));
      }
    }
  }
}

template <class T>
void fill_typed(const FieldSpec& spec, const io::VolumeInfo& info, const io::Extent& extent, T* out) {
  const auto& dims = info.dims;
  std::int64_t i = 0;
  for (std::int64_t z = extent.offset[0]; z < extent.offset[0] + extent.count[0]; ++z) {
    for (std::int64_t y = extent.offset[1]; y < extent.offset[1] + extent.count[1]; ++y) {
      const std::int64_t x0 = extent.offset[2], x1 = x0 + extent.count[2];
      switch (spec.field) {
        case Field::shells: {
          const std::int64_t dz = doubled(z, dims[0]), dy = doubled(y, dims[1]);
          const std::int64_t plane = dz * dz + dy * dy;
          for (std::int64_t x = x0; x < x1; ++x, ++i) {
            const std::int64_t dx = doubled(x, dims[2]);
            out[i] = to_type<T>(static_cast<double>(isqrt(plane + dx * dx) / (2 * spec.shell_width)));
          }
          break;
        }
        case Field::smooth: {
          constexpr double two_pi = 2 * std::numbers::pi;
          const double fz = static_cast<double>(z) / static_cast<double>(dims[0]);
          const double fy = static_cast<double>(y) / static_cast<double>(dims[1]);
          const double slow = std::sin(two_pi * fz) * std::cos(two_pi * fy);
          const double mid = std::sin(two_pi * 3 * fy + 0.5);
          for (std::int64_t x = x0; x < x1; ++x, ++i) {
            const double fx = static_cast<double>(x) / static_cast<double>(dims[2]);
            const double value = 0.5 * slow * std::sin(two_pi * fx) + 0.3 * mid * std::cos(two_pi * 2 * fx) +
                                 0.2 * std::sin(two_pi * (7 * fx + 5 * fz + 3 * fy));
            out[i] = to_type<T>((0.5 + 0.5 * value) * unit_scale<T>());
          }
          break;
        }
        case Field::noise: {
          for (std::int64_t x = x0; x < x1; ++x, ++i) {
            const auto index = static_cast<std::uint64_t>((z * dims[1] + y) * dims[2] + x);
            const double u =
                static_cast<double>(splitmix64(index ^ (spec.seed * 0x632be59bd9b4e019ULL)) >> 11) * 0x1.0p-53;
            out[i] = to_type<T>(u * unit_scale<T>());
          }
          break;
        }
        case Field::spheres:
          throw Error("spheres are filled by fill_spheres");  // never: fill() hands them over
      }
    }
  }
}

}  // namespace

Field parse_field(const std::string& name) {
  if (name == "shells") return Field::shells;
  if (name == "smooth") return Field::smooth;
  if (name == "noise") return Field::noise;
  if (name == "spheres") return Field::spheres;
  throw Error("unknown field '" + name + "' (known: shells, smooth, noise, spheres)");
}

std::array<std::int64_t, 2> sphere_radii(const FieldSpec& spec, const io::Index3& dims) {
  const std::string count = std::to_string(spec.count);
  if (spec.count < 1) throw Error("--count " + count + ": the spheres field needs at least one ball");
  // Past 2^24 voxels an axis could overflow the squared distances.
  for (int a = 0; a < 3; ++a)
    if (dims[a] > (std::int64_t{1} << 24))
      throw Error("--dims " + dims_text(dims) + ": the spheres field takes axes of at most 2^24 voxels");
  if (spec.radius_min == 0 && spec.radius_max == 0) {
    // The largest R whose count balls would fill half the box where their
    // centres may lie (generate.hpp); both sides are monotonic in R.
    auto fits = [&](std::int64_t r) {
      double room = 0.5;
      for (int a = 0; a < 3; ++a) room *= static_cast<double>(std::max<std::int64_t>(dims[a] - 2 * r - 2, 0));
      const double ball = 4.0 / 3.0 * std::numbers::pi * static_cast<double>(r) * static_cast<double>(r * r);
      return static_cast<double>(spec.count) * ball <= room;
    };
    std::int64_t r = 0;
    while (fits(r + 1)) ++r;
    if (r < 1)
      throw Error("--count " + count + ": even balls of radius 1 would fill more than half of " + dims_text(dims) +
                  "; ask for fewer balls or larger --dims");
    return {(r + 1) / 2, r};
  }
  const std::string radius = "--radius " + std::to_string(spec.radius_min) + "," + std::to_string(spec.radius_max);
  if (spec.radius_min < 1 || spec.radius_max < 1) throw Error(radius + ": radii must be at least 1 voxel");
  if (spec.radius_min > spec.radius_max) throw Error(radius + ": MIN is larger than MAX");
  const std::int64_t needed = 2 * spec.radius_max + 3;
  if (std::min({dims[0], dims[1], dims[2]}) < needed)
    throw Error(radius + ": a ball of radius " + std::to_string(spec.radius_max) + " does not fit in " +
                dims_text(dims) + " (it needs " + std::to_string(needed) +
                " voxels on every axis, one clear of each face)");
  return {spec.radius_min, spec.radius_max};
}

std::vector<Ball> place_spheres(const FieldSpec& spec, const io::Index3& dims) {
  const auto radii = sphere_radii(spec, dims);
  BallGrid grid(dims, radii[1], spec.count);
  // Groups of 1, 2, 3, 4, 1, 2, ... balls in id order; the last may be short.
  for (std::int64_t first = 0, group = 0; first < spec.count; ++group) {
    const std::int64_t size = std::min(group % 4 + 1, spec.count - first);
    std::int64_t most = 0;
    for (std::int64_t start = 0; start < starts_per_group && most < size; ++start)
      most = std::max(most, place_group(spec, dims, radii, first, size, start, grid));
    if (most < size)
      throw Error("--count " + std::to_string(spec.count) + ": only " + std::to_string(first + most) +
                  " balls of radius " + range_text(radii) + " fit in " + dims_text(dims) + " with seed " +
                  std::to_string(spec.seed) + "; ask for fewer balls, a smaller --radius or larger --dims");
    first += size;
  }
  return grid.take();
}

std::string spheres_csv(const std::vector<Ball>& balls) {
  std::string text = "id,z,y,x,radius\n";
  for (std::size_t i = 0; i < balls.size(); ++i) {
    const Ball& b = balls[i];
    text += std::to_string(i + 1) + "," + std::to_string(b.z) + "," + std::to_string(b.y) + "," + std::to_string(b.x) +
            "," + std::to_string(b.radius) + "\n";
  }
  return text;
}

namespace {

// fill, with the balls of a spheres field already placed and sorted
// (by_first_plane), so generate places them once for all its pieces.
void fill_with(const FieldSpec& spec, const std::vector<Ball>& sorted, const io::VolumeInfo& info,
               const io::Extent& extent, void* values) {
  if (spec.shell_width < 1) throw Error("shell width must be at least 1");
  io::visit_dtype(info.dtype, [&]<class T>(std::type_identity<T>) {
    if (spec.field == Field::spheres)
      fill_spheres(sorted, extent, static_cast<T*>(values));
    else
      fill_typed(spec, info, extent, static_cast<T*>(values));
  });
}

std::vector<Ball> sorted_balls(const FieldSpec& spec, const io::Index3& dims) {
  if (spec.field != Field::spheres) return {};
  return by_first_plane(spec.balls.empty() ? place_spheres(spec, dims) : spec.balls);
}

}  // namespace

void fill(const FieldSpec& spec, const io::VolumeInfo& info, const io::Extent& extent, void* values) {
  fill_with(spec, sorted_balls(spec, info.dims), info, extent, values);
}

void generate(const Comm& comm, const FieldSpec& spec, io::VolumeWriter& writer, segment::ProgressMode progress_mode) {
  const io::VolumeInfo& info = writer.info();
  const auto [nz, ny, nx] = info.dims;
  const std::size_t element = io::dtype_size(info.dtype);
  // This rank's planes, then pieces of whole planes (or of rows, when one
  // plane is larger than the piece).
  const std::int64_t z0 = nz * comm.rank() / comm.size(), z1 = nz * (comm.rank() + 1) / comm.size();
  const std::int64_t piece_voxels = std::max<std::int64_t>(static_cast<std::int64_t>((16u << 20) / element), nx);
  const std::int64_t rows_per_piece = std::min(ny, std::max<std::int64_t>(piece_voxels / nx, 1));
  const std::int64_t planes_per_piece = rows_per_piece == ny ? std::max<std::int64_t>(piece_voxels / (nx * ny), 1) : 1;
  std::vector<io::Extent> pieces;
  for (std::int64_t z = z0; z < z1; z += planes_per_piece)
    for (std::int64_t y = 0; y < ny; y += rows_per_piece)
      pieces.push_back({{z, y, 0}, {std::min(planes_per_piece, z1 - z), std::min(rows_per_piece, ny - y), nx}});

  std::int64_t total = static_cast<std::int64_t>(pieces.size());
  check_mpi(MPI_Allreduce(MPI_IN_PLACE, &total, 1, MPI_INT64_T, MPI_SUM, comm.get()), "MPI_Allreduce");
  segment::Progress progress(comm, "generate", total, progress_mode);
  std::exception_ptr error;
  try {
    const std::vector<Ball> sorted = sorted_balls(spec, info.dims);
    std::vector<std::byte> buffer(static_cast<std::size_t>(planes_per_piece * rows_per_piece * nx) * element);
    for (const auto& piece : pieces) {
      fill_with(spec, sorted, info, piece, buffer.data());
      writer.write(piece, buffer.data());
      progress.advance(1, static_cast<std::uint64_t>(piece.voxels()) * element);
    }
  } catch (...) {
    error = std::current_exception();
  }
  progress.finish();
  agree(comm, error);
}

std::uint64_t shells_in_range(const io::Index3& dims, io::DType dtype, std::int64_t width, double lo, double hi) {
  // Shell indices k with lo <= clamp(k) <= hi. Stored values saturate at
  // the type's maximum, so a range reaching it takes every outer shell too.
  const double top = io::dtype_highest(dtype);
  if (hi < lo || hi < 0) return 0;
  auto k_lo = static_cast<std::int64_t>(std::max(0.0, std::ceil(lo)));
  if (static_cast<double>(k_lo) > top) return 0;
  const bool unbounded = std::floor(hi) >= top;
  const std::int64_t k_hi =
      unbounded ? std::numeric_limits<std::int64_t>::max() / 4 : static_cast<std::int64_t>(std::floor(hi));
  if (k_hi < k_lo) return 0;
  // k = floor(isqrt(d2) / 2w) is in [k_lo, k_hi]  <=>  (2w k_lo)^2 <= d2 < (2w (k_hi+1))^2.
  const std::int64_t step = 2 * width;
  const std::int64_t inner = step * k_lo;
  const std::int64_t d2_min = inner * inner;
  // Past the corner distance nothing is left; cap to avoid overflow.
  const std::int64_t corner = dims[0] * dims[0] + dims[1] * dims[1] + dims[2] * dims[2];
  const std::int64_t d2_end = unbounded || step * (k_hi + 1) > 2 * isqrt(corner) + 2
                                  ? 4 * corner + 1
                                  : (step * (k_hi + 1)) * (step * (k_hi + 1));
  const std::int64_t nx = dims[2], parity = (nx - 1) % 2, largest = nx - 1;
  // How many t in [a, b] with t = parity (mod 2).
  auto with_parity = [&](std::int64_t a, std::int64_t b) -> std::int64_t {
    if (a > b) return 0;
    std::int64_t first = a + ((a - parity) % 2 + 2) % 2;
    return first > b ? 0 : (b - first) / 2 + 1;
  };
  std::uint64_t count = 0;
  for (std::int64_t z = 0; z < dims[0]; ++z) {
    for (std::int64_t y = 0; y < dims[1]; ++y) {
      const std::int64_t dz = doubled(z, dims[0]), dy = doubled(y, dims[1]);
      const std::int64_t plane = dz * dz + dy * dy;
      // |dx| in [a, b]: dx^2 >= d2_min - plane and dx^2 < d2_end - plane.
      const std::int64_t low = d2_min - plane, high = d2_end - plane;
      if (high <= 0) continue;
      std::int64_t a = low <= 0 ? 0 : isqrt(low - 1) + 1;  // smallest a with a^2 >= low
      std::int64_t b = isqrt(high - 1);                    // largest b with b^2 < high
      b = std::min(b, largest);
      if (a > b) continue;
      // Each t > 0 stands for dx = +t and -t; t = 0 for one voxel.
      std::int64_t n = 2 * with_parity(std::max<std::int64_t>(a, 1), b);
      if (a == 0 && parity == 0) n += 1;
      count += static_cast<std::uint64_t>(n);
    }
  }
  return count;
}

}  // namespace volseg::datasets
