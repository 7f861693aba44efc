// SPDX-License-Identifier: MIT
#include "volseg/io/tiff.hpp"

#include <fnmatch.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <map>
#include <sstream>
#include <utility>

#include "tiff_file.hpp"
#include "volseg/io/error.hpp"
#include "volseg/io/memory.hpp"
#include "volseg/io/selection.hpp"

namespace volseg::io {

namespace tiff {

File::File(const std::string& path) : path_(path) {
  TIFFOpenOptions* options = TIFFOpenOptionsAlloc();
  if (!options) throw Error(path + ": libtiff cannot allocate its options");
  TIFFOpenOptionsSetErrorHandlerExtR(options, &File::on_error, this);
  TIFFOpenOptionsSetWarningHandlerExtR(options, &File::on_warning, this);
  // "m": read through read(2), not a whole-file mapping (a rank reads its planes only).
  tif_ = TIFFOpenExt(path.c_str(), "rm", options);
  TIFFOpenOptionsFree(options);
  if (!tif_) {
    if (error_.empty()) throw_errno("open", path);
    throw Error(path + ": not a TIFF file libtiff reads (" + error_ + ")");
  }
  directory_ = TIFFCurrentDirOffset(tif_);
}

File::~File() {
  if (tif_) TIFFClose(tif_);
}

int File::on_error(TIFF*, void* self, const char* module, const char* format, va_list args) {
  char text[512];
  std::vsnprintf(text, sizeof text, format, args);
  auto* file = static_cast<File*>(self);
  if (file->error_.empty()) file->error_ = std::string(module ? module : "libtiff") + ": " + text;
  return 1;
}

void File::fail(const std::string& what) {
  std::string reason = std::exchange(error_, {});
  throw Error(path_ + ": " + what + (reason.empty() ? "" : " (" + reason + ")"));
}

void File::set_directory(std::uint64_t offset) {
  if (offset == directory_) return;
  error_.clear();
  if (!TIFFSetSubDirectory(tif_, offset)) {
    directory_ = ~std::uint64_t{0};
    fail("cannot read the page directory at byte " + std::to_string(offset));
  }
  directory_ = offset;
}

bool File::next_page() {
  if (TIFFLastDirectory(tif_)) return false;
  error_.clear();
  const std::uint64_t before = directory_;
  if (!TIFFReadDirectory(tif_)) {
    // libtiff stops a chain that loops back without a message of its own.
    if (error_.empty()) error_ = "its directory is damaged, or the chain of pages loops back";
    fail("cannot read the page after the one at byte " + std::to_string(before));
  }
  directory_ = TIFFCurrentDirOffset(tif_);
  return true;
}

Page Page::read(File& file) {
  TIFF* tif = file.get();
  Page page;
  if (!TIFFGetField(tif, TIFFTAG_IMAGEWIDTH, &page.width) || !TIFFGetField(tif, TIFFTAG_IMAGELENGTH, &page.height))
    file.fail("a page without ImageWidth or ImageLength");
  TIFFGetFieldDefaulted(tif, TIFFTAG_BITSPERSAMPLE, &page.bits);
  TIFFGetFieldDefaulted(tif, TIFFTAG_SAMPLEFORMAT, &page.format);
  TIFFGetFieldDefaulted(tif, TIFFTAG_SAMPLESPERPIXEL, &page.samples);
  TIFFGetFieldDefaulted(tif, TIFFTAG_COMPRESSION, &page.compression);
  TIFFGetFieldDefaulted(tif, TIFFTAG_SUBFILETYPE, &page.subfile);
  page.tiled = TIFFIsTiled(tif) != 0;
  if (page.tiled) {
    TIFFGetField(tif, TIFFTAG_TILEWIDTH, &page.tile_width);
    TIFFGetField(tif, TIFFTAG_TILELENGTH, &page.tile_height);
  } else {
    TIFFGetFieldDefaulted(tif, TIFFTAG_ROWSPERSTRIP, &page.rows_per_strip);
    page.rows_per_strip = std::clamp<std::uint32_t>(page.rows_per_strip, 1, std::max<std::uint32_t>(page.height, 1));
  }
  return page;
}

DType Page::dtype(const std::string& where) const {
  if (samples != 1)
    throw Error(where + ": " + std::to_string(samples) +
                " samples a pixel (an RGB or multi-channel image); volseg reads one value a voxel");
  const bool is_int = format == SAMPLEFORMAT_UINT || format == SAMPLEFORMAT_INT;
  if (format == SAMPLEFORMAT_IEEEFP && bits == 32) return DType::f32;
  if (format == SAMPLEFORMAT_IEEEFP && bits == 64) return DType::f64;
  if (is_int) {
    const bool sign = format == SAMPLEFORMAT_INT;
    switch (bits) {
      case 8:
        return sign ? DType::i8 : DType::u8;
      case 16:
        return sign ? DType::i16 : DType::u16;
      case 32:
        return sign ? DType::i32 : DType::u32;
      case 64:
        return sign ? DType::i64 : DType::u64;
      default:
        break;
    }
  }
  static const std::map<int, const char*> formats = {{SAMPLEFORMAT_UINT, "unsigned integer"},
                                                     {SAMPLEFORMAT_INT, "signed integer"},
                                                     {SAMPLEFORMAT_IEEEFP, "floating point"},
                                                     {SAMPLEFORMAT_COMPLEXINT, "complex integer"},
                                                     {SAMPLEFORMAT_COMPLEXIEEEFP, "complex floating point"}};
  const auto name = formats.find(format);
  throw Error(where + ": " + std::to_string(bits) + "-bit " + (name == formats.end() ? "samples" : name->second) +
              " samples; volseg reads 8/16/32/64-bit integers and 32/64-bit floats");
}

std::string Page::describe() const {
  return std::to_string(width) + " x " + std::to_string(height) + ", " + std::to_string(bits) + "-bit" +
         (format == SAMPLEFORMAT_IEEEFP ? " float"
          : format == SAMPLEFORMAT_INT  ? " signed"
                                        : "");
}

}  // namespace tiff

bool is_tiff(std::string_view b) {
  if (b.size() < 4) return false;
  const bool little = b[0] == 'I' && b[1] == 'I' && (b[2] == 42 || b[2] == 43) && b[3] == 0;
  const bool big = b[0] == 'M' && b[1] == 'M' && b[2] == 0 && (b[3] == 42 || b[3] == 43);
  return little || big;
}

namespace {

bool has_tiff_extension(const std::string& name) {
  std::string e = std::filesystem::path(name).extension().string();
  std::transform(e.begin(), e.end(), e.begin(), [](unsigned char c) { return std::tolower(c); });
  return e == ".tif" || e == ".tiff";
}

// Natural order: runs of digits compare as numbers ("z9" < "z10").
bool natural_less(const std::string& a, const std::string& b) {
  std::size_t i = 0, j = 0;
  while (i < a.size() && j < b.size()) {
    if (std::isdigit(static_cast<unsigned char>(a[i])) && std::isdigit(static_cast<unsigned char>(b[j]))) {
      std::size_t ie = i, je = j;
      while (ie < a.size() && std::isdigit(static_cast<unsigned char>(a[ie]))) ++ie;
      while (je < b.size() && std::isdigit(static_cast<unsigned char>(b[je]))) ++je;
      std::size_t is = i, js = j;  // without leading zeros
      while (is + 1 < ie && a[is] == '0') ++is;
      while (js + 1 < je && b[js] == '0') ++js;
      if (ie - is != je - js) return ie - is < je - js;
      if (int c = a.compare(is, ie - is, b, js, je - js); c != 0) return c < 0;
      i = ie;
      j = je;
      continue;
    }
    if (a[i] != b[j]) return a[i] < b[j];
    ++i;
    ++j;
  }
  return a.size() - i < b.size() - j || (a.size() - i == b.size() - j && a < b);
}

std::vector<std::string> slices(const std::string& folder, const std::string& glob) {
  std::vector<std::string> names;
  std::error_code error;
  for (const auto& entry : std::filesystem::directory_iterator(folder, error)) {
    if (!entry.is_regular_file(error)) continue;
    const std::string name = entry.path().filename().string();
    if (glob.empty() ? has_tiff_extension(name) : fnmatch(glob.c_str(), name.c_str(), FNM_PERIOD) == 0)
      names.push_back(name);
  }
  if (error) throw Error("list " + folder + ": " + error.message());
  std::sort(names.begin(), names.end(), natural_less);
  for (auto& name : names) name = (std::filesystem::path(folder) / name).string();
  return names;
}

// ImageJ's description: "ImageJ=1.53t\nimages=60\nslices=60\nspacing=2.5\nunit=micron\n...".
std::map<std::string, std::string> imagej_fields(TIFF* tif) {
  std::map<std::string, std::string> fields;
  const char* text = nullptr;
  if (!TIFFGetField(tif, TIFFTAG_IMAGEDESCRIPTION, &text) || !text || std::strncmp(text, "ImageJ=", 7) != 0)
    return fields;
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);)
    if (auto eq = line.find('='); eq != std::string::npos) fields[line.substr(0, eq)] = line.substr(eq + 1);
  return fields;
}

