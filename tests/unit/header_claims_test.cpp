// SPDX-License-Identifier: MIT
// What a NIfTI, NRRD or VTK image data header claims, checked against what
// its file can hold before anything is sized from it: dims and offsets
// against the data file's length, a VTI block header against the file and
// the memory budget, a .nii.gz header against its compressed bytes and a
// gzip stream that goes on past the voxels. Each refusal is one message
// naming the file and the field.
#include <gtest/gtest.h>
#include <mpi.h>
#include <zlib.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <optional>
#include <string>
#include <vector>

#include "support/temp_dir.hpp"
#include "volseg/io/comm.hpp"
#include "volseg/io/error.hpp"
#include "volseg/io/memory.hpp"
#include "volseg/io/nifti.hpp"
#include "volseg/io/nrrd.hpp"
#include "volseg/io/registry.hpp"
#include "volseg/io/vti.hpp"

using namespace volseg;
using namespace volseg::io;

namespace {

DataFileSize file_of(std::uint64_t bytes) {
  return [bytes](const std::string&) { return std::optional<std::uint64_t>(bytes); };
}

// The message of the Error that fn throws; fails the test when none.
template <class Fn>
std::string refusal(Fn&& fn) {
  try {
    fn();
  } catch (const Error& e) {
    return e.what();
  }
  ADD_FAILURE() << "nothing was refused";
  return {};
}

template <class T>
void put(std::string& bytes, std::size_t offset, T value) {
  std::memcpy(bytes.data() + offset, &value, sizeof value);
}

// A little-endian NIfTI-2 header of u8 voxels at vox_offset 544.
std::string nifti2(std::int64_t nx, std::int64_t ny, std::int64_t nz) {
  std::string bytes(544, '\0');
  put<std::int32_t>(bytes, 0, 540);
  std::memcpy(bytes.data() + 4, "n+2\0\r\n\032\n", 8);
  put<std::int16_t>(bytes, 12, 2);  // datatype u8
  const std::int64_t dim[4] = {3, nx, ny, nz};
  for (int i = 0; i < 4; ++i) put<std::int64_t>(bytes, 16 + 8 * static_cast<std::size_t>(i), dim[i]);
  put<std::int64_t>(bytes, 168, 544);  // vox_offset
  return bytes;
}

// A NIfTI-1 header of u8 voxels at vox_offset 352 (the .nii volseg writes).
std::string nifti1(std::int64_t nx, std::int64_t ny, std::int64_t nz) {
  VolumeInfo info;
  info.dims = {nz, ny, nx};
  info.dtype = DType::u8;
  return format_nifti(info);
}

}  // namespace

TEST(HeaderClaims, NiftiDimsAndVoxOffsetAgainstTheFile) {
  const std::string big = nifti2(std::int64_t{1} << 31, std::int64_t{1} << 31, std::int64_t{1} << 31);
  EXPECT_EQ(refusal([&] { parse_nifti(big, "x.nii", file_of(600)); }),
            "x.nii: NIfTI-2 header: dim[1..3] 2147483648 x 2147483648 x 2147483648 of u8 need 9.9e27 bytes from "
            "vox_offset 544, more than the file holds (600 bytes)");
  // Without the file's size: still more than any file holds.
  EXPECT_EQ(refusal([&] { parse_nifti(big, "x.nii"); }),
            "x.nii: NIfTI-2 header: dim[1..3] 2147483648 x 2147483648 x 2147483648 of u8 need 9.9e27 bytes from "
            "vox_offset 544, more than a file holds (2^63 bytes)");
  // Dims a file could hold, but not this one.
  const std::string header = nifti1(32767, 32767, 32767);
  EXPECT_EQ(refusal([&] { parse_nifti(header, "x.nii", file_of(400)); }),
            "x.nii: NIfTI-1 header: dim[1..3] 32767 x 32767 x 32767 of u8 need 35181150961663 bytes from "
            "vox_offset 352, more than the file holds (400 bytes)");
  EXPECT_NO_THROW(parse_nifti(header, "x.nii"));  // the claim alone fits a file
  // Exactly as many bytes as claimed: read; one fewer: refused.
  const std::string small = nifti1(4, 5, 6);
  EXPECT_NO_THROW(parse_nifti(small, "x.nii", file_of(352 + 120)));
  EXPECT_THROW(parse_nifti(small, "x.nii", file_of(352 + 119)), Error);
  // A .hdr: its .img holds the voxels.
  std::string pair = small;
  std::memcpy(pair.data() + 344, "ni1\0", 4);
  put<float>(pair, 108, 0.0f);
  EXPECT_EQ(refusal([&] { parse_nifti(pair, "d/x.hdr", file_of(100)); }),
            "d/x.hdr: NIfTI-1 header: dim[1..3] 4 x 5 x 6 of u8 need 120 bytes from vox_offset 0, more than its data "
            "file d/x.img holds (100 bytes)");
}

