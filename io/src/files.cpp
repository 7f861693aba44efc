// SPDX-License-Identifier: MIT
#include "volseg/io/files.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <utility>
#include <vector>

#include "volseg/io/error.hpp"
#include "volseg/io/faults.hpp"

namespace volseg::io {

bool is_stream(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return false;
  return S_ISCHR(st.st_mode) || S_ISFIFO(st.st_mode) || S_ISSOCK(st.st_mode);
}

void refuse_existing(const std::string& path, bool force, Streams streams) {
  if (force || !std::filesystem::exists(path)) return;
  if (streams == Streams::written_in_place && is_stream(path)) return;
  throw Error(path + " exists (use --force to replace it)");
}

std::string temporary_path(const std::string& path) {
  const std::filesystem::path target(path);
  return (target.parent_path() / ("." + target.filename().string() + ".volseg-tmp-" + std::to_string(::getpid())))
      .string();
}

void sync_folder_of(const std::string& path) {
  std::filesystem::path folder = std::filesystem::path(path).parent_path();
  if (folder.empty()) folder = ".";
  const int fd = ::open(folder.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) throw_errno("open the folder of", path);
  const int rc = ::fsync(fd);
  const int saved = errno;
  ::close(fd);
  if (rc != 0 && saved != EINVAL) throw_errno("fsync the folder of", path, saved);
}

namespace {

// rename(2), failed on demand by fault injection (VOLSEG_FAULTS rename): 0, or
// -1 with errno set. Every output's rename is one of AtomicCommit's.
int rename_file(const std::string& from, const std::string& to) {
  const auto fault = faults::at(faults::Call::rename);
  return fault.error ? (errno = fault.error, -1) : ::rename(from.c_str(), to.c_str());
}

bool is_folder(const std::string& path) {
  struct stat st;
  return ::lstat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

// DIR/.NAME.volseg-old-PID for DIR/NAME: where an output being replaced
// waits until its successor is in place.
std::string aside_path(const std::string& path) {
  const std::filesystem::path target(path);
  return (target.parent_path() / ("." + target.filename().string() + ".volseg-old-" + std::to_string(::getpid())))
      .string();
}

// fsync of one file or folder; a file system that cannot sync it (EINVAL)
// has nothing to sync.
void sync_entry(const std::string& path, bool folder) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | (folder ? O_DIRECTORY : 0));
  if (fd < 0) throw_errno("open", path);
  const int rc = ::fsync(fd);
  const int saved = errno;
  ::close(fd);
  if (rc != 0 && saved != EINVAL) throw_errno("fsync", path, saved);
}

// Every file and folder under folder, and folder itself, synced: the data
// and the names a folder output holds reach the disk before its name does.
void sync_tree(const std::string& folder) {
  std::error_code ec;
  for (std::filesystem::recursive_directory_iterator it(folder, ec), end; !ec && it != end; it.increment(ec)) {
    const auto type = it->symlink_status(ec).type();
    if (ec) break;
    if (type == std::filesystem::file_type::regular || type == std::filesystem::file_type::directory)
      sync_entry(it->path().string(), type == std::filesystem::file_type::directory);
  }
  if (ec) throw_errno("list", folder, ec.value());
  sync_entry(folder, true);
}

}  // namespace

AtomicCommit::AtomicCommit(std::string path, std::string temporary, Uncommitted uncommitted)
    : path_(std::move(path)), temporary_(std::move(temporary)), uncommitted_(uncommitted) {}

AtomicCommit::AtomicCommit(AtomicCommit&& other) noexcept
    : path_(std::move(other.path_)),
      temporary_(std::exchange(other.temporary_, {})),
      uncommitted_(other.uncommitted_) {}

AtomicCommit& AtomicCommit::operator=(AtomicCommit&& other) noexcept {
  if (this != &other) {
    discard();
    path_ = std::move(other.path_);
    temporary_ = std::exchange(other.temporary_, {});
    uncommitted_ = other.uncommitted_;
  }
  return *this;
}

AtomicCommit::~AtomicCommit() { discard(); }

void AtomicCommit::discard() {
  if (pending() && !kept()) {
    std::error_code ignored;  // already gone, or nothing more to do on a failure path
    std::filesystem::remove_all(temporary_, ignored);
  }
  temporary_.clear();
}