std::int64_t imagej_count(const std::map<std::string, std::string>& fields, const std::string& key) {
  auto it = fields.find(key);
  if (it == fields.end()) return 1;
  try {
    return std::max<std::int64_t>(std::stoll(it->second), 1);
  } catch (const std::exception&) {
    return 1;
  }
}

}  // namespace

bool is_tiff_folder(const std::string& path) {
  std::error_code error;
  if (!std::filesystem::is_directory(path, error)) return false;
  for (const auto& entry : std::filesystem::directory_iterator(path, error))
    if (entry.is_regular_file(error) && has_tiff_extension(entry.path().filename().string())) return true;
  return false;
}

bool tiff_extension(const std::string& path) { return has_tiff_extension(path); }

namespace {

// Refuses a page whose strips or tiles end past the file (a truncated file),
// or that lists more of them than its bytes can hold, before any rank reads it.
void check_inside(tiff::File& file, const std::string& where) {
  std::error_code error;
  const std::uint64_t size = std::filesystem::file_size(file.path(), error);
  if (error) throw Error("stat " + file.path() + ": " + error.message());
  TIFF* tif = file.get();
  const std::uint32_t pieces = TIFFNumberOfStrips(tif);  // strips, or tiles of a tiled page
  // Past one, each piece's offset takes at least 4 bytes of the file.
  if (pieces > size / 4 + 1)
    throw Error(where + ": " + std::to_string(pieces) + (TIFFIsTiled(tif) ? " tiles" : " strips") +
                ", more than a file of " + std::to_string(size) + " bytes can list");
  for (std::uint32_t i = 0; i < pieces; ++i) {
    const std::uint64_t end = TIFFGetStrileOffset(tif, i) + TIFFGetStrileByteCount(tif, i);
    if (end > size)
      throw Error(where + ": its data end at byte " + std::to_string(end) + ", past the end of the file (" +
                  std::to_string(size) + " bytes): a truncated file?");
  }
}

// A tile may pass the image's edge by less than one tile's alignment (16
// pixels, the TIFF 6.0 rule); a larger one is a damaged header.
std::uint64_t rounded_up_to_a_tile(std::uint32_t pixels) { return (std::uint64_t{pixels} + 15) / 16 * 16; }

// Refuses a page whose header claims strips or tiles that its image cannot
// hold, or that decode to more than the memory budget allows: the reader
// decodes a compressed or tiled page a strip or tile at a time, into a buffer
// of that size. Uncompressed strips are read in place, whatever their size.
void check_pieces(const tiff::Page& page, DType type, const std::string& where) {
  const std::string tile = std::to_string(page.tile_width) + " x " + std::to_string(page.tile_height);
  if (page.tiled) {
    if (page.tile_width == 0 || page.tile_height == 0) throw Error(where + ": tile " + tile + " is empty");
    if (page.tile_width > rounded_up_to_a_tile(page.width))
      throw Error(where + ": tile " + tile + " is wider than the image (" + std::to_string(page.width) + " pixels)");
    if (page.tile_height > rounded_up_to_a_tile(page.height))
      throw Error(where + ": tile " + tile + " is taller than the image (" + std::to_string(page.height) + " rows)");
  }
  if (!page.tiled && page.compression == COMPRESSION_NONE) return;
  const std::string what = page.tiled ? "tile " + tile
                                      : "strip of " + std::to_string(page.rows_per_strip) + " rows of " +
                                            std::to_string(page.width) + " pixels";
  const std::uint64_t width = page.tiled ? page.tile_width : page.width;
  const std::uint64_t height = page.tiled ? page.tile_height : page.rows_per_strip;
  check_piece(where + ": " + what + " of " + std::string(dtype_name(type)),
              saturating_product({width, height, dtype_size(type)}));
}

}  // namespace

