// SPDX-License-Identifier: MIT
#include "volseg/segment/journal.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <mpi.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <map>

#include "volseg/io/error.hpp"
#include "volseg/io/files.hpp"

namespace volseg::segment {
namespace {

constexpr const char* magic = "volseg-journal 1";
constexpr std::uint64_t block = 4096;

struct Record {
  std::uint64_t brick;
  std::uint64_t job;  // hash of the journal's header
  std::uint64_t voxels, valid, in_range;
  double min, max;
  std::uint64_t histogram[Stats::bins];
  std::uint64_t check;  // over everything above
};
static_assert(sizeof(Record) == 8 * (8 + Stats::bins));

// FNV-1a, 64 bits: records and headers are small.
std::uint64_t hash(const void* data, std::size_t size) {
  const auto* bytes = static_cast<const unsigned char*>(data);
  std::uint64_t h = 14695981039346656037ull;
  for (std::size_t i = 0; i < size; ++i) h = (h ^ bytes[i]) * 1099511628211ull;
  return h;
}

std::uint64_t record_check(const Record& record) { return hash(&record, offsetof(Record, check)); }

void read_exactly(int fd, void* buffer, std::size_t length, std::uint64_t offset, const std::string& path) {
  auto* out = static_cast<char*>(buffer);
  while (length > 0) {
    const ssize_t got = ::pread(fd, out, length, static_cast<off_t>(offset));
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) throw_errno("read", path);
    if (got == 0) throw Error(path + " is shorter than its header says: it is damaged (--force starts over)");
    out += got;
    offset += static_cast<std::uint64_t>(got);
    length -= static_cast<std::size_t>(got);
  }
}

void write_exactly(int fd, const void* buffer, std::size_t length, std::uint64_t offset, const std::string& path) {
  const auto* in = static_cast<const char*>(buffer);
  while (length > 0) {
    const ssize_t put = ::pwrite(fd, in, length, static_cast<off_t>(offset));
    if (put < 0 && errno == EINTR) continue;
    if (put <= 0) throw_errno("write", path, put < 0 ? errno : EIO);
    in += put;
    offset += static_cast<std::uint64_t>(put);
    length -= static_cast<std::size_t>(put);
  }
}

std::string header_text(const JournalIdentity& identity, std::int64_t bricks) {
  std::string body = "bricks=" + std::to_string(bricks) + "\n";
  for (const auto& [key, value] : identity) body += key + "=" + value + "\n";
  // The size line counts itself and the check line (16 hex digits).
  const std::size_t length = std::strlen(magic) + 1 + 20 + 1 + body.size() + 23;
  const std::uint64_t size = (length + block - 1) / block * block;
  std::string text = std::string(magic) + " " + std::to_string(size) + "\n" + body;
  char check[32];
  std::snprintf(check, sizeof check, "check=%016" PRIx64 "\n", hash(text.data(), text.size()));
  text += check;
  text.resize(size, '\0');
  return text;
}

// An existing journal's header: its size and its text up to the check line.
struct Header {
  std::uint64_t size = 0;
  std::string text;  // with the check line, without the padding
  std::map<std::string, std::string> values;
};

Header read_header(int fd, const std::string& path) {
  char first[64] = {};
  const ssize_t got = ::pread(fd, first, sizeof first - 1, 0);
  if (got < 0) throw_errno("read", path);
  Header header;
  unsigned long long size = 0;
  char word[32] = {};
  if (std::sscanf(first, "volseg-journal %31s %llu", word, &size) != 2 || std::string(word) != "1" || size == 0 ||
      size % block != 0 || size > (1u << 24))
    throw Error(path + " is not a volseg journal this version reads (--force starts over)");
  header.size = size;
  std::string text(size, '\0');
  read_exactly(fd, text.data(), size, 0, path);
  const auto end = text.find('\0');
  if (end != std::string::npos) text.resize(end);
  const auto at = text.rfind("check=");
  if (at == std::string::npos || at + 23 != text.size() ||
      std::strtoull(text.c_str() + at + 6, nullptr, 16) != hash(text.data(), at))
    throw Error(path + " is damaged: its header fails its checksum (--force starts over)");
  header.text = text;
  std::size_t line = text.find('\n') + 1;
  while (line < at) {
    const auto next = text.find('\n', line);
    const std::string entry = text.substr(line, next - line);
    const auto equals = entry.find('=');
    if (equals != std::string::npos) header.values[entry.substr(0, equals)] = entry.substr(equals + 1);
    line = next + 1;
  }
  return header;
}

// Reads every slot: which bricks are done, and their statistics merged.
std::int64_t read_records(int fd, const std::string& path, std::uint64_t header_size, std::uint64_t job,
                          std::int64_t bricks, std::vector<std::uint8_t>& done, Stats& stats) {
  done.assign(static_cast<std::size_t>(bricks), 0);
  struct stat st;
  if (::fstat(fd, &st) != 0) throw_errno("stat", path);
  std::vector<Record> chunk(1024);
  std::int64_t count = 0;
  for (std::int64_t first = 0; first < bricks; first += static_cast<std::int64_t>(chunk.size())) {
    const std::uint64_t offset = header_size + static_cast<std::uint64_t>(first) * sizeof(Record);
    if (offset >= static_cast<std::uint64_t>(st.st_size)) break;  // never written: not done
    const auto n =
        static_cast<std::size_t>(std::min<std::int64_t>(bricks - first, static_cast<std::int64_t>(chunk.size())));
    const std::size_t want =
        std::min<std::uint64_t>(n * sizeof(Record), static_cast<std::uint64_t>(st.st_size) - offset);
    std::memset(chunk.data(), 0, n * sizeof(Record));
    read_exactly(fd, chunk.data(), want, offset, path);
    for (std::size_t k = 0; k < n; ++k) {
      const Record& r = chunk[k];
      const auto brick = first + static_cast<std::int64_t>(k);
      // A torn record, one of another job, or a slot never written.
      if (r.job != job || r.brick != static_cast<std::uint64_t>(brick) || r.check != record_check(r)) continue;
      done[static_cast<std::size_t>(brick)] = 1;
      ++count;
      Stats one;
      one.voxels = r.voxels;
      one.valid = r.valid;
      one.in_range = r.in_range;
      one.min = r.min;
      one.max = r.max;
      std::copy(std::begin(r.histogram), std::end(r.histogram), one.histogram.begin());
      stats.merge(one);
    }
  }
  return count;
}

// A file, or a partial Zarr store (a directory) with what is in it.
void remove_file(const std::string& path) {
  std::error_code ec;
  std::filesystem::remove_all(path, ec);
  if (ec) throw Error("remove " + path + ": " + ec.message());
}

std::string bricks_done(std::int64_t done, std::int64_t bricks) {
  return std::to_string(done) + " of " + std::to_string(bricks) + " bricks done";
}

// How an earlier journal's header differs from this job's: the first
// difference, in the order of the identity.
std::string first_difference(const Header& header, const JournalRequest& request) {
  JournalIdentity wanted{{"bricks", std::to_string(request.bricks)}};
  wanted.insert(wanted.end(), request.identity.begin(), request.identity.end());
  for (const auto& [key, value] : wanted) {
    const auto it = header.values.find(key);
    const std::string theirs = it == header.values.end() ? "(none)" : it->second;
    if (theirs != value) return "its " + key + " is " + theirs + ", this job's is " + value;
  }
  return "its header differs";
}

// A new journal: its header, then room for every brick's record. Returns
// its descriptor; a journal that is not whole is removed.
int create_journal(const std::string& path, const std::string& text, std::uint64_t size, bool sync) {
  const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
  if (fd < 0) throw_errno("create", path);
  try {
    write_exactly(fd, text.data(), text.size(), 0, path);
    if (::ftruncate(fd, static_cast<off_t>(size)) != 0) throw_errno("size", path);
    if (sync && ::fdatasync(fd) != 0) throw_errno("fdatasync", path);
    if (sync) io::sync_folder_of(path);  // the new file's entry survives a crash
  } catch (...) {
    ::close(fd);
    ::unlink(path.c_str());  // a journal that is not whole is no one's
    throw;
  }
  return fd;
}

}  // namespace

