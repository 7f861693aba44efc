// SPDX-License-Identifier: MIT
#include "gray_scott.hpp"

#include <algorithm>
#include <string>

#include "volseg/io/comm.hpp"
#include "volseg/io/error.hpp"

namespace volseg::sim {
namespace {

// The part of n points that part p of parts owns: the first n % parts get one more.
std::pair<std::int64_t, std::int64_t> split(std::int64_t n, int parts, int p) {
  const std::int64_t base = n / parts, extra = n % parts;
  const std::int64_t offset = p * base + std::min<std::int64_t>(p, extra);
  return {offset, base + (p < extra ? 1 : 0)};
}

}  // namespace

GrayScott::GrayScott(MPI_Comm comm, const io::Index3& dims, int ghost, const Parameters& parameters, bool periodic)
    : dims_(dims), ghost_(ghost), p_(parameters), periodic_(periodic) {
  if (ghost < 1) throw Error("volseg-sim: --ghost must be at least 1 (the stencil needs one layer)");
  int size = 1;
  check_mpi(MPI_Comm_size(comm, &size), "MPI_Comm_size");
  int grid[3] = {0, 0, 0}, periods[3] = {periodic, periodic, periodic};
  check_mpi(MPI_Dims_create(size, 3, grid), "MPI_Dims_create");
  check_mpi(MPI_Cart_create(comm, 3, grid, periods, 0, &cart_), "MPI_Cart_create");
  int rank = 0, coords[3];
  check_mpi(MPI_Comm_rank(cart_, &rank), "MPI_Comm_rank");
  check_mpi(MPI_Cart_coords(cart_, rank, 3, coords), "MPI_Cart_coords");
  for (int a = 0; a < 3; ++a) {
    if (dims[a] < grid[a] * ghost)
      throw Error("volseg-sim: " + std::to_string(dims[a]) + " points along axis " + std::to_string(a) +
                  " are too few for " + std::to_string(grid[a]) + " blocks of at least " + std::to_string(ghost) +
                  " points");
    auto [offset, count] = split(dims[a], grid[a], coords[a]);
    box_.offset[a] = offset;
    box_.count[a] = count;
    check_mpi(MPI_Cart_shift(cart_, a, 1, &lower_[a], &upper_[a]), "MPI_Cart_shift");
    const std::int64_t below = offset > 0 || periodic ? ghost : 0,
                       above = offset + count < dims[a] || periodic ? ghost : 0;
    stored_.offset[a] = offset - below;
    stored_.count[a] = count + below + above;
  }
  // Halo types over the whole stored extent: axis a's slabs of `ghost`
  // layers, spanning every other axis (ghosts included).
  int sizes[3], sub[3], start[3];
  for (int a = 0; a < 3; ++a) sizes[a] = static_cast<int>(stored_.count[a]);
  for (int a = 0; a < 3; ++a) {
    const int below = static_cast<int>(box_.offset[a] - stored_.offset[a]);
    const int owned = static_cast<int>(box_.count[a]);
    auto make = [&](int first, MPI_Datatype& type) {
      for (int b = 0; b < 3; ++b) sub[b] = sizes[b], start[b] = 0;
      sub[a] = ghost;
      start[a] = first;
      if (first < 0 || first + ghost > sizes[a]) {  // no neighbour there: an empty type
        check_mpi(MPI_Type_contiguous(0, MPI_DOUBLE, &type), "MPI_Type_contiguous");
      } else {
        check_mpi(MPI_Type_create_subarray(3, sizes, sub, start, MPI_ORDER_C, MPI_DOUBLE, &type),
                  "MPI_Type_create_subarray");
      }
      check_mpi(MPI_Type_commit(&type), "MPI_Type_commit");
    };
    make(below, send_[2 * a]);                      // my first owned layers, to the lower neighbour
    make(below + owned - ghost, send_[2 * a + 1]);  // my last owned layers, to the upper one
    make(below - ghost, receive_[2 * a]);           // the lower neighbour's, into my lower ghosts
    make(below + owned, receive_[2 * a + 1]);       // the upper neighbour's, into my upper ghosts
  }
  const auto n = static_cast<std::size_t>(stored_.voxels());
  u_.assign(n, 1.0);
  v_.assign(n, 0.0);
  // A seed cube in the middle of the grid (global coordinates, so every
  // decomposition starts alike); on the corner of a periodic one, across
  // every face (ghost layers beyond a face wrap to the far side).
  for (std::int64_t z = 0; z < stored_.count[0]; ++z)
    for (std::int64_t y = 0; y < stored_.count[1]; ++y)
      for (std::int64_t x = 0; x < stored_.count[2]; ++x) {
        const std::int64_t g[3] = {stored_.offset[0] + z, stored_.offset[1] + y, stored_.offset[2] + x};
        bool seed = true;
        for (int a = 0; a < 3; ++a) {
          const std::int64_t wrapped = (g[a] % dims[a] + dims[a]) % dims[a];
          const std::int64_t from_corner = std::min(wrapped, dims[a] - wrapped);
          // ADIOS2's seed: 6 points either side of the centre (of the corner)
          seed = seed && (periodic ? 2 * from_corner : std::abs(2 * g[a] - dims[a])) <= 12;
        }
        if (seed) {
          u_[static_cast<std::size_t>(index(z, y, x))] = 0.25;
          v_[static_cast<std::size_t>(index(z, y, x))] = 0.33;
        }
      }
  u_next_ = u_;
  v_next_ = v_;
}

io::Extent GrayScott::published() const {
  io::Extent e = stored_;
  for (int a = 0; a < 3; ++a) {
    const std::int64_t lo = std::max<std::int64_t>(e.offset[a], 0),
                       hi = std::min<std::int64_t>(e.offset[a] + e.count[a], dims_[a]);
    e.offset[a] = lo;
    e.count[a] = hi - lo;
  }
  return e;
}

void GrayScott::pack(const std::vector<double>& field, std::vector<double>& out) const {
  const io::Extent p = published();
  out.resize(static_cast<std::size_t>(p.voxels()));
  for (std::int64_t z = 0; z < p.count[0]; ++z)
    for (std::int64_t y = 0; y < p.count[1]; ++y)
      std::copy_n(field.data() + index(p.offset[0] - stored_.offset[0] + z, p.offset[1] - stored_.offset[1] + y,
                                       p.offset[2] - stored_.offset[2]),
                  p.count[2], out.data() + (z * p.count[1] + y) * p.count[2]);
}

GrayScott::~GrayScott() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (finalized) return;
  for (auto& type : send_) MPI_Type_free(&type);
  for (auto& type : receive_) MPI_Type_free(&type);
  if (cart_ != MPI_COMM_NULL) MPI_Comm_free(&cart_);
}

