// SPDX-License-Identifier: MIT
#include "volseg/io/files.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>

#include "volseg/io/error.hpp"

namespace volseg::io {

bool is_stream(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return false;
  return S_ISCHR(st.st_mode) || S_ISFIFO(st.st_mode) || S_ISSOCK(st.st_mode);
}

AtomicFile::AtomicFile(std::string path) : path_(std::move(path)), stream_(is_stream(path_)) {
  temp_ = stream_ ? path_ : path_ + ".volseg-tmp-" + std::to_string(::getpid());
  fd_ = stream_ ? ::open(path_.c_str(), O_WRONLY | O_CLOEXEC)
                : ::open(temp_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
  if (fd_ < 0) throw_errno(stream_ ? "open" : "create", path_);
}

AtomicFile::~AtomicFile() { discard(); }

void AtomicFile::discard() {
  if (fd_ < 0) return;
  ::close(fd_);
  fd_ = -1;
  if (!stream_) ::unlink(temp_.c_str());
}

void AtomicFile::write(const void* data, std::size_t size) {
  if (fd_ < 0) throw Error("write " + path_ + ": the file is closed");
  const auto* bytes = static_cast<const char*>(data);
  while (size > 0) {
    const ssize_t put = ::write(fd_, bytes, size);
    if (put < 0 && errno == EINTR) continue;
    if (put <= 0) {
      const int saved = put < 0 ? errno : EIO;
      discard();
      throw_errno("write", path_, saved);
    }
    bytes += put;
    size -= static_cast<std::size_t>(put);
  }
}

void AtomicFile::commit() {
  if (fd_ < 0) throw Error("write " + path_ + ": the file is closed");
  const int fd = fd_;
  fd_ = -1;
  if (::close(fd) != 0) {
    const int saved = errno;
    if (!stream_) ::unlink(temp_.c_str());
    throw_errno("close", path_, saved);
  }
  if (stream_) return;
  if (::rename(temp_.c_str(), path_.c_str()) != 0) {
    const int saved = errno;
    ::unlink(temp_.c_str());
    throw_errno("rename to", path_, saved);
  }
}

void write_file_atomically(const std::string& path, const void* data, std::size_t size) {
  AtomicFile file(path);
  file.write(data, size);
  file.commit();
}

std::string partial_path(const std::string& data_file) {
  const std::filesystem::path path(data_file);
  return (path.parent_path() / ("." + path.filename().string() + ".volseg-partial")).string();
}

}  // namespace volseg::io