std::string Journal::path_for(const std::string& output) {
  const std::filesystem::path path(output);
  return (path.parent_path() / ("." + path.filename().string() + ".volseg-journal")).string();
}

Journal::Journal(const Comm& comm, const JournalRequest& request)
    : comm_(comm.duplicate()),
      path_(path_for(request.output)),
      partial_path_(request.partial),
      output_(request.output),
      bricks_(request.bricks),
      sync_(request.sync) {
  namespace fs = std::filesystem;
  const std::string text = header_text(request.identity, request.bricks);
  header_size_ = text.size();
  job_ = hash(text.data(), text.find('\0') == std::string::npos ? text.size() : text.find('\0'));
  int reopen = 0;
  collectively(comm_, [&] {
    if (comm_.rank() != 0) return;
    const bool journal = fs::exists(path_), partial = fs::exists(partial_path_);
    if (journal && partial) {
      const int fd = ::open(path_.c_str(), O_RDWR | O_CLOEXEC);
      if (fd < 0) throw_errno("open", path_);
      fd_ = fd;
      std::string mismatch;
      try {
        const Header header = read_header(fd_, path_);
        if (header.text + std::string(header.size - header.text.size(), '\0') != text)
          mismatch = first_difference(header, request);
        else
          done_before_ = read_records(fd_, path_, header_size_, job_, bricks_, done_, stats_before_);
      } catch (const Error& e) {
        if (!request.force) throw;
        mismatch = e.what();
      }
      if (!mismatch.empty() && !request.force)
        throw Error(output_ + ": the partial output " + partial_path_ + " is another job's (" + mismatch +
                    "): resume with that job's input, thresholds and brick shape, or use --force to start over");
      if (mismatch.empty() && !request.resume && !request.force)
        throw Error(output_ + ": an unfinished job left " + partial_path_ + " (" + bricks_done(done_before_, bricks_) +
                    "): use --resume to finish it, or --force to start over");
      if (mismatch.empty() && request.resume) {
        reopen = 1;
        return;
      }
      ::close(std::exchange(fd_, -1));
      done_.clear();
      done_before_ = 0;
      stats_before_ = Stats{};
    }
    // Starting over: what is left of an earlier job goes. Half a pair is
    // one that died between creating its journal and its partial file, or
    // between its commit and removing its journal.
    remove_file(partial_path_);
    remove_file(path_);
    fd_ = create_journal(path_, text, header_size_ + static_cast<std::uint64_t>(bricks_) * sizeof(Record), sync_);
  });
  check_mpi(MPI_Bcast(&reopen, 1, MPI_INT, 0, comm_.get()), "MPI_Bcast");
  reopen_ = reopen != 0;
  long long before = done_before_;
  check_mpi(MPI_Bcast(&before, 1, MPI_LONG_LONG, 0, comm_.get()), "MPI_Bcast");
  done_before_ = before;
  done_.resize(static_cast<std::size_t>(bricks_), 0);  // rank 0 read them, or none are done
  for (std::int64_t first = 0; first < bricks_; first += 1 << 30) {
    const int n = static_cast<int>(std::min<std::int64_t>(bricks_ - first, 1 << 30));
    check_mpi(MPI_Bcast(done_.data() + first, n, MPI_UINT8_T, 0, comm_.get()), "MPI_Bcast");
  }
  collectively(comm_, [&] {
    if (comm_.rank() == 0) return;
    fd_ = ::open(path_.c_str(), O_RDWR | O_CLOEXEC);
    if (fd_ < 0) throw_errno("open", path_);
  });
}

