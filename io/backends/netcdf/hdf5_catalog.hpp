// SPDX-License-Identifier: MIT
// What HDF5 itself says of a NetCDF-4 or HDF5 file's datasets, for the
// netcdf4 backend (netcdf4.cpp): where an uncompressed dataset's bytes lie
// (its fast path), and which chunks no dataset can have. netCDF-C does not
// tell either: it shows a dimension that HDF5 lets grow to a finite
// maximum as fixed at its length, and hides the layout.
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
  std::uint64_t values = 0;  // in the whole dataset (all its steps)
  std::size_t size = 0;      // bytes a value
  bool is_float = false, is_signed = false, big_endian = false;
};

// Each by the dataset's path from the root ("group/name").
struct Hdf5Catalog {
  // Every contiguous integer or float dataset.
  std::map<std::string, Contiguous> contiguous;
  // Every chunked dataset whose chunk is longer than the dataset along a
  // dimension that cannot grow (HDF5 refuses to create one; a damaged or
  // forged file has it): what is wrong, "chunk 64 x 64 x 64 is larger than
  // the dataset (4 x 4 x 4 at most) along a fixed dimension".
  std::map<std::string, std::string> impossible_chunks;
};

// One walk of the file's datasets, on one rank, before netCDF opens it;
// empty when HDF5 cannot open the file on its own.
Hdf5Catalog hdf5_catalog(const std::string& path);

// Flat text for a broadcast, and back.
std::string serialize(const Hdf5Catalog& catalog);
Hdf5Catalog deserialize(const std::string& text);

}  // namespace volseg::io::netcdf
