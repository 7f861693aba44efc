// SPDX-License-Identifier: MIT
#include "volseg/io/nifti.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <limits>

#include "volseg/io/byteswap.hpp"
#include "volseg/io/error.hpp"

namespace volseg::io {
namespace {

// The fields volseg reads, at their byte offsets in each version's header.
struct Layout {
  std::size_t size, magic, datatype, dim, pixdim, vox_offset, scl_slope, scl_inter, descrip, qform_code, sform_code,
      quatern, srow, xyzt_units;
  int version;
};
constexpr Layout kNifti1{348, 344, 70, 40, 76, 108, 112, 116, 148, 252, 254, 256, 280, 123, 1};
constexpr Layout kNifti2{540, 4, 12, 16, 104, 168, 176, 184, 240, 344, 348, 352, 400, 500, 2};

// Reads fixed-size values from the header in its byte order.
class Fields {
 public:
  Fields(std::string_view bytes, bool swap) : bytes_(bytes), swap_(swap) {}

  template <class T>
  T get(std::size_t offset) const {
    std::array<unsigned char, sizeof(T)> raw;
    std::memcpy(raw.data(), bytes_.data() + offset, sizeof(T));
    if (swap_) std::reverse(raw.begin(), raw.end());
    T value;
    std::memcpy(&value, raw.data(), sizeof(T));
    return value;
  }
  // Version 1 stores floats and 16-bit integers where version 2 has doubles
  // and 64-bit integers.
  double real(const Layout& l, std::size_t offset, int index = 0) const {
    return l.version == 1 ? get<float>(offset + 4 * index) : get<double>(offset + 8 * index);
  }
  std::int64_t integer(const Layout& l, std::size_t offset, int index = 0) const {
    return l.version == 1 ? get<std::int16_t>(offset + 2 * index) : get<std::int64_t>(offset + 8 * index);
  }
  std::string text(std::size_t offset, std::size_t size) const {
    std::string s(bytes_.data() + offset, size);
    s.resize(std::strlen(s.c_str()));
    for (char& c : s)
      if (static_cast<unsigned char>(c) < 32 || static_cast<unsigned char>(c) > 126) c = '?';
    while (!s.empty() && s.back() == ' ') s.pop_back();
    return s;
  }