Journal::~Journal() {
  if (fd_ >= 0) ::close(fd_);
  if (data_fd_ >= 0) ::close(data_fd_);
}

void Journal::attach() {
  if (!sync_) return;
  collectively(comm_, [&] {
    data_fd_ = ::open(partial_path_.c_str(), O_RDONLY | O_CLOEXEC);
    if (data_fd_ < 0) throw_errno("open", partial_path_);
    partial_is_folder_ = std::filesystem::is_directory(partial_path_);
  });
}

// A partial Zarr store is a directory of chunk files: syncfs flushes all of
// them (and their names) in one call, as fdatasync does one partial file.
void Journal::flush_data() {
  if (!sync_ || data_fd_ < 0) return;
  if (partial_is_folder_ ? ::syncfs(data_fd_) != 0 : ::fdatasync(data_fd_) != 0)
    throw_errno(partial_is_folder_ ? "syncfs" : "fdatasync", partial_path_);
}

namespace {
double steady_seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}
}  // namespace

void Journal::record(const std::vector<std::int64_t>& bricks, const std::vector<Stats>& stats, bool data_flushed) {
  if (bricks.empty()) return;
  if (pending_.empty()) pending_flushed_ = true;
  for (std::size_t k = 0; k < bricks.size(); ++k) pending_.push_back({bricks[k], stats[k]});
  pending_flushed_ = pending_flushed_ && data_flushed;
  // The first brick at once: a job is resumable from its first brick on.
  if (!sync_ || last_commit_ == 0 || steady_seconds() - last_commit_ >= kGroupCommit) commit();
}

