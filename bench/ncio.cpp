// SPDX-License-Identifier: MIT
// volseg-ncio: one configuration of the NCIO benchmark (seed 000, §4) on
// every rank of MPI_COMM_WORLD. bench/volseg-bench drives the sweeps.
//
// Pattern (P ranks, rank r, `count` regions of `size` bytes, `spacing` bytes
// between regions; seed 000 Fig. 3):
//   memory c:   one buffer of count*size bytes, region j at j*size;
//   memory nc:  one buffer, region j at j*(size+spacing) (gaps untouched);
//   file c:     rank r writes count*size bytes at r*count*size;
//   file nc:    region j of rank r at (j*P + r)*(size+spacing): the ranks'
//               regions interleave and `spacing` bytes after each stay
//               untouched.
// Methods (every one syncs after its write, as seed 000 did):
//   posix            one pwrite per contiguous region, own fd per rank, fdatasync
//   listio           pwritev over batches of --batch (64) regions: one call per
//                    file-contiguous run inside a batch, fdatasync
//   listio-uring     io_uring, one submission of up to --batch (64) writes per
//                    batch (a real file offset-length list), fdatasync
//   twophase-<p>     volseg::io::twophase write_all then File::sync, for each
//                    partitioner p (even aligned static-cyclic group-cyclic
//                    persistent auto); `twophase` means all six
//   datatype         MPI_File_set_view (vector filetype) + MPI_File_write with a
//                    vector memory type + MPI_File_sync
//   collective       the same with MPI_File_write_all
// The MPI-IO methods are labelled with the implementation in use: ompio, or
// romio when run with OMPI_MCA_io=romio321.
//
// Each method is first run once untimed over a file pre-filled with 0xA5 and
// every byte of the file is checked (regions hold their pattern, gaps keep
// 0xA5, nothing past the end); a method that fails reports no bandwidth and
// the exit code is 1. Then --reps timed runs per method, interleaved across
// methods, each on a truncated file (or, with --prefill, a file pre-filled
// and synced outside the timing; --cold also evicts it from the page cache): barrier, timer, [set_view], write, sync,
// timer. Bandwidth = bytes of all ranks / the slowest rank's time; the
// highest and lowest of the reps' bandwidths are dropped and the rest
// averaged (seed 000). Each method's file is opened (untimed) before every
// timed run and closed after it; --keep-open opens it once for all runs.
// Two-phase columns (tp_*): the first aggregator's requests / exchange / I/O
// seconds (the engine's last_call()), and counters summed over ranks.
//
// Output: one CSV row per case and method on stdout (rank 0), --header adds
// the header line; --csv FILE appends the rows to FILE as well.
#include <fcntl.h>
#include <liburing.h>
#include <mpi.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <array>
#include <cerrno>
#include <chrono>
#include <climits>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>
#include <limits>
#include <memory>
#include <numeric>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "volseg/io/comm.hpp"
#include "volseg/io/error.hpp"
#include "volseg/io/hints.hpp"
#include "volseg/io/twophase.hpp"

namespace {

namespace tp = volseg::io::twophase;

constexpr std::byte kFill{0xA5};    // the file's bytes before a verified run
constexpr std::byte kPoison{0xEE};  // memory gaps: must never reach the file
const char* const kPartitions[] = {"even", "aligned", "static-cyclic", "group-cyclic", "persistent", "auto"};

// The byte that belongs at file offset o: never 0, kFill or kPoison.
std::byte expected(std::uint64_t o) {
  unsigned v = 1 + static_cast<unsigned>(((o + 1) * 0x9E3779B97F4A7C15ull) >> 56) % 251;  // 1..251
  if (v >= 0xA5) ++v;
  if (v >= 0xEE) ++v;
  return static_cast<std::byte>(v);
}

void fail(const std::string& message) { throw std::runtime_error(message); }

void check(int code, const char* what) {
  if (code != MPI_SUCCESS) {
    char text[MPI_MAX_ERROR_STRING];
    int length = 0;
    MPI_Error_string(code, text, &length);
    fail(std::string(what) + ": " + std::string(text, static_cast<std::size_t>(length)));
  }
}

void pwrite_all(int fd, const std::byte* from, std::uint64_t length, std::uint64_t offset) {
  while (length > 0) {
    const ssize_t n = ::pwrite(fd, from, length, static_cast<off_t>(offset));
    if (n < 0) {
      if (errno == EINTR) continue;
      fail(std::string("pwrite: ") + std::strerror(errno));
    }
    from += n;
    offset += static_cast<std::uint64_t>(n);
    length -= static_cast<std::uint64_t>(n);
  }
}

struct Case {
  std::string name;
  bool memory_nc = false, file_nc = false;
};

Case parse_case(const std::string& name) {
  if (name == "c-c") return {name, false, false};
  if (name == "nc-c") return {name, true, false};
  if (name == "c-nc") return {name, false, true};
  if (name == "nc-nc") return {name, true, true};
  fail("unknown case " + name + " (c-c, nc-c, c-nc, nc-nc)");
  return {};
}

// One contiguous piece in memory and in file.
struct Piece {
  std::uint64_t offset = 0, length = 0, memory = 0;
};

// A rank's part of one case.
struct Pattern {
  int ranks = 1, rank = 0;
  Case kind;
  std::uint64_t count = 0, size = 0, spacing = 0;
  std::vector<std::byte> memory;
  std::vector<Piece> pieces;  // in file order; neighbours contiguous in both file and memory merged
  std::uint64_t extent = 0;   // bytes of file the job covers, gaps included
  std::uint64_t bytes = 0;    // useful bytes of all ranks

