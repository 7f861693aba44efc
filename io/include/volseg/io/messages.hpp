// SPDX-License-Identifier: MIT
// Messages of any size. MPI counts and displacements are int, and Open MPI
// 4.1 has no large-count calls (MPI 4's MPI_Gatherv_c and the like), so one
// message holds at most INT_MAX elements, and fewer bytes in practice: a
// label job's 1.9 GiB gather hung in Open MPI's shared-memory transport.
// Every message whose size grows with the data (labeling's faces, parts and
// ids, the pyramid's brick records and histograms) goes through these calls,
// which move it in pieces of at most message_limit() bytes, each received at
// its 64-bit offset. Small fixed-size messages (a few figures per rank) stay
// plain MPI calls.
#pragma once

#include <mpi.h>

#include <cstddef>
#include <cstdint>
#include <span>
#include <type_traits>
#include <vector>

namespace volseg::io {

// The most bytes one MPI call of these moves: 256 MiB, or the environment's
// VOLSEG_MPI_MESSAGE_BYTES (at least 8). The tests set a few KiB, so every
// CI run takes the pieced path.
std::size_t message_limit();

// Collective. Every rank's byte count, on root (empty elsewhere).
std::vector<std::uint64_t> gather_sizes(MPI_Comm comm, std::uint64_t bytes, int root = 0);

// Collective, after gather_sizes. Root receives every rank's bytes, in rank
// order, into `all` (sum of sizes bytes; ignored elsewhere). Root's own are
// copied to their place unless `mine` is already there.
void gather_bytes(MPI_Comm comm, std::span<const std::byte> mine, std::byte* all,
                  const std::vector<std::uint64_t>& sizes, int root = 0);

// Collective. Root sends rank r its sizes[r] bytes of `all` (rank by rank,
// in order; sizes and all matter on root only); every rank receives its
// own into `mine`, which must be that size.
void scatter_bytes(MPI_Comm comm, const std::byte* all, const std::vector<std::uint64_t>& sizes,
                   std::span<std::byte> mine, int root = 0);

// Collective. Sends outgoing[r] to rank r; returns what every rank sent this
// one, in rank order, and (when given) how many bytes came from each.
std::vector<std::byte> exchange_bytes(MPI_Comm comm, const std::vector<std::span<const std::byte>>& outgoing,
                                      std::vector<std::uint64_t>* received_sizes = nullptr);

// Collective. How many bytes every rank sends this one (outgoing[r] goes
// to rank r).
std::vector<std::uint64_t> exchange_sizes(MPI_Comm comm, const std::vector<std::span<const std::byte>>& outgoing);

// Collective, after exchange_sizes: what every rank sends this one, in rank
// order, into received (the sum of sizes bytes). This rank's own list is
// copied to its place unless copy_own is false (it is there already).
void exchange_into(MPI_Comm comm, const std::vector<std::span<const std::byte>>& outgoing,
                   const std::vector<std::uint64_t>& sizes, std::byte* received, bool copy_own);

// Collective. exchange_bytes for lists of T: outgoing[r] goes to rank r and
// is freed; returns what every rank sent this one, in rank order, and (when
// given) how many elements came from each. A rank that only sends to itself
// keeps its list without a copy.
template <class T>
std::vector<T> exchange(MPI_Comm comm, std::vector<std::vector<T>>& outgoing,
                        std::vector<std::uint64_t>* counts = nullptr) {
  static_assert(std::is_trivially_copyable_v<T>);
  int rank = 0;
  MPI_Comm_rank(comm, &rank);
  std::vector<std::span<const std::byte>> spans;
  for (const auto& out : outgoing) spans.push_back(std::as_bytes(std::span(out)));
  const auto sizes = exchange_sizes(comm, spans);
  std::uint64_t total = 0;
  for (const auto size : sizes) total += size;
  auto& own = outgoing[static_cast<std::size_t>(rank)];
  std::vector<T> received;
  const bool only_own = sizes[static_cast<std::size_t>(rank)] == total;
  if (only_own)
    received = std::move(own);
  else
    received.resize(total / sizeof(T));
  exchange_into(comm, spans, sizes, reinterpret_cast<std::byte*>(received.data()), !only_own);
  for (auto& out : outgoing) std::vector<T>().swap(out);
  if (counts) {
    counts->clear();
    for (const auto size : sizes) counts->push_back(size / sizeof(T));
  }
  return received;
}

// Collective. An element-wise sum of `values` over the ranks, in place.
void sum_in_place(MPI_Comm comm, std::span<std::uint64_t> values);

// Collective. Every rank's `mine` on root, in rank order (empty elsewhere);
// counts (when given) gets each rank's element count on root.
template <class T>
std::vector<T> gather(MPI_Comm comm, std::span<const T> mine, int root = 0,
                      std::vector<std::uint64_t>* counts = nullptr) {
  static_assert(std::is_trivially_copyable_v<T>);
  const auto sizes = gather_sizes(comm, mine.size_bytes(), root);
  std::vector<T> all;
  std::uint64_t total = 0;
  for (const auto size : sizes) total += size;
  all.resize(total / sizeof(T));
  gather_bytes(comm, std::as_bytes(mine), reinterpret_cast<std::byte*>(all.data()), sizes, root);
  if (counts) {
    counts->clear();
    for (const auto size : sizes) counts->push_back(size / sizeof(T));
  }
  return all;
}

}  // namespace volseg::io
