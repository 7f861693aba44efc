// SPDX-License-Identifier: MIT
#include "volseg/io/volume.hpp"

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

void VolumeReader::read_all(std::span<const Extent> extents, std::span<void* const> buffers) {
  if (extents.size() != buffers.size()) throw Error("read_all: extents and buffers differ in number");
  for (std::size_t i = 0; i < extents.size(); ++i) read(extents[i], buffers[i]);
}

void VolumeReader::will_need(const Extent&) {}

Mapping VolumeReader::map(const Extent&) { throw Error("backend " + backend_name() + " cannot map extents"); }

std::unique_ptr<Arrivals> VolumeReader::read_any(std::span<const Extent>) {
  throw Error("backend " + backend_name() + " reads extents in order only (read_any: use ranged-mmap or ranged-uring)");
}

void VolumeWriter::write_all(std::span<const Extent> extents, std::span<const void* const> buffers) {
  if (extents.size() != buffers.size()) throw Error("write_all: extents and buffers differ in number");
  for (std::size_t i = 0; i < extents.size(); ++i) write(extents[i], buffers[i]);
}

Mapping VolumeWriter::map(const Extent&) { throw Error("backend " + backend_name() + " cannot map extents"); }

}  // namespace volseg::io
