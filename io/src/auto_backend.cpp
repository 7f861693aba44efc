// SPDX-License-Identifier: MIT
#include "volseg/io/auto_backend.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <sstream>

#include "volseg/io/error.hpp"
#include "volseg/io/nrrd.hpp"

namespace volseg::io {

namespace {

constexpr std::uint64_t kWindowPages = 16;

// MemAvailable and the kernel's threshold for background writeback of
// dirty pages (vm.dirty_background_bytes, else _ratio of what is available).
struct Memory {
  std::uint64_t available = 0, dirty_background = 0;
};

std::uint64_t read_number(const char* path) {
  std::ifstream in(path);
  std::uint64_t value = 0;
  in >> value;
  return in ? value : 0;
}

Memory memory() {
  Memory m;
  std::ifstream meminfo("/proc/meminfo");
  std::string key;
  std::uint64_t kib = 0;
  std::string unit;
  while (meminfo >> key >> kib) {
    std::getline(meminfo, unit);
    if (key == "MemAvailable:") m.available = kib * 1024;
  }
  if (const auto bytes = read_number("/proc/sys/vm/dirty_background_bytes"); bytes > 0) {
    m.dirty_background = bytes;
  } else {
    const auto ratio = read_number("/proc/sys/vm/dirty_background_ratio");
    m.dirty_background = m.available / 100 * (ratio > 0 ? ratio : 10);
  }
  return m;
}

std::string mib(std::uint64_t bytes) { return std::to_string((bytes + (1 << 19)) >> 20) + " MiB"; }

std::string percent(double share) {
  char text[16];
  std::snprintf(text, sizeof text, "%.0f%%", 100 * share);
  return text;
}

bool user_gave(const std::vector<std::string>& hints, const std::string& key) {
  return std::any_of(hints.begin(), hints.end(), [&](const std::string& h) { return h.rfind(key + "=", 0) == 0; });
}

AutoChoice choose_raw(const std::string& header_path, const std::vector<std::string>& user_hints) {
  std::ifstream in(header_path, std::ios::binary);
  if (!in) throw_errno("open", header_path);
  std::ostringstream text;
  text << in.rdbuf();
  const NrrdHeader header = parse_nrrd(text.str(), header_path);
  const Residency residency = sample_residency(header.data_path);
  const std::uint64_t mask_bytes = static_cast<std::uint64_t>(header.info.dims[0] * header.info.dims[1] * header.info.dims[2]);
  const Memory mem = memory();

  AutoChoice choice;
  choice.resident = residency.fraction;
  const std::string seen = percent(residency.fraction) + " of the input's pages in the page cache";
  if (residency.fraction >= 0.5) {
    // Warm: every backend reads at memory speed; what differs is the copy
    // (posix, ranged) and the probing (ranged-mmap) each brick costs, which
    // mapping the resident pages avoids. The mask goes out with O_DIRECT
    // (whole-plane bricks), creating no page-cache pages.
    choice.backend = "mmap-advise";
    choice.reason = "warm (" + seen + "): mmap-advise maps the cached pages without a copy; masks of whole-plane "
                    "bricks are written with O_DIRECT";
    return choice;
  }
  // Cold: the device is the limit. ranged-mmap asks for up to 128 MiB of
  // bricks per rank ahead (WILLNEED) and takes whichever is resident first,
  // so the device always has the readahead of several bricks queued;
  // mmap-advise looks one brick ahead.
  choice.backend = "ranged-mmap";
  choice.reason = "cold (" + seen + "): ranged-mmap keeps the readahead of several bricks queued on the device";
  if (user_gave(user_hints, "direct_write")) return choice;
  if (mask_bytes <= mem.dirty_background) {
    // A mask the page cache takes without starting writeback is written to
    // the device after the job, not in the middle of its reads.
    choice.writer_hints.push_back("direct_write=0");
    choice.reason += "; the mask (" + mib(mask_bytes) + ") is below the dirty-page threshold (" +
                     mib(mem.dirty_background) + "), so it is written back after the reads, not during them";
  } else {
    choice.reason += "; the mask (" + mib(mask_bytes) + ") is above the dirty-page threshold (" +
                     mib(mem.dirty_background) + "), so it is written with O_DIRECT rather than through throttled writeback";
  }
  return choice;
}

}  // namespace

Residency sample_residency(const std::string& path, int windows) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw_errno("open", path);
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    const int saved = errno;
    ::close(fd);
    throw_errno("stat", path, saved);
  }
  Residency result;
  const auto size = static_cast<std::uint64_t>(st.st_size);
  if (size == 0) {
    ::close(fd);
    return result;
  }
  const auto page = static_cast<std::uint64_t>(::sysconf(_SC_PAGESIZE));
  const std::uint64_t pages = (size + page - 1) / page;
  void* map = ::mmap(nullptr, size, PROT_READ, MAP_SHARED, fd, 0);
  const int map_errno = errno;
  ::close(fd);
  if (map == MAP_FAILED) throw_errno("mmap", path, map_errno);
  const std::uint64_t count = std::max<std::uint64_t>(1, std::min<std::uint64_t>(static_cast<std::uint64_t>(windows),
                                                                                  pages / kWindowPages));
  std::vector<unsigned char> vec(kWindowPages);
  std::uint64_t resident = 0;
  for (std::uint64_t w = 0; w < count; ++w) {
    const std::uint64_t first = count == 1 ? 0 : w * (pages - std::min(pages, kWindowPages)) / (count - 1);
    const std::uint64_t n = std::min(kWindowPages, pages - first);
    if (::mincore(static_cast<char*>(map) + first * page, n * page, vec.data()) != 0) {
      const int saved = errno;
      ::munmap(map, size);
      throw_errno("mincore", path, saved);
    }
    for (std::uint64_t i = 0; i < n; ++i) resident += vec[i] & 1;
    result.pages_sampled += n;
  }
  ::munmap(map, size);
  result.fraction = static_cast<double>(resident) / static_cast<double>(result.pages_sampled);
  return result;
}

AutoChoice choose_backend(const Comm& comm, FileFormat format, const std::string& input_path,
                          const std::vector<std::string>& user_hints) {
  AutoChoice choice;
  collectively(comm, [&] {
    if (comm.rank() != 0) return;
    if (format == FileFormat::raw) {
      choice = choose_raw(input_path, user_hints);
    } else {
      choice.backend = reading_backend(format);
      choice.reason = "a " + format_name(format) + " input is read by " + choice.backend;
    }
  });
  choice.backend = comm.broadcast(choice.backend);
  choice.reason = comm.broadcast(choice.reason);
  std::string hints;
  for (const auto& h : choice.writer_hints) hints += h + "\n";
  hints = comm.broadcast(hints);
  choice.writer_hints.clear();
  for (std::size_t at = 0, end; (end = hints.find('\n', at)) != std::string::npos; at = end + 1)
    choice.writer_hints.push_back(hints.substr(at, end - at));
  char resident[32];
  std::snprintf(resident, sizeof resident, "%.17g", choice.resident);
  choice.resident = std::stod(comm.broadcast(resident));
  return choice;
}

}  // namespace volseg::io
