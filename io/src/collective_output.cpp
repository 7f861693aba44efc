// SPDX-License-Identifier: MIT
#include "volseg/io/collective_output.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>

#include "volseg/io/error.hpp"

namespace volseg::io {

CollectiveOutput::CollectiveOutput(const Comm& comm, std::string path, Start start) : path_(std::move(path)) {
  collectively(comm, [&] {
    if (comm.rank() != 0) return;
    temporary_ = temporary_path(path_);
    std::error_code ec;
    std::filesystem::remove_all(temporary_, ec);  // a leftover of an earlier process with this PID
    if (start == Start::empty_file) {
      const int fd = ::open(temporary_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
      if (fd < 0) throw_errno("create", temporary_);
      commit_ = AtomicCommit(path_, temporary_);
      if (::close(fd) != 0) throw_errno("close", temporary_);
    } else if (start == Start::folder) {
      if (::mkdir(temporary_.c_str(), 0777) != 0) throw_errno("mkdir", temporary_);
      commit_ = AtomicCommit(path_, temporary_);
    } else {
      commit_ = AtomicCommit(path_, temporary_);
    }
  });
  temporary_ = comm.broadcast(temporary_);
}

void CollectiveOutput::commit(const Comm& comm, bool sync_folder, std::optional<bool> force) {
  collectively(comm, [&] {
    if (comm.rank() != 0) return;
    if (force) refuse_existing(path_, *force);
    commit_.commit(sync_folder);
  });
}

}  // namespace volseg::io
