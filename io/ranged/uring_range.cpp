// SPDX-License-Identifier: MIT
// The ranged API over io_uring (Debian's liburing).
//
// readanyv starts the blocks asked for, in the caller's order, as long as the
// memory they need stays within Options::max_bytes: each gets one buffer of
// its own, cut into requests of at most request_bytes, of which at most
// queue_depth are in flight. It returns the first block whose requests have
// all completed. Short reads are resubmitted for the rest; an error is the
// block's, thrown when that block would be handed out. Reads use O_DIRECT
// (Options::direct) where the file system allows it.
//
// Writes: commit() queues the view's requests and returns; the buffer is
// freed when they complete. finished() submits what the queue can take and
// returns; close() waits for every request, then fdatasync, and reports every
// error it met.
//
// Fault injection: each completion is a read or a write; an injected error
// replaces its result, and a short fault halves it (to whole alignment units
// with O_DIRECT, as a real short transfer ends), so the rest is resubmitted.
#include <fcntl.h>
#include <liburing.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <deque>
#include <map>
#include <memory>

#include "range_base.hpp"
#include "volseg/io/faults.hpp"
#include "volseg/io/trace.hpp"

namespace volseg::io::ranged {
namespace {

// O_DIRECT transfers start, end and sit in memory on multiples of this
// (at least any device's logical block size).
constexpr std::uint64_t kDirectAlignment = 4096;

struct FreeBuffer {
  void operator()(std::byte* p) const { std::free(p); }
};
using Buffer = std::unique_ptr<std::byte[], FreeBuffer>;

// Buffers of a megabyte or more are 2 MiB-aligned and asked to be backed by
// transparent huge pages. An O_DIRECT read into 4 KiB pages scattered in
// memory becomes requests of at most max_segments pages (about 0.5-1 MiB on
// a virtio disk), where the page cache's readahead sends 4 MiB requests
// built from large folios; /proc/diskstats showed the small requests keeping
// the device busy a third longer for the same bytes (docs/ranged.md). A
// huge page is one segment of 2 MiB.
constexpr std::uint64_t kHugePage = std::uint64_t{2} << 20;

Buffer allocate_buffer(std::uint64_t bytes, std::uint64_t& capacity) {
  const std::uint64_t align = bytes >= (kHugePage >> 1) ? kHugePage : kDirectAlignment;
  capacity = (bytes + align - 1) / align * align;
  Buffer buffer(static_cast<std::byte*>(std::aligned_alloc(align, capacity)));
  if (buffer && align == kHugePage) ::madvise(buffer.get(), capacity, MADV_HUGEPAGE);  // a wish: no THP, small pages
  return buffer;
}

class UringRange final : public detail::RangeBase {
 public:
  UringRange(const std::string& path, std::uint64_t offset, std::uint64_t length, Access access, const Options& options)
      : RangeBase(path, offset, length, access, Engine::uring),
        depth_(options.queue_depth),
        request_bytes_(std::max<std::uint64_t>(
            std::min<std::uint64_t>(options.request_bytes, 1u << 30) / kDirectAlignment * kDirectAlignment,
            kDirectAlignment)),
        max_bytes_(options.max_bytes) {
    const bool reading = access == Access::read;
    // Reads bypass the page cache with O_DIRECT when asked and the file
    // system allows it: every byte is read once, straight into our buffers.
    direct_ = reading && options.direct;
    trace::Span span(trace::Op::open);
    fd_ = ::open(path.c_str(), reading ? O_RDONLY | O_CLOEXEC | (direct_ ? O_DIRECT : 0) : O_RDWR | O_CREAT | O_CLOEXEC,
                 0666);
    if (fd_ < 0 && direct_ && errno == EINVAL) {  // tmpfs and others: buffered
      direct_ = false;
      fd_ = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    }
    if (fd_ < 0) throw_errno("open_range", path);
    try {
      const std::uint64_t size = checked_file_size(fd_);
      if (!reading && offset + length > size && ::ftruncate(fd_, static_cast<off_t>(offset + length)) != 0)
        throw_errno("ftruncate (extending the file for a write range)", path);
      if (int rc = ::io_uring_queue_init(depth_, &ring_, 0); rc < 0)
        throw_errno("io_uring_queue_init (is io_uring disabled here? ranged-mmap needs no io_uring)", path, -rc);
    } catch (...) {
      ::close(fd_);
      throw;
    }
  }

