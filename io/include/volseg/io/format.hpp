// SPDX-License-Identifier: MIT
// File formats, told apart by their first bytes, and the backend that reads
// or writes each by default.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "volseg/io/comm.hpp"
#include "volseg/io/hints.hpp"
#include "volseg/io/types.hpp"

namespace volseg::io {

// nifti_gz: a gzip-compressed NIfTI file (.nii.gz), read by the gzip backend;
// vti_compressed: VTK image data with compressed appended arrays (zlib, LZ4, LZMA), read by the vti
// backend (raw appended .vti is raw).
// tiff: a TIFF or BigTIFF file, or a folder of TIFF slices, read by the tiff
// backend (TIFF outputs are raw: volseg writes them uncompressed).
// hdf5: a plain HDF5 file volseg writes (--format hdf5, .hdf5) by the hdf5
// backend; HDF5 files are read as netcdf4 (parallel netCDF-C reads any).
// precomputed: a Neuroglancer precomputed volume (a folder), written only.
enum class FileFormat {
  raw,
  cdf1,
  cdf2,
  cdf5,
  netcdf4,
  zarr,
  ome_zarr,
  nifti_gz,
  vti_compressed,
  tiff,
  hdf5,
  precomputed
};

// An output's extension; `any_case`: .TIF as .tif (TIFF's custom), where
// .NC is no NetCDF file.
struct Extension {
  std::string suffix;
  bool any_case = false;
};

// What volseg knows of a format, one row of the table in format.cpp: every
// question "is this Zarr, CDF, resumable, ..." asks it (format_traits)
// rather than comparing formats or extensions where it is asked.
struct FormatTraits {
  FileFormat format = FileFormat::raw;
  std::vector<std::string> names{};     // the first is format_name's; parse_format takes each
  std::vector<Extension> extensions{};  // an output named so is written in this format (output_format)
  std::string reader{};                 // its own reading backend (reading_backend)
  std::string writer{};                 // and writing backend, with its hints (writing_backend)
  std::vector<std::string> writer_hints{};
  bool written = true;               // false: read only (PnetCDF writes no CDF-1)
  bool netcdf = false;               // classic or NetCDF-4: records packing (scale_factor, add_offset)
  bool classic = false;              // NetCDF classic (CDF-1/2/5): a header and byte offsets
  bool zarr = false;                 // a Zarr store: a folder, a file per chunk
  bool chunked = false;              // written chunk by chunk: a job's bricks follow its chunks
  bool follows_input_chunks = true;  // a job's bricks may follow the input's chunks
  bool resumable = false;            // a job's output kept partial with a journal (--resume)
  bool appendable = false;           // one output holds several steps along time (--time A:B)
  bool keeps_markers = false;        // records _FillValue, missing_value, valid_range
  bool keeps_coordinates = false;    // records coordinate variables
  bool multiscale = false;           // written with coarser levels (--levels) and labels' object properties
};

// Every format, in the order names are listed.
const std::vector<FormatTraits>& format_table();
const FormatTraits& format_traits(FileFormat format);

std::string format_name(FileFormat format);  // "raw", "cdf2", ...
// Any name in the table; throws volseg::Error listing them all.
FileFormat parse_format(const std::string& name);
// The format an output path's extension names (.nc: CDF-5), if any.
std::optional<FileFormat> format_of_extension(const std::string& path);

// The format an output is written in, from the format named (`--format`;
// it wins when not empty) or else from the path's extension, the one rule
// for every command that writes a volume:
//   .nhdr        raw (a NRRD header; the data go to NAME.raw)
//   .nc4, .h5    netcdf4
//   .hdf5        hdf5 (a plain HDF5 file: one dataset, no netCDF dimensions)
//   .nii.gz      nifti-gz (NIfTI-1, each brick a gzip member)
//   .ome.zarr    ome-zarr (an OME-Zarr 0.4 image group around a Zarr v2 array)
//   .zarr        zarr (a Zarr v2 array: a directory)
//   .precomputed precomputed (Neuroglancer's multiscale volume folder)
//   .nc          NetCDF classic, or the NetCDF `input`'s kind: CDF-1 and
//                CDF-2 inputs give CDF-2 (CDF-5 with `wide_types`: CDF-2 has
//                no unsigned nor 64-bit integers), CDF-5 and NetCDF-4 inputs
//                their own; without a NetCDF input, CDF-5
// Any other extension throws volseg::Error naming `option`, the path and the
// extensions above.
FileFormat output_format(const std::string& path, const std::string& named = {},
                         std::optional<FileFormat> input = std::nullopt, bool wide_types = false,
                         const std::string& option = "--out");

// Collective: rank 0 reads the magic bytes ("NRRD", "CDF\1|\2|\5",
// "\x89HDF"). Throws volseg::Error for a missing file or an unknown format.
FileFormat detect_format(const Comm& comm, const std::string& path);

// The format's own reader. For a NetCDF or HDF5 input it is what
// `--backend auto` gives; the whole rule is io::choose_backend
// (auto_backend.hpp).
std::string reading_backend(FileFormat format);

// The backend and writer hints that write a format; a raw output keeps a raw
// input's backend.
struct Writing {
  std::string backend;
  std::vector<std::string> hints;
};
Writing writing_backend(FileFormat format, const std::string& input_backend);

// What `volseg info` prints about an opened volume (and the GUI's info
// panel shows): dims, type, size, spacing, fill and valid range, packing and
// attributes, one per line.
std::string describe(const std::string& path, FileFormat format, const std::string& backend, const VolumeInfo& info);

}  // namespace volseg::io
