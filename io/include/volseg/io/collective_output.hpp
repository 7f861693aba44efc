// SPDX-License-Identifier: MIT
// One output that every rank of a job writes, committed once. The protocol
// every parallel output follows: rank 0 names the temporary (temporary_path:
// its PID) and prepares it, every rank learns its name and writes its part,
// and commit() has rank 0 rename it into place (AtomicCommit) once every
// rank has agreed that its part is written. Rank 0 holds the AtomicCommit,
// so an output that is never committed is removed, and a job that fails on
// any rank leaves no file that looks finished.
#pragma once

#include <optional>
#include <string>

#include "volseg/io/comm.hpp"
#include "volseg/io/files.hpp"

namespace volseg::io {

class CollectiveOutput {
 public:
  // What rank 0 makes of the temporary before any rank writes (a leftover
  // of an earlier process with the same PID is removed first).
  enum class Start {
    empty_file,  // an empty file, which the ranks write at their offsets
    folder,      // an empty folder, which the ranks fill
    nothing,     // nothing: a writer creates it (a series' steps append to it)
  };

  CollectiveOutput() = default;
  // Collective over comm; what rank 0 met is thrown on every rank.
  CollectiveOutput(const Comm& comm, std::string path, Start start);

  const std::string& path() const { return path_; }
  const std::string& temporary() const { return temporary_; }  // the same on every rank

  // Collective over comm: every rank's part is written. Rank 0 refuses an
  // output that appeared at path meanwhile (refuse_existing with `force`,
  // where given), then renames the temporary into place, syncing its folder
  // with sync_folder (AtomicCommit::commit); what it met is thrown on
  // every rank.
  void commit(const Comm& comm, bool sync_folder, std::optional<bool> force = std::nullopt);

 private:
  std::string path_, temporary_;
  AtomicCommit commit_;  // rank 0's; the other ranks' hold nothing
};

}  // namespace volseg::io
