// SPDX-License-Identifier: MIT
// Backend "twophase": volumes through volseg's own two-phase engine. Raw
// volumes (NRRD) directly; NetCDF classic (CDF-1/2/5) fixed-size variables,
// or one record of a record variable, through their byte offsets: PnetCDF
// reads or writes the header, the engine moves the big-endian bytes, and
// values are swapped to and from native order here.
// Independent read()/write() are plain pread/pwrite on every rank's own
// descriptor; read_all/write_all take a rank's whole list in one collective
// call, and the engine's rounds keep memory at two cb_buffer_size buffers.
#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <filesystem>
#include <memory>
#include <optional>
#include <vector>

#include "cdf_placement.hpp"
#include "raw/raw_volume.hpp"
#include "volseg/io/error.hpp"
#include "volseg/io/faults.hpp"
#include "volseg/io/format.hpp"
#include "volseg/io/registry.hpp"
#include "volseg/io/trace.hpp"
#include "volseg/io/twophase.hpp"

namespace volseg::io {
namespace {

// The flattened (offset, length, memory) pieces of a list of extents.
template <class AccessT, class Pointer>
std::vector<AccessT> flatten(const VolumeInfo& info, std::uint64_t base, std::span<const Extent> extents,
                             std::span<Pointer const> buffers) {
  const std::size_t size = dtype_size(info.dtype);
  std::vector<AccessT> accesses;
  for (std::size_t i = 0; i < extents.size(); ++i) {
    if (extents[i].empty()) continue;
    auto* memory =
        static_cast<std::conditional_t<std::is_const_v<std::remove_pointer_t<Pointer>>, const std::byte*, std::byte*>>(
            buffers[i]);
    raw::for_each_run(info.dims, extents[i], size, base,
                      [&](std::uint64_t offset, std::int64_t count, std::int64_t index) {
                        accesses.push_back(AccessT{offset, static_cast<std::uint64_t>(count) * size,
                                                   memory + index * static_cast<std::int64_t>(size)});
                      });
  }
  return accesses;
}

// name: the file in messages (a temporary file's final name).
int open_checked(const std::string& path, int flags, const std::string& name) {
  trace::Span span(trace::Op::open);
  const int fd = ::open(path.c_str(), flags | O_CLOEXEC);
  if (fd < 0) throw_errno("open", name);
  return fd;
}

void close_checked(int& fd, const std::string& name) {
  const int closing = std::exchange(fd, -1);
  if (closing < 0) return;
  trace::Span span(trace::Op::close);
  const auto fault = faults::at(faults::Call::close);
  int closed = ::close(closing);
  if (fault.error) errno = fault.error, closed = -1;
  if (closed != 0) throw_errno("close", name);
}

// The engine's figures for reports: totals over this rank's calls and, per
// call, [requests, exchange, io, total] seconds (Liao & Choudhary read the
// I/O phase's share).
Metrics report(const std::vector<twophase::Timing>& calls) {
  twophase::Timing sum;
  Metrics metrics;
  metrics.source = "twophase";
  metrics.per_call_name = "per_call_requests_exchange_io_total_s";
  for (const auto& call : calls) {
    sum.add(call);
    metrics.per_call.push_back({call.requests, call.exchange, call.io, call.total});
  }
  const auto whole = [](const char* name, std::uint64_t value) {
    return Metric{name, static_cast<double>(value), true};
  };
  const auto seconds = [](const char* name, double value) { return Metric{name, value, false}; };
  metrics.totals = {whole("calls", sum.calls),
                    whole("rounds", sum.rounds),
                    seconds("requests_s", sum.requests),
                    seconds("exchange_s", sum.exchange),
                    seconds("io_s", sum.io),
                    seconds("total_s", sum.total),
                    seconds("io_share", sum.total > 0 ? sum.io / sum.total : 0.0),
                    whole("io_calls", sum.io_calls),
                    whole("file_bytes", sum.file_bytes),
                    whole("sieved", sum.sieved),
                    whole("naive", sum.naive),
                    whole("contiguous", sum.contiguous),
                    whole("independent_calls", sum.independent)};
  return metrics;
}

class TwoPhaseReader final : public VolumeReader {
 public:
  TwoPhaseReader(const OpenRequest& request, const Comm& comm, const Hints& hints)
      : VolumeReader({.collective = true}), comm_(comm.duplicate()) {
    const std::string& path = request.path;
    const twophase::Options options = twophase::Options::from_hints(hints);
    const FileFormat format = detect_format(comm_, path);
    if (format == FileFormat::netcdf4)
      throw Error(path +
                  " is NetCDF-4 (HDF5); twophase reads raw volumes and NetCDF classic (CDF-1/2/5) files: use "
                  "--backend netcdf4");
    if (format == FileFormat::raw) {
      request.selection.refuse_step_and_glob("twophase");
      hints.reject_unused("twophase");
      raw_.emplace(path, comm_, /*open_data=*/true, request.selection.variable);
      info_ = raw_->header().info;
      data_path_ = raw_->header().data_path;
      base_ = raw_->header().byte_skip;
      fd_ = raw_->fd();
    } else {
      CdfPlacement placement;
      request.selection.refuse_glob("pnetcdf");  // the CDF header's reader, as before
      header_ = open_cdf_placed(request, comm_, hints, placement);
      info_ = header_->info();
      data_path_ = placement.data_path;
      base_ = placement.offset;
      collectively(comm_, [&] { own_fd_ = fd_ = open_checked(data_path_, O_RDONLY, data_path_); });
    }
    file_.emplace(comm_, data_path_, twophase::Mode::read, options);
  }
  ~TwoPhaseReader() override {
    if (own_fd_ >= 0) ::close(own_fd_);
  }

