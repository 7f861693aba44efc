// SPDX-License-Identifier: MIT
// How a label job cuts and writes a large volume (private to the segment
// library; label_bricks.cpp, used by label_job.cpp; docs/label.md, "Memory"
// and "On a volume larger than memory").
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "volseg/io/comm.hpp"
#include "volseg/io/format.hpp"
#include "volseg/io/volume.hpp"
#include "volseg/segment/label.hpp"

namespace volseg::segment::detail {

io::Index3 label_brick_shape(const Comm& comm, const LabelOptions& options, const io::VolumeInfo& info,
                             const std::optional<io::Index3>& chunks);

// The labels' type: --label-type checked against the object count (auto:
// u32 while the objects fit, else u64).
io::DType label_type(const std::string& asked, std::uint64_t objects);

// The labels' writer: raw labels with pwrite rather than through a map.
std::string label_writer(io::FileFormat format, const std::string& backend);

// Whether raw labels of whole-plane bricks go with O_DIRECT (hint
// direct_write=1): unless the user's hints say direct_write themselves.
bool direct_label_writes(io::FileFormat format, const std::string& backend, bool whole_planes,
                         const std::vector<std::string>& hints);

}  // namespace volseg::segment::detail
