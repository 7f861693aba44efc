// SPDX-License-Identifier: MIT
#include "round_exchange.hpp"

#include <algorithm>
#include <cstring>
#include <limits>

#include "file_io.hpp"
#include "volseg/io/error.hpp"
#include "volseg/io/trace.hpp"

namespace volseg::io::twophase::detail {

MPI_Datatype Types::add(const std::vector<std::pair<const std::byte*, std::uint64_t>>& blocks) {
  std::vector<int> lengths;
  std::vector<MPI_Aint> addresses;
  lengths.reserve(blocks.size());
  addresses.reserve(blocks.size());
  for (const auto& [address, length] : blocks) {
    if (length > static_cast<std::uint64_t>(std::numeric_limits<int>::max()))
      throw Error("twophase: a piece longer than 2 GiB in one round");
    MPI_Aint at = 0;
    check_mpi(MPI_Get_address(address, &at), "MPI_Get_address");
    lengths.push_back(static_cast<int>(length));
    addresses.push_back(at);
  }
  MPI_Datatype type;
  check_mpi(
      MPI_Type_create_hindexed(static_cast<int>(blocks.size()), lengths.data(), addresses.data(), MPI_BYTE, &type),
      "MPI_Type_create_hindexed");
  check_mpi(MPI_Type_commit(&type), "MPI_Type_commit");
  types_.push_back(type);
  return type;
}

std::vector<IoGroup> coalesce(const std::vector<Slot>& sorted, const FileDomains& domains, const Options& options) {
  std::vector<IoGroup> io;
  std::uint64_t key = 0;
  for (const auto& slot : sorted) {
    const std::uint64_t slot_key = domains.piece_key(slot.offset);
    if (!io.empty() && slot_key == key) {
      auto& runs = io.back().runs;
      Slot& tail = runs.back();
      if (slot.offset <= tail.offset + tail.length) {
        tail.length = std::max(tail.length, slot.offset + slot.length - tail.offset);
      } else {
        runs.push_back(slot);
      }
      ++io.back().slots;
      continue;
    }
    key = slot_key;
    io.push_back(IoGroup{{slot}, false, 1, nullptr});
  }
  for (auto& group : io) group.sieve = sieve_access(group.begin(), group.end(), group.runs.size(), options);
  return io;
}

void read_groups(int fd, const std::string& path, RoundPlan& p, Timing& timing) {
  for (const auto& group : p.io) {
    if (group.runs.size() == 1)
      ++timing.contiguous;
    else if (group.sieve)
      ++timing.sieved;
    else
      ++timing.naive;
    if (group.runs.size() == 1 || group.sieve) {
      std::byte* into = group.direct ? group.direct : p.buffer + group.runs.front().position;
      pread_exact(fd, into, group.end() - group.begin(), group.begin(), path, false);
      ++timing.io_calls;
      timing.file_bytes += group.end() - group.begin();
      continue;
    }
    for (const auto& run : group.runs) {
      pread_exact(fd, p.buffer + run.position, run.length, run.offset, path, false);
      ++timing.io_calls;
      timing.file_bytes += run.length;
    }
  }
}

void read_holes(int fd, const std::string& path, RoundPlan& p, Timing& timing) {
  for (const auto& group : p.io) {
    if (!group.sieve) continue;
    pread_exact(fd, p.buffer + group.runs.front().position, group.end() - group.begin(), group.begin(), path, true);
    ++timing.io_calls;
    timing.file_bytes += group.end() - group.begin();
  }
}

void write_groups(int fd, DirectFile* direct, const std::string& path, RoundPlan& p, Timing& timing) {
  for (const auto& group : p.io) {
    if (group.runs.size() == 1)
      ++timing.contiguous;
    else if (group.sieve)
      ++timing.sieved;
    else
      ++timing.naive;
    if (group.runs.size() == 1 || group.sieve) {
      const std::byte* out = group.direct ? group.direct : p.buffer + group.runs.front().position;
      if (!direct || !direct->write(out, group.end() - group.begin(), group.begin(), path))
        pwrite_exact(fd, out, group.end() - group.begin(), group.begin(), path);
      ++timing.io_calls;
      timing.file_bytes += group.end() - group.begin();
      continue;
    }
    for (const auto& run : group.runs) {
      pwrite_exact(fd, p.buffer + run.position, run.length, run.offset, path);
      ++timing.io_calls;
      timing.file_bytes += run.length;
    }
  }
}

void post_exchange(const Comm& comm, Exchange exchange, Direction direction, RoundPlan& p) {
  const int size = comm.size(), my_rank = comm.rank();
  // Bytes this rank sends to and receives from the others.
  trace::Span span(trace::Op::exchange);
  std::uint64_t moved = 0;
  const bool writing = direction == Direction::write;
  const auto& blocks = p.mine[static_cast<std::size_t>(my_rank)];
  const auto& slots = p.theirs[static_cast<std::size_t>(my_rank)];
  for (std::size_t i = 0; i < blocks.size() && i < slots.size(); ++i) {
    if (p.self_direct[i]) continue;
    std::byte* memory = const_cast<std::byte*>(blocks[i].first);  // written only on reads
    if (writing)
      std::memcpy(p.buffer + slots[i].position, memory, blocks[i].second);
    else
      std::memcpy(memory, p.buffer + slots[i].position, blocks[i].second);
  }
  std::vector<MPI_Datatype> memory_types(static_cast<std::size_t>(size), MPI_BYTE),
      buffer_types(static_cast<std::size_t>(size), MPI_BYTE);
  std::vector<int> memory_counts(static_cast<std::size_t>(size), 0), buffer_counts(static_cast<std::size_t>(size), 0);
  for (int r = 0; r < size; ++r) {
    if (r == my_rank) continue;
    const auto& mine = p.mine[static_cast<std::size_t>(r)];
    for (const auto& block : mine) moved += block.second;
    if (!mine.empty()) {
      memory_types[static_cast<std::size_t>(r)] = p.types.add(mine);
      memory_counts[static_cast<std::size_t>(r)] = 1;
    }
    const auto& theirs = p.theirs[static_cast<std::size_t>(r)];
    if (!theirs.empty()) {
      std::vector<std::pair<const std::byte*, std::uint64_t>> in_buffer;
      in_buffer.reserve(theirs.size());
      for (const auto& slot : theirs) {
        in_buffer.emplace_back(p.buffer + slot.position, slot.length);
        moved += slot.length;
      }
      buffer_types[static_cast<std::size_t>(r)] = p.types.add(in_buffer);
      buffer_counts[static_cast<std::size_t>(r)] = 1;
    }
  }
  span.set_bytes(moved);
  p.send_types = writing ? memory_types : buffer_types;
  p.send_counts = writing ? memory_counts : buffer_counts;
  p.receive_types = writing ? buffer_types : memory_types;
  p.receive_counts = writing ? buffer_counts : memory_counts;
  p.zeros.assign(static_cast<std::size_t>(size), 0);
  if (exchange == Exchange::alltoallw) {
    p.requests.resize(1);
    check_mpi(
        MPI_Ialltoallw(MPI_BOTTOM, p.send_counts.data(), p.zeros.data(), p.send_types.data(), MPI_BOTTOM,
                       p.receive_counts.data(), p.zeros.data(), p.receive_types.data(), comm.get(), p.requests.data()),
        "MPI_Ialltoallw");
    return;
  }
  for (int r = 0; r < size; ++r) {
    if (p.receive_counts[static_cast<std::size_t>(r)] == 0) continue;
    p.requests.emplace_back();
    check_mpi(
        MPI_Irecv(MPI_BOTTOM, 1, p.receive_types[static_cast<std::size_t>(r)], r, 0, comm.get(), &p.requests.back()),
        "MPI_Irecv");
  }
  for (int r = 0; r < size; ++r) {
    if (p.send_counts[static_cast<std::size_t>(r)] == 0) continue;
    p.requests.emplace_back();
    check_mpi(MPI_Isend(MPI_BOTTOM, 1, p.send_types[static_cast<std::size_t>(r)], r, 0, comm.get(), &p.requests.back()),
              "MPI_Isend");
  }
}

void complete_exchange(RoundPlan& p) {
  trace::Span span(trace::Op::wait);
  check_mpi(MPI_Waitall(static_cast<int>(p.requests.size()), p.requests.data(), MPI_STATUSES_IGNORE), "MPI_Waitall");
}

}  // namespace volseg::io::twophase::detail
