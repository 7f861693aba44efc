// SPDX-License-Identifier: MIT
// The ranged API over one shared mapping of the range.
//
// readanyv: madvise(WILLNEED) on the blocks asked for (as many as
// Options::max_bytes allows, in the order given), then mincore() to find one
// whose pages are all resident (and whose pieces' last bytes a RWF_NOWAIT
// read finds up to date: mincore also counts pages still being read); when
// none is yet, the first advised block is faulted in (MADV_POPULATE_READ)
// and returned. Views point into the mapping. A page that cannot be read
// fails the populate, or raises SIGBUS where the pages are touched instead:
// the mapping is watched (mapped_pages.hpp), and release() and close()
// throw the error, naming the file. Fault injection: a read fault is a
// block's hand-out, and fails it as a failed populate would (short faults
// have no effect on a mapping).
//
// Writes: a write range that reaches past the end of the file extends it
// with fallocate (so stores cannot meet a full disk as SIGBUS), views point
// into the mapping, finished() starts writeback with sync_file_range, and
// close() waits for it with fdatasync.
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/uio.h>
#include <unistd.h>

#include <cerrno>
#include <map>
#include <memory>
#include <set>

#include "mapped_pages.hpp"
#include "range_base.hpp"
#include "volseg/io/faults.hpp"
#include "volseg/io/trace.hpp"

#ifndef MADV_POPULATE_READ
#define MADV_POPULATE_READ 22
#endif

namespace volseg::io::ranged {
namespace {

std::uint64_t page_size() {
  static const auto size = static_cast<std::uint64_t>(::sysconf(_SC_PAGESIZE));
  return size;
}

class MmapRange final : public detail::RangeBase {
 public:
  MmapRange(const std::string& path, std::uint64_t offset, std::uint64_t length, Access access, const Options& options)
      : RangeBase(path, offset, length, access, Engine::mmap), max_bytes_(options.max_bytes) {
    const bool reading = access == Access::read;
    {
      trace::Span span(trace::Op::open);
      fd_ = ::open(path.c_str(), reading ? O_RDONLY | O_CLOEXEC : O_RDWR | O_CREAT | O_CLOEXEC, 0666);
    }
    if (fd_ < 0) throw_errno("open_range", path);
    try {
      const std::uint64_t size = checked_file_size(fd_);
      if (!reading && offset + length > size) extend(size, offset + length);
      map_start_ = offset / page_size() * page_size();
      map_length_ = offset + length - map_start_;
      if (length > 0) {
        trace::Span span(trace::Op::map, static_cast<std::int64_t>(map_start_), map_length_);
        void* base = ::mmap(nullptr, map_length_, reading ? PROT_READ : PROT_READ | PROT_WRITE, MAP_SHARED, fd_,
                            static_cast<off_t>(map_start_));
        if (base == MAP_FAILED) throw_errno("mmap", path);
        map_ = static_cast<std::byte*>(base);
        base_ = map_ + (offset - map_start_);
        watch_ = std::make_unique<mapped::Watch>(map_, map_length_, map_start_, path, !reading);
      }
    } catch (...) {
      ::close(fd_);
      throw;
    }
  }

  ~MmapRange() override {
    watch_.reset();
    if (map_) ::munmap(map_, map_length_);
    if (fd_ >= 0) ::close(fd_);
  }

  View readanyv(std::span<const Block> blocks) override {
    check_usable("readanyv", Access::read);
    if (blocks.empty()) fail("readanyv of an empty set of blocks");
    std::vector<BlockKeyRef> keys;
    keys.reserve(blocks.size());
    for (const Block& block : blocks) keys.push_back(advised_.find(detail::key_of(block)));
    // Announce what the budget allows, in the caller's order.
    for (std::size_t i = 0; i < blocks.size(); ++i) {
      if (keys[i] != advised_.end()) continue;
      const std::uint64_t bytes = blocks[i].bytes();
      if (advised_bytes_ > 0 && advised_bytes_ + bytes > max_bytes_) break;
      advise(blocks[i]);
      keys[i] = advised_.emplace(detail::key_of(blocks[i]), Advised{bytes, 0}).first;
      advised_bytes_ += bytes;
    }
    for (std::size_t i = 0; i < blocks.size(); ++i)
      if (keys[i] != advised_.end() && keys[i]->second.handed == 0 && resident(blocks[i]))
        return hand_out(i, blocks[i], keys[i]);
    // Nothing is all there yet: wait for the oldest announced block.
    for (std::size_t i = 0; i < blocks.size(); ++i)
      if (keys[i] != advised_.end() && keys[i]->second.handed == 0) {
        populate(blocks[i]);
        return hand_out(i, blocks[i], keys[i]);
      }
    fail("readanyv: every block asked for is handed out and not released, or max_bytes is held by them");
  }

