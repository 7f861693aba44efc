// SPDX-License-Identifier: MIT
// What both engines of the ranged API share: the range's bounds, the
// open/finished/closed state with its checks, how blocks are known from one
// readanyv call to the next, and the list of errors close() reports.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "volseg/io/error.hpp"
#include "volseg/io/ranged.hpp"

namespace volseg::io::ranged::detail {

std::string errno_text(std::string_view operation, const std::string& path, int errnum);

// A block is known by its pieces: the same pieces, the same block.
using BlockKey = std::vector<std::pair<std::uint64_t, std::uint64_t>>;
BlockKey key_of(const Block& block);

class RangeBase : public Range {
 public:
  RangeBase(std::string path, std::uint64_t file_offset, std::uint64_t length, Access access, Engine engine)
      : path_(std::move(path)), file_offset_(file_offset), length_(length), access_(access), engine_(engine) {}

  std::uint64_t length() const override { return length_; }
  Access access() const override { return access_; }
  Engine engine() const override { return engine_; }

 protected:
  // Throws unless the range is open for `wanted` and finished() was not called.
  void check_usable(const char* call, Access wanted) const;
  // Marks the range finished; throws if it was already finished or closed.
  void begin_finished();
  // Marks it closed; false if close() already ran (the second call is a no-op).
  bool begin_close();
  [[noreturn]] void fail(const std::string& what) const;
  // The size of the open file fd; refuses a read range that reaches past it.
  std::uint64_t checked_file_size(int fd) const;

  // The part of a piece inside the range (reading past the end is end of
  // file): its length, possibly 0.
  std::uint64_t clamp(const Piece& piece) const;
  // Write pieces must lie inside the range.
  void check_inside(const Block& block) const;

  // Errors met along the way (asynchronous writes, flushes), reported by close().
  void note_error(std::string message) { errors_.push_back(std::move(message)); }
  // Throws one Error naming every noted error, if any.
  void report_errors();

  const std::string& path() const { return path_; }
  std::uint64_t file_offset() const { return file_offset_; }

 private:
  enum class State { open, finished, closed };
  std::string path_;
  std::uint64_t file_offset_, length_;
  Access access_;
  Engine engine_;
  State state_ = State::open;
  std::vector<std::string> errors_;
};

}  // namespace volseg::io::ranged::detail
