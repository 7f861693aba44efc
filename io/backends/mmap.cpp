// SPDX-License-Identifier: MIT
// Backends "mmap" and "mmap-advise" (Fogal & Krüger, §4.1): map only the window of
// the current extent, hand its runs out in place, unmap after. "mmap-advise"
// adds the paper's one line, posix_fadvise(WILLNEED) on the next brick before
// the current one is processed; hint advise_depth=k advises k bricks ahead.
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <exception>
#include <memory>
#include <vector>

#include "mapped_pages.hpp"
#include "raw/raw_volume.hpp"
#include "volseg/io/error.hpp"
#include "volseg/io/faults.hpp"
#include "volseg/io/registry.hpp"
#include "volseg/io/trace.hpp"

// Linux 5.14+; older C libraries do not name them.
#ifndef MADV_POPULATE_READ
#define MADV_POPULATE_READ 22
#endif
#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif

namespace volseg::io {
namespace {

std::uint64_t page_size() {
  static const auto size = static_cast<std::uint64_t>(::sysconf(_SC_PAGESIZE));
  return size;
}

// Maps the bytes of extent in a file holding a [z][y][x] volume, from the
// first run's start to the last run's end, and lists the runs inside it.
//
// With populate, the whole window is faulted in by one madvise call instead
// of one page fault per few pages while the kernel runs; a kernel without
// MADV_POPULATE_* (before 5.14) simply faults as usual. A page that cannot
// be read fails the populate (EFAULT), or, where nothing populated, raises
// SIGBUS on the access: the window is watched (mapped_pages.hpp), so either
// way the error names the file when the window is released.
//
// Fault injection: a read (write) fault is this map's read (write). With a
// populate that worked, the populate fails with the injected errno; without
// one, the first page is made to raise a real SIGBUS. Short faults have no
// effect on a mapping.
Mapping map_extent(int fd, const VolumeInfo& info, std::uint64_t base_offset, const Extent& extent, bool writable,
                   bool needs_swap, bool populate, const std::string& path) {
  if (extent.empty()) return Mapping({}, needs_swap, {});
  const std::size_t size = dtype_size(info.dtype);
  std::uint64_t first = UINT64_MAX, last = 0;
  raw::for_each_run(info.dims, extent, size, base_offset, [&](std::uint64_t offset, std::int64_t count, std::int64_t) {
    first = std::min(first, offset);
    last = std::max(last, offset + static_cast<std::uint64_t>(count) * size);
  });
  const std::uint64_t start = first / page_size() * page_size();
  const std::size_t length = last - start;
  int protection = writable ? PROT_READ | PROT_WRITE : PROT_READ;
  // One map record for mmap and its populate, as mmap(MAP_POPULATE) would
  // be: the populate is where a mapped read's time goes, and "advise" stays
  // the WILLNEED hints alone.
  void* base = nullptr;
  {
    trace::Span span(trace::Op::map, static_cast<std::int64_t>(start), length);
    const auto fault = faults::at(writable ? faults::Call::write : faults::Call::read);
    base = ::mmap(nullptr, length, protection, MAP_SHARED, fd, static_cast<off_t>(start));
    if (base == MAP_FAILED) throw_errno("mmap", path);
    bool populated = false;
    int error = 0;
    if (populate) {
      if (::madvise(base, length, writable ? MADV_POPULATE_WRITE : MADV_POPULATE_READ) == 0)
        populated = true;
      else if (errno != EINVAL)
        error = errno;  // EINVAL: before Linux 5.14; the accesses fault the pages in
    }
    if (populated && fault.error) error = fault.error;
    if (error != 0) {
      ::munmap(base, length);
      mapped::populate_error(error, fd, start, length, path, writable);
    }
    if (fault.error && !populated) {
      try {
        mapped::plant_sigbus(base, writable);
      } catch (...) {
        ::munmap(base, length);
        throw;
      }
    }
  }
  std::vector<Run> runs;
  raw::for_each_run(info.dims, extent, size, base_offset,
                    [&](std::uint64_t offset, std::int64_t count, std::int64_t index) {
                      runs.push_back(Run{static_cast<std::byte*>(base) + (offset - start), count, index});
                    });
  auto watch = std::make_shared<mapped::Watch>(base, length, start, path, writable);
  return Mapping(std::move(runs), needs_swap, [base, length, start, path, fd, watch]() mutable {
    trace::Span span(trace::Op::unmap, static_cast<std::int64_t>(start), length);
    std::exception_ptr failed;
    try {
      watch->check(fd);
    } catch (...) {
      failed = std::current_exception();
    }
    watch.reset();  // before the pages go: no other mapping there is ever taken for this one
    if (::munmap(base, length) != 0 && !failed) throw_errno("munmap", path);
    if (failed) std::rethrow_exception(failed);
  });
}

class MmapReader final : public VolumeReader {
 public:
  MmapReader(const std::string& path, const Comm& comm, int advise_depth, bool populate, const std::string& array)
      : VolumeReader({.map = true, .reads_ahead = advise_depth > 0, .prefetch_depth = advise_depth}),
        input_(path, comm, true, array),
        advise_depth_(advise_depth),
        populate_(populate) {}
  const VolumeInfo& info() const override { return input_.header().info; }
  std::string backend_name() const override { return advise_depth_ > 0 ? "mmap-advise" : "mmap"; }