  bool in_region(std::uint64_t o) const {
    return !kind.file_nc || o % (size + spacing) < size;
  }
};

Pattern make_pattern(const Case& kind, std::uint64_t count, std::uint64_t size, std::uint64_t spacing, int rank,
                     int ranks) {
  Pattern p;
  p.ranks = ranks;
  p.rank = rank;
  p.kind = kind;
  p.count = count;
  p.size = size;
  p.spacing = spacing;
  const auto P = static_cast<std::uint64_t>(ranks), r = static_cast<std::uint64_t>(rank);
  const std::uint64_t memory_stride = kind.memory_nc ? size + spacing : size;
  p.memory.assign(count * memory_stride, kPoison);
  for (std::uint64_t j = 0; j < count; ++j) {
    const std::uint64_t file = kind.file_nc ? (j * P + r) * (size + spacing) : (r * count + j) * size;
    const std::uint64_t memory = j * memory_stride;
    for (std::uint64_t k = 0; k < size; ++k) p.memory[memory + k] = expected(file + k);
    if (!p.pieces.empty()) {
      Piece& last = p.pieces.back();
      if (last.offset + last.length == file && last.memory + last.length == memory) {
        last.length += size;
        continue;
      }
    }
    p.pieces.push_back(Piece{file, size, memory});
  }
  p.extent = kind.file_nc ? (count * P - 1) * (size + spacing) + size : P * count * size;
  p.bytes = P * count * size;
  return p;
}

// Rank 0 creates the file empty, or filled with kFill over the extent and
// synced (and, cold, dropped from the page cache); everybody waits.
void prepare_file(const std::string& path, const Pattern& p, bool prefill, bool cold = false) {
  std::string error;
  if (p.rank == 0) {
    const int fd = ::open(path.c_str(), O_CREAT | O_WRONLY | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) {
      error = "create " + path + ": " + std::strerror(errno);
    } else {
      if (prefill) {
        std::vector<std::byte> fill(std::min<std::uint64_t>(p.extent, 16u << 20), kFill);
        for (std::uint64_t at = 0; at < p.extent; at += fill.size())
          pwrite_all(fd, fill.data(), std::min<std::uint64_t>(fill.size(), p.extent - at), at);
        if (::fdatasync(fd) != 0) error = std::string("fdatasync: ") + std::strerror(errno);
        // Evicts this file's (clean) pages only: reads of the holes go to the disk.
        if (cold && ::posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED) != 0) error = "posix_fadvise failed";
      }
      if (::close(fd) != 0 && error.empty()) error = "close " + path + ": " + std::strerror(errno);
    }
  }
  int bad = !error.empty();
  MPI_Allreduce(MPI_IN_PLACE, &bad, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  if (bad) fail(error.empty() ? "rank 0 could not create " + path : error);
}

// Every rank checks its share of the file; returns the number of bad bytes
// (all ranks), and a description of the first.
std::uint64_t verify_file(const std::string& path, const Pattern& p, std::string& first) {
  std::uint64_t bad = 0;
  std::string mine;
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  struct stat st{};
  if (fd < 0 || ::fstat(fd, &st) != 0) {
    bad = 1;
    mine = "open " + path + ": " + std::strerror(errno);
  } else {
    if (static_cast<std::uint64_t>(st.st_size) != p.extent && p.rank == 0) {
      ++bad;
      mine = "file size " + std::to_string(st.st_size) + " != extent " + std::to_string(p.extent);
    }
    const std::uint64_t share = (p.extent + p.ranks - 1) / p.ranks;
    const std::uint64_t begin = std::min(p.extent, share * p.rank), end = std::min(p.extent, begin + share);
    std::vector<std::byte> block(1u << 20);
    for (std::uint64_t at = begin; at < end; at += block.size()) {
      const std::uint64_t n = std::min<std::uint64_t>(block.size(), end - at);
      const ssize_t got = ::pread(fd, block.data(), n, static_cast<off_t>(at));
      if (got != static_cast<ssize_t>(n)) {
        ++bad;
        if (mine.empty()) mine = "short read at " + std::to_string(at);
        break;
      }
      for (std::uint64_t i = 0; i < n; ++i) {
        const std::uint64_t o = at + i;
        const std::byte want = p.in_region(o) ? expected(o) : kFill;
        if (block[i] != want) {
          if (mine.empty()) {
            std::ostringstream text;
            text << "byte " << o << " is 0x" << std::hex << std::to_integer<int>(block[i]) << ", want 0x"
                 << std::to_integer<int>(want) << (p.in_region(o) ? " (region)" : " (gap)");
            mine = text.str();
          }
          ++bad;
        }
      }
    }
  }
  if (fd >= 0) ::close(fd);
  std::uint64_t total = 0;
  MPI_Allreduce(&bad, &total, 1, MPI_UINT64_T, MPI_SUM, MPI_COMM_WORLD);
  // The lowest failing rank's description.
  int who = bad ? p.rank : p.ranks;
  MPI_Allreduce(MPI_IN_PLACE, &who, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  if (who < p.ranks) {
    int length = static_cast<int>(mine.size());
    MPI_Bcast(&length, 1, MPI_INT, who, MPI_COMM_WORLD);
    mine.resize(static_cast<std::size_t>(length));
    MPI_Bcast(mine.data(), length, MPI_CHAR, who, MPI_COMM_WORLD);
    first = "rank " + std::to_string(who) + ": " + mine;
  }
  return total;
}

// What one timed run measured on this rank.
struct Run {
  double write = 0, sync = 0, total = 0;
  tp::Timing timing;  // twophase only
  std::string partition;
  int lead = 0;  // twophase: the first aggregator's rank
};

struct Settings {
  std::string dir;
  std::uint64_t batch = 64;
  volseg::io::Hints hints;  // twophase options, as `--hint key=value`
};

class Method {
 public:
  explicit Method(std::string name) : name_(std::move(name)) {}
  virtual ~Method() = default;
  const std::string& name() const { return name_; }
  virtual std::string impl() const = 0;
  // Untimed set-up (open), the timed write + sync, untimed tear-down.
  virtual void open(const std::string& path, const Pattern& p) = 0;
  virtual void write(const Pattern& p, Run& run) = 0;  // sets run.write, run.sync
  virtual void close() = 0;

 private:
  std::string name_;
};

double now() { return MPI_Wtime(); }

// The methods that write through a plain file descriptor of their own.
class FdMethod : public Method {
 public:
  using Method::Method;
  void open(const std::string& path, const Pattern&) override {
    fd_ = ::open(path.c_str(), O_WRONLY | O_CLOEXEC);
    if (fd_ < 0) fail("open " + path + ": " + std::strerror(errno));
  }
  void close() override {
    const int fd = std::exchange(fd_, -1);
    if (fd >= 0 && ::close(fd) != 0) fail(std::string("close: ") + std::strerror(errno));
  }

 protected:
  // Ends a timed write that began at `start`: fdatasync, and both times.
  void sync_since(double start, Run& run) {
    const double written = now();
    if (::fdatasync(fd_) != 0) fail(std::string("fdatasync: ") + std::strerror(errno));
    run.write = written - start;
    run.sync = now() - written;
  }
  int fd_ = -1;
};

class Posix final : public FdMethod {
 public:
  Posix() : FdMethod("posix") {}
  std::string impl() const override { return "posix"; }
  void write(const Pattern& p, Run& run) override {
    const double start = now();
    for (const auto& piece : p.pieces) pwrite_all(fd_, p.memory.data() + piece.memory, piece.length, piece.offset);
    sync_since(start, run);
  }

 private:
};

// Writes iov (one contiguous file range at offset) in one pwritev; a short
// write, rare, is finished piece by piece.
void pwritev_all(int fd, const std::vector<iovec>& iov, std::uint64_t offset, std::uint64_t length) {
  ssize_t n;
  do {
    n = ::pwritev(fd, iov.data(), static_cast<int>(iov.size()), static_cast<off_t>(offset));
  } while (n < 0 && errno == EINTR);
  if (n < 0) fail(std::string("pwritev: ") + std::strerror(errno));
  if (static_cast<std::uint64_t>(n) == length) return;
  auto done = static_cast<std::uint64_t>(n);
  std::uint64_t at = 0;
  for (const auto& v : iov) {
    const std::uint64_t end = at + v.iov_len;
    if (end > done) {
      const std::uint64_t skip = done > at ? done - at : 0;
      pwrite_all(fd, static_cast<const std::byte*>(v.iov_base) + skip, v.iov_len - skip, offset + at + skip);
    }
    at = end;
  }
}

// Groups each batch of `batch` pieces into runs that are contiguous in the
// file: (first piece, end piece, file offset, bytes).
struct FileRun {
  std::size_t begin, end;
  std::uint64_t offset, length;
};
// Appends the memory of run r's regions to iov.
void append_iovecs(const Pattern& p, const FileRun& r, std::vector<iovec>& iov) {
  for (std::size_t i = r.begin; i < r.end; ++i)
    iov.push_back({const_cast<std::byte*>(p.memory.data() + p.pieces[i].memory), p.pieces[i].length});
}

template <class Emit>
void batched_runs(const Pattern& p, std::uint64_t batch, Emit&& emit_batch) {
  std::vector<FileRun> runs;
  const auto& pieces = p.pieces;
  for (std::size_t b = 0; b < pieces.size(); b += batch) {
    const std::size_t e = std::min<std::size_t>(pieces.size(), b + batch);
    runs.clear();
    for (std::size_t i = b; i < e;) {
      FileRun run{i, i, pieces[i].offset, 0};
      do {
        run.length += pieces[i].length;
        ++i;
      } while (i < e && pieces[i].offset == run.offset + run.length && i - run.begin < IOV_MAX);
      run.end = i;
      runs.push_back(run);
    }
    emit_batch(runs);
  }
}

// Seed 000's list I/O with what Linux offers as a list: pwritev. It can only
// describe one contiguous file range, so a batch of `batch` regions costs one
// call per run of file-contiguous regions: one call per batch when the file
// side is contiguous, one call per region when it is not.
class ListIo final : public FdMethod {
 public:
  explicit ListIo(std::uint64_t batch) : FdMethod("listio"), batch_(batch) {}
  std::string impl() const override { return "posix"; }
  void write(const Pattern& p, Run& run) override {
    const double start = now();
    std::vector<iovec> iov;
    batched_runs(p, batch_, [&](const std::vector<FileRun>& runs) {
      for (const auto& r : runs) {
        iov.clear();
        append_iovecs(p, r, iov);
        pwritev_all(fd_, iov, r.offset, r.length);
      }
    });
    sync_since(start, run);
  }

 private:
  std::uint64_t batch_;
};

// List I/O as a real (file offset, length) list: one io_uring submission per
// batch of `batch` regions, one writev entry per file-contiguous run.
class UringListIo final : public FdMethod {
 public:
  explicit UringListIo(std::uint64_t batch) : FdMethod("listio-uring"), batch_(batch) {
    const int rc = io_uring_queue_init(static_cast<unsigned>(std::max<std::uint64_t>(batch, 1)), &ring_, 0);
    if (rc < 0) fail(std::string("io_uring_queue_init: ") + std::strerror(-rc));
  }
  ~UringListIo() override { io_uring_queue_exit(&ring_); }
  std::string impl() const override { return "posix"; }
  void write(const Pattern& p, Run& run) override {
    const double start = now();
    std::vector<iovec> iov;
    batched_runs(p, batch_, [&](const std::vector<FileRun>& runs) {
      iov.clear();
      iov.reserve(runs.empty() ? 0 : runs.back().end - runs.front().begin);  // no reallocation below
      for (const auto& r : runs) {
        const std::size_t first = iov.size();
        append_iovecs(p, r, iov);
        io_uring_sqe* sqe = io_uring_get_sqe(&ring_);
        if (!sqe) fail("io_uring: submission queue full");
        io_uring_prep_writev(sqe, fd_, iov.data() + first, static_cast<unsigned>(iov.size() - first), r.offset);
        io_uring_sqe_set_data64(sqe, static_cast<std::uint64_t>(&r - runs.data()));
      }
      const int submitted = io_uring_submit_and_wait(&ring_, static_cast<unsigned>(runs.size()));
      if (submitted < 0) fail(std::string("io_uring_submit_and_wait: ") + std::strerror(-submitted));
      for (std::size_t done = 0; done < runs.size(); ++done) {
        io_uring_cqe* cqe = nullptr;
        const int rc = io_uring_wait_cqe(&ring_, &cqe);
        if (rc < 0) fail(std::string("io_uring_wait_cqe: ") + std::strerror(-rc));
        const FileRun& r = runs[static_cast<std::size_t>(io_uring_cqe_get_data64(cqe))];
        const int res = cqe->res;
        io_uring_cqe_seen(&ring_, cqe);
        if (res < 0) fail(std::string("io_uring write: ") + std::strerror(-res));
        if (static_cast<std::uint64_t>(res) != r.length) {  // short: finish it synchronously
          std::vector<iovec> rest;
          append_iovecs(p, r, rest);
          pwritev_all(fd_, rest, r.offset, r.length);  // rewrites the same bytes: harmless
        }
      }
    });
    sync_since(start, run);
  }

 private:
  std::uint64_t batch_;
  io_uring ring_{};
};

class TwoPhase final : public Method {
 public:
  TwoPhase(const std::string& partition, const volseg::Comm& comm, const volseg::io::Hints& hints)
      : Method("twophase-" + partition), comm_(comm), options_(tp::Options::from_hints(hints)) {
    options_.partition = partition;
  }
  std::string impl() const override { return "volseg"; }
  void open(const std::string& path, const Pattern& p) override {
    file_ = std::make_unique<tp::File>(comm_, path, tp::Mode::write, options_);
    accesses_.clear();
    for (const auto& piece : p.pieces)
      accesses_.push_back(tp::ConstAccess{piece.offset, piece.length, p.memory.data() + piece.memory});
  }
  void write(const Pattern&, Run& run) override {
    const double start = now();
    file_->write_all(accesses_);
    const double written = now();
    file_->sync();
    run.write = written - start;
    run.sync = now() - written;
    run.timing = file_->last_call();
    // No two ranks' regions interleave (c-c, nc-c): the engine let every
    // rank write its own, as ROMIO's romio_cb_write=automatic does.
    run.partition = run.timing.independent ? "independent" : file_->partition();
    run.lead = file_->aggregators().front();
  }
  void close() override {
    file_->close();
    file_.reset();
  }
  std::string describe() const { return file_ ? file_->describe() : ""; }

 private:
  const volseg::Comm& comm_;
  tp::Options options_;
  std::unique_ptr<tp::File> file_;
  std::vector<tp::ConstAccess> accesses_;
};

// MPI-IO with derived datatypes (seed 000 §4: a contiguous type for a
// contiguous side, one MPI vector type for a noncontiguous side).
class MpiIo final : public Method {
 public:
  explicit MpiIo(bool collective) : Method(collective ? "collective" : "datatype"), collective_(collective) {}
  ~MpiIo() override { free_types(); }
  std::string impl() const override { return impl_; }
  void open(const std::string& path, const Pattern& p) override {
    check(MPI_File_open(MPI_COMM_WORLD, path.c_str(), MPI_MODE_RDWR, MPI_INFO_NULL, &fh_), "MPI_File_open");
    if (impl_.empty()) {
      // Open MPI 4.1 returns no info keys from either component; the
      // component is the one OMPI_MCA_io selects (OMPIO by default).
      const char* io = std::getenv("OMPI_MCA_io");
      impl_ = io && std::strstr(io, "romio") ? "romio" : "ompio";
    }
    if (types_for_ != &p) {
      free_types();
      const std::uint64_t mine = p.count * p.size;
      if (mine > static_cast<std::uint64_t>(INT_MAX) || p.count > static_cast<std::uint64_t>(INT_MAX) ||
          p.size > static_cast<std::uint64_t>(INT_MAX) ||
          p.ranks * (p.size + p.spacing) > static_cast<std::uint64_t>(INT_MAX))
        fail("pattern too large for int MPI datatype arguments");
      if (p.kind.memory_nc)
        check(MPI_Type_vector(static_cast<int>(p.count), static_cast<int>(p.size),
                              static_cast<int>(p.size + p.spacing), MPI_BYTE, &memory_type_),
              "MPI_Type_vector");
      else check(MPI_Type_contiguous(static_cast<int>(mine), MPI_BYTE, &memory_type_), "MPI_Type_contiguous");
      if (p.kind.file_nc) {
        check(MPI_Type_vector(static_cast<int>(p.count), static_cast<int>(p.size),
                              static_cast<int>(p.ranks * (p.size + p.spacing)), MPI_BYTE, &file_type_),
              "MPI_Type_vector");
        displacement_ = static_cast<MPI_Offset>(p.rank * (p.size + p.spacing));
      } else {
        check(MPI_Type_contiguous(static_cast<int>(mine), MPI_BYTE, &file_type_), "MPI_Type_contiguous");
        displacement_ = static_cast<MPI_Offset>(p.rank * mine);
      }
      MPI_Type_commit(&memory_type_);
      MPI_Type_commit(&file_type_);
      types_for_ = &p;
    }
  }
  void write(const Pattern& p, Run& run) override {
    const double start = now();
    // set_view is part of the access: ROMIO flattens the filetype here, and
    // the two-phase engine does the same work inside write_all.
    check(MPI_File_set_view(fh_, displacement_, MPI_BYTE, file_type_, "native", MPI_INFO_NULL),
          "MPI_File_set_view");
    MPI_Status status;
    if (collective_)
      check(MPI_File_write_all(fh_, p.memory.data(), 1, memory_type_, &status), "MPI_File_write_all");
    else check(MPI_File_write(fh_, p.memory.data(), 1, memory_type_, &status), "MPI_File_write");
    int written_bytes = 0;
    MPI_Get_count(&status, MPI_BYTE, &written_bytes);
    if (static_cast<std::uint64_t>(written_bytes) != p.count * p.size)
      fail("MPI-IO wrote " + std::to_string(written_bytes) + " bytes, not " + std::to_string(p.count * p.size));
    const double written = now();
    check(MPI_File_sync(fh_), "MPI_File_sync");
    run.write = written - start;
    run.sync = now() - written;
  }
  void close() override { check(MPI_File_close(&fh_), "MPI_File_close"); }
  void forget_types() { types_for_ = nullptr; }

 private:
  bool collective_;
  std::string impl_;
  MPI_File fh_ = MPI_FILE_NULL;
  MPI_Datatype memory_type_ = MPI_DATATYPE_NULL, file_type_ = MPI_DATATYPE_NULL;
  MPI_Offset displacement_ = 0;
  const Pattern* types_for_ = nullptr;
  void free_types() {
    if (memory_type_ != MPI_DATATYPE_NULL) MPI_Type_free(&memory_type_);
    if (file_type_ != MPI_DATATYPE_NULL) MPI_Type_free(&file_type_);
  }
};

std::vector<std::string> split(const std::string& text) {
  std::vector<std::string> items;
  std::stringstream stream(text);
  std::string item;
  while (std::getline(stream, item, ','))
    if (!item.empty()) items.push_back(item);
  return items;
}

std::vector<std::string> expand_methods(const std::vector<std::string>& names) {
  std::vector<std::string> out;
  for (const auto& name : names) {
    if (name == "all") {
      for (const char* m : {"posix", "listio", "listio-uring"}) out.emplace_back(m);
      for (const char* p : kPartitions) out.push_back(std::string("twophase-") + p);
      out.emplace_back("datatype");
      out.emplace_back("collective");
    } else if (name == "twophase") {
      for (const char* p : kPartitions) out.push_back(std::string("twophase-") + p);
    } else if (name == "mpiio") {
      out.emplace_back("datatype");
      out.emplace_back("collective");
    } else {
      out.push_back(name);
    }
  }
  return out;
}

// Drops the highest and lowest (with 3 or more) and averages the rest.
double trimmed_mean(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  if (values.size() >= 3) values = std::vector<double>(values.begin() + 1, values.end() - 1);
  return std::accumulate(values.begin(), values.end(), 0.0) / static_cast<double>(values.size());
}

const char* kHeader =
    "case,method,impl,ranks,count,size,spacing,bytes,extent,reps,prefill,keep_open,verified,bw_mbs,time_s,write_s,sync_s,"
    "min_bw_mbs,max_bw_mbs,tp_requests_s,tp_exchange_s,tp_io_s,tp_rounds,tp_io_calls,tp_file_bytes,tp_sieved,"
    "tp_naive,tp_contiguous,tp_partition,note";

struct Result {
  std::vector<double> bw, time, write, sync;                     // per rep, slowest rank
  std::vector<double> requests, exchange, io;                   // twophase, per rep, slowest rank
  tp::Timing counters;                                          // twophase, last rep, summed over ranks
  std::string partition, note;
  bool verified = false, tested = false;
};

std::string csv_field(const std::string& text) {
  if (text.find_first_of(",\"\n") == std::string::npos) return text;
  std::string quoted = "\"";
  for (char c : text) quoted += c == '"' ? std::string("\"\"") : std::string(1, c);
  return quoted + "\"";
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, ranks = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &ranks);
  int status = 0;
  try {
    CLI::App app{"volseg-ncio: one NCIO configuration (seed 000) on every rank; see bench/ncio.cpp"};
    std::string cases_text = "c-c,nc-c,c-nc,nc-nc", methods_text = "all", dir = "/tmp", csv_path;
    std::uint64_t count = 4096, size = 8, spacing = 128, batch = 64;
    int reps = 6, pause_ms = 20;
    bool header = false, no_verify = false, prefill = false, cold = false, verbose = false, keep_open = false;
    std::vector<std::string> hint_items;
    app.add_option("--case", cases_text, "comma list of c-c nc-c c-nc nc-nc");
    app.add_option("--method", methods_text,
                   "comma list: posix listio listio-uring twophase-<partition> twophase (all six) datatype "
                   "collective mpiio (both) all");
    app.add_option("--count", count, "regions per rank (default 4096)")->check(CLI::PositiveNumber);
    app.add_option("--size", size, "bytes per region (default 8)")->check(CLI::PositiveNumber);
    app.add_option("--spacing", spacing, "bytes between regions (default 128)");
    app.add_option("--reps", reps, "timed repetitions per method (default 6; highest and lowest dropped)")
        ->check(CLI::PositiveNumber);
    app.add_option("--pause-ms", pause_ms, "pause after each run (default 20 ms)");
    app.add_option("--batch", batch, "regions per list I/O batch (default 64, seed 000)")->check(CLI::PositiveNumber);
    app.add_option("--dir", dir, "where the test file goes (default /tmp)");
    app.add_option("--csv", csv_path, "append the rows to this file too");
    app.add_option("--hint", hint_items, "twophase option key=value (cb_nodes, cb_buffer_size, ds, ds_threshold, ...)");
    app.add_flag("--header", header, "print the CSV header first");
    app.add_flag("--no-verify", no_verify, "skip the verification run");
    app.add_flag("--prefill", prefill, "timed runs overwrite a pre-filled, synced file instead of a truncated one");
    app.add_flag("--cold", cold, "with --prefill: evict the file from the page cache before each timed run");
    app.add_flag("--keep-open", keep_open,
                 "open each method's file once for all timed runs (steady state) instead of once per run");
    app.add_flag("--verbose", verbose, "per-rep lines on stderr");
    try {
      app.parse(argc, argv);
    } catch (const CLI::ParseError& e) {
      const int code = rank == 0 ? app.exit(e) : (e.get_exit_code() != 0 ? 1 : 0);
      MPI_Finalize();
      return code;
    }

    volseg::Comm comm(MPI_COMM_WORLD);
    const auto hints = volseg::io::Hints::parse(hint_items);
    const std::string shared_path = comm.broadcast(dir + "/volseg-ncio-" + std::to_string(::getpid()) + ".dat");

    std::vector<std::unique_ptr<Method>> methods;
    for (const auto& name : expand_methods(split(methods_text))) {
      if (name == "posix") methods.push_back(std::make_unique<Posix>());
      else if (name == "listio") methods.push_back(std::make_unique<ListIo>(batch));
      else if (name == "listio-uring") methods.push_back(std::make_unique<UringListIo>(batch));
      else if (name == "datatype") methods.push_back(std::make_unique<MpiIo>(false));
      else if (name == "collective") methods.push_back(std::make_unique<MpiIo>(true));
      else if (name.rfind("twophase-", 0) == 0) methods.push_back(std::make_unique<TwoPhase>(name.substr(9), comm, hints));
      else fail("unknown method " + name);
    }
    hints.reject_unused("twophase");

    std::ofstream csv;
    if (rank == 0 && !csv_path.empty()) {
      csv.open(csv_path, std::ios::app);
      if (!csv) fail("cannot append to " + csv_path);
    }
    auto emit = [&](const std::string& line) {
      if (rank != 0) return;
      std::cout << line << '\n' << std::flush;
      if (csv.is_open()) csv << line << '\n' << std::flush;
    };
    if (header) emit(kHeader);

    bool any_failed = false;
    for (const auto& case_name : split(cases_text)) {
      const Case kind = parse_case(case_name);
      const Pattern pattern = make_pattern(kind, count, size, spacing, rank, ranks);
      for (auto& m : methods)
        if (auto* mpi = dynamic_cast<MpiIo*>(m.get())) mpi->forget_types();
      std::vector<Result> results(methods.size());
      // With --keep-open each method has its own file, opened at its first
      // timed run and closed after the last (truncated between runs all the
      // same): the steady state of a file written many times.
      std::vector<char> open_now(methods.size(), 0);
      auto file_of = [&](std::size_t i, bool keep) { return keep ? shared_path + "." + std::to_string(i) : shared_path; };
      auto run_once = [&](std::size_t i, bool file_prefill, bool keep) {
        Method& m = *methods[i];
        const std::string file = file_of(i, keep);
        prepare_file(file, pattern, file_prefill, file_prefill && cold);
        Run run;
        // Errors of one rank must not leave the others in a collective call:
        // every step is agreed on.
        if (!open_now[i]) volseg::collectively(comm, [&] { m.open(file, pattern); });
        open_now[i] = keep;
        MPI_Barrier(MPI_COMM_WORLD);
        const double start = now();
        volseg::collectively(comm, [&] { m.write(pattern, run); });
        run.total = now() - start;
        if (!keep) volseg::collectively(comm, [&] { m.close(); });
        return run;
      };
      // 1. Verification, untimed, over a pre-filled file.
      for (std::size_t i = 0; i < methods.size(); ++i) {
        Result& res = results[i];
        if (no_verify) {
          res.verified = true;
          res.note = "not verified";
          continue;
        }
        try {
          run_once(i, true, false);  // warm: verification is not timed
          std::string first;
          const std::uint64_t bad = verify_file(shared_path, pattern, first);
          res.verified = bad == 0;
          if (!res.verified) res.note = std::to_string(bad) + " bad bytes; first: " + first;
        } catch (const std::exception& e) {
          res.verified = false;
          res.note = std::string("failed: ") + e.what();
        }
        if (!res.verified) {
          any_failed = true;
          if (rank == 0)
            std::cerr << "volseg-ncio: " << case_name << " " << methods[i]->name() << " FAILED verification: " << res.note
                      << "\n";
        }
      }
      // 2. Timed runs, interleaved across methods.
      for (int rep = 0; rep < reps; ++rep) {
        for (std::size_t i = 0; i < methods.size(); ++i) {
          Result& res = results[i];
          if (!res.verified) continue;
          Run run = run_once(i, prefill, keep_open);
          std::array<double, 3> local{run.total, run.write, run.sync};
          std::array<double, 6> slowest{};
          MPI_Allreduce(local.data(), slowest.data(), 3, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
          // The two-phase breakdown of the first aggregator (the critical path).
          std::array<double, 3> lead{run.timing.requests, run.timing.exchange, run.timing.io};
          MPI_Bcast(lead.data(), 3, MPI_DOUBLE, run.lead, MPI_COMM_WORLD);
          std::copy(lead.begin(), lead.end(), slowest.begin() + 3);
          std::array<std::uint64_t, 7> counters{run.timing.rounds, run.timing.io_calls, run.timing.file_bytes,
                                                run.timing.sieved, run.timing.naive, run.timing.contiguous, 0};
          MPI_Allreduce(MPI_IN_PLACE, counters.data(), 7, MPI_UINT64_T, MPI_SUM, MPI_COMM_WORLD);
          res.tested = true;
          res.time.push_back(slowest[0]);
          res.write.push_back(slowest[1]);
          res.sync.push_back(slowest[2]);
          res.requests.push_back(slowest[3]);
          res.exchange.push_back(slowest[4]);
          res.io.push_back(slowest[5]);
          res.bw.push_back(static_cast<double>(pattern.bytes) / slowest[0] / 1e6);
          res.counters.rounds = counters[0] / static_cast<std::uint64_t>(ranks);  // every rank counts the rounds
          res.counters.io_calls = counters[1];
          res.counters.file_bytes = counters[2];
          res.counters.sieved = counters[3];
          res.counters.naive = counters[4];
          res.counters.contiguous = counters[5];
          res.partition = run.partition;
          if (verbose) {
            std::array<double, 5> mine{run.write, run.sync, run.timing.requests, run.timing.exchange, run.timing.io};
            std::vector<double> all(5 * static_cast<std::size_t>(ranks));
            MPI_Gather(mine.data(), 5, MPI_DOUBLE, all.data(), 5, MPI_DOUBLE, 0, MPI_COMM_WORLD);
            if (rank == 0) {
              std::fprintf(stderr, "  %s %s rep %d: %.6f s %.3f MB/s; per rank ms write/sync[requests/exchange/io]:",
                           case_name.c_str(), methods[i]->name().c_str(), rep, slowest[0], res.bw.back());
              for (int r = 0; r < ranks; ++r) {
                const double* v = all.data() + 5 * r;
                std::fprintf(stderr, " %d: %.2f/%.2f", r, 1e3 * v[0], 1e3 * v[1]);
                if (!run.partition.empty()) std::fprintf(stderr, "[%.2f/%.2f/%.2f]", 1e3 * v[2], 1e3 * v[3], 1e3 * v[4]);
              }
              std::fprintf(stderr, "\n");
            }
          }
          if (pause_ms > 0) std::this_thread::sleep_for(std::chrono::milliseconds(pause_ms));
        }
      }
      for (std::size_t i = 0; i < methods.size(); ++i)
        if (open_now[i]) {
          volseg::collectively(comm, [&] { methods[i]->close(); });
          open_now[i] = 0;
          if (rank == 0) ::unlink(file_of(i, true).c_str());
        }
      for (std::size_t i = 0; i < methods.size(); ++i) {
        const Result& res = results[i];
        const Method& m = *methods[i];
        const bool is_tp = m.name().rfind("twophase-", 0) == 0;
        std::ostringstream row;
        row.precision(6);
        row << case_name << ',' << m.name() << ',' << (m.impl().empty() ? "mpiio" : m.impl()) << ',' << ranks << ','
            << count << ',' << size << ',' << spacing << ',' << pattern.bytes << ',' << pattern.extent << ',' << reps
            << ',' << (prefill ? (cold ? 2 : 1) : 0) << ',' << (keep_open ? 1 : 0) << ',' << (res.verified ? 1 : 0) << ',';
        if (res.tested) {
          row << trimmed_mean(res.bw) << ',' << trimmed_mean(res.time) << ',' << trimmed_mean(res.write) << ','
              << trimmed_mean(res.sync) << ',' << *std::min_element(res.bw.begin(), res.bw.end()) << ','
              << *std::max_element(res.bw.begin(), res.bw.end()) << ',';
        } else {
          row << ",,,,,,";
        }
        if (is_tp && res.tested) {
          row << trimmed_mean(res.requests) << ',' << trimmed_mean(res.exchange) << ',' << trimmed_mean(res.io) << ','
              << res.counters.rounds << ',' << res.counters.io_calls << ',' << res.counters.file_bytes << ','
              << res.counters.sieved << ',' << res.counters.naive << ',' << res.counters.contiguous << ','
              << res.partition << ',';
        } else {
          row << ",,,,,,,,,,";
        }
        row << csv_field(res.note);
        emit(row.str());
      }
    }
    if (rank == 0) ::unlink(shared_path.c_str());
    status = any_failed ? 1 : 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "volseg-ncio (rank %d): %s\n", rank, e.what());
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  MPI_Finalize();
  return status;
}