TEST(HeaderClaims, NrrdSizesAgainstTheDataFile) {
  auto header = [](const std::string& sizes, const std::string& data) {
    return "NRRD0004\ntype: uint8\ndimension: 3\nsizes: " + sizes + "\nencoding: raw\n" + data;
  };
  EXPECT_EQ(refusal([&] {
              parse_nrrd(header("1099511627776 1099511627776 1099511627776", "data file: x.raw\n"), "d/x.nhdr",
                         file_of(10));
            }),
            "d/x.nhdr: sizes 1099511627776 x 1099511627776 x 1099511627776 of u8 need 1.3e36 bytes from byte skip 0, "
            "more than its data file d/x.raw holds (10 bytes)");
  EXPECT_EQ(refusal([&] { parse_nrrd(header("1099511627776 1 1", "data file: x.raw\n"), "x.nhdr", file_of(10)); }),
            "x.nhdr: sizes 1099511627776 x 1 x 1 of u8 need 1099511627776 bytes from byte skip 0, more than its data "
            "file x.raw holds (10 bytes)");
  // Attached: the voxels follow the header in the same file.
  const std::string attached = header("4 4 4", "\n");
  EXPECT_EQ(refusal([&] { parse_nrrd(attached, "x.nrrd", file_of(attached.size() + 10)); }),
            "x.nrrd: sizes 4 x 4 x 4 of u8 need 64 bytes from byte " + std::to_string(attached.size()) +
                " of the file, more than the file holds (" + std::to_string(attached.size() + 10) + " bytes)");
  EXPECT_NO_THROW(parse_nrrd(attached, "x.nrrd", file_of(attached.size() + 64)));
}

TEST(HeaderClaims, VtiExtentAgainstTheAppendedData) {
  const std::string text =
      "<?xml version=\"1.0\"?>\n<VTKFile type=\"ImageData\" version=\"1.0\" byte_order=\"LittleEndian\" "
      "header_type=\"UInt64\">\n<ImageData WholeExtent=\"0 1048575 0 1048575 0 1048575\">\n"
      "<Piece Extent=\"0 1048575 0 1048575 0 1048575\"><PointData Scalars=\"v\">\n"
      "<DataArray type=\"UInt8\" Name=\"v\" format=\"appended\" offset=\"0\"/>\n</PointData></Piece>\n"
      "</ImageData>\n<AppendedData encoding=\"raw\">_";
  const std::uint64_t start = text.size() + 8;
  EXPECT_EQ(refusal([&] { parse_vti(text, "x.vti", {}, file_of(start + 10)); }),
            "x.vti: VTK image data, array v: WholeExtent \"0 1048575 0 1048575 0 1048575\" of u8 need 1.2e18 "
            "bytes from byte " +
                std::to_string(start) + " (offset 0), more than the file holds (" + std::to_string(start + 10) +
                " bytes)");
}