  ~UringRange() override {
    if (fd_ < 0) return;
    // The kernel may still be writing into our buffers: wait before freeing.
    try {
      drain();
    } catch (...) {
    }
    ::io_uring_queue_exit(&ring_);
    ::close(fd_);
  }

  View readanyv(std::span<const Block> blocks) override {
    check_usable("readanyv", Access::read);
    if (blocks.empty()) fail("readanyv of an empty set of blocks");
    for (;;) {
      bool waiting = false;  // some block of the set is in flight
      for (std::size_t i = 0; i < blocks.size(); ++i) {
        auto found = by_key_.find(detail::key_of(blocks[i]));
        if (found == by_key_.end() || found->second->handed) continue;
        Slot& slot = *found->second;
        if (slot.pending > 0) {
          waiting = true;
          continue;
        }
        if (!slot.error.empty()) {
          std::string error = slot.error;
          forget(slot);
          throw RankError(error);
        }
        return hand_out(i, slot);
      }
      for (const Block& block : blocks) {
        if (by_key_.count(detail::key_of(block))) continue;
        const std::uint64_t bytes = block.bytes();
        if (held_bytes_ > 0 && held_bytes_ + bytes > max_bytes_) break;
        start_read(block);
        waiting = true;
      }
      if (!waiting)
        fail("readanyv: every block asked for is handed out and not released, or max_bytes is held by them");
      pump();
      reap(true);
    }
  }

  void release(View& view) override {
    check_usable("release", Access::read);
    auto found = handed_.find(view.handle);
    if (found == handed_.end()) fail("release of a view this range did not hand out, or released twice");
    Slot* slot = found->second;
    handed_.erase(found);
    forget(*slot);
    view.pieces.clear();
  }

  View acquire(const Block& block) override {
    check_usable("acquire", Access::write);
    check_inside(block);
    const std::uint64_t bytes = block.bytes();
    while (held_bytes_ > 0 && held_bytes_ + bytes > max_bytes_ && (in_flight_ > 0 || !queued_.empty())) {
      pump();
      reap(true);
    }
    Slot& slot = make_slot(block);
    View view;
    view.handle = slot.handle;
    view.pieces = slot.pieces;
    handed_.emplace(slot.handle, &slot);
    return view;
  }

  void commit(View& view) override {
    check_usable("commit", Access::write);
    auto found = handed_.find(view.handle);
    if (found == handed_.end()) fail("commit of a view this range did not hand out, or committed twice");
    Slot& slot = *found->second;
    handed_.erase(found);
    view.pieces.clear();
    enqueue(slot, true);
    if (slot.pending == 0) forget(slot);
    pump();
    reap(false);
  }

  void finished() override {
    begin_finished();
    pump();  // no waiting: what the queue cannot take yet goes at close()
  }

  void close() override {
    if (!begin_close()) return;
    try {
      drain();
    } catch (const Error& e) {
      note_error(e.what());
    }
    if (access() == Access::write) {
      trace::Span span(trace::Op::sync, static_cast<std::int64_t>(file_offset()), length());
      const auto fault = faults::at(faults::Call::fsync);
      if ((fault.error ? (errno = fault.error, -1) : ::fdatasync(fd_)) != 0)
        note_error(detail::errno_text("fdatasync", path(), errno));
    }
    ::io_uring_queue_exit(&ring_);
    trace::Span span(trace::Op::close);
    const auto fault = faults::at(faults::Call::close);
    int closed = ::close(fd_);
    if (fault.error) errno = fault.error, closed = -1;
    if (closed != 0) note_error(detail::errno_text("close", path(), errno));
    fd_ = -1;
    slots_.clear();
    by_key_.clear();
    handed_.clear();
    report_errors();
  }

 private:
  // The file bytes moved for a piece: with O_DIRECT, the piece widened to
  // whole alignment units (the piece's span sits inside); `needed` ends the
  // bytes that must come back (a short read past it is end of file).
  struct Transfer {
    std::uint64_t file_offset = 0, length = 0, needed = 0;
    std::byte* data = nullptr;
  };
  // One block's buffer and progress.
  struct Slot {
    std::uint64_t handle = 0;
    detail::BlockKey key;
    Buffer buffer;
    std::uint64_t bytes = 0, capacity = 0;
    std::vector<std::span<std::byte>> pieces;  // into buffer, clamped at the range's end
    std::vector<Transfer> transfers;           // what moves for each piece
    std::size_t pending = 0;                   // requests not yet complete
    bool handed = false;
    std::string error;
  };
  struct Request {
    Slot* slot;
    std::byte* data;
    std::uint64_t offset;  // in the file
    std::uint64_t length;
    std::uint64_t needed;  // a read may stop short at end of file beyond this
    bool write;
    double submitted = 0;  // trace clock, when tracing
  };

