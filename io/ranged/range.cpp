// SPDX-License-Identifier: MIT
#include <sys/stat.h>

#include <cstring>

#include "range_base.hpp"

namespace volseg::io::ranged {

std::unique_ptr<Range> open_mmap_range(const std::string& path, std::uint64_t offset, std::uint64_t length,
                                       Access access, const Options& options);
std::unique_ptr<Range> open_uring_range(const std::string& path, std::uint64_t offset, std::uint64_t length,
                                        Access access, const Options& options);

Engine parse_engine(const std::string& name) {
  if (name == "mmap") return Engine::mmap;
  if (name == "uring") return Engine::uring;
  throw Error("unknown ranged engine '" + name + "' (known: mmap, uring)");
}

const char* engine_name(Engine engine) { return engine == Engine::mmap ? "mmap" : "uring"; }

std::uint64_t Block::bytes() const {
  std::uint64_t total = 0;
  for (const Piece& piece : pieces) total += piece.length;
  return total;
}

std::unique_ptr<Range> open_range(Engine engine, const std::string& path, std::uint64_t offset, std::uint64_t length,
                                  Access access, const Options& options) {
  if (offset > UINT64_MAX - length)
    throw Error("open_range " + path + ": offset " + std::to_string(offset) + " + length " + std::to_string(length) +
                " overflows");
  if (options.queue_depth == 0) throw Error("open_range " + path + ": queue_depth must be at least 1");
  if (options.request_bytes == 0) throw Error("open_range " + path + ": request_bytes must be at least 1");
  return engine == Engine::mmap ? open_mmap_range(path, offset, length, access, options)
                                : open_uring_range(path, offset, length, access, options);
}

namespace detail {

std::string errno_text(std::string_view operation, const std::string& path, int errnum) {
  return std::string(operation) + " " + path + ": " + std::strerror(errnum);
}

BlockKey key_of(const Block& block) {
  BlockKey key;
  key.reserve(block.pieces.size());
  for (const Piece& piece : block.pieces) key.emplace_back(piece.offset, piece.length);
  return key;
}

void RangeBase::fail(const std::string& what) const {
  throw Error(std::string(engine_name(engine_)) + " range of " + path_ + ": " + what);
}

void RangeBase::check_usable(const char* call, Access wanted) const {
  if (state_ == State::finished) fail(std::string(call) + " after finished(): the range may no longer be used");
  if (state_ == State::closed) fail(std::string(call) + " after close()");
  if (access_ != wanted)
    fail(std::string(call) + " on a range opened for " + (access_ == Access::read ? "reading" : "writing"));
}

void RangeBase::begin_finished() {
  if (state_ == State::finished) fail("finished() called twice");
  if (state_ == State::closed) fail("finished() after close()");
  state_ = State::finished;
}

bool RangeBase::begin_close() {
  if (state_ == State::closed) return false;
  state_ = State::closed;
  return true;
}

std::uint64_t RangeBase::checked_file_size(int fd) const {
  struct stat st {};
  if (::fstat(fd, &st) != 0) throw_errno("fstat", path_);
  const auto size = static_cast<std::uint64_t>(st.st_size);
  if (access_ == Access::read && file_offset_ + length_ > size)
    fail("the read-only range [" + std::to_string(file_offset_) + ", " + std::to_string(file_offset_ + length_) +
         ") reaches past the end of the file (" + std::to_string(size) + " bytes)");
  return size;
}

std::uint64_t RangeBase::clamp(const Piece& piece) const {
  if (piece.offset >= length_) return 0;
  return std::min(piece.length, length_ - piece.offset);
}

void RangeBase::check_inside(const Block& block) const {
  for (const Piece& piece : block.pieces)
    if (piece.offset > length_ || piece.length > length_ - piece.offset)
      fail("piece [" + std::to_string(piece.offset) + ", +" + std::to_string(piece.length) +
           ") lies outside the range of " + std::to_string(length_) + " bytes");
}

void RangeBase::report_errors() {
  if (errors_.empty()) return;
  std::string message = errors_.front();
  if (errors_.size() > 1) {
    message += " (and " + std::to_string(errors_.size() - 1) + " more:";
    for (std::size_t i = 1; i < errors_.size(); ++i) message += (i == 1 ? " " : "; ") + errors_[i];
    message += ")";
  }
  errors_.clear();
  throw Error(message);
}

}  // namespace detail
}  // namespace volseg::io::ranged
