// SPDX-License-Identifier: MIT
// How much memory a rank may use, and how much it holds: the per-rank bound
// a job checks before it starts and while its data-dependent state grows.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <initializer_list>
#include <memory>
#include <string>

#include "volseg/io/comm.hpp"

namespace volseg::io {

struct MemoryBound {
  std::uint64_t bytes = 0;  // per rank, what it holds now included
  std::string source;       // for messages: "--memory", or where the node's figure came from
};

// Collective over comm. `requested` (bytes, from --memory) when non-zero;
// else this rank's resident memory now plus an equal share, among the ranks
// on its node, of what the node can still give: MemAvailable, or less where
// the job runs in a cgroup v2 with a memory limit (Slurm, systemd).
MemoryBound memory_per_rank(const Comm& comm, std::uint64_t requested);

// This node's MemAvailable (/proc/meminfo); 0 where /proc says nothing.
std::uint64_t available_memory_bytes();

// This process's resident memory now (VmRSS); 0 where /proc says nothing.
std::uint64_t resident_bytes();

// This process's peak resident memory (VmHWM); 0 where /proc says nothing.
std::uint64_t peak_resident_bytes();

// Memory for large buffers filled once and then read (the labeller's kept
// runs, the merge's parts): its own mapping, aligned to 2 MiB and advised as
// transparent huge pages (madvise MADV_HUGEPAGE), so the kernel faults it in
// 2 MiB at a time rather than 4 KiB, and freeing it hands it back to the
// system at once. Where THP is off or the kernel has none, the advice is
// refused and the pages are ordinary: nothing else changes. Pages never
// written take no memory. Throws std::bad_alloc when there is no memory.
inline constexpr std::size_t kHugePage = std::size_t{2} << 20;
struct FreeHuge {
  std::size_t bytes = 0;  // the mapping's length
  void operator()(std::byte* p) const noexcept;
};
using HugeBuffer = std::unique_ptr<std::byte[], FreeHuge>;
HugeBuffer allocate_huge(std::size_t bytes);

// "12 MiB", rounded to the nearest MiB.
std::string mib_text(std::uint64_t bytes);

// The most memory one piece that a reader decodes whole may take: a TIFF
// strip or tile, a Zarr, HDF5 or NetCDF-4 chunk, a VTI zlib block. A header
// decides how large these are, so a reader checks the claim against this
// budget before it allocates. A piece larger than the budget in a legitimate
// file is refused with the number and the option that allows it.
struct PieceBudget {
  std::uint64_t bytes = 0;
  std::string source;  // for messages: "--memory", "VOLSEG_MEMORY" or "the default"
};

// The budget now: what set_piece_budget last set; else VOLSEG_MEMORY (a
// size: 4096, 512M, 2GiB) from the environment; else the default, 1 GiB.
PieceBudget piece_budget();
// Sets the budget of this process (the CLI's --memory). bytes > 0.
void set_piece_budget(std::uint64_t bytes, std::string source);
// The product of the factors, or UINT64_MAX where it would not fit 64 bits:
// a size taken from a header, compared without overflow.
std::uint64_t saturating_product(std::initializer_list<std::uint64_t> factors);
// Throws volseg::Error "WHAT is N bytes (X MiB), more than the memory budget
// for one piece (1024 MiB, the default; --memory SIZE allows more)" when
// bytes exceeds the budget. WHAT names the file and the piece:
// "x.zarr: chunk 1024 x 1024 x 1024 of f4".
void check_piece(const std::string& what, std::uint64_t bytes);
// A size as --memory and VOLSEG_MEMORY take it (4096, 16M, 512MiB, 2G,
// 2GiB), in bytes; throws naming `what` on anything else or on 0.
std::uint64_t parse_memory_size(const std::string& what, const std::string& text);

}  // namespace volseg::io
