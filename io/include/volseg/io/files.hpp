// SPDX-License-Identifier: MIT
// Small outputs (reports, images) written so that a failure leaves nothing
// that looks finished: the whole content under a temporary name beside the
// path, every write and the close checked, then a rename.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace volseg::io {

// True when path names an existing character device, FIFO or socket
// (/dev/null, /dev/stdout, a named pipe): an output there is written in
// place, never replaced by a rename, which would put a regular file where
// the device was (as root, a /dev/null that fills memory).
bool is_stream(const std::string& path);

// A file written in pieces under PATH.volseg-tmp-PID and renamed to path by
// commit(); destroyed uncommitted, it removes the temporary. Every write and
// the close are checked (volseg::Error "write PATH: ..."). A stream path is
// written in place.
class AtomicFile {
 public:
  explicit AtomicFile(std::string path);
  AtomicFile(const AtomicFile&) = delete;
  AtomicFile& operator=(const AtomicFile&) = delete;
  ~AtomicFile();
  void write(const void* data, std::size_t size);
  void write(std::string_view text) { write(text.data(), text.size()); }
  void commit();

 private:
  void discard();
  std::string path_, temp_;
  bool stream_;
  int fd_ = -1;
};

// Writes size bytes to PATH.volseg-tmp-PID, then renames it to path; on any
// failure removes the temporary and throws volseg::Error ("write PATH: ...").
// A stream path (is_stream) is written in place.
void write_file_atomically(const std::string& path, const void* data, std::size_t size);
inline void write_file_atomically(const std::string& path, const std::string& text) {
  write_file_atomically(path, text.data(), text.size());
}

// The fixed, hidden name a resumable output's data file has until it is
// complete: DIR/.NAME.volseg-partial for DIR/NAME (see Partial).
std::string partial_path(const std::string& data_file);

}  // namespace volseg::io
