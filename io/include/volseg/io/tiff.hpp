// SPDX-License-Identifier: MIT
// TIFF volumes, the format of microscopy and CT scans: a multi-page file
// (classic TIFF or BigTIFF, one page a z-plane) or a folder of one-page
// slices (volseg's own naming: natural order, "slice_9" before "slice_10").
// libtiff reads the pages, so every layout and compression it decodes
// works: strips or tiles; none, LZW, deflate, PackBits, ...
//
// What volseg takes from the pages:
//   width, length   x and y; every page alike (else refused, naming both)
//   samples         one a pixel (RGB and multi-channel pages are refused)
//   BitsPerSample   8/16/32/64 with SampleFormat uint, int or IEEE float
//                   (32/64): u8 ... u64, i8 ... i64, f32, f64
//   pages           one a z-plane; reduced-resolution pages (thumbnails,
//                   NewSubfileType bit 0) are skipped
//   ImageJ          a first page whose ImageDescription starts "ImageJ=":
//                   spacing= is z's spacing, 1/XResolution and
//                   1/YResolution x's and y's (also without ImageJ when
//                   ResolutionUnit is none); a hyperstack of frames= is a
//                   4D volume whose step --time names; channels= > 1 is
//                   refused
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "volseg/io/types.hpp"

namespace volseg::io {

// Whether bytes (the start of a file) are a TIFF or BigTIFF header.
bool is_tiff(std::string_view bytes);

// Whether a folder holds TIFF slices (files ending .tif or .tiff, any case).
bool is_tiff_folder(const std::string& path);

// A TIFF volume's planes: where each z-plane's page is.
struct TiffStack {
  std::vector<std::string> files;          // the file, or the folder's slices in order
  std::vector<std::uint64_t> directories;  // plane z: its page's IFD offset in files[folder ? z : 0]
  bool folder = false;
  // ImageJ's stacks past 4 GiB: one directory, and this many planes one
  // after another from its strip (0: a directory a plane); first_plane is
  // where the --time frame starts among them.
  std::int64_t imagej_planes = 0, first_plane = 0;
  // An ImageJ hyperstack's frames (1: one 3D stack) and the one read.
  std::int64_t frames = 1, frame = 0;

  std::int64_t planes() const;
  const std::string& file_of(std::int64_t z) const { return files[folder ? static_cast<std::size_t>(z) : 0]; }
  std::uint64_t directory_of(std::int64_t z) const {
    return directories[imagej_planes > 0 ? 0 : static_cast<std::size_t>(z)];
  }
  // Flat text for a broadcast, and back.
  std::string serialize() const;
  static TiffStack deserialize(const std::string& text);
};

// Reads every page's directory on this rank (libtiff) and checks that the
// pages make one volume. path: a TIFF file, or a folder of one-page slices
// (glob: the slices' file name pattern, fnmatch; default *.tif and *.tiff).
// time: the frame of an ImageJ hyperstack (required when it has several).
// Throws volseg::Error naming the file and page on anything it cannot use.
TiffStack scan_tiff(const std::string& path, const std::string& glob, std::optional<std::int64_t> time);

// What a volume's first page says (dims from the stack's plane count): type,
// byte order, spacing, and attributes (tiff_compression, tiff_layout, and
// ImageJ's unit).
VolumeInfo tiff_info(const TiffStack& stack);

// The header of an uncompressed TIFF output of info: a page per z-plane
// (one strip each), every page's directory before the voxels, which start
// at the header's size and lie in volseg's [z][y][x] order, so the raw
// writers write them as they write a NIfTI file's. BigTIFF when the file
// passes 4 GiB; an ImageJ description (spacing, slices) otherwise, so
// Fiji opens the mask with its spacing. In info's byte order.
std::string format_tiff(const VolumeInfo& info);

// Whether path names a TIFF output (.tif or .tiff).
bool tiff_extension(const std::string& path);

}  // namespace volseg::io
