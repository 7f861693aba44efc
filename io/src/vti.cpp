// SPDX-License-Identifier: MIT
#include "volseg/io/vti.hpp"

#include <algorithm>
#include <array>
#include <cctype>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <optional>
#include <sstream>
#include <vector>

#include "volseg/io/error.hpp"

namespace volseg::io {
namespace {

// One start tag: its attributes, and where it ends (after its '>').
struct Tag {
  std::map<std::string, std::string> attributes;
  std::size_t begin = 0, end = 0;
  std::string get(const std::string& key, const std::string& fallback = {}) const {
    const auto it = attributes.find(key);
    return it == attributes.end() ? fallback : it->second;
  }
};

// The first <name ...> at or after from, before limit; nullopt when none.
std::optional<Tag> find_tag(std::string_view text, std::string_view name, std::size_t from, std::size_t limit,
                            const std::string& where) {
  const std::string open = std::string("<").append(name);  // not "<" + ...: GCC 12's -Wrestrict misfires on it
  for (std::size_t at = text.find(open, from); at != std::string_view::npos && at < limit;
       at = text.find(open, at + 1)) {
    const std::size_t after = at + open.size();
    if (after >= text.size() || !(text[after] == ' ' || text[after] == '>' || text[after] == '/' ||
                                  text[after] == '\n' || text[after] == '\t' || text[after] == '\r'))
      continue;
    Tag tag;
    tag.begin = at;
    std::size_t i = after;
    while (true) {
      while (i < text.size() && std::isspace(static_cast<unsigned char>(text[i]))) ++i;
      if (i >= text.size()) throw Error(where + ": the <" + std::string(name) + "> element is not closed");
      if (text[i] == '>' || text[i] == '/') break;
      const std::size_t key_start = i;
      while (i < text.size() && text[i] != '=' && !std::isspace(static_cast<unsigned char>(text[i])) && text[i] != '>')
        ++i;
      const std::string key(text.substr(key_start, i - key_start));
      while (i < text.size() && std::isspace(static_cast<unsigned char>(text[i]))) ++i;
      if (i >= text.size() || text[i] != '=')
        throw Error(where + ": attribute " + key + " of <" + std::string(name) + "> has no value");
      ++i;
      while (i < text.size() && std::isspace(static_cast<unsigned char>(text[i]))) ++i;
      if (i >= text.size() || (text[i] != '"' && text[i] != '\''))
        throw Error(where + ": attribute " + key + " of <" + std::string(name) + "> is not quoted");
      const char quote = text[i++];
      const std::size_t close = text.find(quote, i);
      if (close == std::string_view::npos) throw Error(where + ": attribute " + key + " is not closed");
      tag.attributes[key] = std::string(text.substr(i, close - i));
      i = close + 1;
    }
    const std::size_t gt = text.find('>', i);
    if (gt == std::string_view::npos) throw Error(where + ": the <" + std::string(name) + "> element is not closed");
    tag.end = gt + 1;
    return tag;
  }
  return std::nullopt;
}

template <std::size_t N>
std::array<double, N> numbers(const std::string& text, const std::string& what, const std::string& where) {
  std::array<double, N> values{};
  std::istringstream in(text);
  for (auto& v : values)
    if (!(in >> v) || !std::isfinite(v))
      throw Error(where + ": " + what + " \"" + text + "\" is not " + std::to_string(N) + " numbers");
  std::string rest;
  if (in >> rest) throw Error(where + ": " + what + " \"" + text + "\" is not " + std::to_string(N) + " numbers");
  return values;
}

std::optional<DType> dtype_of(const std::string& type) {
  static const std::map<std::string, DType> types{
      {"Int8", DType::i8},     {"UInt8", DType::u8},   {"Int16", DType::i16}, {"UInt16", DType::u16},
      {"Int32", DType::i32},   {"UInt32", DType::u32}, {"Int64", DType::i64}, {"UInt64", DType::u64},
      {"Float32", DType::f32}, {"Float64", DType::f64}};
  const auto it = types.find(type);
  if (it == types.end()) return std::nullopt;
  return it->second;
}

}  // namespace

bool is_vti(std::string_view start) {
  std::size_t i = 0;
  if (start.substr(0, 3) == "\xEF\xBB\xBF") i = 3;  // a UTF-8 byte order mark
  while (i < start.size() && std::isspace(static_cast<unsigned char>(start[i]))) ++i;
  const std::string_view rest = start.substr(i);
  if (rest.substr(0, 8) == "<VTKFile") return true;
  return rest.substr(0, 5) == "<?xml" && start.find("<VTKFile") != std::string_view::npos;
}

std::size_t vti_header_length(std::string_view text) {
  const std::size_t appended = text.find("<AppendedData");
  if (appended == std::string_view::npos) return 0;
  const std::size_t gt = text.find('>', appended);
  if (gt == std::string_view::npos) return 0;
  const std::size_t mark = text.find('_', gt);
  return mark == std::string_view::npos ? 0 : mark + 1;
}

bool vti_packed(std::string_view text) {
  try {
    const auto file = find_tag(text, "VTKFile", 0, text.size(), "vti");
    const auto appended = find_tag(text, "AppendedData", 0, text.size(), "vti");
    return (file && !file->get("compressor").empty()) || (appended && appended->get("encoding") == "base64");
  } catch (const Error&) {
    return false;
  }
}

namespace {

// <VTKFile>: an ImageData file, its byte order and header integers, and a
// compressor volseg decompresses (its name, empty when none).
struct VtiFile {
  Tag tag;
  std::string order, header_type, compressor;
};

VtiFile read_vti_file(std::string_view text, const std::string& path, const std::string& where) {
  const auto file = find_tag(text, "VTKFile", 0, text.size(), where);
  if (!file) throw Error(where + ": no <VTKFile> element");
  if (file->get("type") != "ImageData")
    throw Error(path + ": a VTK XML file of type " + file->get("type", "?") + "; volseg reads ImageData (.vti)");
  VtiFile result{*file, file->get("byte_order", "LittleEndian"), file->get("header_type", "UInt32"),
                 file->get("compressor")};
  if (result.order != "LittleEndian" && result.order != "BigEndian")
    throw Error(where + ": byte_order " + result.order + " is unknown");
  if (result.header_type != "UInt32" && result.header_type != "UInt64")
    throw Error(where + ": header_type " + result.header_type + " is unknown");
  const std::string& compressor = result.compressor;
  if (!compressor.empty() && compressor != "vtkZLibDataCompressor" && compressor != "vtkLZ4DataCompressor" &&
      compressor != "vtkLZMADataCompressor")
    throw Error(where + ": its arrays are compressed with " + compressor +
                "; volseg decompresses VTK's ZLib, LZ4 and LZMA compressors: save it again with one of those or None");
  return result;
}

// <ImageData>: the whole extent as sizes (z, y, x), spacing, origin and direction.
struct VtiGrid {
  Tag tag;
  std::array<double, 6> extent{};
  Index3 dims{};
  std::array<double, 3> spacing{}, origin{};
  std::array<double, 9> direction{};
};

VtiGrid read_vti_grid(std::string_view text, std::size_t from, const std::string& where) {
  const auto image = find_tag(text, "ImageData", from, text.size(), where);
  if (!image) throw Error(where + ": no <ImageData> element");
  VtiGrid grid;
  grid.tag = *image;
  grid.extent = numbers<6>(image->get("WholeExtent"), "WholeExtent", where);
  for (double e : grid.extent)
    if (e != std::floor(e) || std::fabs(e) > 1e15)
      throw Error(where + ": WholeExtent has a number that is not an index");
  for (int a = 0; a < 3; ++a) {
    const double count =
        grid.extent[static_cast<std::size_t>(2 * a + 1)] - grid.extent[static_cast<std::size_t>(2 * a)] + 1;
    if (count < 1) throw Error(where + ": WholeExtent \"" + image->get("WholeExtent") + "\" is empty");
    grid.dims[static_cast<std::size_t>(2 - a)] = static_cast<std::int64_t>(count);
  }
  grid.spacing = numbers<3>(image->get("Spacing", "1 1 1"), "Spacing", where);
  grid.origin = numbers<3>(image->get("Origin", "0 0 0"), "Origin", where);
  grid.direction = numbers<9>(image->get("Direction", "1 0 0 0 1 0 0 0 1"), "Direction", where);
  return grid;
}

// The single piece's point data array volseg reads: --var's, else the one
// marked Scalars, else the only one.
Tag choose_vti_array(std::string_view text, const VtiGrid& grid, const std::string& path, const std::string& array,
                     const std::string& where) {
  const std::size_t n = text.size();
  const auto piece = find_tag(text, "Piece", grid.tag.end, n, where);
  if (!piece) throw Error(where + ": no <Piece> element");
  if (numbers<6>(piece->get("Extent"), "Piece Extent", where) != grid.extent)
    throw Error(where + ": its piece's Extent differs from WholeExtent; volseg reads single-piece image data");
  if (find_tag(text, "Piece", piece->end, n, where))
    throw Error(where + ": several pieces; volseg reads single-piece image data");
  const std::size_t appended_at = text.find("<AppendedData");
  const auto point =
      find_tag(text, "PointData", piece->end, appended_at == std::string_view::npos ? n : appended_at, where);
  const std::size_t point_end = point ? text.find("</PointData>", point->end) : std::string_view::npos;
  std::vector<Tag> arrays;
  if (point && point_end != std::string_view::npos)
    for (auto a = find_tag(text, "DataArray", point->end, point_end, where); a;
         a = find_tag(text, "DataArray", a->end, point_end, where))
      arrays.push_back(*a);
  if (arrays.empty()) throw Error(where + ": no point data array (volseg thresholds point data)");
  const std::string scalars = point->get("Scalars");
  const Tag* chosen = nullptr;
  std::string names;
  for (const auto& a : arrays) names += (names.empty() ? "" : ", ") + a.get("Name");
  if (!array.empty()) {
    for (const auto& a : arrays)
      if (a.get("Name") == array) chosen = &a;
    if (!chosen) throw Error("--var " + array + ": " + path + " has no such point data array (it has " + names + ")");
  }
  for (const auto& a : arrays)
    if (!chosen && !scalars.empty() && a.get("Name") == scalars) chosen = &a;
  if (!chosen && arrays.size() == 1) chosen = &arrays[0];
  if (!chosen)
    throw Error(where + ": several point data arrays (" + names + ") and none marked Scalars: name one with --var");
  return *chosen;
}

// The appended data's encoding, and where the chosen array starts after the
// '_' mark (layout.base64, count_size, array_start). Returns the offset.
std::uint64_t locate_vti_array(std::string_view text, const Tag& chosen, const VtiFile& file, const std::string& where,
                               const std::string& array_where, VtiLayout& layout) {
  const auto appended = find_tag(text, "AppendedData", 0, text.size(), where);
  if (!appended) throw Error(where + ": no <AppendedData> element");
  layout.base64 = appended->get("encoding") == "base64";
  if (!layout.base64 && appended->get("encoding") != "raw")
    throw Error(where + ": appended data encoded as " + appended->get("encoding", "?") + ", neither raw nor base64");
  if (layout.base64 && layout.compressor.empty())
    throw Error(where +
                ": uncompressed base64 appended data; volseg reads raw appended data, or compressed data "
                "(raw or base64): save with Encode Appended Data off (ParaView) or EncodeAppendedDataOff()");
  const std::size_t start = vti_header_length(text);
  if (start == 0) throw Error(where + ": the appended data has no '_' mark");
  char* end = nullptr;
  const std::string offset_text = chosen.get("offset");
  const unsigned long long offset = std::strtoull(offset_text.c_str(), &end, 10);
  if (offset_text.empty() || *end != '\0' || offset > (1ull << 62))
    throw Error(array_where + ": offset \"" + offset_text + "\" is not a byte offset");
  layout.count_size = file.header_type == "UInt32" ? 4 : 8;
  layout.array_start = static_cast<std::uint64_t>(start) + offset;
  return offset;
}

// The byte count before the first raw array, where the text holds it, must be
// what the extent and type need.
void check_vti_byte_count(std::string_view text, const VtiLayout& layout, std::uint64_t offset,
                          const std::string& array_where) {
  const VolumeInfo& info = layout.header.info;
  const std::size_t start = layout.array_start - offset, count_size = layout.count_size;
  if (!layout.compressor.empty() || offset != 0 || text.size() < start + count_size) return;
  std::uint64_t count = 0;
  std::array<unsigned char, 8> raw{};
  std::memcpy(raw.data(), text.data() + start, count_size);
  const bool swap = (info.byte_order == ByteOrder::little) != (native_byte_order() == ByteOrder::little);
  if (swap) std::reverse(raw.begin(), raw.begin() + static_cast<std::ptrdiff_t>(count_size));
  if (count_size == 4) {
    std::uint32_t c32 = 0;
    std::memcpy(&c32, raw.data(), 4);
    count = c32;
  } else {
    std::memcpy(&count, raw.data(), 8);
  }
  if (count != info.bytes())
    throw Error(array_where + ": its data say " + std::to_string(count) + " bytes, the extent and type need " +
                std::to_string(info.bytes()));
}

}  // namespace

VtiLayout parse_vti_layout(std::string_view text, const std::string& path, const std::string& array,
                           const DataFileSize& file_size) {
  const std::string where = path + ": VTK image data";
  const VtiFile file = read_vti_file(text, path, where);
  VtiLayout layout;
  layout.compressor = file.compressor;
  const VtiGrid grid = read_vti_grid(text, file.tag.end, where);
  const Tag chosen = choose_vti_array(text, grid, path, array, where);
  const std::string name = chosen.get("Name");
  const std::string array_where = where + ", array " + name;
  const auto dtype = dtype_of(chosen.get("type"));
  if (!dtype) throw Error(array_where + ": type " + chosen.get("type", "?") + " is not one volseg reads");
  if (chosen.get("NumberOfComponents", "1") != "1")
    throw Error(array_where + ": " + chosen.get("NumberOfComponents") + " components; volseg reads scalars");
  if (chosen.get("format") != "appended")
    throw Error(array_where + ": format " + chosen.get("format", "?") +
                "; volseg reads appended raw data (inline arrays cannot be mapped): save with Data Mode Appended");
  const std::uint64_t offset = locate_vti_array(text, chosen, file, where, array_where, layout);

  NrrdHeader& header = layout.header;
  VolumeInfo& info = header.info;
  info.dims = grid.dims;
  info.dtype = *dtype;
  info.byte_order = file.order == "LittleEndian" ? ByteOrder::little : ByteOrder::big;
  info.variable = name;
  for (int a = 0; a < 3; ++a) {
    const auto i = static_cast<std::size_t>(a);
    info.spacing[i] = grid.spacing[i] == 0 ? 1.0 : std::fabs(grid.spacing[i]);
    info.origin[i] = grid.origin[i] + grid.extent[2 * i] * grid.spacing[i];
  }
  if (grid.direction != std::array<double, 9>{1, 0, 0, 0, 1, 0, 0, 0, 1}) {
    info.attributes["vti_direction"] = grid.tag.get("Direction");
  }
  header.data_path = path;
  header.byte_skip = layout.array_start + layout.count_size;
  // Raw values lie in the file as the extent says; compressed ones are the
  // vti backend's to check, block by block, against the file.
  std::string sizes = "WholeExtent \"";
  sizes.append(grid.tag.get("WholeExtent")).append("\" of ").append(dtype_name(info.dtype));
  check_data_claim(header, path, array_where + ": ", sizes,
                   "byte " + std::to_string(header.byte_skip) + " (offset " + chosen.get("offset") + ")",
                   layout.packed() ? DataFileSize{} : file_size);
  check_vti_byte_count(text, layout, offset, array_where);
  return layout;
}

NrrdHeader parse_vti(std::string_view text, const std::string& path, const std::string& array,
                     const DataFileSize& file_size) {
  VtiLayout layout = parse_vti_layout(text, path, array, file_size);
  if (layout.packed())
    throw Error(path + ": VTK image data: its arrays are " +
                std::string(layout.compressor.empty() ? "" : "compressed (" + layout.compressor + ")") +
                (layout.base64 ? (layout.compressor.empty() ? "base64-encoded" : " and base64-encoded") : "") +
                ": the vti backend reads them (each rank inflates its own blocks), the raw backends cannot map them");
  return layout.header;
}

VtiFrame format_vti(const VolumeInfo& info) {
  static const std::map<DType, const char*> names{
      {DType::i8, "Int8"},     {DType::u8, "UInt8"},   {DType::i16, "Int16"}, {DType::u16, "UInt16"},
      {DType::i32, "Int32"},   {DType::u32, "UInt32"}, {DType::i64, "Int64"}, {DType::u64, "UInt64"},
      {DType::f32, "Float32"}, {DType::f64, "Float64"}};
  auto number = [](double v) {
    char text[32];
    std::snprintf(text, sizeof text, "%.17g", v);
    return std::string(text);
  };
  const std::string extent = "0 " + std::to_string(info.dims[2] - 1) + " 0 " + std::to_string(info.dims[1] - 1) +
                             " 0 " + std::to_string(info.dims[0] - 1);
  const auto direction = info.attributes.find("vti_direction");
  std::string name = info.variable.empty() ? "values" : info.variable;
  for (char& c : name)
    if (c == '"' || c == '<' || c == '>' || c == '&') c = '_';
  const bool little = info.byte_order == ByteOrder::little;
  std::string h = "<?xml version=\"1.0\"?>\n";
  h += std::string("<VTKFile type=\"ImageData\" version=\"1.0\" byte_order=\"") +
       (little ? "LittleEndian" : "BigEndian") + "\" header_type=\"UInt64\">\n";
  h += "  <ImageData WholeExtent=\"" + extent + "\" Origin=\"" + number(info.origin[0]) + " " + number(info.origin[1]) +
       " " + number(info.origin[2]) + "\" Spacing=\"" + number(info.spacing[0]) + " " + number(info.spacing[1]) + " " +
       number(info.spacing[2]) + "\" Direction=\"" +
       (direction == info.attributes.end() ? std::string("1 0 0 0 1 0 0 0 1") : direction->second) + "\">\n";
  h += "    <Piece Extent=\"" + extent + "\">\n";
  h += "      <PointData Scalars=\"" + name + "\">\n";
  h += std::string("        <DataArray type=\"") + names.at(info.dtype) + "\" Name=\"" + name +
       "\" format=\"appended\" offset=\"0\"/>\n";
  h += "      </PointData>\n      <CellData>\n      </CellData>\n    </Piece>\n  </ImageData>\n";
  h += "  <AppendedData encoding=\"raw\">\n   _";
  std::array<unsigned char, 8> count{};
  const std::uint64_t bytes = info.bytes();
  std::memcpy(count.data(), &bytes, 8);
  if ((native_byte_order() == ByteOrder::little) != little) std::reverse(count.begin(), count.end());
  h.append(reinterpret_cast<const char*>(count.data()), 8);
  return {h, "\n  </AppendedData>\n</VTKFile>\n"};
}

}  // namespace volseg::io
