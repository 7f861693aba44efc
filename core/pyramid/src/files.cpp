// SPDX-License-Identifier: MIT
#include "files.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <bit>
#include <cerrno>
#include <cstring>
#include <regex>

#include "volseg/io/byteswap.hpp"
#include "volseg/io/error.hpp"

namespace volseg::pyramid::files {

std::string level_header(int level) { return "level-" + std::to_string(level) + ".nhdr"; }

bool is_pyramid_file(const std::string& name) {
  static const std::regex level_file(R"(level-[0-9]+\.(nhdr|raw))");
  return name == index || name.starts_with(index_temporary) || name == bricks || name == histograms ||
         std::regex_match(name, level_file);
}

namespace {

std::uint64_t to_little(std::uint64_t v) { return std::endian::native == std::endian::little ? v : io::byteswap(v); }
std::uint32_t to_little(std::uint32_t v) { return std::endian::native == std::endian::little ? v : io::byteswap(v); }

void put_u64(std::byte* out, std::uint64_t value) {
  value = to_little(value);
  std::memcpy(out, &value, 8);
}

std::uint64_t get_u64(const std::byte* in) {
  std::uint64_t value;
  std::memcpy(&value, in, 8);
  return to_little(value);
}

}  // namespace

void put_brick(std::byte* out, const BrickStats& stats) {
  put_u64(out, std::bit_cast<std::uint64_t>(stats.min));
  put_u64(out + 8, std::bit_cast<std::uint64_t>(stats.max));
  put_u64(out + 16, stats.valid);
  put_u64(out + 24, stats.voxels);
}

BrickStats get_brick(const std::byte* in) {
  return BrickStats{std::bit_cast<double>(get_u64(in)), std::bit_cast<double>(get_u64(in + 8)), get_u64(in + 16),
                    get_u64(in + 24)};
}

std::uint32_t get_u32(const std::byte* in) {
  std::uint32_t value;
  std::memcpy(&value, in, 4);
  return to_little(value);
}

void put_u32(std::byte* out, std::uint32_t value) {
  value = to_little(value);
  std::memcpy(out, &value, 4);
}

namespace {

// pwrite of exactly size bytes at offset, resuming short writes; closes fd
// and throws on an error.
void write_at(int fd, const std::string& path, const std::byte* data, std::size_t size, std::uint64_t offset) {
  for (std::size_t done = 0; done < size;) {
    const ssize_t n = ::pwrite(fd, data + done, size - done, static_cast<off_t>(offset + done));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const int saved = n < 0 ? errno : EIO;
      ::close(fd);
      throw_errno("write", path, saved);
    }
    done += static_cast<std::size_t>(n);
  }
}

}  // namespace

void write_file(const std::string& path, const void* data, std::size_t size) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
  if (fd < 0) throw_errno("create", path);
  write_at(fd, path, static_cast<const std::byte*>(data), size, 0);
  if (::close(fd) != 0) throw_errno("close", path);
}

void create_sized(const std::string& path, std::uint64_t size) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
  if (fd < 0) throw_errno("create", path);
  if (::ftruncate(fd, static_cast<off_t>(size)) != 0) {
    const int saved = errno;
    ::close(fd);
    throw_errno("size", path, saved);
  }
  if (::close(fd) != 0) throw_errno("close", path);
}

// Records of consecutive places (a rank's bricks under block assignment)
// go out in one pwrite.
void write_records(const std::string& path, std::size_t record_size, const std::vector<std::int64_t>& places,
                   const std::vector<std::byte>& records) {
  if (places.empty()) return;
  const int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC);
  if (fd < 0) throw_errno("open", path);
  std::size_t first = 0;
  for (std::size_t i = 1; i <= places.size(); ++i)
    if (i == places.size() || places[i] != places[i - 1] + 1) {
      write_at(fd, path, records.data() + first * record_size, (i - first) * record_size,
               static_cast<std::uint64_t>(places[first]) * record_size);
      first = i;
    }
  if (::close(fd) != 0) throw_errno("close", path);
}

std::string read_text(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw_errno("open", path);
  std::string text;
  char buffer[65536];
  for (;;) {
    const ssize_t n = ::read(fd, buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const int saved = errno;
      ::close(fd);
      throw_errno("read", path, saved);
    }
    if (n == 0) break;
    text.append(buffer, static_cast<std::size_t>(n));
  }
  if (::close(fd) != 0) throw_errno("close", path);
  return text;
}

std::uint64_t file_size(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) throw_errno("stat", path);
  return static_cast<std::uint64_t>(st.st_size);
}

void read_at(const std::string& path, std::uint64_t offset, void* data, std::size_t size) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw_errno("open", path);
  auto* bytes = static_cast<char*>(data);
  std::size_t done = 0;
  while (done < size) {
    const ssize_t n = ::pread(fd, bytes + done, size - done, static_cast<off_t>(offset + done));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const int saved = errno;
      ::close(fd);
      if (n == 0) throw Error(path + ": unexpected end of file at byte " + std::to_string(offset + done));
      throw_errno("read", path, saved);
    }
    done += static_cast<std::size_t>(n);
  }
  if (::close(fd) != 0) throw_errno("close", path);
}

}  // namespace volseg::pyramid::files