TiffStack scan_tiff(const std::string& path, const std::string& glob, std::optional<std::int64_t> time) {
  TiffStack stack;
  std::error_code error;
  std::optional<tiff::Page> first;
  std::string first_where;
  auto check = [&](const tiff::Page& page, const std::string& where) {
    const DType type = page.dtype(where);
    check_pieces(page, type, where);
    if (!first) {
      first = page;
      first_where = where;
      if (page.width == 0 || page.height == 0) throw Error(where + ": an empty page (" + page.describe() + ")");
      return;
    }
    if (page.width != first->width || page.height != first->height || type != first->dtype(first_where))
      throw Error(where + " is " + page.describe() + " but " + first_where + " is " + first->describe() +
                  ": the pages of a volume are alike");
  };
  if (std::filesystem::is_directory(path, error)) {
    stack.folder = true;
    stack.files = slices(path, glob);
    if (stack.files.empty())
      throw Error(path + ": a folder without TIFF slices (" + (glob.empty() ? "*.tif, *.tiff" : glob) + ")");
    if (time) throw Error("--time " + std::to_string(*time) + ": a folder of slices has no time steps");
    for (const auto& file_path : stack.files) {
      tiff::File file(file_path);
      check(tiff::Page::read(file), file_path);
      check_inside(file, file_path);
      stack.directories.push_back(file.directory());
      if (!TIFFLastDirectory(file.get()))
        throw Error(file_path +
                    ": a file of several pages in a folder of slices; volseg reads one page a slice "
                    "(or give the multi-page file itself)");
    }
    return stack;
  }
  if (!glob.empty()) throw Error("--glob " + glob + ": " + path + " is a file, not a folder of slices");
  stack.files = {path};
  tiff::File file(path);
  const auto imagej = imagej_fields(file.get());
  for (std::int64_t index = 0;; ++index) {
    const tiff::Page page = tiff::Page::read(file);
    if (!page.reduced()) {
      check(page, path + " page " + std::to_string(index));
      check_inside(file, path + " page " + std::to_string(index));
      stack.directories.push_back(file.directory());
    }
    if (!file.next_page()) break;
  }
  const std::int64_t channels = imagej_count(imagej, "channels"), frames = imagej_count(imagej, "frames"),
                     images = imagej_count(imagej, "images");
  if (channels > 1)
    throw Error(path + ": an ImageJ hyperstack of " + std::to_string(channels) +
                " channels; volseg reads one value a voxel (split the channels in Fiji first)");
  std::int64_t planes = static_cast<std::int64_t>(stack.directories.size());
  if (!imagej.empty() && images > planes && planes == 1) {
    // ImageJ writes a stack past 4 GiB as one directory and the planes one
    // after another (its own convention, which tifffile reads too).
    stack.imagej_planes = images;
    planes = images;
    const std::uint64_t plane = std::uint64_t{first->width} * first->height * (first->bits / 8);
    const std::uint64_t start = TIFFGetStrileOffset(file.get(), 0);
    std::error_code size_error;
    const std::uint64_t size = std::filesystem::file_size(path, size_error);
    // images * plane may not fit 64 bits for a made-up images=: compare by division.
    const bool fits =
        !size_error && plane > 0 && start <= size && static_cast<std::uint64_t>(images) <= (size - start) / plane;
    if (first->compression != COMPRESSION_NONE || !fits)
      throw Error(path + ": an ImageJ stack of " + std::to_string(images) + " planes of " + std::to_string(plane) +
                  " bytes in one page, from byte " + std::to_string(start) + ", in a file of " + std::to_string(size) +
                  " bytes" + (first->compression != COMPRESSION_NONE ? " (compressed)" : " (a truncated file?)"));
  }
  if (frames > 1) {
    if (planes % frames != 0)
      throw Error(path + ": an ImageJ hyperstack of " + std::to_string(frames) + " frames in " +
                  std::to_string(planes) + " pages");
    if (!time)
      throw StepRequired(path + ": an ImageJ hyperstack of " + std::to_string(frames) + " frames of " +
                         std::to_string(planes / frames) + " slices; name a frame with --time (0 to " +
                         std::to_string(frames - 1) + ")");
    if (*time < 0 || *time >= frames)
      throw Error("--time " + std::to_string(*time) + ": " + path + " has frames 0 to " + std::to_string(frames - 1));
    const std::int64_t slices_per_frame = planes / frames;
    stack.frames = frames;
    stack.frame = *time;
    stack.first_plane = *time * slices_per_frame;
    if (stack.imagej_planes == 0) {
      std::vector<std::uint64_t> mine(stack.directories.begin() + stack.first_plane,
                                      stack.directories.begin() + stack.first_plane + slices_per_frame);
      stack.directories = std::move(mine);
      stack.first_plane = 0;
    } else {
      stack.imagej_planes = slices_per_frame;
    }
  } else if (time) {
    throw Error("--time " + std::to_string(*time) + ": " + path + " is one 3D stack, not a hyperstack of frames");
  }
  return stack;
}

