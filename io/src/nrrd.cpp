// SPDX-License-Identifier: MIT
#include "volseg/io/nrrd.hpp"
#include "volseg/io/tiff.hpp"

#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <limits>
#include <sstream>
#include <vector>

#include "volseg/io/error.hpp"
#include "volseg/io/memory.hpp"
#include "volseg/version.hpp"

namespace volseg::io {
namespace {

std::string trim(std::string_view text) {
  auto begin = text.find_first_not_of(" \t\r");
  if (begin == std::string_view::npos) return {};
  auto end = text.find_last_not_of(" \t\r");
  return std::string(text.substr(begin, end - begin + 1));
}

std::vector<std::string> words(const std::string& text) {
  std::istringstream stream(text);
  std::vector<std::string> result;
  for (std::string word; stream >> word;) result.push_back(word);
  return result;
}

// Every NRRD type name (NRRD0004, "type:"). The first name of each type is
// the one volseg writes; a reader accepts them all.
struct NrrdType {
  std::string_view name;
  DType dtype;
};
constexpr NrrdType kNrrdTypes[] = {
    {"int8", DType::i8},
    {"signed char", DType::i8},
    {"int8_t", DType::i8},
    {"uint8", DType::u8},
    {"uchar", DType::u8},
    {"unsigned char", DType::u8},
    {"uint8_t", DType::u8},
    {"int16", DType::i16},
    {"short", DType::i16},
    {"short int", DType::i16},
    {"signed short", DType::i16},
    {"signed short int", DType::i16},
    {"int16_t", DType::i16},
    {"uint16", DType::u16},
    {"ushort", DType::u16},
    {"unsigned short", DType::u16},
    {"unsigned short int", DType::u16},
    {"uint16_t", DType::u16},
    {"int32", DType::i32},
    {"int", DType::i32},
    {"signed int", DType::i32},
    {"int32_t", DType::i32},
    {"uint32", DType::u32},
    {"uint", DType::u32},
    {"unsigned int", DType::u32},
    {"uint32_t", DType::u32},
    {"int64", DType::i64},
    {"longlong", DType::i64},
    {"long long", DType::i64},
    {"int64_t", DType::i64},
    {"uint64", DType::u64},
    {"ulonglong", DType::u64},
    {"unsigned long long", DType::u64},
    {"uint64_t", DType::u64},
    {"float", DType::f32},
    {"double", DType::f64},
};

std::optional<DType> nrrd_type(const std::string& name) {
  for (const auto& type : kNrrdTypes)
    if (type.name == name) return type.dtype;
  return std::nullopt;
}

std::string_view nrrd_type_name(DType dtype) {
  for (const auto& type : kNrrdTypes)
    if (type.dtype == dtype) return type.name;
  return "?";
}

double parse_number(const std::string& text, const std::string& what, const std::string& path) {
  try {
    std::size_t used = 0;
    double value = std::stod(text, &used);
    if (used == text.size()) return value;
  } catch (const std::exception&) {
  }
  throw Error(path + ": malformed NRRD header: " + what + " '" + text + "' is not a number");
}

std::int64_t parse_integer(const std::string& text, const std::string& what, const std::string& path) {
  std::int64_t value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size())
    throw Error(path + ": malformed NRRD header: " + what + " '" + text + "' is not an integer");
  return value;
}

// Fields that describe axes or provenance and do not change how volseg reads
// the values; accepted and ignored.
// "(1,2,3) (4,5,6)" -> "1 2 3 4 5 6".
std::string vector_numbers(std::string text) {
  for (char& c : text)
    if (c == '(' || c == ')' || c == ',') c = ' ';
  return text;
}

bool harmless_field(const std::string& field) {
  static const char* names[] = {
      "content",     "min",       "max",      "old min",      "old max",         "kinds",       "centers",
      "centerings",  "labels",    "units",    "space",        "space dimension", "space units", "measurement frame",
      "thicknesses", "axis maxs", "axismaxs", "sample units", "sampleunits",     "number",      "block size",
      "blocksize"};
  for (const char* name : names)
    if (field == name) return true;
  return false;
}

// What the header's fields have said so far, to check that it is complete.
struct FieldsSeen {
  std::optional<DType> dtype;
  bool have_sizes = false, have_endian = false, detached = false;
};

// A "key:= value" line: _FillValue and valid_range are the volume's, any
// other key an attribute.
void parse_key_value(const std::string& key, const std::string& value, VolumeInfo& info, const std::string& path) {
  if (key == "_FillValue") {
    // An integer is read exactly (64-bit fills need more than a double);
    // a decimal as the double it was written from, so it equals the
    // float or double values it marks.
    const bool integer = !value.empty() && value.find_first_not_of("+-0123456789") == std::string::npos;
    try {
      std::size_t used = 0;
      info.fill_value = integer ? std::stold(value, &used) : static_cast<long double>(std::stod(value, &used));
      if (used != value.size()) throw std::invalid_argument(value);
    } catch (const std::exception&) {
      throw Error(path + ": malformed NRRD header: _FillValue '" + value + "' is not a number");
    }
  } else if (key == "valid_range") {
    auto parts = words(value);
    if (parts.size() != 2) throw Error(path + ": malformed NRRD header: valid_range needs two numbers");
    info.valid_range =
        std::array<double, 2>{parse_number(parts[0], "valid_range", path), parse_number(parts[1], "valid_range", path)};
  } else {
    info.attributes[key] = value;
  }
}

// The fields that place the volume in space: spacings, origin, directions.
// Returns false for a field that is none of them.
bool parse_geometry(const std::string& field, const std::string& value, VolumeInfo& info, const std::string& path) {
  if (field == "spacings") {
    auto parts = words(value);
    if (parts.size() != 3) throw Error(path + ": malformed NRRD header: spacings needs 3 numbers");
    for (std::size_t a = 0; a < 3; ++a) {
      double spacing = parts[a] == "nan" ? 1.0 : parse_number(parts[a], "spacing", path);
      info.spacing[a] = std::isfinite(spacing) && spacing > 0 ? spacing : 1.0;
    }
  } else if (field == "space origin" || field == "axis mins" || field == "axismins") {
    // "space origin: (x,y,z)" or "axis mins: x y z": the position of voxel 0.
    auto parts = words(vector_numbers(value));
    if (parts.size() != 3) throw Error(path + ": malformed NRRD header: " + field + " needs 3 numbers");
    for (std::size_t a = 0; a < 3; ++a) info.origin[a] = parts[a] == "nan" ? 0.0 : parse_number(parts[a], field, path);
  } else if (field == "space directions") {
    // Axis-aligned grids only: each axis's step is the length of its vector.
    auto parts = words(vector_numbers(value));
    if (parts.size() != 9) throw Error(path + ": malformed NRRD header: space directions needs 3 vectors of 3");
    for (std::size_t a = 0; a < 3; ++a) {
      double length = 0;
      for (std::size_t c = 0; c < 3; ++c) {
        const double v = parse_number(parts[3 * a + c], "space directions", path);
        length += v * v;
      }
      length = std::sqrt(length);
      info.spacing[a] = std::isfinite(length) && length > 0 ? length : 1.0;
    }
  } else {
    return false;
  }
  return true;
}

// A "field: value" line of the layout of the data: type, dimension,
// sizes, endian, encoding, data file, skips; then the geometry's.
void parse_field(const std::string& field, const std::string& value, NrrdHeader& header, FieldsSeen& seen,
                 const std::string& path) {
  VolumeInfo& info = header.info;
  if (field == "type") {
    seen.dtype = nrrd_type(value);
    if (!seen.dtype)
      throw Error(path + ": unsupported dtype '" + value +
                  "' (volseg reads int8, uint8, int16, uint16, int32, uint32, int64, uint64, float, double)");
  } else if (field == "dimension") {
    if (parse_integer(value, "dimension", path) != 3)
      throw Error(path + ": unsupported NRRD dimension " + value + " (volseg reads 3D volumes)");
  } else if (field == "sizes") {
    auto parts = words(value);
    if (parts.size() != 3) throw Error(path + ": malformed NRRD header: sizes needs 3 numbers");
    for (int a = 0; a < 3; ++a) {
      std::int64_t n = parse_integer(parts[static_cast<std::size_t>(a)], "size", path);
      if (n <= 0)
        throw Error(path + ": malformed NRRD header: size " + parts[static_cast<std::size_t>(a)] + " is not positive");
      info.dims[static_cast<std::size_t>(2 - a)] = n;  // NRRD lists the fastest axis first
    }
    seen.have_sizes = true;
  } else if (field == "endian") {
    if (value == "little")
      info.byte_order = ByteOrder::little;
    else if (value == "big")
      info.byte_order = ByteOrder::big;
    else
      throw Error(path + ": malformed NRRD header: endian '" + value + "'");
    seen.have_endian = true;
  } else if (field == "encoding") {
    if (value != "raw") throw Error(path + ": unsupported NRRD encoding '" + value + "' (volseg reads raw)");
  } else if (field == "data file" || field == "datafile") {
    if (value.rfind("LIST", 0) == 0 || words(value).size() > 1)
      throw Error(path + ": unsupported NRRD data file list (volseg reads one data file)");
    seen.detached = true;
    std::filesystem::path data(value);
    if (data.is_relative()) data = std::filesystem::path(path).parent_path() / data;
    header.data_path = data.string();
  } else if (field == "byte skip" || field == "byteskip") {
    std::int64_t skip = parse_integer(value, "byte skip", path);
    if (skip < 0) throw Error(path + ": unsupported NRRD byte skip " + value);
    header.byte_skip = static_cast<std::uint64_t>(skip);
  } else if (field == "line skip" || field == "lineskip") {
    if (parse_integer(value, "line skip", path) != 0) throw Error(path + ": unsupported NRRD line skip " + value);
  } else if (!parse_geometry(field, value, info, path) && !harmless_field(field)) {
    throw Error(path + ": unsupported NRRD field '" + field + "'");
  }
}

// The fields every header needs, the data's place, and sizes its data
// file (and any file) can hold.
void check_complete(NrrdHeader& header, const FieldsSeen& seen, std::size_t data_start, const std::string& path,
                    const DataFileSize& file_size) {
  VolumeInfo& info = header.info;
  if (!seen.dtype) throw Error(path + ": malformed NRRD header: no type");
  if (!seen.have_sizes) throw Error(path + ": malformed NRRD header: no sizes");
  info.dtype = *seen.dtype;
  if (!seen.have_endian && dtype_size(info.dtype) > 1) throw Error(path + ": malformed NRRD header: no endian");
  if (!seen.detached) {
    if (data_start == std::string::npos)
      throw Error(path + ": malformed NRRD header: no data file and no attached data");
    header.data_path = path;
    header.byte_skip += data_start;
  }
  const std::string skip = seen.detached ? "byte skip " + std::to_string(header.byte_skip)
                                         : "byte " + std::to_string(header.byte_skip) + " of the file";
  check_data_claim(header, path, path + ": ", "sizes " + sizes_text(info), skip, file_size);
}

}  // namespace

