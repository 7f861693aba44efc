// SPDX-License-Identifier: MIT
// Fogal & Krüger §5's ranged file API, which the paper proposes and no application
// had used:
//
//   open_range   open with an explicit range of accessible bytes
//   readanyv     accept a set of blocks, return when any one full block is
//                available
//   finished     asynchronous flush: return at once, mark the buffers unused
//   close_range  complete the flushes, clean up, report every error
//
// A Range hands out pointers it owns and never takes caller buffers (the
// paper: "The API should return pointers"), so an implementation is free to
// map the file (Engine::mmap) or to read into its own memory through io_uring
// (Engine::uring).
//
// Offsets are relative to the start of the range. Reading past its end is
// end of file: the piece comes back short (or empty). A read-only range that
// reaches past the end of the file is refused at open; a write range may
// extend the file. After finished(), any use of the range but close() throws
// volseg::Error (the paper: "an implementation may detect these errors").
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

namespace volseg::io::ranged {

enum class Access { read, write };
enum class Engine { mmap, uring };

// "mmap" or "uring"; throws volseg::Error on anything else.
Engine parse_engine(const std::string& name);
const char* engine_name(Engine engine);

// Bytes [offset, offset + length) of the range.
struct Piece {
  std::uint64_t offset = 0;
  std::uint64_t length = 0;
};

// What the application can make progress with once all of it is there: a
// brick of a volume is one piece per contiguous run of the file.
struct Block {
  std::vector<Piece> pieces;
  std::uint64_t bytes() const;
};

// A block's memory, owned by the range: one span per piece, in the block's
// order. Valid until release() (read), commit() (write), finished() or
// close().
struct View {
  std::size_t block = 0;  // readanyv: index of the block in the set it was given
  std::vector<std::span<std::byte>> pieces;
  std::uint64_t handle = 0;  // the range's own name for it
};

struct Options {
  // uring: requests in flight at most (the submission queue's depth). 8 of
  // 4 MiB (32 MiB a rank) keep a virtio disk at its bandwidth; 32 measured
  // slower on 1 and 2 ranks (docs/ranged.md): deeper queues add latency, not
  // bandwidth, and starve the mask's writes queued behind them.
  unsigned queue_depth = 8;
  // uring: a piece is read or written in requests of at most this many bytes,
  // so one large block still keeps several requests in flight. 4 MiB: a
  // common largest transfer of a block device (max_sectors_kb); measured
  // better than 1 MiB with two ranks reading one cold file.
  std::uint64_t request_bytes = std::uint64_t{4} << 20;
  // Memory the range may hold at once: blocks in flight, arrived and not yet
  // handed out, handed out and not yet released (uring); blocks advised with
  // WILLNEED and not yet released (mmap: page cache the kernel may reclaim).
  // At least one block is always allowed, whatever its size. 32 MiB: cold
  // reads on 1 and 2 ranks were as fast as with 128 MiB or faster (a queue
  // longer than the device needs only adds latency), and a rank's memory
  // stays bounded well below the 64 MiB of the memory bar.
  std::uint64_t max_bytes = std::uint64_t{32} << 20;
  // uring, read ranges: O_DIRECT, so each byte goes from the disk straight
  // into the range's buffers (pieces are widened to 4 KiB units inside the
  // buffer); falls back to buffered reads where the file system refuses it.
  bool direct = true;
};

class Range {
 public:
  virtual ~Range() = default;  // error paths only: cleans up quietly
  Range() = default;
  Range(const Range&) = delete;
  Range& operator=(const Range&) = delete;

  virtual std::uint64_t length() const = 0;
  virtual Access access() const = 0;
  virtual Engine engine() const = 0;

  // Read ranges. Returns one block of `blocks` all of whose bytes are
  // available; View::block is its index in `blocks`. Call it again with the
  // blocks still wanted (the set may change between calls; blocks are known
  // by their pieces). Throws on an empty set.
  virtual View readanyv(std::span<const Block> blocks) = 0;
  // Read ranges: the view's memory is no longer needed.
  virtual void release(View& view) = 0;

  // Write ranges. Memory for the block's bytes, to be filled and committed;
  // every piece must lie inside the range.
  virtual View acquire(const Block& block) = 0;
  // Write ranges: the view is filled; its bytes go to the file (now or
  // later: errors surface at close()).
  virtual void commit(View& view) = 0;

  // finished(): returns at once; dirty data is flushed asynchronously; every
  // later use of the range but close() throws.
  virtual void finished() = 0;
  // close_range(): completes the flushes and reports every error (one
  // volseg::Error naming them all). Safe to call once, after or without
  // finished().
  virtual void close() = 0;
};

// open_range(). Throws volseg::Error naming the path on failure.
std::unique_ptr<Range> open_range(Engine engine, const std::string& path, std::uint64_t offset, std::uint64_t length,
                                  Access access, const Options& options = {});

}  // namespace volseg::io::ranged
