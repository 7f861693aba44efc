// SPDX-License-Identifier: MIT
#include "volseg/io/memory.hpp"

#include <sys/mman.h>

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <limits>
#include <mutex>
#include <new>
#include <optional>
#include <sstream>

#include "volseg/io/error.hpp"

namespace volseg::io {
namespace {

// A "Key: N kB" line of a /proc file, in bytes; nullopt-like 0 when absent.
std::uint64_t proc_kib(const char* path, const char* key) {
  std::FILE* file = std::fopen(path, "r");
  if (!file) return 0;
  char line[256];
  unsigned long long kib = 0;
  const std::string pattern = std::string(key) + " %llu kB";
  bool found = false;
  while (!found && std::fgets(line, sizeof line, file)) found = std::sscanf(line, pattern.c_str(), &kib) == 1;
  std::fclose(file);
  return found ? kib * 1024 : 0;
}

// A cgroup v2 file of this process's group holding one number ("max": none).
std::uint64_t cgroup_value(const std::string& name) {
  std::ifstream groups("/proc/self/cgroup");
  std::string line, path;
  while (std::getline(groups, line))
    if (line.rfind("0::", 0) == 0) path = line.substr(3);
  if (path.empty()) return 0;
  std::ifstream value("/sys/fs/cgroup" + path + "/" + name);
  std::string text;
  if (!(value >> text) || text == "max") return 0;
  try {
    return std::stoull(text);
  } catch (const std::exception&) {
    return 0;
  }
}

}  // namespace

std::uint64_t available_memory_bytes() { return proc_kib("/proc/meminfo", "MemAvailable:"); }

std::uint64_t resident_bytes() { return proc_kib("/proc/self/status", "VmRSS:"); }

std::uint64_t peak_resident_bytes() { return proc_kib("/proc/self/status", "VmHWM:"); }

HugeBuffer allocate_huge(std::size_t bytes) {
  const std::size_t size = (std::max<std::size_t>(bytes, 1) + kHugePage - 1) / kHugePage * kHugePage;
  // Map a huge page more than asked, then unmap the ends outside the
  // aligned range: a huge page needs a 2 MiB-aligned range of its own.
  void* mapped = ::mmap(nullptr, size + kHugePage, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (mapped == MAP_FAILED) throw std::bad_alloc();
  auto* raw = static_cast<std::byte*>(mapped);
  const auto address = reinterpret_cast<std::uintptr_t>(raw);
  std::byte* aligned = raw + ((kHugePage - address % kHugePage) % kHugePage);
  // Unmapping parts of a fresh private mapping of our own cannot fail but
  // for a bad range, which these are not.
  if (aligned > raw) (void)::munmap(raw, static_cast<std::size_t>(aligned - raw));
  if (std::byte* end = aligned + size; end < raw + size + kHugePage)
    (void)::munmap(end, static_cast<std::size_t>(raw + size + kHugePage - end));
#if defined(MADV_HUGEPAGE)
  // Advice only: refused (EINVAL) where the kernel has no THP, and then the
  // memory is ordinary pages, as good as before.
  (void)::madvise(aligned, size, MADV_HUGEPAGE);
#endif
  return HugeBuffer(aligned, FreeHuge{size});
}

void FreeHuge::operator()(std::byte* p) const noexcept {
  // The whole mapping allocate_huge made: unmapping it cannot fail.
  if (p != nullptr) (void)::munmap(p, bytes);
}

std::string mib_text(std::uint64_t bytes) { return std::to_string((bytes + (1 << 19)) >> 20) + " MiB"; }

MemoryBound memory_per_rank(const Comm& comm, std::uint64_t requested) {
  if (requested > 0) return {requested, "--memory"};
  MPI_Comm node = MPI_COMM_NULL;
  check_mpi(MPI_Comm_split_type(comm.get(), MPI_COMM_TYPE_SHARED, comm.rank(), MPI_INFO_NULL, &node),
            "MPI_Comm_split_type");
  int local = 1;
  const int size_status = MPI_Comm_size(node, &local);
  const int free_status = MPI_Comm_free(&node);
  check_mpi(size_status, "MPI_Comm_size");
  check_mpi(free_status, "MPI_Comm_free");

  std::uint64_t spare = available_memory_bytes();
  bool known = spare > 0;
  std::string where = "MemAvailable";
  if (const std::uint64_t limit = cgroup_value("memory.max"); limit > 0) {
    const std::uint64_t used = cgroup_value("memory.current");
    const std::uint64_t left = limit > used ? limit - used : 0;
    if (!known || left < spare) spare = left, where = "the job's cgroup limit";
    known = true;
  }
  if (!known) return {std::numeric_limits<std::uint64_t>::max(), "no bound (this node's /proc says nothing)"};
  const std::uint64_t bytes = resident_bytes() + spare / static_cast<std::uint64_t>(local);
  std::ostringstream source;
  source << "this node's " << where << " (" << mib_text(spare) << ") shared by its " << local << " rank(s)";
  return {bytes, source.str()};
}

namespace {

constexpr std::uint64_t kDefaultPieceBudget = std::uint64_t{1} << 30;

std::mutex budget_mutex;
std::optional<PieceBudget> budget_set;

}  // namespace

std::uint64_t parse_memory_size(const std::string& what, const std::string& text) {
  std::uint64_t number = 0;
  const char* begin = text.data();
  const char* end = begin + text.size();
  auto [stop, ec] = std::from_chars(begin, end, number);
  const std::string suffix(stop, end);
  std::uint64_t scale = 1;
  if (suffix.empty() || suffix == "B")
    scale = 1;
  else if (suffix == "K" || suffix == "k" || suffix == "KiB")
    scale = std::uint64_t{1} << 10;
  else if (suffix == "M" || suffix == "MiB")
    scale = std::uint64_t{1} << 20;
  else if (suffix == "G" || suffix == "GiB")
    scale = std::uint64_t{1} << 30;
  else if (suffix == "T" || suffix == "TiB")
    scale = std::uint64_t{1} << 40;
  else
    ec = std::errc::invalid_argument;
  if (ec != std::errc() || stop == begin || number == 0)
    throw Error(what + " " + text + ": not a positive size (4096, 512M, 2GiB)");
  if (number > std::numeric_limits<std::uint64_t>::max() / scale) throw Error(what + " " + text + ": too large");
  return number * scale;
}

PieceBudget piece_budget() {
  {
    const std::lock_guard lock(budget_mutex);
    if (budget_set) return *budget_set;
  }
  if (const char* text = std::getenv("VOLSEG_MEMORY"); text && *text)
    return {parse_memory_size("VOLSEG_MEMORY", text), "VOLSEG_MEMORY"};
  return {kDefaultPieceBudget, "the default"};
}

void set_piece_budget(std::uint64_t bytes, std::string source) {
  if (bytes == 0) throw Error(source + ": a memory budget of 0 bytes");
  const std::lock_guard lock(budget_mutex);
  budget_set = PieceBudget{bytes, std::move(source)};
}

std::uint64_t saturating_product(std::initializer_list<std::uint64_t> factors) {
  std::uint64_t product = 1;
  for (const std::uint64_t factor : factors) {
    if (factor == 0) return 0;
    if (product > std::numeric_limits<std::uint64_t>::max() / factor) {
      // Saturated; a later 0 still makes the product 0.
      for (const std::uint64_t rest : factors)
        if (rest == 0) return 0;
      return std::numeric_limits<std::uint64_t>::max();
    }
    product *= factor;
  }
  return product;
}

void check_piece(const std::string& what, std::uint64_t bytes) {
  const PieceBudget budget = piece_budget();
  if (bytes <= budget.bytes) return;
  const std::string size = bytes == std::numeric_limits<std::uint64_t>::max()
                               ? std::string("more than 2^64 bytes")
                               : std::to_string(bytes) + " bytes (" + mib_text(bytes) + ")";
  throw Error(what + " is " + size + ", more than the memory budget for one piece (" + mib_text(budget.bytes) + ", " +
              budget.source + "; --memory SIZE allows more)");
}

}  // namespace volseg::io
