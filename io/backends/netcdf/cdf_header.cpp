// SPDX-License-Identifier: MIT
// The header as Unidata's "NetCDF Classic and 64-bit Offset File Format"
// gives it, with PnetCDF's CDF-5 extension (64-bit counts and sizes):
//   header   = magic numrecs dim_list gatt_list var_list
//   list     = ABSENT (two zeros) | tag nelems [item ...]
//   dim      = name dim_length
//   attr     = name nc_type nelems [values ...] (padded to 4 bytes)
//   var      = name nelems [dimid ...] vatt_list nc_type vsize begin
//   name     = nelems namestring (padded to 4 bytes)
// NON_NEG fields are 4 bytes in CDF-1/2 and 8 in CDF-5; begin is 4 bytes in
// CDF-1 and 8 in CDF-2/5; tags and types are 4 bytes; all are big-endian.
#include "netcdf/cdf_header.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <vector>

#include "netcdf/conventions.hpp"
#include "volseg/io/error.hpp"

namespace volseg::io::netcdf {
namespace {

constexpr std::uint32_t kDimensionTag = 0x0A, kVariableTag = 0x0B, kAttributeTag = 0x0C;
constexpr std::uint64_t kMaxName = 256;  // NC_MAX_NAME

std::uint64_t value_size(std::uint32_t nc_type) {
  switch (nc_type) {
    case type::byte:
    case type::character:
    case type::ubyte:
      return 1;
    case type::int16:
    case type::uint16:
      return 2;
    case type::int32:
    case type::uint32:
    case type::float32:
      return 4;
    case type::float64:
    case type::int64:
    case type::uint64:
      return 8;
    default:
      return 0;
  }
}

// Reads the header's fields in order, through a window of the file.
class HeaderCursor {
 public:
  explicit HeaderCursor(const std::string& path) : path_(path) {
    fd_ = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    struct stat st {};
    if (fd_ >= 0 && ::fstat(fd_, &st) == 0) file_size_ = static_cast<std::uint64_t>(st.st_size);
  }
  HeaderCursor(const HeaderCursor&) = delete;
  HeaderCursor& operator=(const HeaderCursor&) = delete;
  ~HeaderCursor() {
    if (fd_ >= 0) ::close(fd_);
  }
  bool readable() const { return fd_ >= 0 && file_size_ >= 4; }

  // Moves past `count` items of `item_size` bytes (padded to 4 bytes),
  // which must end inside the file.
  void skip(std::uint64_t count, std::uint64_t item_size, const char* what) {
    require(count, item_size, what);
    offset_ += std::min(file_size_ - offset_, (count * item_size + 3) / 4 * 4);
  }
  // Throws unless `count` items of at least `item_size` bytes each fit in
  // what is left of the file; does not move.
  void require(std::uint64_t count, std::uint64_t item_size, const char* what) const {
    const std::uint64_t left = file_size_ - offset_;
    if (item_size != 0 && count > left / item_size)
      throw Error(path_ + ": damaged NetCDF header: " + what + " at byte " + std::to_string(offset_) +
                  " run past the end of the file (" + std::to_string(file_size_) + " bytes)");
  }
  std::uint64_t offset() const { return offset_; }
  [[noreturn]] void refuse(const std::string& what, std::uint64_t at) const {
    throw Error(path_ + ": damaged NetCDF header: " + what + " at byte " + std::to_string(at));
  }
  // A big-endian field of 4 or 8 bytes.
  std::uint64_t number(int bytes) {
    const std::uint64_t at = offset_;
    skip(1, static_cast<std::uint64_t>(bytes), "the header");
    std::uint64_t value = 0;
    for (std::uint64_t i = 0; i < static_cast<std::uint64_t>(bytes); ++i) value = value << 8 | byte_at(at + i);
    return value;
  }

 private:
  unsigned char byte_at(std::uint64_t at) {
    if (at < window_start_ || at >= window_start_ + window_.size()) {
      window_.resize(64 << 10);
      const ssize_t got = ::pread(fd_, window_.data(), window_.size(), static_cast<off_t>(at));
      if (got <= 0) throw_errno("read", path_, got < 0 ? errno : EIO);
      window_.resize(static_cast<std::size_t>(got));
      window_start_ = at;
    }
    return window_[at - window_start_];
  }

