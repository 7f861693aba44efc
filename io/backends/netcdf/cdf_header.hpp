// SPDX-License-Identifier: MIT
// A guard run before PnetCDF opens a NetCDF classic file. PnetCDF reads a
// header past the end of its file as zeros, so a damaged count (an
// attribute of 2^31 doubles in a file of 800 bytes) made it allocate and
// fill gigabytes before refusing the file.
#pragma once

#include <string>

namespace volseg::io::netcdf {

// Walks the CDF-1, CDF-2 or CDF-5 header of path and throws volseg::Error
// when a list, a name or an attribute's values end past the end of the
// file. Returns quietly at what it does not check (a file it cannot open, an
// unknown tag or type, an over-long name): PnetCDF refuses those itself.
void refuse_header_past_end(const std::string& path);

}  // namespace volseg::io::netcdf
