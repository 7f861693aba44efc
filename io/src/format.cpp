// SPDX-License-Identifier: MIT
#include "volseg/io/format.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "raw/raw_volume.hpp"
#include "volseg/io/error.hpp"
#include "volseg/io/nifti.hpp"
#include "volseg/io/registry.hpp"
#include "volseg/io/tiff.hpp"
#include "volseg/io/vti.hpp"

namespace volseg::io {

const std::vector<FormatTraits>& format_table() {
  // Raw outputs: a NRRD header with NAME.raw, NIfTI-1, VTK image data and
  // TIFF are all written uncompressed by the raw backends. CDF-5 has ".nc"
  // (output_format gives a NetCDF input's own kind). An HDF5 file is read as
  // NetCDF-4: parallel netCDF-C reads any.
  static const std::vector<FormatTraits> table = [] {
    std::vector<FormatTraits> rows(12);
    rows[0] = {.format = FileFormat::raw,
               .names = {"raw"},
               .extensions = {{".nhdr"}, {".nii"}, {".vti"}, {".tif", true}, {".tiff", true}},
               .reader = "mmap-advise",
               .writer = "mmap-advise",
               .resumable = true};
    rows[1] = {.format = FileFormat::cdf1,
               .names = {"cdf1"},
               .reader = "pnetcdf",
               .writer = "pnetcdf",
               .writer_hints = {"format=cdf2"},
               .written = false,
               .netcdf = true,
               .classic = true,
               .resumable = true,
               .keeps_markers = true,
               .keeps_coordinates = true};
    rows[2] = {.format = FileFormat::cdf2,
               .names = {"cdf2"},
               .reader = "pnetcdf",
               .writer = "pnetcdf",
               .writer_hints = {"format=cdf2"},
               .netcdf = true,
               .classic = true,
               .resumable = true,
               .appendable = true,
               .keeps_markers = true,
               .keeps_coordinates = true};
    rows[3] = {.format = FileFormat::cdf5,
               .names = {"cdf5"},
               .extensions = {{".nc"}},
               .reader = "pnetcdf",
               .writer = "pnetcdf",
               .writer_hints = {"format=cdf5"},
               .netcdf = true,
               .classic = true,
               .resumable = true,
               .appendable = true,
               .keeps_markers = true,
               .keeps_coordinates = true};
    rows[4] = {.format = FileFormat::netcdf4,
               .names = {"netcdf4"},
               .extensions = {{".nc4"}, {".h5"}},
               .reader = "netcdf4",
               .writer = "netcdf4",
               .netcdf = true,
               .appendable = true,
               .keeps_markers = true,
               .keeps_coordinates = true};
    rows[5] = {.format = FileFormat::hdf5,
               .names = {"hdf5"},
               .extensions = {{".hdf5"}},
               .reader = "netcdf4",
               .writer = "hdf5"};
    rows[6] = {.format = FileFormat::zarr,
               .names = {"zarr"},
               .extensions = {{".zarr"}},
               .reader = "zarr",
               .writer = "zarr",
               .zarr = true,
               .chunked = true,
               .resumable = true,
               .appendable = true,
               .keeps_markers = true};
    rows[7] = {.format = FileFormat::ome_zarr,
               .names = {"ome-zarr"},
               .extensions = {{".ome.zarr"}},
               .reader = "zarr",
               .writer = "zarr",
               .writer_hints = {"ome=1"},
               .zarr = true,
               .chunked = true,
               .resumable = true,
               .appendable = true,
               .keeps_markers = true,
               .multiscale = true};
    // Each brick a gzip member, placed when the job ends.
    rows[8] = {.format = FileFormat::nifti_gz,
               .names = {"nifti-gz"},
               .extensions = {{".nii.gz"}},
               .reader = "gzip",
               .writer = "gzip",
               .follows_input_chunks = false};
    rows[9] = {.format = FileFormat::vti_compressed,
               .names = {"vti-compressed"},
               .reader = "vti",
               .writer = "vti",
               .resumable = true};
    rows[10] = {.format = FileFormat::tiff, .names = {"tiff"}, .reader = "tiff", .writer = "tiff", .resumable = true};
    rows[11] = {.format = FileFormat::precomputed,
                .names = {"precomputed"},
                .extensions = {{".precomputed"}},
                .reader = "precomputed",
                .writer = "precomputed",
                .chunked = true,
                .multiscale = true};
    return rows;
  }();
  return table;
}

const FormatTraits& format_traits(FileFormat format) {
  for (const FormatTraits& row : format_table())
    if (row.format == format) return row;
  throw Error("format " + std::to_string(static_cast<int>(format)) + " is not in the format table");
}

std::string format_name(FileFormat format) { return format_traits(format).names.front(); }

FileFormat parse_format(const std::string& name) {
  std::string known;
  for (const FormatTraits& row : format_table())
    for (const std::string& row_name : row.names) {
      if (row_name == name) return row.format;
      known += (known.empty() ? "" : ", ") + row_name;
    }
  throw Error("unknown format '" + name + "' (known: " + known + ")");
}

namespace {

bool ends_with(const std::string& name, const Extension& extension) {
  // The whole name is no extension: ".zarr" is a hidden file, not a store.
  if (name.size() <= extension.suffix.size()) return false;
  std::string tail = name.substr(name.size() - extension.suffix.size());
  if (extension.any_case)
    std::transform(tail.begin(), tail.end(), tail.begin(), [](unsigned char c) { return std::tolower(c); });
  return tail == extension.suffix;
}

}  // namespace

std::optional<FileFormat> format_of_extension(const std::string& path) {
  const std::string name = std::filesystem::path(path).filename().string();
  // The longest suffix wins: .ome.zarr over .zarr.
  std::optional<FileFormat> found;
  std::size_t longest = 0;
  for (const FormatTraits& row : format_table())
    for (const Extension& extension : row.extensions)
      if (extension.suffix.size() > longest && ends_with(name, extension)) {
        found = row.format;
        longest = extension.suffix.size();
      }
  return found;
}

FileFormat output_format(const std::string& path, const std::string& named, std::optional<FileFormat> input,
                         bool wide_types, const std::string& option) {
  if (!named.empty()) {
    const FileFormat format = parse_format(named);
    if (!format_traits(format).written)
      throw Error("--format " + named + ": volseg reads " + named +
                  " but does not write it (PnetCDF writes cdf2 "
                  "and cdf5)");
    return format;
  }
  const std::optional<FileFormat> format = format_of_extension(path);
  if (format && format_traits(*format).classic) {
    // ".nc" names every NetCDF kind: a NetCDF input's own is what a user
    // who keeps the extension expects; PnetCDF writes CDF-2 and CDF-5 only.
    if (input == FileFormat::cdf1 || input == FileFormat::cdf2) return wide_types ? FileFormat::cdf5 : FileFormat::cdf2;
    if (input == FileFormat::cdf5 || input == FileFormat::netcdf4) return *input;
    return FileFormat::cdf5;
  }
  if (format) return *format;
  const std::string extension = std::filesystem::path(path).extension().string();
  throw Error(option + " " + path + ": cannot tell the format from the extension '" + extension +
              "' (.nhdr: raw, data in NAME.raw; .nii or .nii.gz: NIfTI-1; .vti: VTK image data; .tif: TIFF; .nc: "
              "NetCDF classic; .nc4 or .h5: NetCDF-4; .hdf5: plain HDF5; .zarr: Zarr v2; "
              ".ome.zarr: OME-Zarr; .precomputed: Neuroglancer precomputed; or name one with --format "
              "raw|cdf2|cdf5|netcdf4|hdf5|zarr|ome-zarr|precomputed)");
}

static FileFormat detect_on_this_rank(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw_errno("open", path);
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    const int saved = errno;
    ::close(fd);
    throw_errno("stat", path, saved);
  }
  if (S_ISDIR(st.st_mode)) {
    ::close(fd);
    // A Zarr v2 array is a directory that holds its .zarray; an OME-Zarr
    // image, a group whose .zattrs has "multiscales" (the zarr backend reads
    // its first dataset, the full resolution).
    if (::access((path + "/.zarray").c_str(), F_OK) == 0) return FileFormat::zarr;
    if (::access((path + "/.zgroup").c_str(), F_OK) == 0) {
      std::ifstream attributes(path + "/.zattrs");
      std::ostringstream text;
      text << attributes.rdbuf();
      if (text.str().find("\"multiscales\"") != std::string::npos) return FileFormat::ome_zarr;
    }
    // A Neuroglancer precomputed volume: an info of that type.
    if (::access((path + "/info").c_str(), F_OK) == 0) {
      std::ifstream info(path + "/info");
      std::ostringstream text;
      text << info.rdbuf();
      if (text.str().find("neuroglancer_multiscale_volume") != std::string::npos) return FileFormat::precomputed;
    }
    // A folder of TIFF slices (a z-plane each), the tiff backend's.
    if (is_tiff_folder(path)) return FileFormat::tiff;
    if (::access((path + "/.zgroup").c_str(), F_OK) == 0)
      throw Error(path +
                  ": a Zarr group, not an array, and not an OME-Zarr image (no multiscales): name one of its "
                  "arrays (" +
                  path + "/NAME)");
    throw Error("open " + path +
                ": is a directory (and neither a Zarr v2 array, no .zarray, nor a folder of TIFF "
                "slices, no *.tif)");
  }
  // read() may return fewer bytes than asked before the end of the file.
  unsigned char magic[kNiftiHeaderBytes] = {};
  ssize_t got = 0;
  int saved = 0;
  while (got < static_cast<ssize_t>(sizeof magic)) {
    const ssize_t n = ::read(fd, magic + got, sizeof magic - static_cast<std::size_t>(got));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) saved = errno, got = -1;
    if (n <= 0) break;
    got += n;
  }
  if (::close(fd) != 0) throw_errno("close", path);
  if (got < 0) throw_errno("read", path, saved);
  if (got >= 4 && std::memcmp(magic, "NRRD", 4) == 0) return FileFormat::raw;
  // A NIfTI file is a header and raw voxels: the raw backends read it.
  if (got > 0 && is_nifti({reinterpret_cast<const char*>(magic), static_cast<std::size_t>(got)}))
    return FileFormat::raw;
  // So is an image data file with raw appended data; compressed ones are the
  // vti backend's (a header the parser refuses is the raw reader's to report).
  if (got > 0 && is_vti({reinterpret_cast<const char*>(magic), static_cast<std::size_t>(got)})) {
    return vti_packed(raw::read_header_text(path, 1 << 20)) ? FileFormat::vti_compressed : FileFormat::raw;
  }
  if (got > 0 && is_tiff({reinterpret_cast<const char*>(magic), static_cast<std::size_t>(got)}))
    return FileFormat::tiff;
  if (got >= 4 && std::memcmp(magic, "CDF", 3) == 0) {
    if (magic[3] == 1) return FileFormat::cdf1;
    if (magic[3] == 2) return FileFormat::cdf2;
    if (magic[3] == 5) return FileFormat::cdf5;
  }
  if (got >= 8 && std::memcmp(magic, "\x89HDF\r\n\x1a\n", 8) == 0) return FileFormat::netcdf4;
  // gzip: the gzip backend reads compressed NIfTI and refuses anything else by name.
  if (got >= 2 && magic[0] == 0x1f && magic[1] == 0x8b) return FileFormat::nifti_gz;
  throw Error(path +
              ": not a volume volseg reads (neither a NRRD header, a NIfTI-1/2 file, VTK image data, "
              "TIFF, a NetCDF classic file, HDF5/NetCDF-4 nor a Zarr v2 array)");
}