std::int64_t TiffStack::planes() const {
  return imagej_planes > 0 ? imagej_planes : static_cast<std::int64_t>(directories.size());
}

std::string TiffStack::serialize() const {
  std::ostringstream out;
  out << (folder ? 1 : 0) << ' ' << imagej_planes << ' ' << first_plane << ' ' << frames << ' ' << frame << ' '
      << files.size() << ' ' << directories.size() << '\n';
  for (const auto& file : files) out << file.size() << ' ' << file;
  for (auto d : directories) out << ' ' << d;
  return out.str();
}

TiffStack TiffStack::deserialize(const std::string& text) {
  std::istringstream in(text);
  TiffStack stack;
  int folder = 0;
  std::size_t files = 0, directories = 0;
  in >> folder >> stack.imagej_planes >> stack.first_plane >> stack.frames >> stack.frame >> files >> directories;
  stack.folder = folder != 0;
  in.get();
  for (std::size_t i = 0; i < files; ++i) {
    std::size_t length = 0;
    in >> length;
    in.get();
    std::string name(length, '\0');
    in.read(name.data(), static_cast<std::streamsize>(length));
    stack.files.push_back(std::move(name));
  }
  stack.directories.resize(directories);
  for (auto& d : stack.directories) in >> d;
  if (!in) throw Error("internal: a TIFF page table that does not parse");
  return stack;
}

