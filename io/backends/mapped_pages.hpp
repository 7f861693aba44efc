// SPDX-License-Identifier: MIT
// Read errors on mapped files. A page of a file mapping that cannot be read
// (a media error) or that lies past the end of a file that shrank raises
// SIGBUS on the access, which kills the process with no word about the
// file. Two ways it is caught instead:
//   - the mapped backends fault a window in with MADV_POPULATE_READ/WRITE
//     (Linux 5.14+), which fails with EFAULT where an access would raise
//     SIGBUS: populate_error() turns that into a volseg::Error;
//   - where nothing populates (hint populate=0, or an older kernel, where
//     the madvise fails with EINVAL), a Watch covers the window: a SIGBUS on
//     one of its pages replaces the page with zeros, the access goes on, and
//     check() (called when the window is released) throws the error. Every
//     rank then leaves through the usual agreement, and the output is never
//     committed, so the zeros are never seen.
// A SIGBUS outside every watched window goes to the disposition the process
// had before (by default, the process dies as it would have).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace volseg::io::mapped {

// Watches the pages of [base, base + length), which map the file bytes from
// file_offset on. Any number of windows may be watched at once, from any
// thread; a window that finds no free slot (more than a few hundred at
// once) is simply not watched.
class Watch {
 public:
  Watch(void* base, std::size_t length, std::uint64_t file_offset, std::string path, bool writable);
  Watch(const Watch&) = delete;
  Watch& operator=(const Watch&) = delete;
  ~Watch();

  // Throws volseg::Error naming the file and the byte if a page failed; fd
  // (or -1) tells a file that shrank from a read error.
  void check(int fd) const;

 private:
  int slot_ = -1;
  std::uintptr_t begin_;
  std::uint64_t file_offset_;
  std::string path_;
  bool writable_;
};

// The error for a failed MADV_POPULATE_READ/WRITE of [file_offset,
// file_offset + length) of the file open as fd: EFAULT (an access would
// have raised SIGBUS) is a read error, or a file that shrank.
[[noreturn]] void populate_error(int error, int fd, std::uint64_t file_offset, std::uint64_t length,
                                 const std::string& path, bool writable);

// Fault injection where nothing populates: maps a page of an empty file
// over the page at `page`, so that the next access raises a real SIGBUS, as
// a media error would.
void plant_sigbus(void* page, bool writable);

}  // namespace volseg::io::mapped