void Journal::commit() {
  if (pending_.empty()) return;
  if (!pending_flushed_) flush_data();
  for (const Pending& p : pending_) {
    Record r{};
    r.brick = static_cast<std::uint64_t>(p.brick);
    r.job = job_;
    r.voxels = p.stats.voxels;
    r.valid = p.stats.valid;
    r.in_range = p.stats.in_range;
    r.min = p.stats.min;
    r.max = p.stats.max;
    std::copy(p.stats.histogram.begin(), p.stats.histogram.end(), std::begin(r.histogram));
    r.check = record_check(r);
    write_exactly(fd_, &r, sizeof r, header_size_ + r.brick * sizeof(Record), path_);
  }
  if (sync_ && ::fdatasync(fd_) != 0) throw_errno("fdatasync", path_);
  recorded_ += static_cast<std::int64_t>(pending_.size());
  pending_.clear();
  last_commit_ = steady_seconds();
}

void Journal::record(std::int64_t brick, const Stats& stats) { record(std::vector{brick}, std::vector{stats}); }

void Journal::complete() {
  collectively(comm_, [&] {
    if (comm_.rank() == 0) remove_file(path_);
  });
}

std::string Journal::abandon() {
  try {
    commit();  // what this rank finished, unless that fails too
  } catch (const Error&) {
    pending_.clear();
  }
  long long mine = recorded_, recorded = 0;
  check_mpi(MPI_Allreduce(&mine, &recorded, 1, MPI_LONG_LONG, MPI_SUM, comm_.get()), "MPI_Allreduce");
  const std::int64_t kept = done_before_ + recorded;
  if (kept > 0)
    return " (" + bricks_done(kept, bricks_) + " and kept in " + partial_path_ + ": rerun with --resume to finish)";
  discard();  // nothing worth keeping
  return "";
}

void Journal::discard() {
  comm_.barrier();  // no rank still has the files open for writing
  if (comm_.rank() == 0) {
    std::error_code ec;
    std::filesystem::remove_all(partial_path_, ec);
    ::unlink(path_.c_str());
  }
}

}  // namespace volseg::segment