  Mapping do_map(const Extent& extent) override {
    Mapping mapping = map_extent(input_.fd(), info(), input_.header().byte_skip, extent, false, input_.needs_swap(),
                                 populate_, input_.header().data_path);
    bytes_read_ += static_cast<std::uint64_t>(extent.voxels()) * dtype_size(info().dtype);
    return mapping;
  }

  void do_read(const Extent& extent, void* buffer) override {
    Mapping mapping = do_map(extent);
    raw::copy_out(mapping, buffer, dtype_size(info().dtype));
    mapping.release();
  }

  void do_will_need(const Extent& extent) override {
    if (advise_depth_ == 0 || extent.empty()) return;
    const std::size_t size = dtype_size(info().dtype);
    raw::for_each_run(info().dims, extent, size, input_.header().byte_skip,
                      [&](std::uint64_t offset, std::int64_t count, std::int64_t) {
                        trace::Span span(trace::Op::advise, static_cast<std::int64_t>(offset),
                                         static_cast<std::uint64_t>(count) * size);
                        int rc = ::posix_fadvise(input_.fd(), static_cast<off_t>(offset),
                                                 static_cast<off_t>(static_cast<std::uint64_t>(count) * size),
                                                 POSIX_FADV_WILLNEED);
                        if (rc != 0) throw_errno("posix_fadvise", input_.header().data_path, rc);
                      });
  }

  void do_close() override { input_.close(); }
  std::uint64_t bytes_read() const override { return bytes_read_; }
  std::vector<std::string> files() const override { return input_.files(); }

 private:
  raw::RawInput input_;
  int advise_depth_;
  bool populate_;
  std::atomic<std::uint64_t> bytes_read_{0};
};

class MmapWriter final : public VolumeWriter {
 public:
  MmapWriter(const CreateRequest& request, const Comm& comm, bool fsync, bool populate, bool direct, std::string name)
      : VolumeWriter({.map = true}),
        output_(request, comm, fsync, direct),
        name_(std::move(name)),
        populate_(populate) {}
  const VolumeInfo& info() const override { return output_.info(); }
  std::string backend_name() const override { return name_; }

  Mapping do_map(const Extent& extent) override {
    // The output was reserved with fallocate at create, so stores into the
    // mapping cannot meet a full disk (which would be SIGBUS, not an error).
    Mapping mapping = map_extent(output_.fd(), info(), output_.data_offset(), extent, true, output_.needs_swap(),
                                 populate_, output_.data_path());
    bytes_written_ += static_cast<std::uint64_t>(extent.voxels()) * dtype_size(info().dtype);
    return mapping;
  }

  // Plain writes go through pwrite (O_DIRECT for whole planes, see
  // RawOutput): creating fresh page-cache pages by write() measured cheaper
  // than faulting them in through a mapping.
  void do_write(const Extent& extent, const void* buffer) override {
    output_.write(extent, buffer);
    bytes_written_ += static_cast<std::uint64_t>(extent.voxels()) * dtype_size(info().dtype);
  }

  void do_close() override { output_.close(); }
  std::uint64_t bytes_written() const override { return bytes_written_; }

 private:
  raw::RawOutput output_;
  std::string name_;
  bool populate_;
  std::atomic<std::uint64_t> bytes_written_{0};
};

Backend make_mmap_backend(const std::string& name, bool advise) {
  Backend backend;
  backend.name = name;
  backend.formats = "raw (NRRD .nhdr)";
  backend.extension = ".nhdr";
  backend.raw_layout = true;
  backend.description = advise ? "mmap of the current brick + posix_fadvise(WILLNEED) on the next (\"Advised\")"
                               : "mmap of the current brick, processed in place";
  backend.hints = {{"populate", HintFor::both}, {"fsync", HintFor::writers}, {"direct_write", HintFor::writers}};
  if (advise) backend.hints.push_back({"advise_depth", HintFor::readers});
  backend.open = [name, advise](const OpenRequest& request, const Comm& comm,
                                const Hints& hints) -> std::unique_ptr<VolumeReader> {
    int depth = advise ? static_cast<int>(hints.get_int("advise_depth", 1)) : 0;
    if (advise && depth < 1) throw Error("hint advise_depth must be at least 1");
    bool populate = hints.get_bool("populate", true);
    request.selection.refuse_step_and_glob(name);
    hints.reject_unused(name);
    return std::make_unique<MmapReader>(request.path, comm, depth, populate, request.selection.variable);
  };
  backend.create = [name](const CreateRequest& request, const Comm& comm,
                          const Hints& hints) -> std::unique_ptr<VolumeWriter> {
    bool fsync = hints.get_bool("fsync", false);
    bool populate = hints.get_bool("populate", true);
    bool direct = hints.get_bool("direct_write", false);
    hints.reject_unused(name);
    return std::make_unique<MmapWriter>(request, comm, fsync, populate, direct, name);
  };
  return backend;
}

}  // namespace

Backend make_mmap_backend() { return make_mmap_backend("mmap", false); }
Backend make_mmap_advise_backend() { return make_mmap_backend("mmap-advise", true); }

}  // namespace volseg::io
