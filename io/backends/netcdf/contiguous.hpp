// SPDX-License-Identifier: MIT
// The netcdf4 backend's fast path for uncompressed data (netcdf4.cpp).
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>

namespace volseg::io::netcdf {

// A contiguous dataset's bytes lie at one offset of the file: a rank reads
// its bricks there by pread, as the raw backends read a NRRD volume's,
// rather than through netCDF-C and HDF5's hyperslab machinery (which cost
// a quarter more on an uncompressed dataset; docs/results/formats_bench.md).
struct Contiguous {
  std::uint64_t offset = 0;
  std::uint64_t values = 0;   // in the whole dataset (all its steps)
  std::size_t size = 0;       // bytes a value
  bool is_float = false, is_signed = false, big_endian = false;
};

// Every contiguous integer or float dataset of a file, by its path from the
// root; empty when HDF5 cannot open the file on its own. Run on one rank,
// before netCDF opens the file.
std::map<std::string, Contiguous> contiguous_datasets(const std::string& path);

// Flat text for a broadcast, and back.
std::string serialize(const std::map<std::string, Contiguous>& places);
std::map<std::string, Contiguous> deserialize(const std::string& text);

}  // namespace volseg::io::netcdf
