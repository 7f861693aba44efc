// SPDX-License-Identifier: MIT
// VTK XML image data (".vti", vtkXMLImageDataWriter, ParaView's "Save
// Data"): an XML header and then, after "<AppendedData encoding="raw">" and
// its "_", each array as a byte count (UInt32 or UInt64, header_type) and
// its raw values. Such a file is a header plus raw voxels at an offset, so
// every raw backend reads it (as NIfTI, volseg/io/nifti.hpp).
//
// What volseg takes from the header:
//   WholeExtent      x0 x1 y0 y1 z0 z1 (one Piece over all of it); dims are
//                    the point counts (x fastest: volseg's [z][y][x] order)
//   Spacing, Origin  spacing; origin = Origin + x0 * Spacing (per axis)
//   Direction        kept as the attribute vti_direction when not identity
//   byte_order       LittleEndian or BigEndian
//   the array        among the PointData arrays: the one named by
//                    PointData's Scalars, else the only one; one component
//                    of Int8 .. UInt64, Float32, Float64; format="appended"
// zlib-compressed appended arrays (ParaView's default), raw or base64, are
// described by parse_vti_layout and read by the vti backend
// (io/backends/vti.cpp). Refused, each with one line: inline (ascii,
// binary) arrays, uncompressed base64, LZ4 or LZMA blocks, several pieces,
// cell data only, vectors.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "volseg/io/nrrd.hpp"

namespace volseg::io {

// Whether the start of a file is a VTK XML file (an XML declaration or
// a <VTKFile> element first).
bool is_vti(std::string_view start);

// The header's length: up to and including the "_" that starts the
// appended data; 0 while text does not reach it yet.
std::size_t vti_header_length(std::string_view text);

// Parses a header (text up to the appended data's "_"); path names the
// file, which is its own data file. Throws volseg::Error naming the path
// and what is refused.
// array: the point data array to read (--var); empty: the one marked
// Scalars, or the only one. file_size, where given: the file's size, which
// raw values must lie within (check_data_claim).
NrrdHeader parse_vti(std::string_view text, const std::string& path, const std::string& array = {},
                     const DataFileSize& file_size = {});

// Where and how the chosen array lies: the header (dims, type, byte order,
// spacing, origin) with byte_skip where its raw values start when it is
// neither compressed nor encoded; otherwise array_start is where its block
// header starts (VTK's compressed layout: block count, block size, last
// block size, each block's compressed size, all count_size-byte integers;
// base64: that header and then the blocks, each base64-encoded on its own).
struct VtiLayout {
  NrrdHeader header;
  std::string compressor;  // empty, or vtkZLibDataCompressor, vtkLZ4DataCompressor, vtkLZMADataCompressor
  bool base64 = false;
  std::size_t count_size = 4;     // UInt32 or UInt64 header integers
  std::uint64_t array_start = 0;  // the array's first byte after the '_' mark
  bool packed() const { return base64 || !compressor.empty(); }
};
// As parse_vti, but compressed (zlib) and base64-encoded arrays are
// described rather than refused.
VtiLayout parse_vti_layout(std::string_view text, const std::string& path, const std::string& array = {},
                           const DataFileSize& file_size = {});
// Whether a header's arrays are compressed or base64-encoded (the vti
// backend's), whichever array is read; false where it does not parse.
bool vti_packed(std::string_view text);

// What surrounds a ".vti" output's voxels: the header up to and including
// the array's byte count (UInt64), and the closing tags after them. One
// point data array named by info.variable ("values" when empty), marked as
// the Scalars, raw appended, in info's byte order; spacing, origin and a
// kept vti_direction place it, so ParaView opens it where the input lies.
struct VtiFrame {
  std::string header, trailer;
};
VtiFrame format_vti(const VolumeInfo& info);

}  // namespace volseg::io
