// SPDX-License-Identifier: MIT
// Collective buffers outlive the File that used them: an application that
// opens a file per output step (and the NCIO benchmark) would otherwise map
// and fault in fresh pages at every open, since glibc serves blocks this
// large with mmap and unmaps them on free. Kept: the two largest, at most
// 2 x 64 MiB, for the process. Internal to io/twophase/.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <vector>

namespace volseg::io::twophase::detail {

class BufferPool {
 public:
  struct Free {
    void operator()(std::byte* p) const { std::free(p); }
  };
  // Plain malloc memory, not page-aligned: page-aligned collective buffers
  // (aligned_alloc or posix_memalign, from 6d7eca0 on) made the NCIO bar's
  // nc-nc writes 25-30% slower on this VM (9.2 against 12.5 MB/s, request
  // phase 6.4 ms against 3.0 ms a call; bisected: docs/ncio.md). Direct writes
  // of whole blocks from it go through DirectFile's aligned staging buffer.
  struct Buffer {
    std::unique_ptr<std::byte[], Free> bytes;
    std::uint64_t size = 0;
  };
  static BufferPool& instance();
  // A buffer of at least `size` bytes, not initialised. Thread-safe.
  Buffer take(std::uint64_t size);
  // Keeps the buffer for a later take() if it is among the largest.
  void give(Buffer buffer);

 private:
  static constexpr std::uint64_t kLargest = 64u << 20;
  static constexpr std::size_t kKept = 2;
  std::mutex mutex_;
  std::vector<Buffer> kept_;  // largest first
};

}  // namespace volseg::io::twophase::detail
