// SPDX-License-Identifier: MIT
// Backend "tiff": TIFF and BigTIFF stacks and folders of slices
// (volseg/io/tiff.hpp), read through libtiff. Rank 0 walks the pages'
// directories once, checks that they make one volume and shares where each
// plane's page is; then each rank opens the files of its own planes and reads
// only those pages: no MPI-IO, no rank reads another's planes.
//
// An uncompressed page stored in strips one after another is read as raw
// bytes, straight into the brick (pread of the rows and columns it needs:
// the raw readers' speed). Any other page goes through libtiff's decoders
// a strip or tile at a time (LZW, deflate, PackBits, ...); the latest one
// is kept, so bricks that share it decode it once.
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "raw/raw_volume.hpp"
#include "tiff_file.hpp"
#include "volseg/io/error.hpp"
#include "volseg/io/memory.hpp"
#include "volseg/io/registry.hpp"
#include "volseg/io/tiff.hpp"

namespace volseg::io {
namespace {

class TiffReader final : public VolumeReader {
 public:
  TiffReader(const std::string& path, const Comm& comm, const std::string& glob, std::optional<std::int64_t> time)
      : path_(path) {
    std::string table;
    collectively(comm, [&] {
      if (comm.rank() == 0) table = scan_tiff(path, glob, time).serialize();
    });
    stack_ = TiffStack::deserialize(comm.broadcast(table));
    try {
      collectively(comm, [&] {
        info_ = tiff_info(stack_);
        if (stack_.frames > 1) info_.steps = stack_.frames, info_.step = stack_.frame;  // a hyperstack's frame
        first_ = open_plane(0);
      });
    } catch (...) {  // the destructor does not run: a refused file is closed here
      if (fd_ >= 0) ::close(std::exchange(fd_, -1));
      throw;
    }
    set_capabilities({.chunks = stored_chunks()});
  }
  ~TiffReader() override {
    if (fd_ >= 0) ::close(fd_);
  }

  const VolumeInfo& info() const override { return info_; }
  std::string backend_name() const override { return "tiff"; }
  std::uint64_t bytes_read() const override { return bytes_read_; }
  std::vector<std::string> files() const override { return stack_.files; }

 protected:
  void do_read(const Extent& extent, void* buffer) override {
    const std::size_t size = dtype_size(info_.dtype);
    const std::int64_t plane_values = extent.count[1] * extent.count[2];
    for (std::int64_t k = 0; k < extent.count[0]; ++k) {
      const std::int64_t z = extent.offset[0] + k;
      auto* out = static_cast<std::byte*>(buffer) + k * plane_values * static_cast<std::int64_t>(size);
      const tiff::Page page = open_plane(z);
      if (page.width != first_.width || page.height != first_.height || page.bits != first_.bits ||
          page.format != first_.format || page.samples != 1)
        throw Error(stack_.file_of(z) + ": plane " + std::to_string(z) + " is " + page.describe() + ", not " +
                    first_.describe() + " as the first (the file changed since it was opened?)");
      if (raw_base_)
        read_raw(z, extent, out);
      else
        read_decoded(z, page, extent, out);
    }
  }
  void do_close() override {
    file_.reset();
    const int fd = std::exchange(fd_, -1);
    if (fd >= 0 && ::close(fd) != 0) throw_errno("close", path_);
  }

 private:
  // Compressed pages decode a strip or tile at a time: bricks of whole ones.
  std::optional<Index3> stored_chunks() const {
    if (first_.compression == COMPRESSION_NONE) return std::nullopt;
    if (first_.tiled) return Index3{1, first_.tile_height, first_.tile_width};
    return Index3{1, first_.rows_per_strip, info_.dims[2]};
  }

