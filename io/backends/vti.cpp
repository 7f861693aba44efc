// SPDX-License-Identifier: MIT
// Backend "vti": VTK image data whose appended array is compressed, raw or
// base64-encoded: zlib (vtkZLibDataCompressor, what ParaView's "Save Data"
// and vtkXMLImageDataWriter write by default), LZ4 or LZMA. VTK compresses an array
// in independent blocks (32 KiB of values each by default) and lists their
// compressed sizes in a header, so each rank reads and inflates only the
// blocks its bricks touch; in base64, a block's bytes are found from its
// compressed offset (4 characters for every 3 bytes). The latest blocks
// are kept (up to hint cache=, default 16 MiB), so a block two bricks share
// is inflated once per rank. Uncompressed raw appended files go through the
// raw backends instead, mapped (volseg/io/vti.hpp).
#include <fcntl.h>
#include <lz4.h>
#include <lzma.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cstring>
#include <list>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "raw/raw_volume.hpp"
#include "volseg/io/error.hpp"
#include "volseg/io/memory.hpp"
#include "volseg/io/registry.hpp"
#include "volseg/io/vti.hpp"

namespace volseg::io {
namespace {

// Decodes base64 text (no line breaks: VTK writes none) into bytes.
std::vector<unsigned char> from_base64(const char* text, std::size_t length, const std::string& where) {
  static const std::array<int, 256> table = [] {
    std::array<int, 256> t{};
    t.fill(-1);
    const char* alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    for (int i = 0; i < 64; ++i) t[static_cast<unsigned char>(alphabet[i])] = i;
    return t;
  }();
  std::vector<unsigned char> out;
  out.reserve(length / 4 * 3);
  std::uint32_t bits = 0;
  int count = 0;
  for (std::size_t i = 0; i < length; ++i) {
    const char c = text[i];
    if (c == '=') break;
    const int v = table[static_cast<unsigned char>(c)];
    if (v < 0) throw Error(where + ": a character that is not base64 in the appended data");
    bits = (bits << 6) | static_cast<std::uint32_t>(v);
    if (++count == 4) {
      out.push_back(static_cast<unsigned char>(bits >> 16));
      out.push_back(static_cast<unsigned char>(bits >> 8));
      out.push_back(static_cast<unsigned char>(bits));
      bits = 0;
      count = 0;
    }
  }
  if (count == 2) out.push_back(static_cast<unsigned char>(bits >> 4));
  if (count == 3) {
    out.push_back(static_cast<unsigned char>(bits >> 10));
    out.push_back(static_cast<unsigned char>(bits >> 2));
  }
  return out;
}

class VtiReader final : public VolumeReader {
 public:
  VtiReader(const std::string& path, const Comm& comm, std::uint64_t cache_bytes, const std::string& array)
      : path_(path), cache_bytes_(cache_bytes) {
    std::string text;
    collectively(comm, [&] {
      if (comm.rank() == 0) text = raw::read_header_text(path, 1 << 20);
    });
    text = comm.broadcast(text);
    layout_ = parse_vti_layout(text, path, array);
    if (!layout_.packed()) throw Error(path + ": raw appended data: read it with a raw backend (mmap, posix, ...)");
    collectively(comm, [&] {
      fd_ = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
      if (fd_ < 0) throw_errno("open", path);
      read_block_table();
    });
  }
  ~VtiReader() override {
    if (fd_ >= 0) ::close(fd_);
  }

  const VolumeInfo& info() const override { return layout_.header.info; }
  std::string backend_name() const override { return "vti"; }
  std::uint64_t bytes_read() const override { return bytes_read_; }
  std::vector<std::string> files() const override { return {path_}; }

 protected:
  void do_read(const Extent& extent, void* buffer) override {
    const std::size_t size = dtype_size(info().dtype);
    const bool swap = info().byte_order != native_byte_order();
    auto* out = static_cast<std::byte*>(buffer);
    raw::for_each_run(info().dims, extent, size, 0, [&](std::uint64_t offset, std::int64_t count, std::int64_t index) {
      std::byte* target = out + index * static_cast<std::int64_t>(size);
      std::uint64_t length = static_cast<std::uint64_t>(count) * size, at = offset;
      std::byte* to = target;
      while (length > 0) {
        const std::uint64_t k = at / block_size_, inside = at % block_size_;
        const std::vector<std::byte>& block = inflated(k);
        const std::uint64_t piece = std::min<std::uint64_t>(length, block.size() - inside);
        std::memcpy(to, block.data() + inside, piece);
        to += piece;
        at += piece;
        length -= piece;
      }
      if (swap) raw::swap_bytes(target, count, size);
    });
  }
  void do_close() override {
    cache_.clear();
    const int fd = std::exchange(fd_, -1);
    if (fd >= 0 && ::close(fd) != 0) throw_errno("close", path_);
  }