VolumeInfo tiff_info(const TiffStack& stack) {
  tiff::File file(stack.files.front());
  file.set_directory(stack.directories.front());
  const tiff::Page page = tiff::Page::read(file);
  VolumeInfo info;
  info.dtype = page.dtype(stack.files.front());
  info.byte_order = TIFFIsBigEndian(file.get()) ? ByteOrder::big : ByteOrder::little;
  info.dims = {stack.planes(), page.height, page.width};
  const auto imagej = imagej_fields(file.get());
  std::uint16_t resolution_unit = RESUNIT_INCH;
  TIFFGetFieldDefaulted(file.get(), TIFFTAG_RESOLUTIONUNIT, &resolution_unit);
  if (!imagej.empty() || resolution_unit == RESUNIT_NONE) {
    float x = 0, y = 0;
    if (TIFFGetField(file.get(), TIFFTAG_XRESOLUTION, &x) && x > 0 && std::isfinite(x)) info.spacing[0] = 1.0 / x;
    if (TIFFGetField(file.get(), TIFFTAG_YRESOLUTION, &y) && y > 0 && std::isfinite(y)) info.spacing[1] = 1.0 / y;
    if (auto it = imagej.find("spacing"); it != imagej.end()) {
      char* end = nullptr;
      const double z = std::strtod(it->second.c_str(), &end);
      if (end != it->second.c_str() && z > 0 && std::isfinite(z)) info.spacing[2] = z;
    }
    // ImageJ's unit, as NIfTI's units_xyz names it (m, mm, um; others as written).
    if (auto it = imagej.find("unit"); it != imagej.end() && it->second != "pixel" && !it->second.empty()) {
      const std::string& unit = it->second;
      const bool micron = unit == "micron" || unit == "um" || unit == "\xC2\xB5m" || unit == "\xB5m";
      info.attributes["units_xyz"] = micron ? "um" : unit;
    }
  }
  static const std::map<int, const char*> names = {
      {COMPRESSION_NONE, "none"},       {COMPRESSION_LZW, "LZW"},           {COMPRESSION_ADOBE_DEFLATE, "deflate"},
      {COMPRESSION_DEFLATE, "deflate"}, {COMPRESSION_PACKBITS, "PackBits"}, {COMPRESSION_LZMA, "LZMA"},
      {COMPRESSION_ZSTD, "zstd"},       {COMPRESSION_JPEG, "JPEG"},         {COMPRESSION_WEBP, "WebP"}};
  const auto name = names.find(page.compression);
  info.attributes["tiff_compression"] =
      name != names.end() ? name->second : "libtiff codec " + std::to_string(page.compression);
  info.attributes["tiff_layout"] =
      std::string(stack.folder ? "a folder of " + std::to_string(stack.files.size()) + " slices, "
                               : std::string(TIFFIsBigTIFF(file.get()) ? "BigTIFF, " : "TIFF, ")) +
      (page.tiled ? "tiles of " + std::to_string(page.tile_width) + " x " + std::to_string(page.tile_height)
                  : "strips of " + std::to_string(page.rows_per_strip) + " rows") +
      (stack.imagej_planes > 0 ? ", ImageJ's contiguous planes" : "");
  return info;
}

