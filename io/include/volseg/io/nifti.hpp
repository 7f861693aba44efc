// SPDX-License-Identifier: MIT
// NIfTI-1 and NIfTI-2 headers (nifti.nimh.nih.gov/nifti-1, NIfTI-2's
// nifti2.h), the format of MRI and microscopy volumes that 3D Slicer,
// ITK-SNAP, FSLeyes and nibabel read. A ".nii" file is its header and then
// the raw voxels at vox_offset, so every raw backend reads it (mmap, posix,
// MPI-IO, two-phase, ranged) as it reads a NRRD header's data file; a ".hdr"
// header names its ".img" data file beside it.
//
// What volseg takes from the header:
//   dim[1..3]        x, y, z (x fastest: volseg's [z][y][x] file order); a
//                    4D image with one volume (dim[4] == 1) is 3D
//   datatype         u8/i8/u16/i16/u32/i32/u64/i64/f32/f64; others refused
//   byte order       from sizeof_hdr (348 or 540, either way round)
//   pixdim[1..3]     spacing
//   sform or qform   origin: the sform's translation column when
//                    sform_code > 0, else the qform's qoffset when
//                    qform_code > 0; the whole affine (which may rotate and
//                    flip the axes) is kept as the attribute nifti_affine
//   scl_slope/inter  value = stored * scl_slope + scl_inter when scl_slope
//                    is neither 0 nor NaN, as NetCDF's scale_factor and
//                    add_offset (thresholds are in those units)
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "volseg/io/nrrd.hpp"

namespace volseg::io {

// Bytes a NIfTI header needs to be recognized and parsed (NIfTI-2's size).
constexpr std::size_t kNiftiHeaderBytes = 540;

// Whether bytes (the start of a file) are a NIfTI-1 or NIfTI-2 header.
bool is_nifti(std::string_view bytes);

// Parses the header at the start of bytes (at least the header's size);
// path names the file in messages and is the data file of a ".nii" (for a
// ".hdr", its ".img"). Throws volseg::Error, naming the path and the field,
// on anything malformed or unsupported, and on dim[1..3] and vox_offset
// that reach past the data file (file_size, where given) or any file.
NrrdHeader parse_nifti(std::string_view bytes, const std::string& path, const DataFileSize& file_size = {});

// The voxels of a NIfTI file volseg writes start here, after the 348-byte
// header and the 4 bytes that say no extension follows.
constexpr std::uint64_t kNiftiDataOffset = 352;

// A NIfTI-1 header (kNiftiDataOffset bytes) for a ".nii" output of info, in
// info's byte order: the affine of a NIfTI input (the attribute
// nifti_affine) as both sform and qform, so the output lies where the
// input does in 3D Slicer, ITK-SNAP and FSLeyes; else spacing and origin.
// Masks and labels (attributes flag_values, numbering) are label images
// (intent NIFTI_INTENT_LABEL). Throws volseg::Error for a dims that does
// not fit NIfTI-1 (32767 a side).
std::string format_nifti(const VolumeInfo& info);

}  // namespace volseg::io
