// SPDX-License-Identifier: MIT
// The TIFF header volseg writes before a .tif output's voxels
// (format_tiff), read back by libtiff and by volseg's own scan: classic for
// small volumes, BigTIFF past 4 GiB (a sparse file: only the header is
// written), either byte order, ImageJ's spacing.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <tiffio.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "volseg/io/tiff.hpp"

namespace volseg::io {
namespace {

class TiffHeader : public ::testing::Test {
 protected:
  void SetUp() override {
    path_ =
        (std::filesystem::temp_directory_path() / ("volseg-tiff-test-" + std::to_string(::getpid()) + ".tif")).string();
  }
  void TearDown() override { std::filesystem::remove(path_); }

  // The header, then the voxels (values, or a hole up to the file's size).
  void write(const VolumeInfo& info, const std::vector<unsigned char>& voxels) {
    const std::string header = format_tiff(info);
    const int fd = ::open(path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    ASSERT_GE(fd, 0);
    ASSERT_EQ(::write(fd, header.data(), header.size()), static_cast<ssize_t>(header.size()));
    if (!voxels.empty()) ASSERT_EQ(::write(fd, voxels.data(), voxels.size()), static_cast<ssize_t>(voxels.size()));
    ASSERT_EQ(::ftruncate(fd, static_cast<off_t>(header.size() + info.bytes())), 0);
    ASSERT_EQ(::close(fd), 0);
  }

  std::string path_;
};

TEST_F(TiffHeader, ClassicPagesLibtiffAndVolsegReadBack) {
  VolumeInfo info;
  info.dims = {3, 4, 5};
  info.dtype = DType::u16;
  info.spacing = {0.5, 0.25, 2.0};
  info.attributes["units_xyz"] = "um";
  std::vector<unsigned char> voxels(info.bytes());
  for (std::size_t i = 0; i < voxels.size(); ++i) voxels[i] = static_cast<unsigned char>(i * 7);
  write(info, voxels);
  const std::string header = format_tiff(info);
  EXPECT_EQ(header.substr(0, 4), std::string("II*\0", 4));
  EXPECT_EQ(header.size() % 16, 0u);

  TIFF* tif = TIFFOpen(path_.c_str(), "r");
  ASSERT_NE(tif, nullptr);
  EXPECT_FALSE(TIFFIsBigTIFF(tif));
  EXPECT_EQ(TIFFNumberOfDirectories(tif), 3);
  std::vector<unsigned char> plane(static_cast<std::size_t>(TIFFStripSize(tif)));
  for (int z = 0; z < 3; ++z) {
    ASSERT_TRUE(TIFFSetDirectory(tif, static_cast<tdir_t>(z)));
    std::uint32_t width = 0, height = 0;
    std::uint16_t bits = 0;
    TIFFGetField(tif, TIFFTAG_IMAGEWIDTH, &width);
    TIFFGetField(tif, TIFFTAG_IMAGELENGTH, &height);
    TIFFGetField(tif, TIFFTAG_BITSPERSAMPLE, &bits);
    EXPECT_EQ(width, 5u);
    EXPECT_EQ(height, 4u);
    EXPECT_EQ(bits, 16);
    ASSERT_EQ(TIFFReadEncodedStrip(tif, 0, plane.data(), static_cast<tmsize_t>(plane.size())), 40);
    EXPECT_EQ(0, std::memcmp(plane.data(), voxels.data() + z * 40, 40)) << "plane " << z;
  }
  TIFFClose(tif);

  const TiffStack stack = scan_tiff(path_, "", std::nullopt);
  const VolumeInfo back = tiff_info(stack);
  EXPECT_EQ(back.dims, info.dims);
  EXPECT_EQ(back.dtype, DType::u16);
  EXPECT_NEAR(back.spacing[0], 0.5, 1e-6);
  EXPECT_NEAR(back.spacing[1], 0.25, 1e-6);
  EXPECT_DOUBLE_EQ(back.spacing[2], 2.0);
  EXPECT_EQ(back.attributes.at("units_xyz"), "um");
}

TEST_F(TiffHeader, BigTiffPastFourGibibytesAndBigEndian) {
  VolumeInfo info;
  info.dims = {2, 40000, 30000};  // 4.8 GB of u16: BigTIFF
  info.dtype = DType::u16;
  info.byte_order = ByteOrder::big;
  write(info, {});
  const std::string header = format_tiff(info);
  EXPECT_EQ(header.substr(0, 4), std::string("MM\0+", 4));
  TIFF* tif = TIFFOpen(path_.c_str(), "rc");  // c: the strips as stored, not chopped into rows
  ASSERT_NE(tif, nullptr);
  EXPECT_TRUE(TIFFIsBigTIFF(tif));
  EXPECT_TRUE(TIFFIsBigEndian(tif));
  EXPECT_EQ(TIFFNumberOfDirectories(tif), 2);
  ASSERT_TRUE(TIFFSetDirectory(tif, 1));
  // The second plane starts one plane after the first, past 2^32.
  EXPECT_EQ(TIFFGetStrileOffset(tif, 0), header.size() + std::uint64_t{40000} * 30000 * 2);
  EXPECT_EQ(TIFFGetStrileByteCount(tif, 0), std::uint64_t{40000} * 30000 * 2);
  TIFFClose(tif);
  EXPECT_EQ(tiff_info(scan_tiff(path_, "", std::nullopt)).dims, info.dims);
}

TEST(TiffNames, MagicExtensionsAndNaturalOrder) {
  EXPECT_TRUE(is_tiff(std::string("II*\0", 4)));
  EXPECT_TRUE(is_tiff(std::string("MM\0*", 4)));
  EXPECT_TRUE(is_tiff(std::string("II+\0", 4)));
  EXPECT_FALSE(is_tiff("NRRD0004"));
  EXPECT_FALSE(is_tiff("II"));
  EXPECT_TRUE(tiff_extension("a/b.TIF"));
  EXPECT_TRUE(tiff_extension("b.tiff"));
  EXPECT_FALSE(tiff_extension("b.nii"));
}

}  // namespace
}  // namespace volseg::io
