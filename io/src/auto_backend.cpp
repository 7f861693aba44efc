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

#include "raw/raw_volume.hpp"
#include "volseg/io/error.hpp"
#include "volseg/io/memory.hpp"
#include "volseg/io/nrrd.hpp"

namespace volseg::io {

namespace {

constexpr std::uint64_t kWindowPages = 16;
// A share cached above which mapping beats reading everything with
// O_DIRECT: cold, ranged-uring took about 0.85 of mmap-advise's time, and a
// cached brick costs mmap-advise about a quarter of an uncached one, so the
// two cross near 0.2 (docs/ranged.md, "auto").
constexpr double kWarm = 0.25;

std::string percent(double share) {
  char text[16];
  std::snprintf(text, sizeof text, "%.0f%%", 100 * share);
  return text;
}

AutoChoice choose_raw(const std::string& header_path) {
  NrrdHeader header;
  Residency residency;
  try {
    header = raw::parse_raw_header(raw::read_header_text(header_path, 1 << 20), header_path);
    residency = sample_residency(header.data_path);
  } catch (const Error& e) {
    // A damaged header or data file is the reader's to report, in its words.
    AutoChoice fallback;
    fallback.backend = reading_backend(FileFormat::raw);
    fallback.reason = "the input could not be sampled (" + std::string(e.what()) + ")";
    return fallback;
  }
  const std::uint64_t available = available_memory_bytes();

  AutoChoice choice;
  choice.resident = residency.fraction;
  const std::string seen = percent(residency.fraction) + " of the input's " + mib_text(header.info.bytes()) +
                           " in the page cache, " + mib_text(available) + " available";
  if (residency.fraction >= kWarm) {
    // Warm: every backend reads at memory speed; what differs is the copy
    // (posix, ranged-uring) or the probing (ranged-mmap) a brick costs,
    // which mapping the cached pages avoids. Masks of whole-plane bricks go
    // out with O_DIRECT and create no page-cache pages. With every sampled
    // page cached there is nothing to read ahead: plain mmap spares the
    // WILLNEED a brick.
    const bool all = residency.fraction >= 1.0;
    choice.backend = all ? "mmap" : "mmap-advise";
    choice.reason = "warm (" + seen + "): " + choice.backend + " maps the cached pages without a copy" +
                    (all ? "" : ", and reads ahead the rest");
    return choice;
  }
  // Cold: the device is the limit. ranged-uring reads with O_DIRECT into
  // huge-page buffers, so the device gets 4 MiB requests eight deep per
  // rank and no page-cache pages are made for bytes read once.
  choice.backend = "ranged-uring";
  choice.reason = "cold (" + seen + "): ranged-uring reads 4 MiB O_DIRECT requests into its own buffers";
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
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    throw Error(path + " is not a regular file");
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
  const std::uint64_t count =
      std::max<std::uint64_t>(1, std::min<std::uint64_t>(static_cast<std::uint64_t>(windows), pages / kWindowPages));
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

AutoChoice choose_backend(const Comm& comm, FileFormat format, const std::string& input_path, Access access) {
  AutoChoice choice;
  collectively(comm, [&] {
    if (comm.rank() != 0) return;
    if (format == FileFormat::raw && access == Access::copy) {
      choice.backend = "posix";
      choice.reason =
          "a raw input copied once into the reader's own buffers: posix preads it without mapping the "
          "file, whose pages would count in the rank's memory beside the copy";
    } else if (format == FileFormat::raw) {
      choice = choose_raw(input_path);
    } else {
      choice.backend = reading_backend(format);
      choice.reason = "a " + format_name(format) + " input is read by " + choice.backend;
    }
  });
  choice.backend = comm.broadcast(choice.backend);
  choice.reason = comm.broadcast(choice.reason);
  char resident[32];
  std::snprintf(resident, sizeof resident, "%.17g", choice.resident);
  choice.resident = std::stod(comm.broadcast(resident));
  return choice;
}

AutoChoice resolve_backend(const Comm& comm, const std::string& asked, const std::string& input_path, Access access) {
  if (asked != "auto") return {asked, {}, -1};
  return choose_backend(comm, detect_format(comm, input_path), input_path, access);
}

AutoChoice resolve_backend(const Comm& comm, const std::string& asked, FileFormat format, const std::string& input_path,
                           Access access) {
  if (asked != "auto") return {asked, {}, -1};
  return choose_backend(comm, format, input_path, access);
}

}  // namespace volseg::io
