// SPDX-License-Identifier: MIT
// Backend "gzip": a gzip-compressed raw layout, a ".nii.gz" (NIfTI-1 or
// NIfTI-2, volseg/io/nifti.hpp). A gzip stream has no index, so a rank
// cannot start at its own bytes: every rank inflates the stream from its
// start (zlib's gzread), throwing away what lies before its next run, and
// goes on forward from there. Bricks in file order cost one pass; a run
// behind the stream's position rewinds it to the start. The rank whose
// bricks lie last in the file inflates all of it, so the job takes at least
// one whole decompression however many ranks share it (docs/formats.md).
// Rank 0 reads the header and shares it, as the raw backends do.
#include <zlib.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "raw/raw_volume.hpp"
#include "volseg/io/error.hpp"
#include "volseg/io/nifti.hpp"
#include "volseg/io/registry.hpp"

namespace volseg::io {
namespace {

// One rank's position in the decompressed stream.
class GzStream {
 public:
  GzStream(const std::string& path, unsigned buffer_bytes) : path_(path) {
    file_ = gzopen(path.c_str(), "rb");
    if (!file_) {
      if (errno != 0) throw_errno("open", path);
      throw Error("open " + path + ": zlib cannot allocate its state");
    }
    gzbuffer(file_, buffer_bytes);
  }
  GzStream(const GzStream&) = delete;
  GzStream& operator=(const GzStream&) = delete;
  ~GzStream() {
    if (file_) gzclose_r(file_);
  }

  // Exactly length decompressed bytes from offset on (an earlier offset
  // starts the stream again); throws naming the file on a corrupt or short stream.
  void read(std::uint64_t offset, void* into, std::uint64_t length) {
    if (offset < position_) {
      if (gzrewind(file_) != 0) fail("rewind");
      position_ = 0;
    }
    skip(offset - position_);
    pull(static_cast<char*>(into), length);
  }

  std::uint64_t compressed_offset() const {
    return static_cast<std::uint64_t>(std::max<z_off_t>(gzoffset(file_), 0));
  }

  void close() {
    gzFile file = file_;
    file_ = nullptr;
    if (file && gzclose_r(file) != Z_OK) throw Error("close " + path_ + ": zlib could not close the stream");
  }

 private:
  void skip(std::uint64_t bytes) {
    scratch_.resize(std::size_t{1} << 20);
    while (bytes > 0) {
      const std::uint64_t piece = std::min<std::uint64_t>(bytes, scratch_.size());
      pull(scratch_.data(), piece);
      bytes -= piece;
    }
  }

  // The next length decompressed bytes.
  void pull(char* out, std::uint64_t length) {
    while (length > 0) {
      const unsigned ask = static_cast<unsigned>(std::min<std::uint64_t>(length, 1u << 30));
      const int got = gzread(file_, out, ask);
      if (got < 0) fail("decompress");
      if (got == 0)
        throw Error(path_ + ": the gzip stream ends at byte " + std::to_string(position_) +
                    " of its decompressed data, before the voxels the header describes (a truncated file?)");
      out += got;
      length -= static_cast<std::uint64_t>(got);
      position_ += static_cast<std::uint64_t>(got);
    }
  }

  [[noreturn]] void fail(const char* what) {
    int code = Z_OK;
    const char* message = gzerror(file_, &code);
    if (code == Z_ERRNO) throw_errno(std::string(what) + " (read)", path_);
    throw Error(path_ + ": corrupt gzip stream near decompressed byte " + std::to_string(position_) + " (" + what +
                ": " + (message ? message : "zlib error") + ")");
  }

  std::string path_;
  gzFile file_ = nullptr;
  std::uint64_t position_ = 0;
  std::vector<char> scratch_;
};

class GzipReader final : public VolumeReader {
 public:
  GzipReader(const std::string& path, const Comm& comm, unsigned buffer_bytes) : path_(path) {
    std::string text;
    collectively(comm, [&] {
      if (comm.rank() != 0) return;
      text.resize(kNiftiHeaderBytes);
      // A NIfTI-1 file may be shorter than NIfTI-2's header size: read what there is.
      gzFile probe = gzopen(path.c_str(), "rb");
      if (!probe) throw_errno("open", path);
      const int got = gzread(probe, text.data(), static_cast<unsigned>(text.size()));
      gzclose_r(probe);
      if (got < 0) throw Error(path + ": corrupt gzip stream at its start");
      text.resize(static_cast<std::size_t>(got));
      if (!is_nifti(text))
        throw Error(path + ": a gzip-compressed file that is not NIfTI; volseg reads gzip-compressed NIfTI (.nii.gz) only");
      (void)parse_nifti(text, path);  // refused here, on rank 0, with its reason
    });
    text = comm.broadcast(text);
    header_ = parse_nifti(text, path);
    if (header_.data_path != path)
      throw Error(path + ": a compressed NIfTI header names a separate .img; volseg reads .nii.gz files only");
    collectively(comm, [&] { stream_ = std::make_unique<GzStream>(path, buffer_bytes); });
  }

  const VolumeInfo& info() const override { return header_.info; }
  std::string backend_name() const override { return "gzip"; }
  std::uint64_t bytes_read() const override { return stream_ ? stream_->compressed_offset() : 0; }
  std::vector<std::string> files() const override { return {path_}; }

 protected:
  void do_read(const Extent& extent, void* buffer) override {
    const std::size_t size = dtype_size(info().dtype);
    const bool swap = info().byte_order != native_byte_order();
    auto* out = static_cast<std::byte*>(buffer);
    raw::for_each_run(info().dims, extent, size, header_.byte_skip,
                      [&](std::uint64_t offset, std::int64_t count, std::int64_t index) {
                        std::byte* target = out + index * static_cast<std::int64_t>(size);
                        stream_->read(offset, target, static_cast<std::uint64_t>(count) * size);
                        if (swap) raw::swap_bytes(target, count, size);
                      });
  }
  void do_close() override {
    if (stream_) stream_->close();
  }

 private:
  std::string path_;
  NrrdHeader header_;
  std::unique_ptr<GzStream> stream_;
};

}  // namespace

Backend make_gzip_backend() {
  Backend backend;
  backend.name = "gzip";
  backend.formats = "gzip-compressed NIfTI (.nii.gz), read only";
  backend.extension = ".nii.gz";
  backend.description =
      "each rank inflates the stream from its start to its own bricks (hint buffer=256KiB); the job costs at least "
      "one whole decompression";
  backend.hints = {{"buffer", HintFor::readers}};
  backend.open = [](const std::string& path, const Comm& comm, const Hints& hints) -> std::unique_ptr<VolumeReader> {
    const std::int64_t buffer = hints.get_size("buffer", std::int64_t{256} << 10);
    if (buffer < 8192 || buffer > (std::int64_t{1} << 30))
      throw Error("hint buffer=" + std::to_string(buffer) + " is not between 8 KiB and 1 GiB");
    hints.reject_unused("gzip");
    return std::make_unique<GzipReader>(path, comm, static_cast<unsigned>(buffer));
  };
  backend.create = [](const CreateRequest& request, const Comm&, const Hints&) -> std::unique_ptr<VolumeWriter> {
    throw Error(request.path + ": the gzip backend reads only; write the mask as .nii (or gzip it afterwards)");
  };
  return backend;
}

}  // namespace volseg::io
