// SPDX-License-Identifier: MIT
#pragma once

#include <mpi.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <string>

namespace volseg::testing {

// A temporary folder shared by all ranks of comm, removed at the end.
class SharedTempDir {
 public:
  explicit SharedTempDir(MPI_Comm comm) : comm_(comm) {
    int rank = 0;
    MPI_Comm_rank(comm, &rank);
    char name[4096] = {};
    if (rank == 0) {
      std::string pattern = (std::filesystem::temp_directory_path() / "volseg-test-XXXXXX").string();
      pattern.copy(name, pattern.size());
      if (!::mkdtemp(name)) std::abort();
    }
    MPI_Bcast(name, sizeof name, MPI_CHAR, 0, comm);
    path_ = name;
  }
  ~SharedTempDir() {
    MPI_Barrier(comm_);
    int rank = 0;
    MPI_Comm_rank(comm_, &rank);
    std::error_code ec;
    if (rank == 0) std::filesystem::remove_all(path_, ec);
  }
  std::string operator/(const std::string& name) const { return (path_ / name).string(); }
  const std::filesystem::path& path() const { return path_; }

 private:
  MPI_Comm comm_;
  std::filesystem::path path_;
};

}  // namespace volseg::testing