void GrayScott::exchange(std::vector<double>& field) {
  for (int a = 2; a >= 0; --a) {  // x, then y, then z: each carries the ghosts filled before it
    check_mpi(MPI_Sendrecv(field.data(), 1, send_[2 * a], lower_[a], a, field.data(), 1, receive_[2 * a + 1], upper_[a],
                           a, cart_, MPI_STATUS_IGNORE),
              "MPI_Sendrecv");
    check_mpi(MPI_Sendrecv(field.data(), 1, send_[2 * a + 1], upper_[a], 3 + a, field.data(), 1, receive_[2 * a],
                           lower_[a], 3 + a, cart_, MPI_STATUS_IGNORE),
              "MPI_Sendrecv");
  }
}

namespace {

// splitmix64 of (step, global point): uniform in [-1, 1).
inline double uniform(std::uint64_t step, std::uint64_t point) {
  std::uint64_t z = point * 0x9E3779B97F4A7C15ull + step * 0xD1B54A32D192ED03ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  z ^= z >> 31;
  return static_cast<double>(z >> 11) * 0x1.0p-52 - 1.0;
}

}  // namespace

void GrayScott::step() {
  ++steps_;
  const auto& s = stored_;
  const std::int64_t sy = s.count[2], sz = s.count[1] * s.count[2];
  const double Du = p_.Du / 6, Dv = p_.Dv / 6, F = p_.F, k = p_.k, dt = p_.dt, noise = p_.noise;
  const auto step = static_cast<std::uint64_t>(steps_);
  const std::int64_t z0 = box_.offset[0] - s.offset[0], y0 = box_.offset[1] - s.offset[1],
                     x0 = box_.offset[2] - s.offset[2];
  for (std::int64_t z = z0; z < z0 + box_.count[0]; ++z)
    for (std::int64_t y = y0; y < y0 + box_.count[1]; ++y) {
      // Zero flux at the grid's faces: a missing neighbour is the point itself.
      const std::int64_t row = index(z, y, 0);
      const std::int64_t zm = z > 0 ? -sz : 0, zp = z + 1 < s.count[0] ? sz : 0;
      const std::int64_t ym = y > 0 ? -sy : 0, yp = y + 1 < s.count[1] ? sy : 0;
      const double* u = u_.data() + row;
      const double* v = v_.data() + row;
      double* un = u_next_.data() + row;
      double* vn = v_next_.data() + row;
      const auto global_row =
          static_cast<std::uint64_t>(((s.offset[0] + z) * dims_[1] + (s.offset[1] + y)) * dims_[2] + s.offset[2]);
      auto point = [&](std::int64_t x, std::int64_t xm, std::int64_t xp) {
        const double uc = u[x], vc = v[x];
        const double lu = u[x + xm] + u[x + xp] + u[x + ym] + u[x + yp] + u[x + zm] + u[x + zp] - 6 * uc;
        const double lv = v[x + xm] + v[x + xp] + v[x + ym] + v[x + yp] + v[x + zm] + v[x + zp] - 6 * vc;
        const double uvv = uc * vc * vc;
        un[x] = uc +
                dt * (Du * lu - uvv + F * (1 - uc) + noise * uniform(step, global_row + static_cast<std::uint64_t>(x)));
        vn[x] = vc + dt * (Dv * lv + uvv - (F + k) * vc);
      };
      const std::int64_t x1 = x0 + box_.count[2];
      std::int64_t first = x0, last = x1;
      if (first == 0) point(first++, 0, s.count[2] > 1 ? 1 : 0);
      if (last == s.count[2] && last > first) point(--last, -1, 0);
#pragma omp simd
      for (std::int64_t x = first; x < last; ++x) point(x, -1, 1);
    }
  std::swap(u_, u_next_);
  std::swap(v_, v_next_);
  // Ghosts current after every step: the stencil's next step and what is
  // published both read them.
  exchange(u_);
  exchange(v_);
}

}  // namespace volseg::sim
