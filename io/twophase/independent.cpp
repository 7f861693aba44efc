// SPDX-License-Identifier: MIT
// Independent I/O inside a collective call. When the ranks' accesses do not
// interleave (every rank's [first byte, last byte] is disjoint from every
// other's), gathering them at aggregators only adds a copy and a message:
// ROMIO then lets each rank do its own I/O (romio_cb_read/romio_cb_write=
// automatic, ADIOI_GEN_WriteStridedColl's interleave check), with its own
// data sieving. So does this engine, with hints cb_read and cb_write.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <utility>

#include "file_io.hpp"
#include "volseg/io/error.hpp"
#include "volseg/io/faults.hpp"
#include "volseg/io/trace.hpp"

namespace volseg::io::twophase::detail {

void pread_exact(int fd, std::byte* to, std::uint64_t length, std::uint64_t offset, const std::string& path,
                 bool zero_past_end) {
  while (length > 0) {
    trace::Span span(trace::Op::read, static_cast<std::int64_t>(offset));
    const auto fault = faults::at(faults::Call::read);
    const std::uint64_t asked = fault.short_io ? std::max<std::uint64_t>(length / 2, 1) : length;
    const ssize_t n = fault.error ? (errno = fault.error, -1) : ::pread(fd, to, asked, static_cast<off_t>(offset));
    if (n > 0) span.set_bytes(static_cast<std::uint64_t>(n));
    if (n < 0) {
      if (errno == EINTR) continue;
      throw_errno("read", path);
    }
    if (n == 0) {
      if (!zero_past_end) throw Error(path + ": read past the end of the file at byte " + std::to_string(offset));
      std::memset(to, 0, length);
      return;
    }
    to += n;
    offset += static_cast<std::uint64_t>(n);
    length -= static_cast<std::uint64_t>(n);
  }
}

void pwrite_exact(int fd, const std::byte* from, std::uint64_t length, std::uint64_t offset, const std::string& path,
                  std::uint64_t align) {
  while (length > 0) {
    trace::Span span(trace::Op::write, static_cast<std::int64_t>(offset));
    const auto fault = faults::at(faults::Call::write);
    const std::uint64_t asked = fault.short_io ? std::max<std::uint64_t>(length / 2 / align * align, align) : length;
    const ssize_t n = fault.error ? (errno = fault.error, -1) : ::pwrite(fd, from, asked, static_cast<off_t>(offset));
    if (n > 0) span.set_bytes(static_cast<std::uint64_t>(n));
    if (n < 0) {
      if (errno == EINTR) continue;
      throw_errno("write", path);
    }
    from += n;
    offset += static_cast<std::uint64_t>(n);
    length -= static_cast<std::uint64_t>(n);
  }
}

bool sieve_access(std::uint64_t begin, std::uint64_t end, std::size_t runs, const Options& options) {
  if (runs < 2) return false;
  if (options.sieving == Sieving::always) return true;
  if (options.sieving == Sieving::never) return false;
  return (end - begin) / runs < options.ds_threshold;
}

namespace {

// Consecutive pieces (sorted by offset) whose file span fits the buffer.
struct Chunk {
  std::size_t first = 0, last = 0;   // pieces [first, last)
  std::uint64_t begin = 0, end = 0;  // file bytes covered
  std::size_t runs = 0;              // separate runs of file bytes (overlaps merged)
};

std::vector<Chunk> chunks_of(const std::vector<Piece>& pieces, std::uint64_t limit) {
  std::vector<Chunk> chunks;
  for (std::size_t i = 0; i < pieces.size(); ++i) {
    const Piece& piece = pieces[i];
    const std::uint64_t end = piece.offset + piece.length;
    if (!chunks.empty()) {
      Chunk& chunk = chunks.back();
      if (std::max(end, chunk.end) - chunk.begin <= limit) {
        if (piece.offset > chunk.end) ++chunk.runs;
        chunk.end = std::max(chunk.end, end);
        chunk.last = i + 1;
        continue;
      }
    }
    chunks.push_back(Chunk{i, i + 1, piece.offset, end, 1});
  }
  return chunks;
}

using Clock = std::chrono::steady_clock;

template <class Fn>
void timed_io(Timing& timing, Fn&& fn) {
  const auto start = Clock::now();
  fn();
  timing.io += std::chrono::duration<double>(Clock::now() - start).count();
}

// One call per run of pieces that touch in the file. A run whose pieces
// also touch in memory goes straight to memory; otherwise it is staged
// through the buffer (packed before a write, scattered after a read), so
// noncontiguous memory costs a copy, not a system call per piece.
struct Run {
  std::uint64_t offset = 0, length = 0;
  std::size_t first = 0, last = 0;  // pieces [first, last)
  bool memory_contiguous = true;
};

template <class Fn>
void per_run(const std::vector<Piece>& pieces, const Chunk& chunk, Fn&& io) {
  std::size_t i = chunk.first;
  while (i < chunk.last) {
    Run run{pieces[i].offset, pieces[i].length, i, i + 1, true};
    while (run.last < chunk.last && pieces[run.last].offset == run.offset + run.length) {
      run.memory_contiguous = run.memory_contiguous && pieces[run.last].memory == pieces[i].memory + run.length;
      run.length += pieces[run.last++].length;
    }
    io(run);
    i = run.last;
  }
}

void count(Timing& timing, const Chunk& chunk, bool sieve) {
  if (chunk.runs == 1)
    ++timing.contiguous;
  else if (sieve)
    ++timing.sieved;
  else
    ++timing.naive;
}

}  // namespace

void independent_read(const IndependentCall& call, const std::vector<Piece>& pieces, Timing& timing) {
  timed_io(timing, [&] {
    for (const Chunk& chunk : chunks_of(pieces, call.options.cb_buffer_size)) {
      const bool sieve = sieve_access(chunk.begin, chunk.end, chunk.runs, call.options);
      count(timing, chunk, sieve);
      if (!sieve) {
        per_run(pieces, chunk, [&](const Run& run) {
          std::byte* into = run.memory_contiguous ? pieces[run.first].memory : call.scratch(run.length);
          pread_exact(call.fd, into, run.length, run.offset, call.path, false);
          if (!run.memory_contiguous)
            for (std::size_t i = run.first; i < run.last; ++i)
              std::memcpy(pieces[i].memory, into + (pieces[i].offset - run.offset), pieces[i].length);
          ++timing.io_calls;
          timing.file_bytes += run.length;
        });
        continue;
      }
      std::byte* buffer = call.scratch(chunk.end - chunk.begin);
      pread_exact(call.fd, buffer, chunk.end - chunk.begin, chunk.begin, call.path, false);
      ++timing.io_calls;
      timing.file_bytes += chunk.end - chunk.begin;
      for (std::size_t i = chunk.first; i < chunk.last; ++i)
        std::memcpy(pieces[i].memory, buffer + (pieces[i].offset - chunk.begin), pieces[i].length);
    }
  });
}

DirectFile::~DirectFile() {
  if (fd_ >= 0) ::close(fd_);
  std::free(staging_);
}

void DirectFile::open(const std::string& path) {
  struct statx st {};
  const int fd = ::open(path.c_str(), O_WRONLY | O_DIRECT | O_CLOEXEC);
  if (fd < 0) return;  // EINVAL: no direct I/O on this file system
  if (::statx(fd, "", AT_EMPTY_PATH, STATX_DIOALIGN, &st) == 0 && (st.stx_mask & STATX_DIOALIGN) != 0) {
    if (st.stx_dio_offset_align == 0) {  // the file system says: no direct I/O on this file
      ::close(fd);
      return;
    }
    memory_align_ = std::max<std::uint64_t>(st.stx_dio_mem_align, alignof(std::max_align_t));
    offset_align_ = st.stx_dio_offset_align;
  }
  fd_ = fd;
}

bool DirectFile::write(const std::byte* from, std::uint64_t length, std::uint64_t offset, const std::string& path) {
  if (fd_ < 0 || length == 0 || offset % offset_align_ != 0 || length % offset_align_ != 0) return false;
  if (reinterpret_cast<std::uintptr_t>(from) % memory_align_ == 0) {
    pwrite_exact(fd_, from, length, offset, path, offset_align_);
    return true;
  }
  constexpr std::uint64_t kStaging = std::uint64_t{8} << 20;
  if (!staging_) {
    staging_size_ = std::max<std::uint64_t>(kStaging / offset_align_, 1) * offset_align_;
    staging_ = static_cast<std::byte*>(
        std::aligned_alloc(memory_align_, (staging_size_ + memory_align_ - 1) / memory_align_ * memory_align_));
    if (!staging_) throw Error("twophase: cannot allocate a staging buffer to write " + path);
  }
  for (std::uint64_t done = 0; done < length;) {
    const std::uint64_t piece = std::min(staging_size_, length - done);
    std::memcpy(staging_, from + done, piece);
    pwrite_exact(fd_, staging_, piece, offset + done, path, offset_align_);
    done += piece;
  }
  return true;
}

void DirectFile::close(const std::string& path) {
  const int fd = std::exchange(fd_, -1);
  if (fd >= 0 && ::close(fd) != 0) throw_errno("close", path);
}

void independent_write(const IndependentCall& call, const std::vector<Piece>& pieces, Timing& timing) {
  // Whole blocks of a run go straight to the device; the rest buffered.
  auto write = [&](const std::byte* from, std::uint64_t length, std::uint64_t offset) {
    if (!call.direct || !call.direct->write(from, length, offset, call.path))
      pwrite_exact(call.fd, from, length, offset, call.path);
  };
  timed_io(timing, [&] {
    for (const Chunk& chunk : chunks_of(pieces, call.options.cb_buffer_size)) {
      const bool sieve = call.sieve_writes && sieve_access(chunk.begin, chunk.end, chunk.runs, call.options);
      count(timing, chunk, sieve);
      if (!sieve) {
        per_run(pieces, chunk, [&](const Run& run) {
          const std::byte* from = pieces[run.first].memory;
          if (!run.memory_contiguous) {
            std::byte* packed = call.scratch(run.length);
            for (std::size_t i = run.first; i < run.last; ++i)
              std::memcpy(packed + (pieces[i].offset - run.offset), pieces[i].memory, pieces[i].length);
            from = packed;
          }
          write(from, run.length, run.offset);
          ++timing.io_calls;
          timing.file_bytes += run.length;
        });
        continue;
      }
      // Read the covering range, so the holes between pieces are written
      // back as they were.
      std::byte* buffer = call.scratch(chunk.end - chunk.begin);
      pread_exact(call.fd, buffer, chunk.end - chunk.begin, chunk.begin, call.path, true);
      for (std::size_t i = chunk.first; i < chunk.last; ++i)
        std::memcpy(buffer + (pieces[i].offset - chunk.begin), pieces[i].memory, pieces[i].length);
      write(buffer, chunk.end - chunk.begin, chunk.begin);
      timing.io_calls += 2;
      timing.file_bytes += 2 * (chunk.end - chunk.begin);
    }
  });
}

}  // namespace volseg::io::twophase::detail