void AtomicCommit::commit(bool sync_folder) {
  if (!pending()) return;
  const bool folder = is_folder(temporary_);
  if (folder && sync_folder) try {
      sync_tree(temporary_);
    } catch (...) {
      discard();
      throw;
    }
  // rename(2) replaces a file at once, but not a folder that holds files:
  // the old output waits aside until the new one has its name.
  struct stat st;
  const bool swap = ::lstat(path_.c_str(), &st) == 0 && (folder || S_ISDIR(st.st_mode));
  const std::string aside = swap ? aside_path(path_) : std::string();
  if (swap && rename_file(path_, aside) != 0) {
    const int saved = errno;
    discard();
    throw_errno("rename away the old", path_, saved);
  }
  if (rename_file(temporary_, path_) != 0) {
    const int saved = errno;
    discard();
    if (swap && ::rename(aside.c_str(), path_.c_str()) != 0)
      throw RankError("rename to " + path_ + ": " + std::strerror(saved) + "; the old output is left as " + aside);
    throw_errno("rename to", path_, saved);
  }
  temporary_.clear();
  if (swap) {
    std::error_code ec;
    std::filesystem::remove_all(aside, ec);
    if (ec) throw_errno("remove the replaced", aside, ec.value());
  }
  if (sync_folder) sync_folder_of(path_);
}

namespace {

// An output to replace: true for a file, false when there is none; a
// directory or device under the name is refused, never moved.
bool replaceable(const std::string& path) {
  struct stat st;
  if (::lstat(path.c_str(), &st) != 0) return false;
  if (!S_ISREG(st.st_mode) && !S_ISLNK(st.st_mode))
    throw Error(path + " exists and is not a file: --force replaces files only");
  return true;
}

// One file of commit_together: its old file moved aside, its temporary placed.
struct Renames {
  AtomicCommit* file;
  std::string aside;
  bool moved_aside = false, placed = false;
};

}  // namespace

void commit_together(std::span<AtomicCommit* const> files, bool sync_folder) {
  std::vector<Renames> renames;
  for (AtomicCommit* file : files) renames.push_back({file, aside_path(file->path())});
  // Everything back as it was; a kept temporary (a partial output) goes back
  // under its name for --resume, the others are removed.
  auto roll_back = [&] {
    for (auto it = renames.rbegin(); it != renames.rend(); ++it) {
      if (it->placed && it->file->kept())
        ::rename(it->file->path().c_str(), it->file->temporary().c_str());
      else if (it->placed)
        ::unlink(it->file->path().c_str());
      else
        it->file->discard();
    }
    for (auto& r : renames)
      if (r.moved_aside) ::rename(r.aside.c_str(), r.file->path().c_str());
  };
  auto move = [&](const std::string& from, const std::string& to, bool& done) {
    if (rename_file(from, to) != 0) {
      const int saved = errno;
      roll_back();
      throw_errno("rename to", to, saved);
    }
    done = true;
  };
  std::vector<bool> exists;
  try {
    for (const auto& r : renames) exists.push_back(replaceable(r.file->path()));
  } catch (...) {
    for (auto& r : renames)
      if (!r.file->kept()) r.file->discard();
    throw;
  }
  for (std::size_t i = renames.size(); i-- > 0;)
    if (exists[i]) move(renames[i].file->path(), renames[i].aside, renames[i].moved_aside);
  for (auto& r : renames) move(r.file->temporary(), r.file->path(), r.placed);
  for (auto& r : renames) {
    r.file->release();
    if (r.moved_aside) ::unlink(r.aside.c_str());
  }
  if (sync_folder && !renames.empty()) sync_folder_of(renames.back().file->path());
}

AtomicFile::AtomicFile(std::string path) : path_(std::move(path)), stream_(is_stream(path_)) {
  if (!stream_) commit_ = AtomicCommit(path_, temporary_path(path_));
  const std::string& target = stream_ ? path_ : commit_.temporary();
  fd_ = stream_ ? ::open(target.c_str(), O_WRONLY | O_CLOEXEC)
                : ::open(target.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
  if (fd_ < 0) throw_errno(stream_ ? "open" : "create", path_);
}

AtomicFile::~AtomicFile() { discard(); }

void AtomicFile::discard() {
  if (fd_ < 0) return;
  ::close(fd_);
  fd_ = -1;
  commit_.discard();
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
    commit_.discard();
    throw_errno("close", path_, saved);
  }
  commit_.commit(false);
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
