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

void write_file_atomically(const std::string& path, const void* data, std::size_t size) {
  const bool stream = is_stream(path);
  const std::string temp = stream ? path : path + ".volseg-tmp-" + std::to_string(::getpid());
  const int fd = stream ? ::open(path.c_str(), O_WRONLY | O_CLOEXEC)
                        : ::open(temp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
  if (fd < 0) throw_errno(stream ? "open" : "create", path);
  auto discard = [&] {
    if (!stream) ::unlink(temp.c_str());
  };
  const auto* bytes = static_cast<const char*>(data);
  std::size_t left = size;
  while (left > 0) {
    const ssize_t put = ::write(fd, bytes, left);
    if (put < 0 && errno == EINTR) continue;
    if (put <= 0) {
      const int saved = put < 0 ? errno : EIO;
      ::close(fd);
      discard();
      throw_errno("write", path, saved);
    }
    bytes += put;
    left -= static_cast<std::size_t>(put);
  }
  if (::close(fd) != 0) {
    const int saved = errno;
    discard();
    throw_errno("close", path, saved);
  }
  if (stream) return;
  if (::rename(temp.c_str(), path.c_str()) != 0) {
    const int saved = errno;
    ::unlink(temp.c_str());
    throw_errno("rename to", path, saved);
  }
}

std::string partial_path(const std::string& data_file) {
  const std::filesystem::path path(data_file);
  return (path.parent_path() / ("." + path.filename().string() + ".volseg-partial")).string();
}

}  // namespace volseg::io