  Slot& make_slot(const Block& block) {
    auto slot = std::make_unique<Slot>();
    slot->handle = ++last_handle_;
    slot->key = detail::key_of(block);
    const std::uint64_t unit = direct_ ? kDirectAlignment : 1;
    std::vector<std::uint64_t> at;  // of each piece's transfer in the buffer
    for (const Piece& piece : block.pieces) {
      const std::uint64_t length = access() == Access::read ? clamp(piece) : piece.length;
      const std::uint64_t begin = file_offset() + piece.offset, end = begin + length;
      Transfer transfer;
      transfer.file_offset = begin / unit * unit;
      transfer.length = length == 0 ? 0 : (end + unit - 1) / unit * unit - transfer.file_offset;
      transfer.needed = end;
      at.push_back(slot->bytes);
      slot->bytes += transfer.length;
      slot->transfers.push_back(transfer);
    }
    if (slot->bytes > 0) {
      slot->buffer = take_buffer(slot->bytes, slot->capacity);
      if (!slot->buffer) fail("out of memory for a block of " + std::to_string(slot->bytes) + " bytes");
    }
    for (std::size_t p = 0; p < block.pieces.size(); ++p) {
      Transfer& transfer = slot->transfers[p];
      transfer.data = slot->buffer.get() + at[p];
      const std::uint64_t length = transfer.needed - (file_offset() + block.pieces[p].offset);
      slot->pieces.emplace_back(
          length > 0 ? transfer.data + (file_offset() + block.pieces[p].offset - transfer.file_offset) : nullptr,
          static_cast<std::size_t>(length));
    }
    held_bytes_ += slot->bytes;
    Slot& ref = *slot;
    by_key_[ref.key] = &ref;
    slots_.emplace(ref.handle, std::move(slot));
    return ref;
  }

  void start_read(const Block& block) { enqueue(make_slot(block), false); }

  // Cuts the slot's transfers into requests of at most request_bytes.
  void enqueue(Slot& slot, bool write) {
    for (const Transfer& transfer : slot.transfers)
      for (std::uint64_t done = 0; done < transfer.length; done += request_bytes_) {
        const std::uint64_t length = std::min<std::uint64_t>(request_bytes_, transfer.length - done);
        queued_.push_back(
            Request{&slot, transfer.data + done, transfer.file_offset + done, length, transfer.needed, write});
        ++slot.pending;
      }
  }

  // Submits queued requests while the ring has room.
  void pump() {
    unsigned added = 0;
    while (in_flight_ < depth_ && !queued_.empty()) {
      io_uring_sqe* sqe = ::io_uring_get_sqe(&ring_);
      if (!sqe) break;
      auto* request = new Request(queued_.front());
      queued_.pop_front();
      if (trace::enabled()) request->submitted = trace::now_s();
      if (request->write)
        ::io_uring_prep_write(sqe, fd_, request->data, static_cast<unsigned>(request->length), request->offset);
      else
        ::io_uring_prep_read(sqe, fd_, request->data, static_cast<unsigned>(request->length), request->offset);
      ::io_uring_sqe_set_data(sqe, request);
      ++in_flight_;
      ++added;
    }
    if (added == 0) return;
    int rc;
    do rc = ::io_uring_submit(&ring_);
    while (rc == -EINTR);
    if (rc < 0) throw_errno("io_uring_submit", path(), -rc);
  }

  // Handles completions: waits for one first when `wait` and any is in flight.
  void reap(bool wait) {
    io_uring_cqe* cqe = nullptr;
    if (wait && in_flight_ > 0) {
      trace::Span span(trace::Op::wait);
      int rc;
      do rc = ::io_uring_wait_cqe(&ring_, &cqe);
      while (rc == -EINTR);
      if (rc < 0) throw_errno("io_uring_wait_cqe", path(), -rc);
    }
    while (::io_uring_peek_cqe(&ring_, &cqe) == 0 && cqe) {
      std::unique_ptr<Request> request(static_cast<Request*>(::io_uring_cqe_get_data(cqe)));
      const int result = cqe->res;
      ::io_uring_cqe_seen(&ring_, cqe);
      --in_flight_;
      complete(*request, result);
    }
  }