std::string sizes_text(const VolumeInfo& info) {
  return std::to_string(info.dims[2]) + " x " + std::to_string(info.dims[1]) + " x " + std::to_string(info.dims[0]) +
         " of " + std::string(dtype_name(info.dtype));
}

std::string claimed_bytes_text(const VolumeInfo& info) {
  long double bytes = static_cast<long double>(dtype_size(info.dtype));
  for (const std::int64_t n : info.dims) bytes *= static_cast<long double>(n);
  if (bytes < 1e15L) return std::to_string(static_cast<std::uint64_t>(bytes));
  char text[32];
  std::snprintf(text, sizeof text, "%.2Lg", bytes);  // "9.9e+27"
  std::string result = text;
  if (const auto plus = result.find('+'); plus != std::string::npos) result.erase(plus, 1);
  return result;
}

void check_data_claim(const NrrdHeader& header, const std::string& path, const std::string& where,
                      const std::string& sizes, const std::string& skip, const DataFileSize& file_size) {
  const VolumeInfo& info = header.info;
  constexpr std::uint64_t kMax = std::numeric_limits<std::uint64_t>::max();
  std::uint64_t end = dtype_size(info.dtype);
  for (const std::int64_t n : info.dims) end = saturating_product({end, n < 0 ? kMax : static_cast<std::uint64_t>(n)});
  end = end > kMax - header.byte_skip ? kMax : end + header.byte_skip;
  const std::string claim =
      where + sizes + " need " + claimed_bytes_text(info) + " bytes from " + skip + ", more than ";
  if (const auto held = file_size ? file_size(header.data_path) : std::nullopt; held && end > *held)
    throw Error(claim +
                (header.data_path == path ? "the file holds (" : "its data file " + header.data_path + " holds (") +
                std::to_string(*held) + " bytes)");
  // Past 2^63 bytes the data's size and its end overflow the readers' file offsets.
  if (end > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()))
    throw Error(claim + "a file holds (2^63 bytes)");
}