// ---- writing -------------------------------------------------------------

namespace {

// Bytes in a byte order, appended.
struct Bytes {
  bool big;
  std::string data;
  void put(std::uint64_t value, int size) {
    for (int i = 0; i < size; ++i) {
      const int shift = 8 * (big ? size - 1 - i : i);
      data.push_back(static_cast<char>((value >> shift) & 0xff));
    }
  }
};

struct Entry {
  std::uint16_t tag, type;
  std::uint64_t count;
  std::string value;  // in the file's byte order; inline when it fits, else at offset
  std::uint64_t offset = 0;
};

constexpr std::uint16_t kShort = 3, kLong = 4, kRational = 5, kAscii = 2, kLong8 = 16;

std::string rational(bool big, double value) {
  // value as numerator / denominator in 32 bits each, 6-7 significant
  // digits; a value that is not a positive number, or that 32 bits cannot
  // hold, is 1 (a spacing volseg could not write is not made up).
  if (!std::isfinite(value) || value <= 0 || value > 4.0e9 || value < 1e-9) value = 1;
  std::uint64_t denominator = 1000000;
  while (denominator > 1 && value * static_cast<double>(denominator) > 4.0e9) denominator /= 10;
  while (denominator < 1000000000 && value * static_cast<double>(denominator) < 1e6) denominator *= 10;
  const auto numerator = static_cast<std::uint64_t>(std::llround(value * static_cast<double>(denominator)));
  Bytes b{big, {}};
  b.put(std::max<std::uint64_t>(numerator, 1), 4);
  b.put(denominator, 4);
  return b.data;
}

}  // namespace