namespace {

std::string vti_header(const std::string& extent, const std::string& type) {
  return "<?xml version=\"1.0\"?>\n<VTKFile type=\"ImageData\" version=\"1.0\" byte_order=\"LittleEndian\" "
         "header_type=\"UInt64\" compressor=\"vtkZLibDataCompressor\">\n<ImageData WholeExtent=\"" +
         extent + "\">\n<Piece Extent=\"" + extent + "\"><PointData Scalars=\"v\">\n<DataArray type=\"" + type +
         "\" Name=\"v\" format=\"appended\" offset=\"0\"/>\n</PointData></Piece>\n</ImageData>\n"
         "<AppendedData encoding=\"raw\">_";
}

std::string integers(std::initializer_list<std::uint64_t> values) {
  std::string bytes;
  for (std::uint64_t v : values) bytes.append(reinterpret_cast<const char*>(&v), 8);
  return bytes;
}

std::string zlib_block(const std::string& data) {
  std::vector<unsigned char> out(compressBound(data.size()));
  uLongf size = out.size();
  compress(out.data(), &size, reinterpret_cast<const Bytef*>(data.data()), data.size());
  return std::string(reinterpret_cast<const char*>(out.data()), size);
}

std::string open_refusal(const std::string& backend, const std::string& path) {
  Comm self(MPI_COMM_SELF);
  return refusal([&] { open_reader(backend, {path, {}}, self, Hints{}); });
}

}  // namespace

TEST(HeaderClaims, VtiBlockHeaderAgainstTheFileAndTheBudget) {
  volseg::testing::SharedTempDir dir(MPI_COMM_SELF);
  const std::string path = dir / "z.vti";
  // 2^60 bytes in 2^45 blocks of 32 KiB: a block table of 256 TiB in a small file.
  const std::uint64_t blocks = std::uint64_t{1} << 45;
  std::ofstream(path, std::ios::binary) << vti_header("0 1048575 0 1048575 0 1048575", "UInt8")
                                        << integers({blocks, 32768, 32768}) << "0123456789";
  EXPECT_EQ(open_refusal("vti", path)
                .find(path + ": VTK image data, array v: a block header of 35184372088832 blocks "
                             "needs 281474976710680 bytes from byte "),
            0u);
  // One block of 2 GiB: more than the default budget of a piece.
  std::ofstream(path, std::ios::binary) << vti_header("0 2047 0 1023 0 1023", "UInt8")
                                        << integers({1, std::uint64_t{1} << 31, 0, 10}) << "0123456789";
  EXPECT_EQ(open_refusal("vti", path),
            path +
                ": zlib block of array \"v\" is 2147483648 bytes (2048 MiB), more than the memory budget for one "
                "piece (1024 MiB, the default; --memory SIZE allows more)");
  // A block's compressed size past the end of the file.
  std::ofstream(path, std::ios::binary) << vti_header("0 15 0 15 0 15", "UInt8") << integers({1, 4096, 0, 1000})
                                        << "0123456789";
  EXPECT_NE(open_refusal("vti", path).find("zlib block 0 of array \"v\": its 1000 compressed bytes from byte "),
            std::string::npos);
  // 1 GiB in blocks that hold 20 compressed bytes each: more than deflate expands them to.
  const std::string block = zlib_block(std::string(1 << 20, '\0'));
  std::string table = integers({1024, 1 << 20, 0});
  std::string data;
  for (int k = 0; k < 1024; ++k) {
    table += integers({20});
    data += block.substr(0, 20);
  }
  std::ofstream(path, std::ios::binary) << vti_header("0 1023 0 1023 0 1023", "UInt8") << table << data;
  EXPECT_NE(open_refusal("vti", path).find("bytes of zlib blocks can hold (deflate expands at most 1032:1)"),
            std::string::npos);
  // The same volume in its real blocks opens.
  table = integers({1024, 1 << 20, 0});
  data.clear();
  for (int k = 0; k < 1024; ++k) {
    table += integers({block.size()});
    data += block;
  }
  std::ofstream(path, std::ios::binary) << vti_header("0 1023 0 1023 0 1023", "UInt8") << table << data;
  Comm self(MPI_COMM_SELF);
  auto reader = open_reader("vti", {path, {}}, self, Hints{});
  std::vector<unsigned char> row(1024, 7);
  reader->read(Extent{{1023, 1023, 0}, {1, 1, 1024}}, row.data());
  EXPECT_EQ(row, std::vector<unsigned char>(1024, 0));
  reader->close();
}