 private:
  std::string_view bytes_;
  bool swap_;
};

// Which version, and whether its byte order is the other one; nullopt when
// the bytes are no NIfTI header.
struct Kind {
  const Layout* layout;
  bool swap;
  bool attached;  // ".nii" (n+1, n+2): the voxels follow in the same file
};

// The magic is "n+1\0" (NIfTI-1) or "n+2\0" and 4 more bytes (NIfTI-2) in
// a ".nii", whose voxels follow in the same file; "ni1\0" or "ni2\0" in a
// ".hdr" whose voxels are in the ".img" beside it.
std::optional<Kind> kind_of(std::string_view bytes) {
  if (bytes.size() < kNifti1.size) return std::nullopt;
  std::uint32_t size = 0;
  std::memcpy(&size, bytes.data(), 4);
  for (const Layout* l : {&kNifti1, &kNifti2}) {
    const bool same = size == l->size, swapped = byteswap(size) == l->size;
    if ((!same && !swapped) || bytes.size() < l->size) continue;
    const char* m = bytes.data() + l->magic;
    if (m[0] != 'n' || (m[1] != '+' && m[1] != 'i') || m[2] != static_cast<char>('0' + l->version) || m[3] != '\0')
      continue;
    return Kind{l, !same, m[1] == '+'};
  }
  return std::nullopt;
}

std::optional<DType> dtype_of(int code) {
  switch (code) {
    case 2: return DType::u8;
    case 4: return DType::i16;
    case 8: return DType::i32;
    case 16: return DType::f32;
    case 64: return DType::f64;
    case 256: return DType::i8;
    case 512: return DType::u16;
    case 768: return DType::u32;
    case 1024: return DType::i64;
    case 1280: return DType::u64;
  }
  return std::nullopt;
}

std::string type_name(int code) {
  switch (code) {
    case 1: return "binary (1 bit)";
    case 32: return "complex64";
    case 128: return "RGB24";
    case 1536: return "float128";
    case 1792: return "complex128";
    case 2048: return "complex256";
    case 2304: return "RGBA32";
  }
  return "code " + std::to_string(code);
}

std::string number(double value) {
  char text[32];
  std::snprintf(text, sizeof text, "%.9g", value);
  return text;
}

// The voxel-to-world affine (3 rows of 4), as nibabel's get_best_affine:
// the sform when its code is set, else the qform, else the pixdims alone.
std::array<std::array<double, 4>, 3> affine_of(const Fields& f, const Layout& l, const std::array<double, 3>& step,
                                               double qfac, std::string& method) {
  std::array<std::array<double, 4>, 3> a{};
  const auto sform = l.version == 1 ? f.get<std::int16_t>(l.sform_code) : f.get<std::int32_t>(l.sform_code);
  const auto qform = l.version == 1 ? f.get<std::int16_t>(l.qform_code) : f.get<std::int32_t>(l.qform_code);
  if (sform > 0) {
    method = "sform";
    for (int r = 0; r < 3; ++r)
      for (int c = 0; c < 4; ++c) a[r][c] = f.real(l, l.srow + static_cast<std::size_t>(r) * (l.version == 1 ? 16u : 32u), c);
    return a;
  }
  if (qform > 0) {
    method = "qform";
    const double b = f.real(l, l.quatern, 0), c = f.real(l, l.quatern, 1), d = f.real(l, l.quatern, 2);
    const double a2 = std::max(0.0, 1.0 - (b * b + c * c + d * d)), q = std::sqrt(a2);
    const double rot[3][3] = {{q * q + b * b - c * c - d * d, 2 * (b * c - q * d), 2 * (b * d + q * c)},
                              {2 * (b * c + q * d), q * q + c * c - b * b - d * d, 2 * (c * d - q * b)},
                              {2 * (b * d - q * c), 2 * (c * d + q * b), q * q + d * d - c * c - b * b}};
    const double scale[3] = {step[0], step[1], step[2] * qfac};
    for (int r = 0; r < 3; ++r) {
      for (int k = 0; k < 3; ++k) a[r][k] = rot[r][k] * scale[k];
      a[r][3] = f.real(l, l.quatern, 3 + r);
    }
    return a;
  }
  method = "pixdim";
  for (int r = 0; r < 3; ++r) a[r][r] = step[r];
  return a;
}

}  // namespace

bool is_nifti(std::string_view bytes) { return kind_of(bytes).has_value(); }

NrrdHeader parse_nifti(std::string_view bytes, const std::string& path) {
  const auto kind = kind_of(bytes);
  if (!kind) throw Error(path + ": not a NIfTI-1 or NIfTI-2 header");
  const Layout& l = *kind->layout;
  const Fields f(bytes, kind->swap);
  const std::string where = path + ": NIfTI-" + std::to_string(l.version) + " header: ";

  NrrdHeader header;
  VolumeInfo& info = header.info;
  const std::int64_t rank = f.integer(l, l.dim, 0);
  if (rank < 1 || rank > 7) throw Error(where + "dim[0] " + std::to_string(rank) + " is not 1 to 7");
  if (rank < 3) throw Error(where + "a " + std::to_string(rank) + "D image; volseg reads 3D volumes");
  std::int64_t n[8] = {};
  for (int i = 1; i <= rank; ++i) {
    n[i] = f.integer(l, l.dim, i);
    if (n[i] < 1) throw Error(where + "dim[" + std::to_string(i) + "] " + std::to_string(n[i]) + " is not positive");
  }
  for (int i = 4; i <= rank; ++i)
    if (n[i] != 1)
      throw Error(where + "a " + std::to_string(rank) + "D image of " + std::to_string(n[i]) + " along dim[" +
                  std::to_string(i) + "]; volseg reads one 3D volume (split it first, e.g. fslsplit)");
  info.dims = {n[3], n[2], n[1]};

  const int code = f.get<std::int16_t>(l.datatype);
  const auto dtype = dtype_of(code);
  if (!dtype)
    throw Error(where + "datatype " + type_name(code) +
                " is not one volseg reads (integers of 8 to 64 bits, float32, float64)");
  info.dtype = *dtype;
  if (!fits_in_a_file(info.dims, info.dtype)) throw Error(where + "dimensions too large for one file");
  const bool file_little = (native_byte_order() == ByteOrder::little) != kind->swap;
  info.byte_order = file_little ? ByteOrder::little : ByteOrder::big;

  const double offset =
      l.version == 1 ? f.get<float>(l.vox_offset) : static_cast<double>(f.get<std::int64_t>(l.vox_offset));
  if (!std::isfinite(offset) || offset < 0 || offset != std::floor(offset) || offset > 9.0e18)
    throw Error(where + "vox_offset " + number(offset) + " is not a byte offset");
  if (kind->attached && offset < static_cast<double>(l.size))
    throw Error(where + "vox_offset " + number(offset) + " is inside the " + std::to_string(l.size) + "-byte header");
  header.byte_skip = static_cast<std::uint64_t>(offset);
  if (header.byte_skip > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()) - info.bytes())
    throw Error(where + "vox_offset and dimensions reach past the largest file");
  if (kind->attached) {
    header.data_path = path;
  } else {
    std::filesystem::path data(path);
    const std::string ext = data.extension().string();
    data.replace_extension(ext == ".HDR" ? ".IMG" : ".img");
    header.data_path = data.string();
  }

