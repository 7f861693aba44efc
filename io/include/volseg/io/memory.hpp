// SPDX-License-Identifier: MIT
// How much memory a rank may use, and how much it holds: the per-rank bound
// a job checks before it starts and while its data-dependent state grows.
#pragma once

#include <cstdint>
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

// "12 MiB", rounded to the nearest MiB.
std::string mib_text(std::uint64_t bytes);

}  // namespace volseg::io