  const VolumeInfo& info() const override { return info_; }
  std::string backend_name() const override { return "twophase"; }
  std::string implementation() const override { return file_->describe(); }
  Metrics metrics() const override { return report(calls_); }

  void do_read(const Extent& extent, void* buffer) override {
    const std::size_t size = dtype_size(info_.dtype);
    auto* out = static_cast<std::byte*>(buffer);
    raw::for_each_run(info_.dims, extent, size, base_,
                      [&](std::uint64_t offset, std::int64_t count, std::int64_t index) {
                        raw::read_fully(fd_, out + index * static_cast<std::int64_t>(size),
                                        static_cast<std::size_t>(count) * size, offset, data_path_);
                      });
    finish(extent, buffer);
  }

  void do_read_all(std::span<const Extent> extents, std::span<void* const> buffers) override {
    const auto accesses = flatten<twophase::Access>(info_, base_, extents, buffers);
    file_->read_all(accesses);
    calls_.push_back(file_->last_call());
    for (std::size_t i = 0; i < extents.size(); ++i) finish(extents[i], buffers[i]);
  }

  void do_close() override {
    file_->close();
    collectively(comm_, [&] { close_checked(own_fd_, data_path_); });
    if (raw_) raw_->close();
    if (header_) header_->close();
  }
  std::uint64_t bytes_read() const override { return bytes_read_; }
  std::vector<std::string> files() const override { return raw_ ? raw_->files() : header_->files(); }

 private:
  void finish(const Extent& extent, void* buffer) {
    const std::size_t size = dtype_size(info_.dtype);
    if (info_.byte_order != native_byte_order()) raw::swap_bytes(buffer, extent.voxels(), size);
    bytes_read_ += static_cast<std::uint64_t>(extent.voxels()) * size;
  }

  Comm comm_;
  std::optional<raw::RawInput> raw_;
  std::unique_ptr<VolumeReader> header_;  // CDF: PnetCDF keeps the header
  VolumeInfo info_;
  std::string data_path_;
  std::uint64_t base_ = 0;
  int fd_ = -1, own_fd_ = -1;
  std::optional<twophase::File> file_;
  std::vector<twophase::Timing> calls_;
  std::atomic<std::uint64_t> bytes_read_{0};
};

class TwoPhaseWriter final : public VolumeWriter {
 public:
  TwoPhaseWriter(const CreateRequest& request, const Comm& comm, const Hints& hints)
      : VolumeWriter({.collective = true}), comm_(comm.duplicate()) {
    const twophase::Options options = twophase::Options::from_hints(hints);
    const std::optional<FileFormat> format = format_of_extension(request.path);
    if (format && format_traits(*format).classic) {
      // PnetCDF syncs its header at close; the engine's data are synced here.
      sync_data_ = hints.get_bool("fsync", false);
      CdfPlacement placement;
      header_ = create_cdf_placed(request, comm_, hints, placement);
      info_ = header_->info();
      info_.byte_order = ByteOrder::big;  // CDF data are big-endian
      data_path_ = placement.data_path;
      name_ = request.path;
      base_ = placement.offset;
    } else {
      const bool fsync = hints.get_bool("fsync", false);
      hints.reject_unused("twophase");
      raw_.emplace(request, comm_, fsync);
      info_ = raw_->info();
      data_path_ = raw_->temp_data_path();
      name_ = raw_->data_path();
      base_ = raw_->data_offset();
    }
    collectively(comm_, [&] { fd_ = open_checked(data_path_, O_WRONLY, name_); });
    file_.emplace(comm_, data_path_, twophase::Mode::write, options, name_);
  }
  ~TwoPhaseWriter() override {
    if (fd_ >= 0) ::close(fd_);
  }

