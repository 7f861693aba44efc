// SPDX-License-Identifier: MIT
// volseg's own collective two-phase I/O (Coloma et al. and Liao & Choudhary), on a plain
// file. Each collective call:
//   1. flattens every rank's accesses into sorted (file offset, length,
//      memory) pieces and finds the aggregate access region (one allreduce);
//   2. asks the partitioner for the file domains of the aggregators and
//      cuts the pieces at domain boundaries;
//   3. sends each aggregator the (offset, length) list of its pieces
//      (alltoall + alltoallv), once per call;
//   4. runs in rounds of cb_buffer_size bytes of each aggregator's domain,
//      with two collective buffers: the exchange of round r (MPI_Ialltoallw
//      or MPI_Isend/Irecv, exchange=) is in flight while the aggregator does
//      the file I/O of the neighbouring round and computes the next round's
//      datatypes;
//   5. aggregator I/O per contiguous piece of its domain: one call when the
//      round's data there is contiguous, otherwise data sieving (read the
//      covering range, fill, write back) or one call per run, chosen by
//      comparing the mean run extent with ds_threshold (Coloma et al. §6.3's
//      conditional data sieving), or forced with ds=always|never.
// Before step 2, the ranks' access extents are compared (one allgather):
// when no two interleave, gathering at aggregators would only add a copy
// and a message, so each rank does its own I/O of its pieces, with the same
// conditional data sieving (ROMIO's romio_cb_read/romio_cb_write=automatic;
// hints cb_read and cb_write: automatic, enable = always aggregate,
// disable = never).
// Errors on one rank reach every rank at the end of the call, never a hang.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "volseg/io/comm.hpp"
#include "volseg/io/hints.hpp"
#include "volseg/io/twophase/partitioner.hpp"

namespace volseg::io::twophase {

enum class Exchange { alltoallw, p2p };
enum class Sieving { conditional, always, never };
enum class Aggregation { automatic, enable, disable };  // cb_read / cb_write

struct Options {
  int cb_nodes = 0;            // aggregators; 0: one per node
  std::vector<int> cb_config;  // the aggregators' ranks, in order (overrides cb_nodes)
  std::uint64_t cb_buffer_size = 16u << 20;
  Exchange exchange = Exchange::alltoallw;
  std::string partition = "auto";
  std::uint64_t lock_size = 0;  // 0: the file's st_blksize
  int io_servers = 1;
  std::string fs_profile = "local";
  Sieving sieving = Sieving::conditional;
  std::uint64_t ds_threshold = 32u << 10;  // measured on this machine, see docs/ncio.md
  Aggregation cb_read = Aggregation::automatic;
  Aggregation cb_write = Aggregation::automatic;
  std::uint64_t realm_size = 0;  // persistent realms; 0: file extent / aggregators
  // Hint direct_write=1: writes of whole direct-I/O blocks (statx
  // STATX_DIOALIGN) go to the device with O_DIRECT instead of through the
  // page cache; everything else stays buffered. Off by default: which is
  // faster depends on the device (docs/ranged.md, "Writing the mask").
  bool direct_write = false;
  // Pieces a rank may send, or an aggregator receive, in one call: MPI
  // counts are ints, two per piece. Lower it (max_pieces) to try the refusal.
  std::int64_t max_pieces = std::int64_t{1} << 30;

  // Reads (and marks as read) every twophase hint; throws on a bad value.
  static Options from_hints(const Hints& hints);
  static bool is_hint(const std::string& key);
};

// One contiguous piece of a collective access.
struct Access {
  std::uint64_t offset = 0, length = 0;
  std::byte* memory = nullptr;
};
struct ConstAccess {
  std::uint64_t offset = 0, length = 0;
  const std::byte* memory = nullptr;
};

// Where the time of collective calls went, on this rank (Liao & Choudhary reads
// the I/O phase's share to explain its results).
struct Timing {
  double requests = 0;  // sorting, partitioning, the request exchange, round planning
  double exchange = 0;  // the data exchange: posting, self copies, waiting
  double io = 0;        // the aggregator's file reads and writes
  double total = 0;
  std::uint64_t calls = 0, rounds = 0;
  std::uint64_t io_calls = 0;                           // pread/pwrite calls
  std::uint64_t file_bytes = 0;                         // bytes moved to or from the file, gaps included
  std::uint64_t sieved = 0, naive = 0, contiguous = 0;  // I/O decisions, per domain piece and round
  std::uint64_t independent = 0;                        // calls done by each rank on its own (no aggregation)
  void add(const Timing& other);
};

enum class Mode { read, write };

class File {
 public:
  // Collective. Write mode opens an existing file read-write (data sieving
  // reads the holes it writes around); only aggregators open the file.
  // Errors name the file as `name` (default: path), so a temporary file
  // can be named by its final name.
  File(const Comm& comm, const std::string& path, Mode mode, Options options, const std::string& name = {});
  File(const File&) = delete;
  File& operator=(const File&) = delete;
  ~File();

  // Collective; any list may be empty. Reads may overlap; writes must not.
  void read_all(std::span<const Access> accesses);
  void write_all(std::span<const ConstAccess> accesses);
  void sync();   // collective: aggregators fdatasync
  void close();  // collective, checked

  const Timing& last_call() const;
  const Timing& totals() const;
  const std::vector<int>& aggregators() const;  // ranks, in aggregator order
  std::string partition() const;                // what the last call used (auto names its choice)
  const Options& options() const;
  std::uint64_t lock_size() const;
  std::string describe() const;  // for reports: aggregators, partition, buffer, exchange, sieving

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace volseg::io::twophase
