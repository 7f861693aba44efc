// SPDX-License-Identifier: MIT
#include "volseg/io/volume.hpp"

#include <cmath>
#include <string>
#include <utility>

#include "volseg/io/error.hpp"

namespace volseg::io {

Mapping::Mapping(std::vector<Run> runs, bool needs_swap, Releaser releaser)
    : runs_(std::move(runs)), needs_swap_(needs_swap), releaser_(std::move(releaser)) {}

Mapping::Mapping(Mapping&& other) noexcept
    : runs_(std::move(other.runs_)), needs_swap_(other.needs_swap_), releaser_(std::exchange(other.releaser_, {})) {}

Mapping& Mapping::operator=(Mapping&& other) noexcept {
  if (this != &other) {
    try {
      release();
    } catch (...) {
    }
    runs_ = std::move(other.runs_);
    needs_swap_ = other.needs_swap_;
    releaser_ = std::exchange(other.releaser_, {});
  }
  return *this;
}

Mapping::~Mapping() {
  try {
    release();
  } catch (...) {
    // Only reached on error paths; the first error is already on its way.
  }
}

void Mapping::release() {
  runs_.clear();
  if (auto releaser = std::exchange(releaser_, {})) releaser();
}

namespace {

// The argument checks of the public calls, the same for every backend.
void check_extent(const char* call, const Extent& extent, const VolumeInfo& info) {
  try {
    check_inside(extent, info.dims);
  } catch (const Error& e) {
    throw Error(std::string(call) + ": " + e.what());
  }
}

void check_buffer(const char* call, const Extent& extent, const void* buffer) {
  if (!buffer && !extent.empty()) throw Error(std::string(call) + ": no buffer for extent " + to_string(extent));
}

template <class Buffer>
void check_lists(const char* call, std::span<const Extent> extents, std::span<Buffer const> buffers,
                 const VolumeInfo& info) {
  if (extents.size() != buffers.size())
    throw Error(std::string(call) + ": " + std::to_string(extents.size()) + " extents and " +
                std::to_string(buffers.size()) + " buffers");
  for (std::size_t i = 0; i < extents.size(); ++i) {
    check_extent(call, extents[i], info);
    check_buffer(call, extents[i], buffers[i]);
  }
}

}  // namespace

void VolumeReader::set_capabilities(Capabilities capabilities) {
  // An independent reader's read() touches nothing collective by definition.
  if (!capabilities.collective) capabilities.reads_locally = true;
  capabilities_ = std::move(capabilities);
}

void VolumeReader::check_open(const char* call) const {
  if (closed_) throw Error(std::string(call) + " after close (backend " + backend_name() + ")");
}

void VolumeReader::read(const Extent& extent, void* buffer) {
  check_open("read");
  check_extent("read", extent, info());
  check_buffer("read", extent, buffer);
  do_read(extent, buffer);
}

void VolumeReader::read_all(std::span<const Extent> extents, std::span<void* const> buffers) {
  check_open("read_all");
  check_lists("read_all", extents, buffers, info());
  do_read_all(extents, buffers);
}

void VolumeReader::will_need(const Extent& extent) {
  check_open("will_need");
  check_extent("will_need", extent, info());
  do_will_need(extent);
}

Mapping VolumeReader::map(const Extent& extent) {
  check_open("map");
  if (!capabilities_.map) return VolumeReader::do_map(extent);  // refuses
  check_extent("map", extent, info());
  return do_map(extent);
}

std::unique_ptr<Arrivals> VolumeReader::read_any(std::span<const Extent> extents) {
  check_open("read_any");
  if (!capabilities_.read_any) return VolumeReader::do_read_any(extents);  // refuses
  for (const auto& extent : extents) check_extent("read_any", extent, info());
  return do_read_any(extents);
}

void VolumeReader::close() {
  check_open("close");
  closed_ = true;  // a failed close is not retried: the backend has let go of what it could
  do_close();
}

void VolumeReader::do_read_all(std::span<const Extent> extents, std::span<void* const> buffers) {
  for (std::size_t i = 0; i < extents.size(); ++i) do_read(extents[i], buffers[i]);
}

Mapping VolumeReader::do_map(const Extent&) { throw Error("backend " + backend_name() + " cannot map extents"); }

std::unique_ptr<Arrivals> VolumeReader::do_read_any(std::span<const Extent>) {
  throw Error("backend " + backend_name() + " reads extents in order only (read_any: use ranged-mmap or ranged-uring)");
}

void VolumeWriter::check_open(const char* call) const {
  if (closed_) throw Error(std::string(call) + " after close (backend " + backend_name() + ")");
}

void VolumeWriter::write(const Extent& extent, const void* buffer) {
  check_open("write");
  check_extent("write", extent, info());
  check_buffer("write", extent, buffer);
  do_write(extent, buffer);
}

void VolumeWriter::write_all(std::span<const Extent> extents, std::span<const void* const> buffers) {
  check_open("write_all");
  check_lists("write_all", extents, buffers, info());
  do_write_all(extents, buffers);
}

Mapping VolumeWriter::map(const Extent& extent) {
  check_open("map");
  if (!capabilities_.map) return VolumeWriter::do_map(extent);  // refuses
  check_extent("map", extent, info());
  return do_map(extent);
}

void VolumeWriter::close() {
  check_open("close");
  closed_ = true;
  do_close();
}

void VolumeWriter::do_write_all(std::span<const Extent> extents, std::span<const void* const> buffers) {
  for (std::size_t i = 0; i < extents.size(); ++i) do_write(extents[i], buffers[i]);
}

Mapping VolumeWriter::do_map(const Extent&) { throw Error("backend " + backend_name() + " cannot map extents"); }

std::array<int, 4> segment_rgba(std::uint64_t id) {
  const double h = std::fmod(static_cast<double>(id % 1000003) * 0.6180339887498949, 1.0) * 6;
  const double s = 0.7, v = 0.95, f = h - std::floor(h);
  const double p = v * (1 - s), q = v * (1 - s * f), t = v * (1 - s * (1 - f));
  const double rgb[6][3] = {{v, t, p}, {q, v, p}, {p, v, t}, {p, q, v}, {t, p, v}, {v, p, q}};
  const auto& c = rgb[static_cast<int>(h) % 6];
  return {static_cast<int>(c[0] * 255), static_cast<int>(c[1] * 255), static_cast<int>(c[2] * 255), 255};
}

}  // namespace volseg::io
