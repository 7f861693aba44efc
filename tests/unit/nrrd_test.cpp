// SPDX-License-Identifier: MIT
#include <gtest/gtest.h>

#include "volseg/io/error.hpp"
#include "volseg/io/nrrd.hpp"

using namespace volseg::io;
using volseg::Error;

namespace {
const char* kHeader =
    "NRRD0004\n"
    "# a comment\n"
    "type: unsigned short\n"
    "dimension: 3\n"
    "sizes: 30 20 10\n"
    "spacings: 0.5 0.25 2\n"
    "endian: big\n"
    "encoding: raw\n"
    "byte skip: 16\n"
    "_FillValue:=65535\n"
    "valid_range:=1 1000\n"
    "units_note:=counts\n"
    "data file: vol.raw\n";
}

TEST(Nrrd, ParsesDetachedHeader) {
  NrrdHeader h = parse_nrrd(kHeader, "/data/dir/vol.nhdr");
  EXPECT_EQ(h.info.dims, (Index3{10, 20, 30}));  // file order z,y,x
  EXPECT_EQ(h.info.dtype, DType::u16);
  EXPECT_EQ(h.info.byte_order, ByteOrder::big);
  EXPECT_EQ(h.data_path, "/data/dir/vol.raw");
  EXPECT_EQ(h.byte_skip, 16u);
  ASSERT_TRUE(h.info.fill_value);
  EXPECT_EQ(*h.info.fill_value, 65535);
  ASSERT_TRUE(h.info.valid_range);
  EXPECT_EQ((*h.info.valid_range)[1], 1000);
  EXPECT_EQ(h.info.attributes.at("units_note"), "counts");
  EXPECT_DOUBLE_EQ(h.info.spacing[0], 0.5);
  EXPECT_DOUBLE_EQ(h.info.spacing[2], 2);
}

TEST(Nrrd, FormatRoundTrips) {
  VolumeInfo info;
  info.dims = {5, 6, 7};
  info.dtype = DType::f64;
  info.byte_order = ByteOrder::little;
  info.fill_value = -9999.5;
  info.attributes["threshold_lo"] = "0.25";
  NrrdHeader h = parse_nrrd(format_nrrd(info, "x.raw"), "out/x.nhdr");
  EXPECT_EQ(h.info.dims, info.dims);
  EXPECT_EQ(h.info.dtype, info.dtype);
  EXPECT_EQ(*h.info.fill_value, -9999.5);
  EXPECT_EQ(h.info.attributes.at("threshold_lo"), "0.25");
  EXPECT_EQ(h.data_path, "out/x.raw");
}

TEST(Nrrd, AttachedDataStartsAfterBlankLine) {
  std::string text = "NRRD0004\ntype: uint8\ndimension: 3\nsizes: 2 2 2\nencoding: raw\n\n";
  NrrdHeader h = parse_nrrd(text, "a.nrrd");
  EXPECT_EQ(h.data_path, "a.nrrd");
  EXPECT_EQ(h.byte_skip, text.size());
}

TEST(Nrrd, RefusesWhatItCannotRead) {
  auto with = [](const std::string& line) {
    return "NRRD0004\ntype: float\ndimension: 3\nsizes: 2 2 2\nendian: little\nencoding: raw\ndata file: d.raw\n" +
           line + "\n";
  };
  EXPECT_THROW(parse_nrrd("P6\n", "x.nhdr"), Error);
  EXPECT_THROW(parse_nrrd("NRRD0004\ntype: block\ndimension: 3\nsizes: 2 2 2\nendian: little\ndata file: d\n", "x"),
               Error);
  EXPECT_THROW(parse_nrrd("NRRD0004\ntype: float\ndimension: 3\nendian: little\ndata file: d\n", "x"), Error);
  EXPECT_THROW(parse_nrrd("NRRD0004\ntype: float\ndimension: 3\nsizes: 2 x 2\nendian: little\ndata file: d\n", "x"),
               Error);
  EXPECT_THROW(parse_nrrd("NRRD0004\ntype: float\ndimension: 2\nsizes: 2 2\nendian: little\ndata file: d\n", "x"),
               Error);
  EXPECT_THROW(parse_nrrd("NRRD0004\ntype: float\ndimension: 3\nsizes: 2 2 2\ndata file: d\n", "x"), Error);
  EXPECT_THROW(parse_nrrd(with("encoding: gzip"), "x"), Error);
  EXPECT_THROW(parse_nrrd(with("bogus field: 1"), "x"), Error);
  EXPECT_THROW(parse_nrrd(with("no separator here"), "x"), Error);
  EXPECT_NO_THROW(parse_nrrd(with("kinds: domain domain domain"), "x"));
}

