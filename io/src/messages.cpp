// SPDX-License-Identifier: MIT
#include "volseg/io/messages.hpp"

#include <algorithm>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <string>

#include "volseg/io/comm.hpp"
#include "volseg/io/error.hpp"

namespace volseg::io {
namespace {

// The tag of these calls' point-to-point messages. A call receives every
// message it expects before it returns, and MPI does not let messages of one
// sender, tag and communicator overtake one another, so calls in turn on
// one communicator cannot take each other's pieces.
constexpr int kTag = 0x766d;

std::size_t read_limit() {
  constexpr std::size_t fallback = std::size_t{256} << 20;
  const char* text = std::getenv("VOLSEG_MPI_MESSAGE_BYTES");
  if (!text || !*text) return fallback;
  char* end = nullptr;
  const unsigned long long value = std::strtoull(text, &end, 10);
  if (*end != '\0' || value < 8 || value > static_cast<unsigned long long>(INT_MAX))
    throw Error(std::string("VOLSEG_MPI_MESSAGE_BYTES='") + text + "' is not a byte count from 8 to " +
                std::to_string(INT_MAX));
  return static_cast<std::size_t>(value);
}

int piece(std::uint64_t left) { return static_cast<int>(std::min<std::uint64_t>(left, message_limit())); }

// Posts the receives (or sends) of `bytes` at `data` from (to) `peer`, in
// pieces, appending their requests.
void post_pieces(MPI_Comm comm, bool receive, std::byte* data, std::uint64_t bytes, int peer,
                 std::vector<MPI_Request>& requests) {
  for (std::uint64_t at = 0; at < bytes; at += static_cast<std::uint64_t>(piece(bytes - at))) {
    MPI_Request request = MPI_REQUEST_NULL;
    const int count = piece(bytes - at);
    if (receive)
      check_mpi(MPI_Irecv(data + at, count, MPI_BYTE, peer, kTag, comm, &request), "MPI_Irecv");
    else
      check_mpi(MPI_Isend(data + at, count, MPI_BYTE, peer, kTag, comm, &request), "MPI_Isend");
    requests.push_back(request);
  }
}

void wait_all(std::vector<MPI_Request>& requests) {
  if (requests.empty()) return;
  check_mpi(MPI_Waitall(static_cast<int>(requests.size()), requests.data(), MPI_STATUSES_IGNORE), "MPI_Waitall");
  requests.clear();
}

// Blocking, in pieces: one in flight at a time, so a rank that moves much
// holds no more requests than one.
void send_pieces(MPI_Comm comm, const std::byte* data, std::uint64_t bytes, int peer) {
  for (std::uint64_t at = 0; at < bytes;) {
    const int count = piece(bytes - at);
    check_mpi(MPI_Send(data + at, count, MPI_BYTE, peer, kTag, comm), "MPI_Send");
    at += static_cast<std::uint64_t>(count);
  }
}

void receive_pieces(MPI_Comm comm, std::byte* data, std::uint64_t bytes, int peer) {
  for (std::uint64_t at = 0; at < bytes;) {
    const int count = piece(bytes - at);
    check_mpi(MPI_Recv(data + at, count, MPI_BYTE, peer, kTag, comm, MPI_STATUS_IGNORE), "MPI_Recv");
    at += static_cast<std::uint64_t>(count);
  }
}

}  // namespace

std::size_t message_limit() {
  static const std::size_t limit = read_limit();
  return limit;
}

std::vector<std::uint64_t> gather_sizes(MPI_Comm comm, std::uint64_t bytes, int root) {
  int rank = 0, ranks = 1;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &ranks);
  std::vector<std::uint64_t> sizes(rank == root ? static_cast<std::size_t>(ranks) : 0);
  check_mpi(MPI_Gather(&bytes, 1, MPI_UINT64_T, sizes.data(), 1, MPI_UINT64_T, root, comm), "MPI_Gather");
  return sizes;
}

