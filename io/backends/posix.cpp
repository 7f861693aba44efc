// SPDX-License-Identifier: MIT
// Backend "posix": one pread/pwrite per contiguous run of an extent.
#include <atomic>
#include <memory>
#include <vector>

#include "raw/raw_volume.hpp"
#include "volseg/io/registry.hpp"

namespace volseg::io {
namespace {

class PosixReader final : public VolumeReader {
 public:
  PosixReader(const std::string& path, const Comm& comm, const std::string& array) : input_(path, comm, true, array) {}
  const VolumeInfo& info() const override { return input_.header().info; }
  std::string backend_name() const override { return "posix"; }

  void do_read(const Extent& extent, void* buffer) override {
    const auto& info = this->info();
    const std::size_t size = dtype_size(info.dtype);
    auto* out = static_cast<std::byte*>(buffer);
    raw::for_each_run(info.dims, extent, size, input_.header().byte_skip,
                      [&](std::uint64_t offset, std::int64_t count, std::int64_t index) {
                        std::byte* target = out + index * static_cast<std::int64_t>(size);
                        raw::read_fully(input_.fd(), target, static_cast<std::size_t>(count) * size, offset,
                                        input_.header().data_path);
                        if (input_.needs_swap()) raw::swap_bytes(target, count, size);
                      });
    bytes_read_ += static_cast<std::uint64_t>(extent.voxels()) * size;
  }

  void do_close() override { input_.close(); }
  std::uint64_t bytes_read() const override { return bytes_read_; }
  std::vector<std::string> files() const override { return input_.files(); }

 private:
  raw::RawInput input_;
  std::atomic<std::uint64_t> bytes_read_{0};
};

class PosixWriter final : public VolumeWriter {
 public:
  PosixWriter(const CreateRequest& request, const Comm& comm, bool fsync, bool direct)
      : output_(request, comm, fsync, direct) {}
  const VolumeInfo& info() const override { return output_.info(); }
  std::string backend_name() const override { return "posix"; }

  void do_write(const Extent& extent, const void* buffer) override {
    output_.write(extent, buffer);
    bytes_written_ += static_cast<std::uint64_t>(extent.voxels()) * dtype_size(info().dtype);
  }

  void do_close() override { output_.close(); }
  std::uint64_t bytes_written() const override { return bytes_written_; }

 private:
  raw::RawOutput output_;
  std::atomic<std::uint64_t> bytes_written_{0};
};

}  // namespace

Backend make_posix_backend() {
  Backend backend;
  backend.name = "posix";
  backend.formats = "raw (NRRD .nhdr)";
  backend.extension = ".nhdr";
  backend.raw_layout = true;
  backend.description = "pread/pwrite per contiguous run";
  backend.hints = {{"fsync", HintFor::writers}, {"direct_write", HintFor::writers}};
  backend.open = [](const OpenRequest& request, const Comm& comm, const Hints& hints) -> std::unique_ptr<VolumeReader> {
    request.selection.refuse_step_and_glob("posix");
    hints.reject_unused("posix");
    return std::make_unique<PosixReader>(request.path, comm, request.selection.variable);
  };
  backend.create = [](const CreateRequest& request, const Comm& comm,
                      const Hints& hints) -> std::unique_ptr<VolumeWriter> {
    bool fsync = hints.get_bool("fsync", false);
    bool direct = hints.get_bool("direct_write", false);
    hints.reject_unused("posix");
    return std::make_unique<PosixWriter>(request, comm, fsync, direct);
  };
  return backend;
}

}  // namespace volseg::io
