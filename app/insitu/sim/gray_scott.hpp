// SPDX-License-Identifier: MIT
// volseg-sim's model: Gray-Scott reaction-diffusion in 3D, as the ADIOS2
// tutorial simulation that in-situ and I/O tools use as their reference
// (ornladios/ADIOS2-Examples, gray-scott): double precision,
//   du/dt = Du lap(u) - u v^2 + F (1 - u) + noise * uniform(-1, 1)
//   dv/dt = Dv lap(v) + u v^2 - (F + k) v
// explicit Euler on a 7-point Laplacian divided by 6, its default parameters,
// zero-flux faces, or a periodic domain (every axis wraps around; the seed
// cube then sits on the grid's corner, across every face). The noise comes from a counter-based generator of (step,
// global point), so a run gives the same field on any number of ranks. The grid is split into blocks over a
// Cartesian communicator; each block keeps `ghost` layers towards its
// neighbours (beyond the grid's faces only when periodic: the far side's),
// refreshed every step x, then y, then z over the whole extent, so edges and
// corners are right too.
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include <mpi.h>

#include "volseg/io/types.hpp"

namespace volseg::sim {

struct Parameters {
  double Du = 0.2, Dv = 0.1, F = 0.01, k = 0.05, dt = 2.0, noise = 1e-7;
};

class GrayScott {
 public:
  // Collective over comm (duplicated into a Cartesian communicator).
  GrayScott(MPI_Comm comm, const io::Index3& dims, int ghost, const Parameters& parameters, bool periodic = false);
  ~GrayScott();
  GrayScott(const GrayScott&) = delete;
  GrayScott& operator=(const GrayScott&) = delete;

  void step();  // collective: halo exchange, then one Euler step

  const io::Index3& dims() const { return dims_; }
  const io::Extent& box() const { return box_; }        // points this rank owns
  const io::Extent& stored() const { return stored_; }  // box with its ghost layers
  int ghost() const { return ghost_; }
  bool periodic() const { return periodic_; }
  // The box with its ghost layers inside the grid: what a block is
  // published with (the hook's convention), stored() itself unless periodic.
  io::Extent published() const;
  // field (u or v, over stored()) over published(), packed x fastest.
  void pack(const std::vector<double>& field, std::vector<double>& out) const;
  // v over `stored` (x fastest), ghost layers current: what is published.
  const std::vector<double>& v() const { return v_; }
  // u over `stored`, the same way: published beside v for --expr and --where.
  const std::vector<double>& u() const { return u_; }
  MPI_Comm comm() const { return cart_; }

 private:
  void exchange(std::vector<double>& field);
  std::int64_t index(std::int64_t z, std::int64_t y, std::int64_t x) const {
    return (z * stored_.count[1] + y) * stored_.count[2] + x;
  }

  MPI_Comm cart_ = MPI_COMM_NULL;
  io::Index3 dims_{};
  io::Extent box_, stored_;
  int ghost_ = 1;
  Parameters p_;
  bool periodic_ = false;
  std::array<int, 3> lower_{}, upper_{};  // neighbour ranks per axis (MPI_PROC_NULL at faces)
  std::array<MPI_Datatype, 6> send_{}, receive_{};
  std::int64_t steps_ = 0;  // per axis: lower send, upper send / lower recv, upper recv
  std::vector<double> u_, v_, u_next_, v_next_;
};

}  // namespace volseg::sim