  void release(View& view) override {
    check_usable("release", Access::read);
    auto handed = handed_.find(view.handle);
    if (handed == handed_.end()) fail("release of a view this range did not hand out, or released twice");
    advised_bytes_ -= handed->second->second.bytes;
    advised_.erase(handed->second);
    handed_.erase(handed);
    // Drop the block's page-table entries (the pages stay in the page
    // cache; a read-only shared mapping loses nothing): otherwise every page
    // a rank ever read stays mapped, counted in its resident set (2 GiB a
    // rank on a 4 GiB input). A page shared with a block still to come is
    // faulted back in from the cache.
    const auto page = static_cast<std::uintptr_t>(::sysconf(_SC_PAGESIZE));
    for (const auto& piece : view.pieces) {
      if (piece.empty()) continue;
      const auto begin = reinterpret_cast<std::uintptr_t>(piece.data()) / page * page;
      const auto end = (reinterpret_cast<std::uintptr_t>(piece.data()) + piece.size() + page - 1) / page * page;
      ::madvise(reinterpret_cast<void*>(begin), end - begin, MADV_DONTNEED);  // advice: nothing to check
    }
    view.pieces.clear();
    if (watch_) watch_->check(fd_);
  }

  View acquire(const Block& block) override {
    check_usable("acquire", Access::write);
    check_inside(block);
    View view;
    view.handle = ++last_handle_;
    for (const Piece& piece : block.pieces)
      view.pieces.emplace_back(base_ + piece.offset, static_cast<std::size_t>(piece.length));
    acquired_.insert(view.handle);
    return view;
  }

  // The bytes are in the mapping already; the page cache writes them back.
  void commit(View& view) override {
    check_usable("commit", Access::write);
    if (acquired_.erase(view.handle) == 0) fail("commit of a view this range did not hand out, or committed twice");
    view.pieces.clear();
  }

  void finished() override {
    begin_finished();
    if (access() == Access::write && length() > 0) {
      trace::Span span(trace::Op::sync, static_cast<std::int64_t>(file_offset()), length());
      if (::sync_file_range(fd_, static_cast<off64_t>(file_offset()), static_cast<off64_t>(length()),
                            SYNC_FILE_RANGE_WRITE) != 0)
        note_error(detail::errno_text("sync_file_range", path(), errno));
    }
    unmap();
  }

  void close() override {
    if (!begin_close()) return;
    unmap();
    if (access() == Access::write) {
      trace::Span span(trace::Op::sync, static_cast<std::int64_t>(file_offset()), length());
      const auto fault = faults::at(faults::Call::fsync);
      if ((fault.error ? (errno = fault.error, -1) : ::fdatasync(fd_)) != 0)
        note_error(detail::errno_text("fdatasync", path(), errno));
    }
    trace::Span span(trace::Op::close);
    const auto fault = faults::at(faults::Call::close);
    int closed = ::close(fd_);
    if (fault.error) errno = fault.error, closed = -1;
    if (closed != 0) note_error(detail::errno_text("close", path(), errno));
    fd_ = -1;
    report_errors();
  }

 private:
  struct Advised {
    std::uint64_t bytes;
    int handed;  // 1 while a view of it is out
  };
  using BlockKeyRef = std::map<detail::BlockKey, Advised>::iterator;

  void extend(std::uint64_t size, std::uint64_t end) {
    if (::fallocate(fd_, 0, static_cast<off_t>(size), static_cast<off_t>(end - size)) == 0) return;
    if (errno != EOPNOTSUPP) throw_errno("fallocate (extending the file for a write range)", path());
    if (::ftruncate(fd_, static_cast<off_t>(end)) != 0) throw_errno("ftruncate", path());
  }

  // Page-aligned [first, last) of the mapping that holds a piece.
  std::pair<std::byte*, std::size_t> pages(const Piece& piece, std::uint64_t length) const {
    const std::uint64_t begin = (base_ - map_) + piece.offset, end = begin + length;
    const std::uint64_t first = begin / page_size() * page_size();
    const std::uint64_t last =
        std::min<std::uint64_t>((end + page_size() - 1) / page_size() * page_size(), map_length_);
    return {map_ + first, static_cast<std::size_t>(last - first)};
  }

