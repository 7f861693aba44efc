// SPDX-License-Identifier: MIT
#include "volseg/io/comm.hpp"

#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "volseg/io/error.hpp"
#include "volseg/io/selection.hpp"
#include "volseg/io/watchdog.hpp"

namespace volseg {

void check_mpi(int code, const char* operation) {
  if (code == MPI_SUCCESS) return;
  char text[MPI_MAX_ERROR_STRING];
  int length = 0;
  MPI_Error_string(code, text, &length);
  throw Error(std::string(operation) + ": " + std::string(text, static_cast<std::size_t>(length)));
}

Comm::Comm(MPI_Comm parent) {
  check_mpi(MPI_Comm_dup(parent, &comm_), "MPI_Comm_dup");
  MPI_Comm_rank(comm_, &rank_);
  MPI_Comm_size(comm_, &size_);
}

Comm::Comm(Comm&& other) noexcept
    : comm_(std::exchange(other.comm_, MPI_COMM_NULL)), rank_(other.rank_), size_(other.size_) {}

Comm& Comm::operator=(Comm&& other) noexcept {
  if (this != &other) {
    if (comm_ != MPI_COMM_NULL) MPI_Comm_free(&comm_);
    comm_ = std::exchange(other.comm_, MPI_COMM_NULL);
    rank_ = other.rank_;
    size_ = other.size_;
  }
  return *this;
}

Comm::~Comm() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (comm_ != MPI_COMM_NULL && !finalized) MPI_Comm_free(&comm_);
}

void Comm::barrier() const { check_mpi(MPI_Barrier(comm_), "MPI_Barrier"); }

std::string Comm::broadcast(const std::string& value, int root) const {
  long long length = static_cast<long long>(value.size());
  check_mpi(MPI_Bcast(&length, 1, MPI_LONG_LONG, root, comm_), "MPI_Bcast");
  std::string result = rank_ == root ? value : std::string(static_cast<std::size_t>(length), '\0');
  if (length > 0) check_mpi(MPI_Bcast(result.data(), static_cast<int>(length), MPI_CHAR, root, comm_), "MPI_Bcast");
  return result;
}

namespace {

// What agree() broadcasts ahead of the message, so that every rank throws
// the failing rank's type, not only its text.
enum class Kind : char { error = 'E', rank_error = 'R', cancelled = 'C', interrupted = 'I', step_required = 'S' };

Kind kind_of(std::exception_ptr error, std::string& message) {
  try {
    std::rethrow_exception(error);
  } catch (const Cancelled& e) {
    message = e.what();
    return Kind::cancelled;
  } catch (const Interrupted& e) {
    message = e.what();
    return Kind::interrupted;
  } catch (const RankError& e) {
    message = e.what();
    return Kind::rank_error;
  } catch (const StepRequired& e) {
    message = e.what();
    return Kind::step_required;
  } catch (const std::exception& e) {
    message = e.what();
  } catch (...) {
    message = "unknown error";
  }
  return Kind::error;
}

}  // namespace

void agree(const Comm& comm, std::exception_ptr local_error) {
  std::string message;
  const Kind kind = local_error ? kind_of(local_error, message) : Kind::error;
  // One reduction: the lowest failing rank, whether any rank failed and
  // whether any succeeded.
  int mine[3] = {-(local_error ? comm.rank() : comm.size()), local_error ? 1 : 0, local_error ? 0 : 1};
  int all[3] = {0, 0, 0};
  {
    const io::watchdog::Waiting waiting;
    check_mpi(MPI_Allreduce(mine, all, 3, MPI_INT, MPI_MAX, comm.get()), "MPI_Allreduce");
  }
  const int lowest = -all[0];
  if (lowest == comm.size()) return;
  std::string shared = comm.broadcast(static_cast<char>(kind) + message, lowest);
  const auto agreed = static_cast<Kind>(shared[0]);
  shared.erase(0, 1);
  switch (agreed) {
    case Kind::cancelled:
      throw Cancelled();
    case Kind::interrupted:
      throw Interrupted(shared);
    case Kind::rank_error:
      // A failure of some ranks only (a disk, a node) names where it
      // happened; one that every rank met (bad input) needs no rank.
      if (all[2]) throw RankError(shared + " (on rank " + std::to_string(lowest) + ")");
      throw RankError(shared);
    case Kind::step_required:
      throw StepRequired(shared);
    case Kind::error:
      break;
  }
  throw Error(shared);
}

void prefer_checked_mpi_io() { ::setenv("OMPI_MCA_io", "romio321", 0); }

namespace {

// A session folder of this process alone, beside Open MPI's own.
std::string lone_session_dir() {
  const char* base = std::getenv("OMPI_MCA_orte_tmpdir_base");
  for (const char* name : {"TMPDIR", "TEMP", "TMP"})
    if (!base || !*base) base = std::getenv(name);
  if (!base || !*base) base = "/tmp";
  char host[256] = "localhost";
  if (::gethostname(host, sizeof host) != 0) std::strcpy(host, "localhost");
  host[sizeof host - 1] = '\0';
  // Open MPI's own name (ompi.HOST.UID), made this process's by its pid.
  return std::string(base) + "/ompi." + host + "." + std::to_string(::getuid()) + "." + std::to_string(::getpid());
}

}  // namespace

bool prefer_lone_start() {
  for (const char* name : {"OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_RANK", "PMI_SIZE", "SLURM_PROCID"})
    if (std::getenv(name)) return false;
  ::setenv("OMPI_MCA_ess_singleton_isolated", "1", 0);
  ::setenv("OMPI_MCA_pml", "ob1", 0);
  ::setenv("OMPI_MCA_btl", "self", 0);
  // Every isolated singleton is job [0,1]: without a private session folder
  // all of them on a node share TMP/ompi.HOST.UID/jf.0/1, and one that ends
  // removes it under one that starts ("A call to mkdir was unable to create
  // the desired directory"). Open MPI removes this one at MPI_Finalize.
  ::setenv("OMPI_MCA_orte_top_session_dir", lone_session_dir().c_str(), 0);
  return true;
}

}  // namespace volseg
