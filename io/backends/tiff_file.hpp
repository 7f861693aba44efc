// SPDX-License-Identifier: MIT
// libtiff, as the TIFF scan (src/tiff.cpp) and the tiff backend use it: a
// file handle whose errors become volseg::Error naming the file (libtiff's
// own message, not its stderr), and one page's geometry.
#pragma once

#include <tiffio.h>

#include <cstdint>
#include <string>

#include "volseg/io/types.hpp"

namespace volseg::io::tiff {

class File {
 public:
  explicit File(const std::string& path);  // throws naming the path
  File(const File&) = delete;
  File& operator=(const File&) = delete;
  ~File();

  TIFF* get() const { return tif_; }
  const std::string& path() const { return path_; }
  // Throws "PATH: what (libtiff's last message)".
  [[noreturn]] void fail(const std::string& what);
  // The page whose directory starts at offset (TIFFSetSubDirectory).
  void set_directory(std::uint64_t offset);
  std::uint64_t directory() const { return directory_; }
  // The next page in the file's chain; false after the last.
  bool next_page();

 private:
  static int on_error(TIFF*, void* self, const char* module, const char* format, va_list args);
  static int on_warning(TIFF*, void*, const char*, const char*, va_list) { return 1; }  // quiet

  std::string path_, error_;
  TIFF* tif_ = nullptr;
  std::uint64_t directory_ = ~std::uint64_t{0};
};

// The current page of a file: what makes it a plane of a volume.
struct Page {
  std::uint32_t width = 0, height = 0;
  std::uint16_t bits = 0, format = SAMPLEFORMAT_UINT, samples = 1, compression = COMPRESSION_NONE;
  std::uint32_t subfile = 0;
  bool tiled = false;
  std::uint32_t rows_per_strip = 0, tile_width = 0, tile_height = 0;

  static Page read(File& file);
  bool reduced() const { return (subfile & FILETYPE_REDUCEDIMAGE) != 0; }
  // The voxel type, or throws naming the file and page (which, counted from 0).
  DType dtype(const std::string& where) const;
  std::string describe() const;  // "512 x 512 u16" for messages
};

}  // namespace volseg::io::tiff
