// SPDX-License-Identifier: MIT
#include "volseg/segment/cancel.hpp"

#include "volseg/io/watchdog.hpp"

namespace volseg::segment {

Stop::Stop(const Comm& comm, const CancelFlag* flag) : async_(comm.duplicate()), flag_(flag) {
  // The other ranks post their half of the broadcast now; rank 0 posts its
  // half when asked to stop, or at finish() with "go on".
  if (async_.rank() != 0) {
    check_mpi(MPI_Ibcast(&value_, 1, MPI_INT, 0, async_.get(), &request_), "MPI_Ibcast");
    started_ = true;
  }
}

Stop::~Stop() {
  try {
    finish();
  } catch (...) {
  }
}

void Stop::start_broadcast(int value) {
  value_ = value;
  check_mpi(MPI_Ibcast(&value_, 1, MPI_INT, 0, async_.get(), &request_), "MPI_Ibcast");
  started_ = true;
}

bool Stop::requested() {
  if (arrived_) return value_ != 0;
  if (async_.rank() == 0) {
    if (!flag_ || !flag_->requested()) return false;
    if (!started_) start_broadcast(1);
    return true;
  }
  int done = 0;
  check_mpi(MPI_Test(&request_, &done, MPI_STATUS_IGNORE), "MPI_Test");
  arrived_ = done != 0;
  return arrived_ && value_ != 0;
}

bool Stop::asked() const { return async_.rank() == 0 && flag_ && flag_->requested(); }

void Stop::finish() {
  if (finished_) return;
  finished_ = true;
  if (!started_) start_broadcast(0);
  if (!arrived_) {
    const io::watchdog::Waiting waiting;
    check_mpi(MPI_Wait(&request_, MPI_STATUS_IGNORE), "MPI_Wait");
  }
  arrived_ = true;
}

}  // namespace volseg::segment
