// SPDX-License-Identifier: MIT
#include "volseg/io/twophase/partitioner.hpp"

#include "volseg/io/error.hpp"

namespace volseg::io::twophase {

std::uint64_t even_boundary(const Region& region, int n, int i) {
  const std::uint64_t length = region.end - region.begin;
  const auto parts = static_cast<std::uint64_t>(n), index = static_cast<std::uint64_t>(i);
  const std::uint64_t share = length / parts + (length % parts != 0);
  std::uint64_t step = 0;
  if (__builtin_mul_overflow(share, index, &step) || step >= length) return region.end;
  return region.begin + step;
}

const char* partitioner_names() { return "even, aligned, static-cyclic, group-cyclic, persistent or auto"; }

std::unique_ptr<Partitioner> make_partitioner(const std::string& name) {
  if (name == "even") return make_even_partitioner();
  if (name == "aligned") return make_aligned_partitioner();
  if (name == "static-cyclic") return make_static_cyclic_partitioner();
  if (name == "group-cyclic") return make_group_cyclic_partitioner();
  if (name == "persistent") return make_persistent_partitioner();
  if (name == "auto") return make_auto_partitioner();
  throw Error("twophase: partition=" + name + " is not a partitioning method (" + partitioner_names() + ")");
}

}  // namespace volseg::io::twophase