std::string format_tiff(const VolumeInfo& info) {
  const bool big = info.byte_order == ByteOrder::big;
  const std::uint64_t nz = static_cast<std::uint64_t>(info.dims[0]);
  const std::uint64_t plane = static_cast<std::uint64_t>(info.dims[1] * info.dims[2]) * dtype_size(info.dtype);
  if (info.dims[1] > 0xffffffffLL || info.dims[2] > 0xffffffffLL)
    throw Error("a TIFF page holds at most 4294967295 pixels a side");
  const int bits = static_cast<int>(8 * dtype_size(info.dtype));
  const int format =
      dtype_is_float(info.dtype) ? SAMPLEFORMAT_IEEEFP
      : (info.dtype == DType::i8 || info.dtype == DType::i16 || info.dtype == DType::i32 || info.dtype == DType::i64)
          ? SAMPLEFORMAT_INT
          : SAMPLEFORMAT_UINT;
  std::string unit;
  if (auto it = info.attributes.find("units_xyz");
      it != info.attributes.end() && it->second.size() < 32 && it->second.find_first_of("\n=") == std::string::npos)
    unit = it->second;
  char description[256];
  std::snprintf(description, sizeof description,
                "ImageJ=1.11a\nimages=%llu\nslices=%llu\n%sspacing=%.17g\nloop=false\n",
                static_cast<unsigned long long>(nz), static_cast<unsigned long long>(nz),
                unit.empty() ? "" : ("unit=" + unit + "\n").c_str(), info.spacing[2]);
  const std::string text = std::string(description) + '\0';
  const std::string xres = rational(big, 1.0 / info.spacing[0]), yres = rational(big, 1.0 / info.spacing[1]);
  const std::string software = std::string("volseg") + '\0';
  // Classic TIFF while the whole file stays under 4 GiB (with room for the header).
  const std::uint64_t header_guess = 16 + text.size() + 64 + nz * (8 + 16 * 20 + 8);
  const bool bigtiff = header_guess + nz * plane >= (std::uint64_t{1} << 32);
  const int value_size = bigtiff ? 8 : 4, entry_size = bigtiff ? 20 : 12, count_size = bigtiff ? 8 : 2;
  const std::uint16_t offset_type = bigtiff ? kLong8 : kLong;

  auto entries_for = [&](std::uint64_t z, std::uint64_t data_offset) {
    auto number = [&](std::uint64_t v, int size) {
      Bytes b{big, {}};
      b.put(v, size);
      return b.data;
    };
    std::vector<Entry> e = {
        {256, kLong, 1, number(static_cast<std::uint64_t>(info.dims[2]), 4)},
        {257, kLong, 1, number(static_cast<std::uint64_t>(info.dims[1]), 4)},
        {258, kShort, 1, number(static_cast<std::uint64_t>(bits), 2)},
        {259, kShort, 1, number(COMPRESSION_NONE, 2)},
        {262, kShort, 1, number(PHOTOMETRIC_MINISBLACK, 2)},
    };
    if (z == 0) e.push_back({270, kAscii, text.size(), text});
    e.push_back({273, offset_type, 1, number(data_offset + z * plane, value_size)});
    e.push_back({277, kShort, 1, number(1, 2)});
    e.push_back({278, kLong, 1, number(static_cast<std::uint64_t>(info.dims[1]), 4)});
    e.push_back({279, offset_type, 1, number(plane, value_size)});
    e.push_back({282, kRational, 1, xres});
    e.push_back({283, kRational, 1, yres});
    e.push_back({296, kShort, 1, number(RESUNIT_NONE, 2)});
    if (z == 0) e.push_back({305, kAscii, software.size(), software});
    e.push_back({339, kShort, 1, number(static_cast<std::uint64_t>(format), 2)});
    return e;
  };

  // Layout: the file header, the values too long to sit in an entry (once,
  // shared by every page), every page's directory, then the voxels.
  Bytes out{big, {}};
  const std::uint64_t file_header = bigtiff ? 16 : 8;
  std::map<std::uint16_t, std::uint64_t> shared;  // tag -> offset of its value
  std::string extra;
  for (const auto& entry : entries_for(0, 0))
    if (entry.value.size() > static_cast<std::size_t>(value_size)) {
      shared[entry.tag] = file_header + extra.size();
      extra += entry.value;
      if (extra.size() % 2) extra.push_back('\0');  // values start on a word boundary
    }
  const std::uint64_t first_ifd = file_header + extra.size();
  const std::uint64_t ifd_size_first = count_size + entries_for(0, 0).size() * entry_size + value_size;
  const std::uint64_t ifd_size_rest = count_size + entries_for(1, 0).size() * entry_size + value_size;
  std::uint64_t data_offset = first_ifd + ifd_size_first + (nz > 1 ? (nz - 1) * ifd_size_rest : 0);
  data_offset = (data_offset + 15) / 16 * 16;

  out.data += big ? "MM" : "II";
  out.put(bigtiff ? 43 : 42, 2);
  if (bigtiff) {
    out.put(8, 2);
    out.put(0, 2);
  }
  out.put(first_ifd, value_size);
  out.data += extra;
  std::uint64_t at = first_ifd;
  for (std::uint64_t z = 0; z < nz; ++z) {
    const auto entries = entries_for(z, data_offset);
    const std::uint64_t size = count_size + entries.size() * entry_size + value_size;
    out.put(entries.size(), count_size);
    for (const auto& entry : entries) {
      out.put(entry.tag, 2);
      out.put(entry.type, 2);
      out.put(entry.count, value_size);
      if (entry.value.size() <= static_cast<std::size_t>(value_size)) {
        std::string value = entry.value;
        value.resize(static_cast<std::size_t>(value_size), '\0');  // left-justified in the field
        out.data += value;
      } else {
        out.put(shared.at(entry.tag), value_size);
      }
    }
    at += size;
    out.put(z + 1 < nz ? at : 0, value_size);
  }
  out.data.resize(data_offset, '\0');
  return out.data;
}

}  // namespace volseg::io
