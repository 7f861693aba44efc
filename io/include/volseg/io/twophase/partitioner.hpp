// SPDX-License-Identifier: MIT
// The file-domain partitioning methods of Coloma et al. and Liao & Choudhary, one file each
// under io/twophase/, behind this interface. A partitioner turns one
// collective call's aggregate access region (the lowest and highest byte
// any rank touches) into FileDomains. Every rank runs it with the same input
// and gets the same answer, so it costs no communication.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "volseg/io/twophase/domains.hpp"

namespace volseg::io::twophase {

enum class Direction { read, write };

struct PartitionContext {
  int aggregators = 1;
  std::uint64_t lock_size = 4096;    // the file system's lock granularity (stripe size on Lustre/GPFS)
  int io_servers = 1;                // group size of group-cyclic
  std::uint64_t file_size = 0;       // at open; persistent realms cover at least this
  std::uint64_t realm_size = 0;      // persistent: 0 = ceil(file extent / aggregators), aligned
  std::string fs_profile = "local";  // auto: lustre | gpfs | local
};

struct Region {
  std::uint64_t begin = 0, end = 0;  // the aggregate access region [begin, end), non-empty
};

class Partitioner {
 public:
  virtual ~Partitioner() = default;
  virtual std::string name() const = 0;
  // The domains for one collective call. Persistent partitioners answer the
  // same for every call of a file once they have answered the first.
  virtual FileDomains partition(const Region& region, Direction direction, const PartitionContext& context) = 0;
  // What partition() resolved to in its last call (auto names its choice).
  virtual std::string chosen() const { return name(); }
};

// even | aligned | static-cyclic | group-cyclic | persistent | auto; throws
// naming the choices for anything else.
std::unique_ptr<Partitioner> make_partitioner(const std::string& name);
const char* partitioner_names();

// Each method, for make_partitioner and for tests.
std::unique_ptr<Partitioner> make_even_partitioner();
std::unique_ptr<Partitioner> make_aligned_partitioner();
std::unique_ptr<Partitioner> make_static_cyclic_partitioner();
std::unique_ptr<Partitioner> make_group_cyclic_partitioner();
std::unique_ptr<Partitioner> make_persistent_partitioner();
std::unique_ptr<Partitioner> make_auto_partitioner();

// The even split of [begin, end) into n contiguous pieces of ROMIO
// (ADIOI_Calc_file_domains): piece i starts at begin + i * ceil(len / n).
std::uint64_t even_boundary(const Region& region, int n, int i);

}  // namespace volseg::io::twophase
