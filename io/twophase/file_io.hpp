// SPDX-License-Identifier: MIT
// What the engine's two paths share (engine.cpp: aggregation in rounds;
// independent.cpp: each rank on its own): pieces, exact pread/pwrite, and
// the conditional data-sieving rule. Internal to io/twophase/.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "volseg/io/twophase.hpp"

namespace volseg::io::twophase::detail {

// One contiguous piece of an access: file bytes [offset, offset+length)
// to or from memory.
struct Piece {
  std::uint64_t offset = 0, length = 0;
  std::byte* memory = nullptr;
};

// Reads exactly length bytes; past the end of the file is an error, or
// zeros with zero_past_end (data sieving on writes reads holes that way).
void pread_exact(int fd, std::byte* to, std::uint64_t length, std::uint64_t offset, const std::string& path,
                 bool zero_past_end);
// align: a short write's retry keeps offsets multiples of it (O_DIRECT).
void pwrite_exact(int fd, const std::byte* from, std::uint64_t length, std::uint64_t offset, const std::string& path,
                  std::uint64_t align = 1);

// A second descriptor of a written file, opened with O_DIRECT where the file
// system allows it (Options::direct_write). Only accesses whose offset and
// length are whole direct-I/O blocks go through it; an access that shares a
// block with another is written buffered, so no block is ever written both
// ways in one call, and collective calls are ordered, so the kernel's flush
// and invalidation before a direct write keep the page cache coherent.
class DirectFile {
 public:
  DirectFile() = default;
  DirectFile(const DirectFile&) = delete;
  DirectFile& operator=(const DirectFile&) = delete;
  ~DirectFile();
  // Best effort: no O_DIRECT here (tmpfs), or no alignment reported, leaves it closed.
  void open(const std::string& path);
  bool is_open() const { return fd_ >= 0; }
  // Writes [offset, offset + length) directly and returns true when offset and
  // length are whole blocks (memory that is not aligned goes through an
  // aligned staging buffer); false: the caller writes it buffered.
  bool write(const std::byte* from, std::uint64_t length, std::uint64_t offset, const std::string& path);
  // Closes the descriptor; throws on an error (a failed close may be lost data).
  void close(const std::string& path);

 private:
  int fd_ = -1;
  std::uint64_t memory_align_ = 4096, offset_align_ = 4096;
  std::byte* staging_ = nullptr;
  std::uint64_t staging_size_ = 0;
};

// Coloma et al. §6.3's conditional data sieving: sieve an access of `runs`
// separate runs over [begin, end) when the extent per run (a run plus the
// gap after it) is below ds_threshold, or as ds= forces.
bool sieve_access(std::uint64_t begin, std::uint64_t end, std::size_t runs, const Options& options);

// The independent path of a collective call, taken when no two ranks'
// accesses interleave (cb_read/cb_write=automatic) or when asked
// (=disable): this rank's sorted pieces go straight between its memory and
// the file, in chunks of at most cb_buffer_size bytes of file, each sieved,
// or done per run, by the rule above. Writes are sieved only when
// sieve_writes (a read-modify-write is safe only over bytes no other rank
// writes). scratch(n) hands out a buffer of at least n bytes. Counts go to
// timing (io, io_calls, file_bytes, sieved/naive/contiguous).
struct IndependentCall {
  int fd = -1;
  const std::string& path;
  const Options& options;
  bool sieve_writes = true;
  std::function<std::byte*(std::uint64_t)> scratch;
  DirectFile* direct = nullptr;  // writes of whole blocks, when open
};
void independent_read(const IndependentCall& call, const std::vector<Piece>& pieces, Timing& timing);
void independent_write(const IndependentCall& call, const std::vector<Piece>& pieces, Timing& timing);

}  // namespace volseg::io::twophase::detail