  void complete(const Request& request, int result) {
    if (const auto fault = faults::at(request.write ? faults::Call::write : faults::Call::read); fault.error) {
      result = -fault.error;
    } else if (fault.short_io && result > 1) {
      const std::uint64_t unit = direct_ ? kDirectAlignment : 1;
      if (const std::uint64_t half = static_cast<std::uint64_t>(result) / 2 / unit * unit; half > 0)
        result = static_cast<int>(half);
    }
    if (trace::enabled())  // one record per request, from submission to completion
      trace::record(request.write ? trace::Op::write : trace::Op::read, request.submitted,
                    trace::now_s() - request.submitted, static_cast<std::int64_t>(request.offset),
                    result > 0 ? static_cast<std::uint64_t>(result) : 0);
    Slot& slot = *request.slot;
    const char* what = request.write ? "write" : "read";
    if (result < 0) {
      slot.error =
          detail::errno_text(what, path(), -result) + " (io_uring, at byte " + std::to_string(request.offset) + ")";
    } else if (static_cast<std::uint64_t>(result) < request.length &&
               request.offset + static_cast<std::uint64_t>(result) < request.needed) {
      if (result == 0) {
        slot.error = std::string("io_uring ") + what + " " + path() + ": end of file at offset " +
                     std::to_string(request.offset) + " (did the file shrink?)";
      } else {  // short: the rest again
        const auto done = static_cast<std::uint64_t>(result);
        queued_.push_front(Request{&slot, request.data + done, request.offset + done, request.length - done,
                                   request.needed, request.write});
        return;
      }
    }
    if (--slot.pending > 0) return;
    if (request.write) {
      if (!slot.error.empty()) note_error(slot.error);
      forget(slot);
    }
  }

  void drain() {
    while (in_flight_ > 0 || !queued_.empty()) {
      pump();
      reap(true);
    }
  }

  View hand_out(std::size_t index, Slot& slot) {
    slot.handed = true;
    handed_.emplace(slot.handle, &slot);
    View view;
    view.block = index;
    view.handle = slot.handle;
    view.pieces = slot.pieces;
    return view;
  }

  void forget(Slot& slot) {
    held_bytes_ -= slot.bytes;
    // Kept for the next block while what is held and kept stays in budget:
    // a fresh buffer is fresh pages, each a fault (and on a virtual machine
    // often one in the host too) and zeroed before the read overwrites it.
    if (slot.buffer && held_bytes_ + pooled_bytes_ + slot.capacity <= max_bytes_) {
      pooled_bytes_ += slot.capacity;
      pool_.emplace_back(slot.capacity, std::move(slot.buffer));
    }
    by_key_.erase(slot.key);
    slots_.erase(slot.handle);
  }

  // The smallest pooled buffer that holds bytes, else a new one.
  Buffer take_buffer(std::uint64_t bytes, std::uint64_t& capacity) {
    auto best = pool_.end();
    for (auto it = pool_.begin(); it != pool_.end(); ++it)
      if (it->first >= bytes && (best == pool_.end() || it->first < best->first)) best = it;
    if (best == pool_.end()) return allocate_buffer(bytes, capacity);
    capacity = best->first;
    Buffer buffer = std::move(best->second);
    pooled_bytes_ -= capacity;
    pool_.erase(best);
    return buffer;
  }

  int fd_ = -1;
  bool direct_ = false;
  io_uring ring_{};
  unsigned depth_;
  std::uint64_t request_bytes_, max_bytes_;
  std::map<std::uint64_t, std::unique_ptr<Slot>> slots_;  // by handle
  std::map<detail::BlockKey, Slot*> by_key_;
  std::map<std::uint64_t, Slot*> handed_;  // views out, by handle
  std::deque<Request> queued_;
  unsigned in_flight_ = 0;
  std::uint64_t held_bytes_ = 0, last_handle_ = 0;
  std::vector<std::pair<std::uint64_t, Buffer>> pool_;  // released buffers, by capacity
  std::uint64_t pooled_bytes_ = 0;
};

}  // namespace

std::unique_ptr<Range> open_uring_range(const std::string& path, std::uint64_t offset, std::uint64_t length,
                                        Access access, const Options& options) {
  return std::make_unique<UringRange>(path, offset, length, access, options);
}

}  // namespace volseg::io::ranged