  void advise(const Block& block) {
    for (const Piece& piece : block.pieces)
      if (const std::uint64_t length = clamp(piece); length > 0) {
        auto [address, bytes] = pages(piece, length);
        trace::Span span(trace::Op::advise, static_cast<std::int64_t>(map_start_ + (address - map_)), bytes);
        if (::madvise(address, bytes, MADV_WILLNEED) != 0) throw_errno("madvise(WILLNEED)", path());
      }
  }

  bool resident(const Block& block) {
    for (const Piece& piece : block.pieces)
      if (const std::uint64_t length = clamp(piece); length > 0) {
        auto [address, bytes] = pages(piece, length);
        residency_.resize((bytes + page_size() - 1) / page_size());
        if (::mincore(address, bytes, residency_.data()) != 0) throw_errno("mincore", path());
        for (unsigned char page : residency_)
          if (!(page & 1)) return false;
        // mincore counts pages whose reads are still in flight; a read that
        // must not wait (RWF_NOWAIT) of the piece's last byte tells whether
        // the readahead got there (it fills a window in file order).
        std::byte last;
        iovec vector{&last, 1};
        if (::preadv2(fd_, &vector, 1, static_cast<off_t>(file_offset() + piece.offset + length - 1), RWF_NOWAIT) < 0) {
          if (errno == EAGAIN) return false;
          if (errno != EOPNOTSUPP && errno != EINVAL) throw_errno("preadv2(RWF_NOWAIT)", path());
        }
      }
    return true;
  }

  // The fallback: fault the block in now, in one call per piece.
  void populate(const Block& block) {
    for (const Piece& piece : block.pieces)
      if (const std::uint64_t length = clamp(piece); length > 0) {
        auto [address, bytes] = pages(piece, length);
        // A blocking read of the block's pages into the page cache: `read`.
        const std::uint64_t at_file = map_start_ + static_cast<std::uint64_t>(address - map_);
        trace::Span span(trace::Op::read, static_cast<std::int64_t>(at_file), bytes);
        if (::madvise(address, bytes, MADV_POPULATE_READ) == 0) continue;
        if (errno != EINVAL) mapped::populate_error(errno, fd_, at_file, bytes, path(), false);
        volatile std::byte sink{};  // kernels before 5.14: touch every page (a SIGBUS is watched)
        for (std::size_t at = 0; at < bytes; at += page_size()) sink = address[at];
        (void)sink;
        if (watch_) watch_->check(fd_);
      }
  }

  View hand_out(std::size_t index, const Block& block, BlockKeyRef key) {
    if (const auto fault = faults::at(faults::Call::read); fault.error) {
      const Piece& first = block.pieces.front();
      mapped::populate_error(fault.error, fd_, file_offset() + first.offset, first.length, path(), false);
    }
    View view;
    view.block = index;
    view.handle = ++last_handle_;
    for (const Piece& piece : block.pieces) {
      const std::uint64_t length = clamp(piece);
      view.pieces.emplace_back(length > 0 ? base_ + piece.offset : nullptr, static_cast<std::size_t>(length));
    }
    key->second.handed = 1;
    handed_.emplace(view.handle, key);
    return view;
  }

  void unmap() {
    if (!map_) return;
    if (watch_) {
      try {
        watch_->check(fd_);
      } catch (const Error& e) {
        note_error(e.what());
      }
      watch_.reset();
    }
    trace::Span span(trace::Op::unmap, static_cast<std::int64_t>(map_start_), map_length_);
    if (::munmap(map_, map_length_) != 0) note_error(detail::errno_text("munmap", path(), errno));
    map_ = base_ = nullptr;
  }

  int fd_ = -1;
  std::uint64_t max_bytes_;
  std::unique_ptr<mapped::Watch> watch_;  // SIGBUS on the mapping, while it is mapped
  std::byte* map_ = nullptr;              // page-aligned start of the mapping
  std::byte* base_ = nullptr;             // byte 0 of the range
  std::uint64_t map_start_ = 0, map_length_ = 0;
  std::map<detail::BlockKey, Advised> advised_;
  std::uint64_t advised_bytes_ = 0;
  std::map<std::uint64_t, BlockKeyRef> handed_;  // read views out, by handle
  std::set<std::uint64_t> acquired_;             // write views out
  std::uint64_t last_handle_ = 0;
  std::vector<unsigned char> residency_;
};

}  // namespace

std::unique_ptr<Range> open_mmap_range(const std::string& path, std::uint64_t offset, std::uint64_t length,
                                       Access access, const Options& options) {
  return std::make_unique<MmapRange>(path, offset, length, access, options);
}

}  // namespace volseg::io::ranged