  std::string path_;
  int fd_ = -1;
  std::uint64_t file_size_ = 0, offset_ = 0, window_start_ = 0;
  std::vector<unsigned char> window_;
};

// Walks the whole header and refuses what the format does not allow and
// netCDF-C refuses too: a list of items whose tag is wrong, a name longer
// than NC_MAX_NAME, a type NetCDF does not have. Where the walk once stopped and left the rest to PnetCDF, PnetCDF
// went on to allocate for whatever the damaged bytes claimed (a fuzzed
// attribute took 24 s and 12.8 GB before PnetCDF's own error).
class HeaderWalk {
 public:
  HeaderWalk(HeaderCursor& cursor, int version)
      : cursor_(cursor), non_neg_(version == 5 ? 8 : 4), offset_size_(version == 1 ? 4 : 8) {}

  // From numrecs, after the magic number.
  void header() {
    cursor_.number(non_neg_);  // numrecs
    const std::uint64_t dimensions = list(kDimensionTag, "dimensions");
    for (std::uint64_t d = 0; d < dimensions; ++d) {
      name();
      cursor_.number(non_neg_);  // dim_length
    }
    attributes();
    const std::uint64_t variables = list(kVariableTag, "variables");
    for (std::uint64_t v = 0; v < variables; ++v) {
      name();
      cursor_.skip(cursor_.number(non_neg_), static_cast<std::uint64_t>(non_neg_), "dimension ids");
      attributes();
      value_type("a variable");
      cursor_.number(non_neg_);      // vsize
      cursor_.number(offset_size_);  // begin
    }
  }

 private:
  // A list's count is checked before its items are walked: PnetCDF
  // allocates for every item it is told of (2^31 variables in a file of
  // 428 bytes took it seconds). Returns the count (0 for ABSENT).
  std::uint64_t list(std::uint32_t tag, const char* what) {
    const std::uint64_t at = cursor_.offset();
    const auto found = static_cast<std::uint32_t>(cursor_.number(4));
    const std::uint64_t count = cursor_.number(non_neg_);
    // ABSENT is two zeros, but netCDF-C and PnetCDF take any empty list
    // whatever its tag (ncdump reads such files), and so does this walk.
    if (count == 0) return 0;
    if (found != tag)
      cursor_.refuse(std::string("the list of ") + what + " has tag " + std::to_string(found) + " (" +
                         std::to_string(tag) + " expected)",
                     at);
    cursor_.require(count, smallest_item(tag), what);
    return count;
  }
  // The fewest bytes one item of a list takes (its name's length counted,
  // its name's characters not).
  std::uint64_t smallest_item(std::uint32_t tag) const {
    const auto n = static_cast<std::uint64_t>(non_neg_);
    if (tag == kDimensionTag) return 2 * n;      // name, dim_length
    if (tag == kAttributeTag) return 2 * n + 4;  // name, nc_type, nelems
    // name, ndims, vatt_list (tag, nelems), nc_type, vsize, begin
    return 4 * n + 8 + static_cast<std::uint64_t>(offset_size_);
  }
  void name() {
    const std::uint64_t at = cursor_.offset();
    const std::uint64_t length = cursor_.number(non_neg_);
    if (length > kMaxName)
      cursor_.refuse("a name of " + std::to_string(length) + " bytes (NetCDF allows " + std::to_string(kMaxName) + ")",
                     at);
    cursor_.skip(length, 1, "a name");
  }
  // The size of the nc_type that follows.
  std::uint64_t value_type(const char* whose) {
    const std::uint64_t at = cursor_.offset();
    const auto nc_type = static_cast<std::uint32_t>(cursor_.number(4));
    const std::uint64_t size = value_size(nc_type);
    if (size == 0)
      cursor_.refuse(std::string(whose) + " of type " + std::to_string(nc_type) + ", which NetCDF does not have", at);
    return size;
  }
  void attributes() {
    const std::uint64_t count = list(kAttributeTag, "attributes");
    for (std::uint64_t a = 0; a < count; ++a) {
      name();
      const std::uint64_t size = value_type("an attribute");
      cursor_.skip(cursor_.number(non_neg_), size, "attribute values");
    }
  }

  HeaderCursor& cursor_;
  int non_neg_, offset_size_;
};

}  // namespace

void refuse_header_past_end(const std::string& path) {
  HeaderCursor cursor(path);
  if (!cursor.readable()) return;
  const std::uint64_t magic = cursor.number(4);  // "CDF" and the version
  const auto version = static_cast<int>(magic & 0xFF);
  if (magic >> 8 != 0x434446 || (version != 1 && version != 2 && version != 5)) return;
  HeaderWalk(cursor, version).header();
}

}  // namespace volseg::io::netcdf
