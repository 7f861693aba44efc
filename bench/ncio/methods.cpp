// SPDX-License-Identifier: MIT
// The write methods volseg-ncio times; each syncs after its write, as Ching
// et al. did.
#include <fcntl.h>
#include <liburing.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstring>
#include <string>
#include <utility>

#include "ncio.hpp"

namespace volseg::bench::ncio {
namespace {

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

// Ching et al.'s list I/O with what Linux offers as a list: pwritev. It can only
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

// MPI-IO with derived datatypes (Ching et al. §4: a contiguous type for a
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
        check(MPI_Type_vector(static_cast<int>(p.count), static_cast<int>(p.size), static_cast<int>(p.size + p.spacing),
                              MPI_BYTE, &memory_type_),
              "MPI_Type_vector");
      else
        check(MPI_Type_contiguous(static_cast<int>(mine), MPI_BYTE, &memory_type_), "MPI_Type_contiguous");
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
    check(MPI_File_set_view(fh_, displacement_, MPI_BYTE, file_type_, "native", MPI_INFO_NULL), "MPI_File_set_view");
    MPI_Status status;
    if (collective_)
      check(MPI_File_write_all(fh_, p.memory.data(), 1, memory_type_, &status), "MPI_File_write_all");
    else
      check(MPI_File_write(fh_, p.memory.data(), 1, memory_type_, &status), "MPI_File_write");
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
  void new_case() override { types_for_ = nullptr; }

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

}  // namespace

std::unique_ptr<Method> make_method(const std::string& name, std::uint64_t batch, const volseg::Comm& comm,
                                    const volseg::io::Hints& hints) {
  if (name == "posix") return std::make_unique<Posix>();
  if (name == "listio") return std::make_unique<ListIo>(batch);
  if (name == "listio-uring") return std::make_unique<UringListIo>(batch);
  if (name == "datatype") return std::make_unique<MpiIo>(false);
  if (name == "collective") return std::make_unique<MpiIo>(true);
  if (name.rfind("twophase-", 0) == 0) return std::make_unique<TwoPhase>(name.substr(9), comm, hints);
  fail("unknown method " + name);
}

}  // namespace volseg::bench::ncio
