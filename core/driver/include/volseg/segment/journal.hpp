// SPDX-License-Identifier: MIT
// The journal of a resumable segment job (segment --resume; docs/reliability.md).
//
// A job that writes a raw, CDF or Zarr mask writes it to a hidden partial file of
// a fixed name (io::Partial) and keeps, beside it, a journal of the bricks
// whose masks are in that file. A job that fails, is killed or is stopped
// by its scheduler leaves both; a rerun with --resume redoes only the other
// bricks, on any number of ranks, and the result has the same bytes as an
// uninterrupted run.
//
// The file, DIR/.NAME.volseg-journal for the output DIR/NAME:
//   header   text, "volseg-journal 1 SIZE\n", then "key=value\n" lines (the
//            job's identity: input, thresholds, brick shape, output format),
//            then "check=HEX\n" over what precedes it; zero-padded to SIZE,
//            a multiple of 4096
//   records  one slot per brick, at SIZE + brick * sizeof(record): zero
//            until the brick's mask is in the partial file
// A record holds its brick, a hash of the header (so a slot from another
// job never counts), the brick's statistics (the report covers the whole
// volume after a resume) and a checksum over all of it: a torn or stale
// record fails it and its brick is done again.
//
// Durability (sync on): finished bricks are committed in groups, at most
// kGroupCommit seconds apart: their data are flushed (fdatasync of the
// partial file, which also flushes what another process on this node wrote
// there), then their records are written and flushed. A flush a brick cost
// a warm job on whole-plane O_DIRECT masks a quarter of its time (each is a
// device cache flush); a crash now costs at most that much redone work. A
// failed or interrupted job commits what it has on its way out. The
// collective pipeline flushes on every rank and waits for all before it
// records a round, since an aggregator on another rank wrote its data.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "volseg/io/comm.hpp"
#include "volseg/io/volume.hpp"
#include "volseg/segment/stats.hpp"

namespace volseg::segment {

// What a journal belongs to, in order: a rerun must match every entry.
using JournalIdentity = std::vector<std::pair<std::string, std::string>>;

struct JournalRequest {
  std::string output;   // the final path the user named (for messages)
  std::string partial;  // the partial data file (io::partial_path of the data file)
  JournalIdentity identity;
  std::int64_t bricks = 0;
  bool resume = false;  // go on with an earlier job's partial output, if there is one
  bool force = false;   // throw away an earlier job's partial output (also one --resume cannot use)
  bool sync = true;     // flush data, then the record, after every brick
};

class Journal {
 public:
  static std::string path_for(const std::string& output);  // DIR/.NAME.volseg-journal

  // Collective. Looks at what an earlier job left: a journal and partial
  // file pair is resumed (--resume, when its identity matches), replaced
  // (--force) or refused (neither); half a pair is an earlier job's
  // leftover and is removed. Then creates or opens the journal. Throws
  // volseg::Error on every rank.
  Journal(const Comm& comm, const JournalRequest& request);
  Journal(const Journal&) = delete;
  Journal& operator=(const Journal&) = delete;
  ~Journal();

  const std::string& path() const { return path_; }
  io::Partial partial() const { return reopen_ ? io::Partial::reopen : io::Partial::create; }
  std::int64_t done_before() const { return done_before_; }  // bricks an earlier job finished
  bool done(std::int64_t brick) const { return done_[static_cast<std::size_t>(brick)] != 0; }
  // Rank 0: the statistics of the bricks an earlier job finished (empty elsewhere).
  const Stats& stats_before() const { return stats_before_; }

  // Collective, once the writer has created or opened the partial file.
  void attach();
  // Records that these bricks' masks are in the partial file, by the next
  // group commit (data flushed first when sync is on). Independent; from
  // one thread at a time.
  void record(std::int64_t brick, const Stats& stats);
  void record(const std::vector<std::int64_t>& bricks, const std::vector<Stats>& stats, bool data_flushed = false);
  // Commits the records not yet committed. Independent.
  void commit();
  static constexpr double kGroupCommit = 0.5;  // seconds between commits, at most
  // Flushes the partial file's data written on this node (sync on).
  void flush_data();

  // Collective, after the output was committed: removes the journal.
  void complete();
  // Collective, on a failed job's way out: with no brick recorded by any
  // job, removes the partial file and the journal and returns "";
  // otherwise keeps both and returns what to tell the user.
  std::string abandon();
  // Collective: removes the partial file and the journal (a cancelled job).
  void discard();

 private:
  Comm comm_;
  std::string path_, partial_path_, output_;
  std::int64_t bricks_ = 0;
  std::uint64_t header_size_ = 0, job_ = 0;
  bool reopen_ = false, sync_ = true;
  int fd_ = -1, data_fd_ = -1;
  bool partial_is_folder_ = false;  // a Zarr store: flushed by syncfs
  std::vector<std::uint8_t> done_;
  std::int64_t done_before_ = 0;
  Stats stats_before_;
  std::atomic<std::int64_t> recorded_{0};  // committed by this rank
  struct Pending {
    std::int64_t brick;
    Stats stats;
  };
  std::vector<Pending> pending_;
  bool pending_flushed_ = true;  // the pending bricks' data are flushed already
  double last_commit_ = 0;       // steady clock, seconds
};

}  // namespace volseg::segment