 private:
  // The integers of the block header, from count_size-byte values in the
  // file's byte order.
  std::uint64_t integer(const unsigned char* p) const {
    std::array<unsigned char, 8> raw{};
    std::memcpy(raw.data(), p, layout_.count_size);
    const bool swap = info().byte_order != native_byte_order();
    if (swap) std::reverse(raw.begin(), raw.begin() + static_cast<std::ptrdiff_t>(layout_.count_size));
    if (layout_.count_size == 4) {
      std::uint32_t v = 0;
      std::memcpy(&v, raw.data(), 4);
      return v;
    }
    std::uint64_t v = 0;
    std::memcpy(&v, raw.data(), 8);
    return v;
  }

  // Bytes of the header or the data as stored: for base64, the characters
  // that hold bytes [from, from + length) of a stream starting at start.
  std::vector<unsigned char> stored(std::uint64_t start, std::uint64_t from, std::uint64_t length) {
    if (!layout_.base64) {
      std::vector<unsigned char> bytes(length);
      raw::read_fully(fd_, bytes.data(), length, start + from, path_);
      bytes_read_ += length;
      return bytes;
    }
    const std::uint64_t first = from / 3 * 4, last = (from + length + 2) / 3 * 4;
    std::string text(last - first, '\0');
    raw::read_fully(fd_, text.data(), text.size(), start + first, path_);
    bytes_read_ += text.size();
    auto bytes = from_base64(text.data(), text.size(), path_);
    const std::uint64_t skip = from % 3;
    if (bytes.size() < skip + length) throw Error(path_ + ": the appended data end inside a compressed block");
    return {bytes.begin() + static_cast<std::ptrdiff_t>(skip),
            bytes.begin() + static_cast<std::ptrdiff_t>(skip + length)};
  }

  // Bytes as stored in the file: base64 takes 4 characters for every 3.
  std::uint64_t stored_length(std::uint64_t bytes) const { return layout_.base64 ? (bytes + 2) / 3 * 4 : bytes; }

  // "zlib", "LZ4", "LZMA": the compressor, for messages.
  std::string compressor_name() const {
    if (layout_.compressor == "vtkLZ4DataCompressor") return "LZ4";
    if (layout_.compressor == "vtkLZMADataCompressor") return "LZMA";
    return "zlib";
  }

  // The block header, checked before anything is sized from it: its count
  // of blocks against the extent and the file's bytes, each block's size
  // against the memory budget, and the compressed sizes against the file
  // (and, for zlib, the extent against what deflate can expand them to).
  void read_block_table() {
    const std::size_t c = layout_.count_size;
    struct stat st {};
    if (::fstat(fd_, &st) != 0) throw_errno("stat", path_);
    const auto file_bytes = static_cast<std::uint64_t>(st.st_size);
    const std::string where = path_ + ": VTK image data, array " + info().variable + ": ";
    const std::string array = " of array \"" + info().variable + "\"";
    const auto first = stored(layout_.array_start, 0, 3 * c);
    const std::uint64_t blocks = integer(first.data()), block_size = integer(first.data() + c),
                        last_size = integer(first.data() + 2 * c);
    const std::uint64_t bytes = info().bytes();
    const std::uint64_t expect = block_size == 0 ? 0 : (bytes + block_size - 1) / block_size;
    if (block_size == 0 || blocks != expect || (last_size != 0 && last_size > block_size) ||
        (blocks > 0 && (blocks - 1) * block_size + (last_size == 0 ? block_size : last_size) != bytes))
      throw Error(path_ + ": VTK image data: a compressed block header of " + std::to_string(blocks) + " blocks of " +
                  std::to_string(block_size) + " bytes (last " + std::to_string(last_size) +
                  ") that does not hold the extent's " + std::to_string(bytes) + " bytes");
    const std::uint64_t header_bytes = saturating_product({blocks + 3, c});
    if (header_bytes > file_bytes || layout_.array_start + stored_length(header_bytes) > file_bytes)
      throw Error(where + "a block header of " + std::to_string(blocks) + " blocks needs " +
                  std::to_string(stored_length(header_bytes)) + " bytes from byte " +
                  std::to_string(layout_.array_start) + ", more than the file holds (" + std::to_string(file_bytes) +
                  " bytes)");
    check_piece(path_ + ": " + compressor_name() + " block" + array, block_size);
    const auto table = stored(layout_.array_start, 0, header_bytes);
    block_size_ = block_size;
    last_size_ = last_size == 0 ? block_size : last_size;
    // Where the blocks start: after the header as stored (base64: its own characters).
    data_start_ = layout_.array_start + stored_length(header_bytes);
    offsets_.assign(blocks + 1, 0);
    for (std::uint64_t k = 0; k < blocks; ++k) {
      const std::uint64_t size = integer(table.data() + (3 + k) * c);
      const std::string block = compressor_name() + " block " + std::to_string(k) + array;
      // Each size is at most the file's, so the sum does not overflow.
      if (size > file_bytes || data_start_ + stored_length(offsets_[k] + size) > file_bytes)
        throw Error(path_ + ": " + block + ": its " + std::to_string(size) + " compressed bytes from byte " +
                    std::to_string(data_start_ + stored_length(offsets_[k])) + " reach past the end of the file (" +
                    std::to_string(file_bytes) + " bytes)");
      check_piece(path_ + ": " + block + " (compressed)", size);
      offsets_[k + 1] = offsets_[k] + size;
    }
    // Deflate expands at most 1032:1 (zlib's documentation), so fewer
    // compressed bytes cannot hold the extent: refused before a job is
    // planned for it. LZ4 and LZMA blocks are bounded block by block.
    if (compressor_name() == "zlib" && bytes / 1032 > offsets_[blocks])
      throw Error(where + "WholeExtent of " + sizes_text(info()) + " needs " + std::to_string(bytes) +
                  " bytes, more than its " + std::to_string(offsets_[blocks]) +
                  " bytes of zlib blocks can hold (deflate expands at most 1032:1)");
  }