  // Opens plane z's file and page; sets raw_base_ where its voxels lie as raw
  // rows one after another (0 where libtiff must decode them).
  tiff::Page open_plane(std::int64_t z) {
    const std::string& name = stack_.file_of(z);
    if (!file_ || file_->path() != name) {
      file_.reset();
      file_ = std::make_unique<tiff::File>(name);
      if (const int fd = std::exchange(fd_, -1); fd >= 0 && ::close(fd) != 0) throw_errno("close", open_name_);
      fd_ = ::open(name.c_str(), O_RDONLY | O_CLOEXEC);
      if (fd_ < 0) throw_errno("open", name);
      open_name_ = name;
      decoded_index_ = -1;
    }
    const std::uint64_t directory = stack_.directory_of(z);
    if (file_->directory() != directory) decoded_index_ = -1;
    file_->set_directory(directory);
    const tiff::Page page = tiff::Page::read(*file_);
    raw_base_ = contiguous_strips(page);
    if (raw_base_ && stack_.imagej_planes > 0)
      raw_base_ += static_cast<std::uint64_t>(stack_.first_plane + z) * plane_bytes();
    else if (!raw_base_ && stack_.imagej_planes > 0 && (stack_.first_plane + z) > 0)
      throw Error(name + ": an ImageJ stack of contiguous planes whose first page is compressed");
    swap_ = TIFFIsByteSwapped(file_->get()) != 0;
    return page;
  }

  std::uint64_t plane_bytes() const {
    return static_cast<std::uint64_t>(info_.dims[1] * info_.dims[2]) * dtype_size(info_.dtype);
  }

  // The offset of the page's first row when its strips are uncompressed and
  // one after another, else 0.
  std::uint64_t contiguous_strips(const tiff::Page& page) {
    std::uint16_t fill = FILLORDER_MSB2LSB;
    TIFFGetFieldDefaulted(file_->get(), TIFFTAG_FILLORDER, &fill);
    if (page.compression != COMPRESSION_NONE || page.tiled || fill != FILLORDER_MSB2LSB) return 0;
    const std::uint64_t row = static_cast<std::uint64_t>(page.width) * (page.bits / 8);
    const std::uint32_t strips = TIFFNumberOfStrips(file_->get());
    const std::uint64_t base = TIFFGetStrileOffset(file_->get(), 0);
    if (base == 0) return 0;
    for (std::uint32_t s = 0; s < strips; ++s) {
      const std::uint64_t rows =
          std::min<std::uint64_t>(page.rows_per_strip, page.height - std::uint64_t{s} * page.rows_per_strip);
      if (TIFFGetStrileOffset(file_->get(), s) != base + std::uint64_t{s} * page.rows_per_strip * row ||
          TIFFGetStrileByteCount(file_->get(), s) < rows * row)
        return 0;
    }
    return base;
  }

  void read_raw(std::int64_t z, const Extent& extent, std::byte* out) {
    (void)z;
    const std::size_t size = dtype_size(info_.dtype);
    const Index3 plane{1, info_.dims[1], info_.dims[2]};
    const Extent window{{0, extent.offset[1], extent.offset[2]}, {1, extent.count[1], extent.count[2]}};
    raw::for_each_run(plane, window, size, raw_base_,
                      [&](std::uint64_t offset, std::int64_t count, std::int64_t index) {
                        std::byte* target = out + index * static_cast<std::int64_t>(size);
                        const std::size_t bytes = static_cast<std::size_t>(count) * size;
                        raw::read_fully(fd_, target, bytes, offset, open_name_);
                        bytes_read_ += bytes;
                        if (swap_) raw::swap_bytes(target, count, size);
                      });
  }

  // Through libtiff: every strip or tile the window touches, decoded (in
  // native byte order) and its part copied out.
  void read_decoded(std::int64_t z, const tiff::Page& page, const Extent& extent, std::byte* out) {
    const std::size_t size = dtype_size(info_.dtype);
    const std::int64_t y0 = extent.offset[1], y1 = y0 + extent.count[1];
    const std::int64_t x0 = extent.offset[2], x1 = x0 + extent.count[2];
    const std::int64_t piece_w = page.tiled ? page.tile_width : page.width;
    const std::int64_t piece_h = page.tiled ? page.tile_height : page.rows_per_strip;
    const std::int64_t across = (page.width + piece_w - 1) / piece_w;
    for (std::int64_t ty = y0 / piece_h; ty * piece_h < y1; ++ty)
      for (std::int64_t tx = x0 / piece_w; tx * piece_w < x1; ++tx) {
        const std::int64_t index = ty * across + tx;
        const std::byte* piece = decoded(z, index, page);
        const std::int64_t ya = std::max(y0, ty * piece_h), yb = std::min(y1, (ty + 1) * piece_h);
        const std::int64_t xa = std::max(x0, tx * piece_w), xb = std::min(x1, (tx + 1) * piece_w);
        for (std::int64_t y = ya; y < yb; ++y)
          std::memcpy(out + ((y - y0) * extent.count[2] + (xa - x0)) * static_cast<std::int64_t>(size),
                      piece + ((y - ty * piece_h) * piece_w + (xa - tx * piece_w)) * static_cast<std::int64_t>(size),
                      static_cast<std::size_t>(xb - xa) * size);
      }
  }

