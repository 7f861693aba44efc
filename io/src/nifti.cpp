// SPDX-License-Identifier: MIT
#include "volseg/io/nifti.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <optional>

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
    case 2:
      return DType::u8;
    case 4:
      return DType::i16;
    case 8:
      return DType::i32;
    case 16:
      return DType::f32;
    case 64:
      return DType::f64;
    case 256:
      return DType::i8;
    case 512:
      return DType::u16;
    case 768:
      return DType::u32;
    case 1024:
      return DType::i64;
    case 1280:
      return DType::u64;
  }
  return std::nullopt;
}

std::string type_name(int code) {
  switch (code) {
    case 1:
      return "binary (1 bit)";
    case 32:
      return "complex64";
    case 128:
      return "RGB24";
    case 1536:
      return "float128";
    case 1792:
      return "complex128";
    case 2048:
      return "complex256";
    case 2304:
      return "RGBA32";
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
      for (int c = 0; c < 4; ++c)
        a[r][c] = f.real(l, l.srow + static_cast<std::size_t>(r) * (l.version == 1 ? 16u : 32u), c);
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

int code_of(DType dtype) {
  switch (dtype) {
    case DType::u8:
      return 2;
    case DType::i16:
      return 4;
    case DType::i32:
      return 8;
    case DType::f32:
      return 16;
    case DType::f64:
      return 64;
    case DType::i8:
      return 256;
    case DType::u16:
      return 512;
    case DType::u32:
      return 768;
    case DType::i64:
      return 1024;
    case DType::u64:
      return 1280;
  }
  return 0;
}

using Affine = std::array<std::array<double, 4>, 3>;

// The attribute nifti_affine ("a b c d; e f g h; i j k l"), if it is one.
std::optional<Affine> affine_attribute(const VolumeInfo& info) {
  const auto it = info.attributes.find("nifti_affine");
  if (it == info.attributes.end()) return std::nullopt;
  Affine a{};
  const char* text = it->second.c_str();
  for (auto& row : a)
    for (double& v : row) {
      while (*text == ' ' || *text == ';') ++text;
      char* end = nullptr;
      v = std::strtod(text, &end);
      if (end == text || !std::isfinite(v)) return std::nullopt;
      text = end;
    }
  return a;
}

// The qform of an affine (nifti1_io.c's nifti_mat44_to_quatern, without its
// polar decomposition: the columns are normalized, not orthogonalized):
// quaternion b, c, d, offsets, the column lengths and qfac.
struct Quatern {
  double b = 0, c = 0, d = 0, qfac = 1;
  std::array<double, 3> step{1, 1, 1};
};

Quatern quatern_of(const Affine& m) {
  Quatern q;
  double r[3][3];
  for (int k = 0; k < 3; ++k) {
    const double n = std::sqrt(m[0][k] * m[0][k] + m[1][k] * m[1][k] + m[2][k] * m[2][k]);
    q.step[k] = n > 0 ? n : 1;
    for (int i = 0; i < 3; ++i) r[i][k] = n > 0 ? m[i][k] / n : (i == k ? 1 : 0);
  }
  const double det = r[0][0] * (r[1][1] * r[2][2] - r[1][2] * r[2][1]) -
                     r[0][1] * (r[1][0] * r[2][2] - r[1][2] * r[2][0]) +
                     r[0][2] * (r[1][0] * r[2][1] - r[1][1] * r[2][0]);
  if (det < 0) {
    q.qfac = -1;
    for (auto& row : r) row[2] = -row[2];
  }
  double a = r[0][0] + r[1][1] + r[2][2] + 1, b, c, d;
  if (a > 0.5) {
    a = 0.5 * std::sqrt(a);
    b = 0.25 * (r[2][1] - r[1][2]) / a;
    c = 0.25 * (r[0][2] - r[2][0]) / a;
    d = 0.25 * (r[1][0] - r[0][1]) / a;
  } else {
    const double xd = 1 + r[0][0] - (r[1][1] + r[2][2]), yd = 1 + r[1][1] - (r[0][0] + r[2][2]),
                 zd = 1 + r[2][2] - (r[0][0] + r[1][1]);
    if (xd > 1) {
      b = 0.5 * std::sqrt(xd);
      c = 0.25 * (r[0][1] + r[1][0]) / b;
      d = 0.25 * (r[0][2] + r[2][0]) / b;
      a = 0.25 * (r[2][1] - r[1][2]) / b;
    } else if (yd > 1) {
      c = 0.5 * std::sqrt(yd);
      b = 0.25 * (r[0][1] + r[1][0]) / c;
      d = 0.25 * (r[1][2] + r[2][1]) / c;
      a = 0.25 * (r[0][2] - r[2][0]) / c;
    } else {
      d = 0.5 * std::sqrt(zd);
      b = 0.25 * (r[0][2] + r[2][0]) / d;
      c = 0.25 * (r[1][2] + r[2][1]) / d;
      a = 0.25 * (r[1][0] - r[0][1]) / d;
    }
    if (a < 0) b = -b, c = -c, d = -d;
  }
  q.b = b, q.c = c, q.d = d;
  return q;
}

// Writes values into a header in the chosen byte order.
class Writer {
 public:
  Writer(std::string& bytes, bool swap) : bytes_(bytes), swap_(swap) {}
  template <class T>
  void put(std::size_t offset, T value) {
    std::array<unsigned char, sizeof(T)> raw;
    std::memcpy(raw.data(), &value, sizeof(T));
    if (swap_) std::reverse(raw.begin(), raw.end());
    std::memcpy(bytes_.data() + offset, raw.data(), sizeof(T));
  }
  void text(std::size_t offset, std::size_t size, const std::string& value) {
    std::memcpy(bytes_.data() + offset, value.data(), std::min(value.size(), size - 1));
  }

 private:
  std::string& bytes_;
  bool swap_;
};

}  // namespace

std::string format_nifti(const VolumeInfo& info) {
  for (std::int64_t n : info.dims)
    if (n > 32767) throw Error("NIfTI-1 holds at most 32767 voxels a side; this volume has " + std::to_string(n));
  const Layout& l = kNifti1;
  std::string bytes(kNiftiDataOffset, '\0');
  Writer w(bytes, info.byte_order != native_byte_order());
  w.put<std::int32_t>(0, static_cast<std::int32_t>(l.size));
  w.put<char>(38, 'r');  // "regular", as nibabel writes it
  const std::int16_t dims[8] = {3,
                                static_cast<std::int16_t>(info.dims[2]),
                                static_cast<std::int16_t>(info.dims[1]),
                                static_cast<std::int16_t>(info.dims[0]),
                                1,
                                1,
                                1,
                                1};
  for (int i = 0; i < 8; ++i) w.put<std::int16_t>(l.dim + 2 * static_cast<std::size_t>(i), dims[i]);
  w.put<std::int16_t>(l.datatype, static_cast<std::int16_t>(code_of(info.dtype)));
  w.put<std::int16_t>(72, static_cast<std::int16_t>(8 * dtype_size(info.dtype)));  // bitpix
  Affine a{};
  if (const auto given = affine_attribute(info)) {
    a = *given;
  } else {
    for (int r = 0; r < 3; ++r) a[r][r] = info.spacing[r], a[r][3] = info.origin[r];
  }
  const Quatern q = quatern_of(a);
  w.put<float>(l.pixdim, static_cast<float>(q.qfac));
  for (int i = 0; i < 3; ++i)
    w.put<float>(l.pixdim + 4 * static_cast<std::size_t>(i + 1), static_cast<float>(q.step[i]));
  w.put<float>(l.vox_offset, static_cast<float>(kNiftiDataOffset));
  w.put<float>(l.scl_slope, 0.0f);  // no scaling: values as stored
  const bool mask = info.attributes.count("flag_values") > 0, labels = info.attributes.count("numbering") > 0;
  if (mask || labels) w.put<std::int16_t>(68, 1002);           // intent_code NIFTI_INTENT_LABEL
  if (mask) w.put<float>(124, 1.0f), w.put<float>(128, 0.0f);  // cal_max, cal_min: the display range
  const auto units = info.attributes.find("units_xyz");
  const std::uint8_t unit = units == info.attributes.end() ? 0
                            : units->second == "m"         ? 1
                            : units->second == "mm"        ? 2
                            : units->second == "um"        ? 3
                                                           : 0;
  w.put<std::uint8_t>(l.xyzt_units, unit);
  if (const auto name = info.attributes.find("long_name"); name != info.attributes.end())
    w.text(l.descrip, 80, name->second);
  w.put<std::int16_t>(l.qform_code, 1);  // NIFTI_XFORM_SCANNER_ANAT
  w.put<std::int16_t>(l.sform_code, 1);
  w.put<float>(l.quatern, static_cast<float>(q.b));
  w.put<float>(l.quatern + 4, static_cast<float>(q.c));
  w.put<float>(l.quatern + 8, static_cast<float>(q.d));
  for (int r = 0; r < 3; ++r) {
    w.put<float>(l.quatern + 12 + 4 * static_cast<std::size_t>(r), static_cast<float>(a[r][3]));
    for (int c = 0; c < 4; ++c)
      w.put<float>(l.srow + 16 * static_cast<std::size_t>(r) + 4 * static_cast<std::size_t>(c),
                   static_cast<float>(a[r][c]));
  }
  w.text(l.magic, 4, "n+1");
  return bytes;
}

bool is_nifti(std::string_view bytes) { return kind_of(bytes).has_value(); }

NrrdHeader parse_nifti(std::string_view bytes, const std::string& path, const DataFileSize& file_size) {
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
  const bool file_little = (native_byte_order() == ByteOrder::little) != kind->swap;
  info.byte_order = file_little ? ByteOrder::little : ByteOrder::big;

  const double offset =
      l.version == 1 ? f.get<float>(l.vox_offset) : static_cast<double>(f.get<std::int64_t>(l.vox_offset));
  if (!std::isfinite(offset) || offset < 0 || offset != std::floor(offset) || offset > 9.0e18)
    throw Error(where + "vox_offset " + number(offset) + " is not a byte offset");
  if (kind->attached && offset < static_cast<double>(l.size))
    throw Error(where + "vox_offset " + number(offset) + " is inside the " + std::to_string(l.size) + "-byte header");
  header.byte_skip = static_cast<std::uint64_t>(offset);
  if (kind->attached) {
    header.data_path = path;
  } else {
    std::filesystem::path data(path);
    const std::string ext = data.extension().string();
    data.replace_extension(ext == ".HDR" ? ".IMG" : ".img");
    header.data_path = data.string();
  }
  check_data_claim(header, path, where, "dim[1..3] " + sizes_text(info), "vox_offset " + number(offset), file_size);

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
