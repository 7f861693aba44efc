// SPDX-License-Identifier: MIT
// NRRD headers (teem.sourceforge.net/nrrd/format.html), the metadata of raw
// volumes: a detached ".nhdr" names the data file. Attached ".nrrd" files with
// raw encoding are read too. Key/value pairs ("key:=value") carry attributes;
// "_FillValue" and "valid_range" have the meaning they have in NetCDF.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include "volseg/io/types.hpp"

namespace volseg::io {

struct NrrdHeader {
  VolumeInfo info;
  std::string data_path;        // absolute or relative to the working directory
  std::uint64_t byte_skip = 0;  // offset of the first value in the data file
};

// The size in bytes of a header's data file where the caller can tell (rank
// 0 of a reader stats it), nullopt where it cannot. A parser checks what
// the header claims against it before anything is sized from the claim.
using DataFileSize = std::function<std::optional<std::uint64_t>(const std::string& data_path)>;

// "30 x 20 x 10 of u16": a header's sizes, fastest axis first as headers
// list them, and type; "9.9e27": the bytes they need (exact below 10^15).
std::string sizes_text(const VolumeInfo& info);
std::string claimed_bytes_text(const VolumeInfo& info);

// Throws volseg::Error when the voxels that header (of the file path)
// claims, from its byte_skip on, reach past its data file (file_size of
// header.data_path, where known) or past the largest file (2^63 bytes),
// which would overflow the data's size. where: the start of the message
// ("x.nii: NIfTI-1 header: "); sizes and skip: the header's own fields
// ("dim[1..3] 2 x 3 x 4 of u8", "vox_offset 352"). The message: "WHERE
// SIZES need N bytes from SKIP, more than the file holds (400 bytes)".
void check_data_claim(const NrrdHeader& header, const std::string& path, const std::string& where,
                      const std::string& sizes, const std::string& skip, const DataFileSize& file_size = {});

// Parses header text; header_path names the file in messages and anchors a
// relative "data file". Throws volseg::Error on anything malformed or
// unsupported, and on sizes that the data file (file_size, where given)
// cannot hold.
NrrdHeader parse_nrrd(const std::string& text, const std::string& header_path, const DataFileSize& file_size = {});
// Header text for a detached header whose data file is data_file_name
// (relative to the header's folder).
std::string format_nrrd(const VolumeInfo& info, const std::string& data_file_name);

// "out.nhdr" -> "out.raw": the data file volseg writes beside a header; a
// NIfTI output, "out.nii", is its own data file.
std::string data_path_for_header(const std::string& header_path);

}  // namespace volseg::io
