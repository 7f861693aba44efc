// SPDX-License-Identifier: MIT
// One round of the two-phase engine, once planned: what it moves between
// clients and aggregators (RoundPlan), the aggregator's file I/O of the
// round (naive, contiguous or sieved, per domain piece) and the data
// exchange (MPI_Ialltoallw or point-to-point, on committed hindexed types
// of absolute addresses). Internal to io/twophase/.
#pragma once

#include <mpi.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "file_io.hpp"
#include "volseg/io/comm.hpp"
#include "volseg/io/twophase.hpp"
#include "volseg/io/twophase/partitioner.hpp"

namespace volseg::io::twophase::detail {

// A piece of the collective buffer: file bytes [offset, offset+length) live
// at buffer position `position`.
struct Slot {
  std::uint64_t offset = 0, length = 0, position = 0;
  int source = -1;        // the client's rank
  std::size_t index = 0;  // the client's piece of this round
};

// Contiguous file I/O of one domain piece in one round.
struct IoGroup {
  std::vector<Slot> runs;  // coalesced, sorted, in one domain piece
  bool sieve = false;
  std::size_t slots = 0;
  // The aggregator's own piece, alone in the group: I/O goes straight
  // between the file and the caller's memory, no buffer, no copy.
  std::byte* direct = nullptr;
  std::uint64_t begin() const { return runs.front().offset; }
  std::uint64_t end() const { return runs.back().offset + runs.back().length; }
};

// A committed MPI datatype list that frees itself.
class Types {
 public:
  Types() = default;
  Types(const Types&) = delete;
  Types& operator=(const Types&) = delete;
  Types(Types&& other) noexcept : types_(std::move(other.types_)) {}
  ~Types() {
    for (auto& type : types_) MPI_Type_free(&type);
  }
  // An hindexed type of absolute addresses, for MPI_BOTTOM.
  MPI_Datatype add(const std::vector<std::pair<const std::byte*, std::uint64_t>>& blocks);

 private:
  std::vector<MPI_Datatype> types_;
};

// What one round moves.
struct RoundPlan {
  // Client side: my memory blocks per peer rank, in the peer's order.
  std::vector<std::vector<std::pair<const std::byte*, std::uint64_t>>> mine;
  // Aggregator side: buffer slots per client rank, in the client's order.
  std::vector<std::vector<Slot>> theirs;
  std::vector<IoGroup> io;
  std::vector<char> self_direct;  // my own pieces served by direct I/O
  std::byte* buffer = nullptr;
  // The exchange's arguments must outlive a non-blocking call.
  Types types;
  std::vector<int> send_counts, receive_counts, zeros;
  std::vector<MPI_Datatype> send_types, receive_types;
  std::vector<MPI_Request> requests;
};

// The file accesses of one aggregator round: its slots, sorted by file
// offset, coalesced (overlapping reads too) inside each domain piece, each
// group sieved or not by sieve_access. The engine runs it on every round;
// volseg-twophase-plan runs it without MPI or I/O to show the plans.
std::vector<IoGroup> coalesce(const std::vector<Slot>& sorted, const FileDomains& domains, const Options& options);

// The aggregator's file I/O of a round; each counts its calls and bytes in
// timing. read_holes: data sieving on writes reads each sieved covering
// range first, so the holes between runs are written back unchanged.
void read_groups(int fd, const std::string& path, RoundPlan& p, Timing& timing);
void read_holes(int fd, const std::string& path, RoundPlan& p, Timing& timing);
void write_groups(int fd, DirectFile* direct, const std::string& path, RoundPlan& p, Timing& timing);

// Posts the round's data exchange: clients to aggregators on writes,
// aggregators to clients on reads; this rank's own traffic is a memcpy.
void post_exchange(const Comm& comm, Exchange exchange, Direction direction, RoundPlan& p);
// Waits for it.
void complete_exchange(RoundPlan& p);

}  // namespace volseg::io::twophase::detail
