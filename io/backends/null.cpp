// SPDX-License-Identifier: MIT
// Backend "null" (ADIOS2 ships one too): reads a raw volume's header and no
// data. Every voxel reads as zero, so a job runs its bricks, kernel and
// writes with no input I/O: for tests of the drivers and for measuring what
// a job costs beside its reads. Read-only.
#include <cstring>
#include <fstream>
#include <memory>
#include <sstream>

#include "raw/raw_volume.hpp"
#include "volseg/io/error.hpp"
#include "volseg/io/nrrd.hpp"
#include "volseg/io/registry.hpp"

namespace volseg::io {
namespace {

class NullReader final : public VolumeReader {
 public:
  explicit NullReader(const std::string& path) : info_(read_header(path).info), path_(path) {}
  const VolumeInfo& info() const override { return info_; }
  std::string backend_name() const override { return "null"; }

  void do_read(const Extent& extent, void* buffer) override {
    std::memset(buffer, 0, static_cast<std::size_t>(extent.voxels()) * dtype_size(info_.dtype));
  }
  void do_close() override {}
  std::uint64_t bytes_read() const override { return 0; }
  std::vector<std::string> files() const override { return {path_}; }

 private:
  static NrrdHeader read_header(const std::string& path) {
    return raw::parse_raw_header(raw::read_header_text(path, 1 << 20), path);
  }

  VolumeInfo info_;
  std::string path_;
};

}  // namespace

Backend make_null_backend() {
  Backend backend;
  backend.name = "null";
  backend.formats = "raw (NRRD .nhdr), read-only";
  backend.extension = ".nhdr";
  backend.raw_layout = true;
  backend.description = "reads the header only: every voxel 0 (tests, costs beside the I/O)";
  backend.open = [](const OpenRequest& request, const Comm&, const Hints& hints) -> std::unique_ptr<VolumeReader> {
    request.selection.refuse_step_and_glob("null");
    request.selection.refuse_variable("null");
    hints.reject_unused("null");
    return std::make_unique<NullReader>(request.path);
  };
  backend.create = [](const CreateRequest&, const Comm&, const Hints&) -> std::unique_ptr<VolumeWriter> {
    throw Error("backend null only reads");
  };
  return backend;
}

}  // namespace volseg::io
