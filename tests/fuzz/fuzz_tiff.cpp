// SPDX-License-Identifier: MIT
// libFuzzer target: opening and reading a TIFF file (io/src/tiff.cpp's page
// walk and checks, io/backends/tiff.cpp's reads through libtiff). An input
// is a whole file; it is written to /dev/shm and opened as `volseg info`
// and `segment` open it: the format from its magic bytes, the tiff backend,
// the description, then every plane read when the volume is small. libtiff
// decodes what the pages say; what volseg adds must hold: a volume that
// opens has positive dims, finite positive spacing, the size a file can
// hold, reads that fill their buffers or refuse, and no file left open.
#include <fcntl.h>
#include <unistd.h>

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "fuzz_support.hpp"
#include "volseg/io/error.hpp"
#include "volseg/io/format.hpp"
#include "volseg/io/registry.hpp"

using namespace volseg::io;

namespace {

const std::string& file_path() {
  static const std::string path = volseg::fuzz::scratch_file("tiff", ".tif");
  return path;
}

void write_file(const std::uint8_t* data, std::size_t size) { volseg::fuzz::write_scratch(file_path(), data, size); }

void open_and_read(const volseg::Comm& comm, const std::string& path) {
  auto reader = open_reader("tiff", {path, {}}, comm, Hints::parse({}));
  const VolumeInfo& info = reader->info();
  for (int a = 0; a < 3; ++a) {
    if (info.dims[a] < 1) volseg::fuzz::invariant_broken("a dimension below 1");
    if (!std::isfinite(info.spacing[a]) || info.spacing[a] <= 0)
      volseg::fuzz::invariant_broken("a spacing not positive");
  }
  if (!fits_in_a_file(info.dims, info.dtype)) volseg::fuzz::invariant_broken("the data's size wraps around");
  (void)describe(path, FileFormat::tiff, "tiff", info);
  // Small volumes are read whole, a plane at a time, as bricks of whole planes are.
  if (info.bytes() <= (std::uint64_t{16} << 20)) {
    std::vector<std::byte> plane(static_cast<std::size_t>(info.dims[1] * info.dims[2]) * dtype_size(info.dtype));
    for (std::int64_t z = 0; z < info.dims[0]; ++z)
      reader->read(Extent{{z, 0, 0}, {1, info.dims[1], info.dims[2]}}, plane.data());
  }
  reader->close();
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  (void)volseg::fuzz::world();
  std::atexit([] { ::unlink(file_path().c_str()); });
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const volseg::Comm& comm = volseg::fuzz::world();
  write_file(data, size);
  const int files_before = volseg::fuzz::open_files();
  try {
    if (detect_format(comm, file_path()) == FileFormat::tiff) open_and_read(comm, file_path());
  } catch (const volseg::Error&) {
  }
  if (volseg::fuzz::open_files() != files_before) volseg::fuzz::invariant_broken("a file was left open");
  ::unlink(file_path().c_str());
  return 0;
}