namespace {

// One gzip member of bytes and then zeros, deflated a piece at a time.
std::string gzip(const std::string& bytes, std::size_t zeros = 0) {
  z_stream z{};
  deflateInit2(&z, 9, Z_DEFLATED, 15 + 16, 9, Z_DEFAULT_STRATEGY);
  const std::string piece(std::size_t{1} << 20, '\0');
  std::string out;
  std::vector<char> buffer(std::size_t{1} << 20);
  auto feed = [&](const char* data, std::size_t size, int flush) {
    z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data));
    z.avail_in = static_cast<uInt>(size);
    do {
      z.next_out = reinterpret_cast<Bytef*>(buffer.data());
      z.avail_out = static_cast<uInt>(buffer.size());
      deflate(&z, flush);
      out.append(buffer.data(), buffer.size() - z.avail_out);
    } while (z.avail_out == 0);
  };
  feed(bytes.data(), bytes.size(), Z_NO_FLUSH);
  for (; zeros > 0; zeros -= std::min(zeros, piece.size()))
    feed(piece.data(), std::min(zeros, piece.size()), Z_NO_FLUSH);
  feed(nullptr, 0, Z_FINISH);
  deflateEnd(&z);
  return out;
}

}  // namespace

TEST(HeaderClaims, GzipNiftiAgainstItsCompressedBytes) {
  volseg::testing::SharedTempDir dir(MPI_COMM_SELF);
  const std::string path = dir / "x.nii.gz";
  // Dims that 1 KiB of deflate cannot hold.
  std::ofstream(path, std::ios::binary) << gzip(nifti1(32767, 32767, 32767) + std::string(600, '\0'));
  const std::string huge = open_refusal("gzip", path);
  EXPECT_EQ(huge.find(path + ": dim[1..3] 32767 x 32767 x 32767 of u8 need 35181150961663 bytes from vox_offset 352, "
                             "more than its "),
            0u)
      << huge;
  EXPECT_NE(huge.find("bytes of gzip data can hold (deflate expands at most 1032:1)"), std::string::npos);
  // A small header in front of far more compressed bytes than its voxels
  // take (a gzip bomb's 1 MiB; here 256 KiB that do not compress).
  std::string noise(std::size_t{256} << 10, '\0');
  std::uint64_t state = 88172645463325252u;  // xorshift64: bytes deflate cannot shrink
  for (char& c : noise) {
    state ^= state << 13, state ^= state >> 7, state ^= state << 17;
    c = static_cast<char>(state >> 56);
  }
  std::ofstream(path, std::ios::binary) << gzip(nifti1(8, 8, 8) + noise);
  EXPECT_NE(open_refusal("gzip", path)
                .find("bytes of gzip data are far more than dim[1..3] 8 x 8 x 8 of u8 from "
                      "vox_offset 352 (864 bytes) can take: the stream goes on past the volume"),
            std::string::npos);
  // Dims whose bytes the compressed size allows, and a stream that goes on
  // past them: opened, and refused as it decodes, when it reaches their end.
  std::ofstream(path, std::ios::binary) << gzip(nifti1(64, 64, 64), std::size_t{4} << 20);
  Comm self(MPI_COMM_SELF);
  auto reader = open_reader("gzip", {path, {}}, self, Hints{});
  std::vector<unsigned char> voxels(64 * 64 * 64);
  reader->read(Extent{{0, 0, 0}, {63, 64, 64}}, voxels.data());  // all but the last plane: fine
  try {
    reader->read(Extent{{63, 0, 0}, {1, 64, 64}}, voxels.data());
    ADD_FAILURE() << "a stream past the voxels was read";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()), path +
                                         ": the gzip stream goes on past the 262496 bytes that its header's "
                                         "vox_offset and dim[1..3] describe (a gzip bomb, or data that are not "
                                         "this header's)");
  }
  // The same volume, ending where its voxels do, reads whole.
  std::ofstream(path, std::ios::binary) << gzip(nifti1(64, 64, 64) + std::string(64 * 64 * 64, '\3'));
  auto good = open_reader("gzip", {path, {}}, self, Hints{});
  good->read(Extent{{0, 0, 0}, {64, 64, 64}}, voxels.data());
  EXPECT_EQ(voxels, std::vector<unsigned char>(voxels.size(), 3));
  good->close();
}