NrrdHeader parse_nrrd(const std::string& text, const std::string& header_path, const DataFileSize& file_size) {
  const std::string& path = header_path;
  if (text.rfind("NRRD000", 0) != 0) throw Error(path + ": not a NRRD header (no NRRD000x magic line)");

  NrrdHeader header;
  FieldsSeen seen;
  std::size_t position = text.find('\n');
  std::size_t data_start = std::string::npos;
  while (position != std::string::npos && position + 1 <= text.size()) {
    std::size_t begin = position + 1;
    std::size_t end = text.find('\n', begin);
    std::string line =
        trim(std::string_view(text).substr(begin, end == std::string::npos ? std::string::npos : end - begin));
    position = end;
    if (line.empty()) {
      if (end != std::string::npos) data_start = end + 1;
      break;
    }
    if (line[0] == '#') continue;
    if (auto kv = line.find(":="); kv != std::string::npos) {
      parse_key_value(trim(line.substr(0, kv)), trim(line.substr(kv + 2)), header.info, path);
      continue;
    }
    auto colon = line.find(": ");
    if (colon == std::string::npos) throw Error(path + ": malformed NRRD header line '" + line + "'");
    parse_field(trim(line.substr(0, colon)), trim(line.substr(colon + 2)), header, seen, path);
  }
  check_complete(header, seen, data_start, path, file_size);
  return header;
}