FileFormat detect_format(const Comm& comm, const std::string& path) {
  std::string name;
  collectively(comm, [&] {
    if (comm.rank() == 0) name = format_name(detect_on_this_rank(path));
  });
  name = comm.broadcast(name);
  return parse_format(name);
}

std::string reading_backend(FileFormat format) { return format_traits(format).reader; }

Writing writing_backend(FileFormat format, const std::string& input_backend) {
  const FormatTraits& traits = format_traits(format);
  // A raw output keeps a raw input's backend; twophase writes CDF through
  // its byte offsets too.
  if (format == FileFormat::raw) {
    const Backend& backend = builtin_registry().get(input_backend);
    return {backend.raw_layout ? input_backend : traits.writer, traits.writer_hints};
  }
  if (traits.classic && input_backend == "twophase") return {"twophase", traits.writer_hints};
  return {traits.writer, traits.writer_hints};
}

std::string describe(const std::string& path, FileFormat format, const std::string& backend, const VolumeInfo& info) {
  std::string text;
  char line[512];
  auto add = [&](int written) {
    if (written > 0) text.append(line, std::min<std::size_t>(static_cast<std::size_t>(written), sizeof line - 1));
  };
  add(std::snprintf(line, sizeof line, "%s (%s, read by %s)\n", path.c_str(), format_name(format).c_str(),
                    backend.c_str()));
  if (!info.variable.empty()) add(std::snprintf(line, sizeof line, "  variable:      %s\n", info.variable.c_str()));
  add(std::snprintf(line, sizeof line, "  dims (z,y,x):  %lld %lld %lld\n", static_cast<long long>(info.dims[0]),
                    static_cast<long long>(info.dims[1]), static_cast<long long>(info.dims[2])));
  if (info.step) {  // a series: the step described, of how many, and its time
    add(std::snprintf(line, sizeof line, "  time:          step %lld of %lld (--time 0..%lld)",
                      static_cast<long long>(*info.step), static_cast<long long>(info.steps),
                      static_cast<long long>(info.steps - 1)));
    if (info.step_time)
      add(std::snprintf(line, sizeof line, ", %g%s%s", *info.step_time, info.time_units.empty() ? "" : " ",
                        info.time_units.c_str()));
    text += "\n";
  }
  add(std::snprintf(line, sizeof line, "  dtype:         %s, %s-endian\n", std::string(dtype_name(info.dtype)).c_str(),
                    std::string(byte_order_name(info.byte_order)).c_str()));
  add(std::snprintf(line, sizeof line, "  size:          %llu bytes (%.3f GB)\n",
                    static_cast<unsigned long long>(info.bytes()), static_cast<double>(info.bytes()) / 1e9));
  add(std::snprintf(line, sizeof line, "  spacing (x,y,z): %g %g %g\n", info.spacing[0], info.spacing[1],
                    info.spacing[2]));
  if (info.origin != std::array<double, 3>{0, 0, 0})
    add(std::snprintf(line, sizeof line, "  origin (x,y,z):  %g %g %g\n", info.origin[0], info.origin[1],
                      info.origin[2]));
  for (int a = 2; a >= 0; --a) {  // z, y, x as the dims
    if (!info.coordinates[a]) continue;
    const Coordinate& c = *info.coordinates[a];
    const char* axis = a == 0 ? "x" : a == 1 ? "y" : "z";
    std::string how = c.uniform() ? "uniform, step " : "uneven";
    if (c.uniform()) {
      char step[64];
      std::snprintf(step, sizeof step, "%g", c.step());
      how += step;
    }
    if (c.down) how += ", positive down";
    add(std::snprintf(line, sizeof line, "  %s coordinate:  %s = %g .. %g%s%s (%zu values, %s)\n", axis, c.name.c_str(),
                      c.values.front(), c.values.back(), c.units.empty() ? "" : " ", c.units.c_str(), c.values.size(),
                      how.c_str()));
  }
  if (info.fill_value) add(std::snprintf(line, sizeof line, "  _FillValue:    %.21Lg\n", *info.fill_value));
  if (info.missing_value) add(std::snprintf(line, sizeof line, "  missing_value: %.21Lg\n", *info.missing_value));
  if (info.valid_range)
    add(std::snprintf(line, sizeof line, "  valid_range:   %.17g %.17g\n", (*info.valid_range)[0],
                      (*info.valid_range)[1]));
  if (info.scale_factor || info.add_offset)
    add(std::snprintf(line, sizeof line, "  packed:        value = stored * %.17g + %.17g\n",
                      info.scale_factor.value_or(1.0), info.add_offset.value_or(0.0)));
  for (const auto& [key, value] : info.attributes) text += "  " + key + ": " + value + "\n";
  return text;
}

}  // namespace volseg::io