  std::array<double, 3> step{};
  for (int i = 0; i < 3; ++i) {
    const double p = f.real(l, l.pixdim, i + 1);
    if (!std::isfinite(p)) throw Error(where + "pixdim[" + std::to_string(i + 1) + "] is not finite");
    step[i] = p == 0 ? 1.0 : std::fabs(p);
  }
  const double qfac = f.real(l, l.pixdim, 0) < 0 ? -1.0 : 1.0;
  info.spacing = step;
  std::string method;
  const auto a = affine_of(f, l, step, qfac, method);
  for (const auto& row : a)
    for (double v : row)
      if (!std::isfinite(v)) throw Error(where + "the " + method + " affine is not finite");
  info.origin = {a[0][3], a[1][3], a[2][3]};
  std::string affine;
  for (const auto& row : a) {
    if (!affine.empty()) affine += "; ";
    affine += number(row[0]) + " " + number(row[1]) + " " + number(row[2]) + " " + number(row[3]);
  }
  info.attributes["nifti_affine"] = affine;
  info.attributes["nifti_affine_from"] = method;
  info.attributes["nifti_version"] = std::to_string(l.version);

  const double slope = f.real(l, l.scl_slope), inter = f.real(l, l.scl_inter);
  if (std::isfinite(slope) && slope != 0 && !(slope == 1 && inter == 0)) {
    if (!std::isfinite(inter)) throw Error(where + "scl_inter is not finite");
    info.scale_factor = slope;
    info.add_offset = inter;
  }
  const int units = (l.version == 1 ? f.get<std::uint8_t>(l.xyzt_units) : f.get<std::int32_t>(l.xyzt_units)) & 7;
  if (units == 1) info.attributes["units_xyz"] = "m";
  if (units == 2) info.attributes["units_xyz"] = "mm";
  if (units == 3) info.attributes["units_xyz"] = "um";
  if (const std::string text = f.text(l.descrip, 80); !text.empty()) info.attributes["description"] = text;
  return header;
}

}  // namespace volseg::io
