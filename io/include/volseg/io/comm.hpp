// SPDX-License-Identifier: MIT
// A move-only communicator: duplicates the caller's communicator so library
// traffic never mixes with the application's, and frees it on destruction.
#pragma once

#include <mpi.h>

#include <exception>
#include <string>

namespace volseg {

class Comm {
 public:
  explicit Comm(MPI_Comm parent);  // collective over parent
  Comm(Comm&& other) noexcept;
  Comm& operator=(Comm&& other) noexcept;
  Comm(const Comm&) = delete;
  Comm& operator=(const Comm&) = delete;
  ~Comm();

  MPI_Comm get() const { return comm_; }
  int rank() const { return rank_; }
  int size() const { return size_; }
  Comm duplicate() const { return Comm(comm_); }  // collective

  void barrier() const;
  // Rank 0's string on every rank.
  std::string broadcast(const std::string& value, int root = 0) const;

 private:
  MPI_Comm comm_ = MPI_COMM_NULL;
  int rank_ = 0;
  int size_ = 1;
};

// Collective. Every rank passes what it met (nullptr if it succeeded); if any
// rank failed, every rank throws what the lowest failing rank met, so all
// ranks leave a collective operation together: a Cancelled, an Interrupted
// or a RankError as that type (error.hpp), anything else as a volseg::Error,
// each with that rank's message.
void agree(const Comm& comm, std::exception_ptr local_error);

// Before MPI_Init, in a program's main: makes ROMIO Open MPI's MPI-IO unless
// the user chose one (OMPI_MCA_io, or mpirun --mca io). Open MPI 4.1's
// default, OMPIO, returns success from writes that failed (EIO, ENOSPC) and
// drops data in some collective writes, so a job would end "done" with a
// wrong mask; ROMIO reports both (docs/reliability.md).
void prefer_checked_mpi_io();

// Before MPI_Init, in a program's main: when no launcher started this process
// (mpirun, srun, hydra: none of their variables is set), it is a singleton
// that will never talk to another process, so Open MPI need not start its
// daemon (ess_singleton_isolated) nor probe every fabric it was built with
// (pml ob1 over btl self, not ucx, psm2, ofi or openib). MPI_Init then takes
// about 0.07 s in place of 0.40 (docs/architecture.md, "Start-up"). It gets
// a session folder of its own (every isolated singleton is job [0,1], and a
// shared folder is removed by one that ends under one that starts). Each
// setting the user made stays theirs; returns whether this process is alone.
bool prefer_lone_start();

// Collective. Runs fn on every rank and agrees on the outcome.
template <class Fn>
void collectively(const Comm& comm, Fn&& fn) {
  std::exception_ptr error;
  try {
    fn();
  } catch (...) {
    error = std::current_exception();
  }
  agree(comm, error);
}

void check_mpi(int code, const char* operation);

}  // namespace volseg