  const VolumeInfo& info() const override { return info_; }
  std::string backend_name() const override { return "twophase"; }
  Metrics metrics() const override { return report(calls_); }

  void do_write(const Extent& extent, const void* buffer) override {
    const std::size_t size = dtype_size(info_.dtype);
    const auto* source = static_cast<const std::byte*>(in_file_order(std::span(&extent, 1), std::span(&buffer, 1))[0]);
    raw::for_each_run(info_.dims, extent, size, base_,
                      [&](std::uint64_t offset, std::int64_t count, std::int64_t index) {
                        raw::write_fully(fd_, source + index * static_cast<std::int64_t>(size),
                                         static_cast<std::size_t>(count) * size, offset, name_);
                      });
    bytes_written_ += static_cast<std::uint64_t>(extent.voxels()) * size;
  }

  void do_write_all(std::span<const Extent> extents, std::span<const void* const> buffers) override {
    const auto sources = in_file_order(extents, buffers);
    const auto accesses = flatten<twophase::ConstAccess>(info_, base_, extents, std::span<const void* const>(sources));
    file_->write_all(accesses);
    calls_.push_back(file_->last_call());
    for (const auto& extent : extents)
      bytes_written_ += static_cast<std::uint64_t>(extent.voxels()) * dtype_size(info_.dtype);
  }

  void do_close() override {
    if (sync_data_) file_->sync();
    file_->close();
    collectively(comm_, [&] { close_checked(fd_, name_); });
    if (raw_) raw_->close();
    if (header_) header_->close();
  }
  std::uint64_t bytes_written() const override { return bytes_written_; }

 private:
  // The buffers as the file stores them: the caller's, or swapped copies.
  std::vector<const void*> in_file_order(std::span<const Extent> extents, std::span<const void* const> buffers) {
    std::vector<const void*> result(buffers.begin(), buffers.end());
    if (info_.byte_order == native_byte_order() || dtype_size(info_.dtype) == 1) return result;
    const std::size_t size = dtype_size(info_.dtype);
    std::size_t total = 0;
    for (const auto& extent : extents) total += static_cast<std::size_t>(extent.voxels()) * size;
    scratch_.resize(total);
    std::size_t at = 0;
    for (std::size_t i = 0; i < extents.size(); ++i) {
      raw::copy_swapped(scratch_.data() + at, buffers[i], extents[i].voxels(), size);
      result[i] = scratch_.data() + at;
      at += static_cast<std::size_t>(extents[i].voxels()) * size;
    }
    return result;
  }

  Comm comm_;
  std::optional<raw::RawOutput> raw_;
  std::unique_ptr<VolumeWriter> header_;  // CDF: PnetCDF writes the header, renames on close
  VolumeInfo info_;
  std::string data_path_;   // a temporary file until close
  std::string name_;        // the output's final name, for messages
  bool sync_data_ = false;  // CDF with fsync=1 (RawOutput syncs raw data itself)
  std::uint64_t base_ = 0;
  int fd_ = -1;
  std::optional<twophase::File> file_;
  std::vector<twophase::Timing> calls_;
  std::vector<std::byte> scratch_;
  std::atomic<std::uint64_t> bytes_written_{0};
};

}  // namespace

Backend make_twophase_backend() {
  Backend backend;
  backend.name = "twophase";
  backend.formats = "raw (NRRD .nhdr), NetCDF CDF-1/2/5 fixed-size variables (.nc)";
  backend.extension = ".nhdr";
  backend.raw_layout = true;
  backend.description =
      "volseg's own two-phase collective I/O (partition=, cb_nodes=, cb_buffer_size=, exchange=, ds=)";
  // The engine's own (twophase::Options), then those of CDF files' headers (PnetCDF's).
  for (const char* key : {"cb_nodes", "cb_config", "cb_buffer_size", "max_pieces", "exchange", "partition", "lock_size",
                          "io_servers", "fs_profile", "ds", "ds_threshold", "realm_size", "cb_read", "cb_write"})
    backend.hints.push_back({key, HintFor::both});
  backend.hints.push_back({"direct_write", HintFor::writers});
  for (auto& known : cdf_hints()) backend.hints.push_back(std::move(known));  // fsync among them, for writers
  backend.open = [](const OpenRequest& request, const Comm& comm, const Hints& hints) -> std::unique_ptr<VolumeReader> {
    return std::make_unique<TwoPhaseReader>(request, comm, hints);
  };
  backend.create = [](const CreateRequest& request, const Comm& comm,
                      const Hints& hints) -> std::unique_ptr<VolumeWriter> {
    return std::make_unique<TwoPhaseWriter>(request, comm, hints);
  };
  return backend;
}

}  // namespace volseg::io