// Root receives from one rank at a time, in rank order, so that the
// senders' pieces arrive one stream after another and no rank floods it.
void gather_bytes(MPI_Comm comm, std::span<const std::byte> mine, std::byte* all,
                  const std::vector<std::uint64_t>& sizes, int root) {
  int rank = 0;
  MPI_Comm_rank(comm, &rank);
  if (rank != root) {
    send_pieces(comm, mine.data(), mine.size(), root);
    return;
  }
  std::uint64_t at = 0;
  for (std::size_t r = 0; r < sizes.size(); ++r) {
    if (static_cast<int>(r) == root) {
      if (mine.size() != sizes[r]) throw Error("internal error: gather_bytes given a size other than gather_sizes's");
      if (!mine.empty() && mine.data() != all + at) std::memmove(all + at, mine.data(), mine.size());
    } else {
      receive_pieces(comm, all + at, sizes[r], static_cast<int>(r));
    }
    at += sizes[r];
  }
}

void scatter_bytes(MPI_Comm comm, const std::byte* all, const std::vector<std::uint64_t>& sizes,
                   std::span<std::byte> mine, int root) {
  int rank = 0;
  MPI_Comm_rank(comm, &rank);
  if (rank != root) {
    receive_pieces(comm, mine.data(), mine.size(), root);
    return;
  }
  std::uint64_t at = 0;
  for (std::size_t r = 0; r < sizes.size(); ++r) {
    if (static_cast<int>(r) == root) {
      if (mine.size() != sizes[r]) throw Error("internal error: scatter_bytes given a size other than sizes[root]");
      if (!mine.empty()) std::memmove(mine.data(), all + at, mine.size());
    } else {
      send_pieces(comm, all + at, sizes[r], static_cast<int>(r));
    }
    at += sizes[r];
  }
}

std::vector<std::uint64_t> exchange_sizes(MPI_Comm comm, const std::vector<std::span<const std::byte>>& outgoing) {
  int ranks = 1;
  MPI_Comm_size(comm, &ranks);
  if (outgoing.size() != static_cast<std::size_t>(ranks))
    throw Error("internal error: an exchange needs one list per rank");
  std::vector<std::uint64_t> send_sizes(outgoing.size()), recv_sizes(outgoing.size());
  for (std::size_t r = 0; r < outgoing.size(); ++r) send_sizes[r] = outgoing[r].size();
  check_mpi(MPI_Alltoall(send_sizes.data(), 1, MPI_UINT64_T, recv_sizes.data(), 1, MPI_UINT64_T, comm), "MPI_Alltoall");
  return recv_sizes;
}

void exchange_into(MPI_Comm comm, const std::vector<std::span<const std::byte>>& outgoing,
                   const std::vector<std::uint64_t>& sizes, std::byte* received, bool copy_own) {
  int rank = 0, ranks = 1;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &ranks);
  std::vector<MPI_Request> requests;
  std::uint64_t at = 0;
  for (int r = 0; r < ranks; ++r) {
    const auto i = static_cast<std::size_t>(r);
    if (r == rank) {
      if (copy_own && !outgoing[i].empty()) std::memcpy(received + at, outgoing[i].data(), outgoing[i].size());
    } else {
      post_pieces(comm, true, received + at, sizes[i], r, requests);
    }
    at += sizes[i];
  }
  for (int r = 0; r < ranks; ++r)
    if (r != rank)
      post_pieces(comm, false, const_cast<std::byte*>(outgoing[static_cast<std::size_t>(r)].data()),
                  outgoing[static_cast<std::size_t>(r)].size(), r, requests);
  wait_all(requests);
}

std::vector<std::byte> exchange_bytes(MPI_Comm comm, const std::vector<std::span<const std::byte>>& outgoing,
                                      std::vector<std::uint64_t>* received_sizes) {
  auto sizes = exchange_sizes(comm, outgoing);
  std::uint64_t total = 0;
  for (const auto size : sizes) total += size;
  std::vector<std::byte> received(total);
  exchange_into(comm, outgoing, sizes, received.data(), true);
  if (received_sizes) *received_sizes = std::move(sizes);
  return received;
}

void sum_in_place(MPI_Comm comm, std::span<std::uint64_t> values) {
  const std::size_t step = std::max<std::size_t>(1, message_limit() / sizeof(std::uint64_t));
  for (std::size_t at = 0; at < values.size(); at += step) {
    const auto count = static_cast<int>(std::min(step, values.size() - at));
    check_mpi(MPI_Allreduce(MPI_IN_PLACE, values.data() + at, count, MPI_UINT64_T, MPI_SUM, comm), "MPI_Allreduce");
  }
}

}  // namespace volseg::io
