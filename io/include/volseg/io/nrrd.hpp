// SPDX-License-Identifier: MIT
// NRRD headers (teem.sourceforge.net/nrrd/format.html), the metadata of raw
// volumes: a detached ".nhdr" names the data file. Attached ".nrrd" files with
// raw encoding are read too. Key/value pairs ("key:=value") carry attributes;
// "_FillValue" and "valid_range" have the meaning they have in NetCDF.
#pragma once

#include <cstdint>
#include <string>

#include "volseg/io/types.hpp"

namespace volseg::io {

struct NrrdHeader {
  VolumeInfo info;
  std::string data_path;        // absolute or relative to the working directory
  std::uint64_t byte_skip = 0;  // offset of the first value in the data file
};

// Parses header text; header_path names the file in messages and anchors a
// relative "data file". Throws volseg::Error on anything malformed or unsupported.
NrrdHeader parse_nrrd(const std::string& text, const std::string& header_path);
// Header text for a detached header whose data file is data_file_name
// (relative to the header's folder).
std::string format_nrrd(const VolumeInfo& info, const std::string& data_file_name);

// "out.nhdr" -> "out.raw": the data file volseg writes beside a header; a
// NIfTI output, "out.nii", is its own data file.
std::string data_path_for_header(const std::string& header_path);

}  // namespace volseg::io
