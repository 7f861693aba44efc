// SPDX-License-Identifier: MIT
#include "volseg/datasets/generate.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numbers>
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
      }
    }
  }
}

}  // namespace

Field parse_field(const std::string& name) {
  if (name == "shells") return Field::shells;
  if (name == "smooth") return Field::smooth;
  if (name == "noise") return Field::noise;
  throw Error("unknown field '" + name + "' (known: shells, smooth, noise)");
}

void fill(const FieldSpec& spec, const io::VolumeInfo& info, const io::Extent& extent, void* values) {
  if (spec.shell_width < 1) throw Error("shell width must be at least 1");
  io::visit_dtype(info.dtype,
                  [&]<class T>(std::type_identity<T>) { fill_typed(spec, info, extent, static_cast<T*>(values)); });
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
    std::vector<std::byte> buffer(static_cast<std::size_t>(planes_per_piece * rows_per_piece * nx) * element);
    for (const auto& piece : pieces) {
      fill(spec, info, piece, buffer.data());
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