  const std::byte* decoded(std::int64_t z, std::int64_t index, const tiff::Page& page) {
    if (z == decoded_z_ && index == decoded_index_) return decoded_.data();
    TIFF* tif = file_->get();
    const auto piece = static_cast<std::uint32_t>(index);
    const tmsize_t capacity = page.tiled ? TIFFTileSize(tif) : TIFFStripSize(tif);
    if (capacity <= 0) file_->fail("page of plane " + std::to_string(z) + ": no strip or tile size");
    // The scan checked the first page's; a file that changed since is checked again.
    check_piece(file_->path() + ": plane " + std::to_string(z) + ": " + (page.tiled ? "a tile" : "a strip"),
                static_cast<std::uint64_t>(capacity));
    decoded_.resize(static_cast<std::size_t>(capacity));
    decoded_index_ = -1;
    const tmsize_t got = page.tiled ? TIFFReadEncodedTile(tif, piece, decoded_.data(), capacity)
                                    : TIFFReadEncodedStrip(tif, piece, decoded_.data(), capacity);
    if (got < 0)
      file_->fail("plane " + std::to_string(z) + ": cannot decode " + (page.tiled ? "tile " : "strip ") +
                  std::to_string(index) + " (a truncated or corrupt file?)");
    // A strip's last one may be short; what is missing is not in the file.
    const std::int64_t rows =
        page.tiled ? page.tile_height
                   : std::min<std::int64_t>(page.rows_per_strip, page.height - index * page.rows_per_strip);
    const std::int64_t width = page.tiled ? page.tile_width : page.width;
    if (got < rows * width * static_cast<std::int64_t>(dtype_size(info_.dtype)))
      throw Error(file_->path() + ": plane " + std::to_string(z) + ": " + (page.tiled ? "tile " : "strip ") +
                  std::to_string(index) + " decodes to " + std::to_string(got) + " bytes, fewer than its pixels");
    bytes_read_ += page.tiled ? TIFFGetStrileByteCount(tif, piece) : TIFFGetStrileByteCount(tif, piece);
    decoded_z_ = z;
    decoded_index_ = index;
    return decoded_.data();
  }

  std::string path_, open_name_;
  TiffStack stack_;
  VolumeInfo info_;
  tiff::Page first_;
  std::unique_ptr<tiff::File> file_;
  int fd_ = -1;
  std::uint64_t raw_base_ = 0;
  bool swap_ = false;
  std::vector<std::byte> decoded_;
  std::int64_t decoded_z_ = -1, decoded_index_ = -1;
  std::atomic<std::uint64_t> bytes_read_{0};
};

}  // namespace

Backend make_tiff_backend() {
  Backend backend;
  backend.name = "tiff";
  backend.formats = "TIFF and BigTIFF (one page a z-plane) and folders of TIFF slices; read only";
  backend.extension = ".tif";
  backend.description =
      "rank 0 lists the pages, each rank reads its own planes: uncompressed strips raw, others through libtiff's "
      "decoders (--glob PATTERN: a folder's slices)";
  backend.open = [](const OpenRequest& request, const Comm& comm, const Hints& hints) -> std::unique_ptr<VolumeReader> {
    request.selection.refuse_variable("tiff");
    hints.reject_unused("tiff");
    return std::make_unique<TiffReader>(request.path, comm, request.selection.glob, request.selection.step);
  };
  backend.create = [](const CreateRequest& request, const Comm&, const Hints&) -> std::unique_ptr<VolumeWriter> {
    throw Error(request.path +
                ": the tiff backend reads only; .tif outputs are written uncompressed by the raw writers");
  };
  return backend;
}

}  // namespace volseg::io
