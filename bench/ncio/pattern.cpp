// SPDX-License-Identifier: MIT
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <sstream>
#include <stdexcept>

#include "ncio.hpp"

namespace volseg::bench::ncio {

std::byte expected(std::uint64_t o) {
  unsigned v = 1 + static_cast<unsigned>(((o + 1) * 0x9E3779B97F4A7C15ull) >> 56) % 251;  // 1..251
  if (v >= 0xA5) ++v;
  if (v >= 0xEE) ++v;
  return static_cast<std::byte>(v);
}

void fail(const std::string& message) { throw std::runtime_error(message); }

void check(int code, const char* what) {
  if (code != MPI_SUCCESS) {
    char text[MPI_MAX_ERROR_STRING];
    int length = 0;
    MPI_Error_string(code, text, &length);
    fail(std::string(what) + ": " + std::string(text, static_cast<std::size_t>(length)));
  }
}

void pwrite_all(int fd, const std::byte* from, std::uint64_t length, std::uint64_t offset) {
  while (length > 0) {
    const ssize_t n = ::pwrite(fd, from, length, static_cast<off_t>(offset));
    if (n < 0) {
      if (errno == EINTR) continue;
      fail(std::string("pwrite: ") + std::strerror(errno));
    }
    from += n;
    offset += static_cast<std::uint64_t>(n);
    length -= static_cast<std::uint64_t>(n);
  }
}

Case parse_case(const std::string& name) {
  if (name == "c-c") return {name, false, false};
  if (name == "nc-c") return {name, true, false};
  if (name == "c-nc") return {name, false, true};
  if (name == "nc-nc") return {name, true, true};
  fail("unknown case " + name + " (c-c, nc-c, c-nc, nc-nc)");
  return {};
}

Pattern make_pattern(const Case& kind, std::uint64_t count, std::uint64_t size, std::uint64_t spacing, int rank,
                     int ranks) {
  Pattern p;
  p.ranks = ranks;
  p.rank = rank;
  p.kind = kind;
  p.count = count;
  p.size = size;
  p.spacing = spacing;
  const auto P = static_cast<std::uint64_t>(ranks), r = static_cast<std::uint64_t>(rank);
  const std::uint64_t memory_stride = kind.memory_nc ? size + spacing : size;
  p.memory.assign(count * memory_stride, kPoison);
  for (std::uint64_t j = 0; j < count; ++j) {
    const std::uint64_t file = kind.file_nc ? (j * P + r) * (size + spacing) : (r * count + j) * size;
    const std::uint64_t memory = j * memory_stride;
    for (std::uint64_t k = 0; k < size; ++k) p.memory[memory + k] = expected(file + k);
    if (!p.pieces.empty()) {
      Piece& last = p.pieces.back();
      if (last.offset + last.length == file && last.memory + last.length == memory) {
        last.length += size;
        continue;
      }
    }
    p.pieces.push_back(Piece{file, size, memory});
  }
  p.extent = kind.file_nc ? (count * P - 1) * (size + spacing) + size : P * count * size;
  p.bytes = P * count * size;
  return p;
}

void prepare_file(const std::string& path, const Pattern& p, bool prefill, bool cold) {
  std::string error;
  if (p.rank == 0) {
    const int fd = ::open(path.c_str(), O_CREAT | O_WRONLY | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) {
      error = "create " + path + ": " + std::strerror(errno);
    } else {
      if (prefill) {
        std::vector<std::byte> fill(std::min<std::uint64_t>(p.extent, 16u << 20), kFill);
        for (std::uint64_t at = 0; at < p.extent; at += fill.size())
          pwrite_all(fd, fill.data(), std::min<std::uint64_t>(fill.size(), p.extent - at), at);
        if (::fdatasync(fd) != 0) error = std::string("fdatasync: ") + std::strerror(errno);
        // Evicts this file's (clean) pages only: reads of the holes go to the disk.
        if (cold && ::posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED) != 0) error = "posix_fadvise failed";
      }
      if (::close(fd) != 0 && error.empty()) error = "close " + path + ": " + std::strerror(errno);
    }
  }
  int bad = !error.empty();
  MPI_Allreduce(MPI_IN_PLACE, &bad, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  if (bad) fail(error.empty() ? "rank 0 could not create " + path : error);
}

std::uint64_t verify_file(const std::string& path, const Pattern& p, std::string& first) {
  std::uint64_t bad = 0;
  std::string mine;
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  struct stat st {};
  if (fd < 0 || ::fstat(fd, &st) != 0) {
    bad = 1;
    mine = "open " + path + ": " + std::strerror(errno);
  } else {
    if (static_cast<std::uint64_t>(st.st_size) != p.extent && p.rank == 0) {
      ++bad;
      mine = "file size " + std::to_string(st.st_size) + " != extent " + std::to_string(p.extent);
    }
    const std::uint64_t share = (p.extent + p.ranks - 1) / p.ranks;
    const std::uint64_t begin = std::min(p.extent, share * p.rank), end = std::min(p.extent, begin + share);
    std::vector<std::byte> block(1u << 20);
    for (std::uint64_t at = begin; at < end; at += block.size()) {
      const std::uint64_t n = std::min<std::uint64_t>(block.size(), end - at);
      const ssize_t got = ::pread(fd, block.data(), n, static_cast<off_t>(at));
      if (got != static_cast<ssize_t>(n)) {
        ++bad;
        if (mine.empty()) mine = "short read at " + std::to_string(at);
        break;
      }
      for (std::uint64_t i = 0; i < n; ++i) {
        const std::uint64_t o = at + i;
        const std::byte want = p.in_region(o) ? expected(o) : kFill;
        if (block[i] != want) {
          if (mine.empty()) {
            std::ostringstream text;
            text << "byte " << o << " is 0x" << std::hex << std::to_integer<int>(block[i]) << ", want 0x"
                 << std::to_integer<int>(want) << (p.in_region(o) ? " (region)" : " (gap)");
            mine = text.str();
          }
          ++bad;
        }
      }
    }
  }
  if (fd >= 0) ::close(fd);
  std::uint64_t total = 0;
  MPI_Allreduce(&bad, &total, 1, MPI_UINT64_T, MPI_SUM, MPI_COMM_WORLD);
  // The lowest failing rank's description.
  int who = bad ? p.rank : p.ranks;
  MPI_Allreduce(MPI_IN_PLACE, &who, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  if (who < p.ranks) {
    int length = static_cast<int>(mine.size());
    MPI_Bcast(&length, 1, MPI_INT, who, MPI_COMM_WORLD);
    mine.resize(static_cast<std::size_t>(length));
    MPI_Bcast(mine.data(), length, MPI_CHAR, who, MPI_COMM_WORLD);
    first = "rank " + std::to_string(who) + ": " + mine;
  }
  return total;
}

}  // namespace volseg::bench::ncio