TEST(Nrrd, DataPathBesideHeader) {
  EXPECT_EQ(data_path_for_header("dir/mask.nhdr"), "dir/mask.raw");
  EXPECT_EQ(data_path_for_header("mask"), "mask.raw");
}

TEST(Nrrd, OriginAndSpaceDirections) {
  const std::string text =
      "NRRD0004\ntype: float\ndimension: 3\nsizes: 4 5 6\nspace dimension: 3\n"
      "space directions: (0.5,0,0) (0,2,0) (0,0,3)\nspace origin: (10,-20,30.5)\n"
      "endian: little\nencoding: raw\ndata file: v.raw\n";
  NrrdHeader h = parse_nrrd(text, "v.nhdr");
  EXPECT_DOUBLE_EQ(h.info.spacing[0], 0.5);
  EXPECT_DOUBLE_EQ(h.info.spacing[1], 2);
  EXPECT_DOUBLE_EQ(h.info.spacing[2], 3);
  EXPECT_DOUBLE_EQ(h.info.origin[0], 10);
  EXPECT_DOUBLE_EQ(h.info.origin[1], -20);
  EXPECT_DOUBLE_EQ(h.info.origin[2], 30.5);
  // volseg writes the origin as axis mins beside the spacings, and reads it back.
  NrrdHeader again = parse_nrrd(format_nrrd(h.info, "v.raw"), "v.nhdr");
  EXPECT_EQ(again.info.origin, h.info.origin);
  EXPECT_EQ(again.info.spacing, h.info.spacing);
  EXPECT_THROW(parse_nrrd("NRRD0004\ntype: float\ndimension: 3\nsizes: 4 5 6\nendian: little\n"
                          "encoding: raw\nspace origin: (1,2)\ndata file: v.raw\n",
                          "v.nhdr"),
               Error);
}

// Met while writing fuzz_nrrd's size invariant (UBSan stops the target on
// the first input): sizes whose product overflowed 64 bits (undefined
// behaviour), or wrapped the data's byte size around to a small number
// that a short data file would then match.
TEST(Nrrd, RefusesSizesNoFileHolds) {
  auto header = [](const std::string& type, const std::string& sizes, const std::string& skip) {
    return "NRRD0004\ntype: " + type + "\ndimension: 3\nsizes: " + sizes + "\nendian: little\nencoding: raw\n" + skip +
           "data file: d.raw\n";
  };
  try {
    parse_nrrd(header("double", "4294967296 4294967296 4294967296", ""), "x.nhdr");
    FAIL() << "sizes of 2^96 values were accepted";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()),
              "x.nhdr: sizes 4294967296 x 4294967296 x 4294967296 of f64 need 6.3e29 bytes from byte skip 0, more "
              "than a file holds (2^63 bytes)");
  }
  EXPECT_THROW(parse_nrrd(header("double", "2048 2097152 1073741824", ""), "x.nhdr"), Error);  // 2^65 bytes
  EXPECT_NO_THROW(parse_nrrd(header("uint8", "2048 2097152 1073741823", ""), "x.nhdr"));       // < 2^63 bytes
  EXPECT_THROW(parse_nrrd(header("uint8", "2048 2097152 1073741823", "byte skip: 9223372036854775807\n"), "x.nhdr"),
               Error);
}