  // One block with the file's compressor, exactly filling out; what went
  // wrong, or empty. VTK's LZ4 blocks are raw LZ4 blocks (LZ4_compress_fast),
  // its LZMA blocks whole .xz streams (lzma_easy_buffer_encode).
  std::string decompress(const std::vector<unsigned char>& in, std::vector<std::byte>& out) const {
    const std::string& kind = layout_.compressor;
    if (kind == "vtkLZ4DataCompressor") {
      if (in.size() > static_cast<std::size_t>(LZ4_MAX_INPUT_SIZE) || out.size() > static_cast<std::size_t>(INT32_MAX))
        return "an LZ4 block too large";
      const int got = LZ4_decompress_safe(reinterpret_cast<const char*>(in.data()), reinterpret_cast<char*>(out.data()),
                                          static_cast<int>(in.size()), static_cast<int>(out.size()));
      return got == static_cast<int>(out.size()) ? "" : "LZ4 " + std::to_string(got);
    }
    if (kind == "vtkLZMADataCompressor") {
      std::uint64_t memory = UINT64_MAX;
      std::size_t in_at = 0, out_at = 0;
      const lzma_ret rc = lzma_stream_buffer_decode(&memory, 0, nullptr, in.data(), &in_at, in.size(),
                                                    reinterpret_cast<std::uint8_t*>(out.data()), &out_at, out.size());
      return rc == LZMA_OK && out_at == out.size() ? "" : "LZMA " + std::to_string(static_cast<int>(rc));
    }
    uLongf got = static_cast<uLongf>(out.size());
    const int rc = uncompress(reinterpret_cast<Bytef*>(out.data()), &got, in.data(), static_cast<uLong>(in.size()));
    return rc == Z_OK && got == out.size() ? "" : "zlib " + std::to_string(rc);
  }

  const std::vector<std::byte>& inflated(std::uint64_t k) {
    if (auto it = cache_.find(k); it != cache_.end()) return it->second;
    if (k + 1 >= offsets_.size()) throw Error(path_ + ": VTK image data: a read past the last block");
    const auto compressed = stored(data_start_, offsets_[k], offsets_[k + 1] - offsets_[k]);
    std::vector<std::byte> out(k + 2 == offsets_.size() ? last_size_ : block_size_);
    if (const std::string problem = decompress(compressed, out); !problem.empty())
      throw Error(path_ + ": VTK image data: block " + std::to_string(k) + " does not decompress to its " +
                  std::to_string(out.size()) + " bytes (" + problem + ")");
    while (!order_.empty() && held_ + out.size() > cache_bytes_) {
      held_ -= cache_[order_.back()].size();
      cache_.erase(order_.back());
      order_.pop_back();
    }
    order_.push_front(k);
    held_ += out.size();
    return cache_[k] = std::move(out);
  }

  std::string path_;
  VtiLayout layout_;
  int fd_ = -1;
  std::uint64_t block_size_ = 0, last_size_ = 0, data_start_ = 0, cache_bytes_, held_ = 0;
  std::vector<std::uint64_t> offsets_;  // compressed offsets of the blocks, and their end
  std::map<std::uint64_t, std::vector<std::byte>> cache_;
  std::list<std::uint64_t> order_;  // most recent first
  std::atomic<std::uint64_t> bytes_read_{0};
};

}  // namespace

Backend make_vti_backend() {
  Backend backend;
  backend.name = "vti";
  backend.formats = "VTK image data (.vti) with compressed appended arrays (zlib, LZ4, LZMA), raw or base64; read only";
  backend.extension = ".vti";
  backend.description = "each rank inflates the compressed blocks its bricks touch (hint cache=16MiB)";
  backend.hints = {{"cache", HintFor::readers}};
  backend.open = [](const OpenRequest& request, const Comm& comm, const Hints& hints) -> std::unique_ptr<VolumeReader> {
    const auto cache = static_cast<std::uint64_t>(hints.get_size("cache", std::int64_t{16} << 20));
    request.selection.refuse_step_and_glob("vti");
    hints.reject_unused("vti");
    return std::make_unique<VtiReader>(request.path, comm, cache, request.selection.variable);
  };
  backend.create = [](const CreateRequest& request, const Comm&, const Hints&) -> std::unique_ptr<VolumeWriter> {
    throw Error(request.path + ": the vti backend reads only; .vti outputs are written raw by the raw writers");
  };
  return backend;
}

}  // namespace volseg::io