std::string format_nrrd(const VolumeInfo& info, const std::string& data_file_name) {
  std::ostringstream out;
  out.precision(17);
  out << "NRRD0004\n"
      << "# Complete NRRD file format specification at:\n"
      << "# http://teem.sourceforge.net/nrrd/format.html\n"
      << "# written by volseg " << version() << "\n"
      << "type: " << nrrd_type_name(info.dtype) << "\n"
      << "dimension: 3\n"
      << "sizes: " << info.dims[2] << " " << info.dims[1] << " " << info.dims[0] << "\n"
      << "spacings: " << info.spacing[0] << " " << info.spacing[1] << " " << info.spacing[2] << "\n";
  if (info.origin != std::array<double, 3>{0, 0, 0})
    out << "axis mins: " << info.origin[0] << " " << info.origin[1] << " " << info.origin[2] << "\n";
  out << "kinds: domain domain domain\n"
      << "endian: " << byte_order_name(info.byte_order) << "\n"
      << "encoding: raw\n";
  if (info.fill_value) {
    char text[64];
    std::snprintf(text, sizeof text, "%.21Lg", *info.fill_value);
    out << "_FillValue:=" << text << "\n";
  }
  if (info.valid_range) out << "valid_range:=" << (*info.valid_range)[0] << " " << (*info.valid_range)[1] << "\n";
  for (const auto& [key, value] : info.attributes) {
    std::string clean = value;
    for (char& c : clean)
      if (c == '\n' || c == '\r') c = ' ';
    out << key << ":=" << clean << "\n";
  }
  out << "data file: " << data_file_name << "\n";
  return out.str();
}

std::string data_path_for_header(const std::string& header_path) {
  std::filesystem::path path(header_path);
  // NIfTI, VTK image data and TIFF files hold their header and data.
  if (path.extension() == ".nii" || path.extension() == ".vti" || tiff_extension(header_path)) return header_path;
  if (path.extension() == ".nhdr")
    path.replace_extension(".raw");
  else
    path += ".raw";
  return path.string();
}

}  // namespace volseg::io
