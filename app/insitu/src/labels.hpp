// SPDX-License-Identifier: MIT
// The hook's --label step (docs/label.md).
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "volseg/insitu/insitu.hpp"
#include "volseg/io/comm.hpp"

namespace volseg::insitu::detail {

// Collective: the objects of the mask of the points each rank owns (packed
// over field.box), counted across every rank's block with segment's
// labelling (a brick per rank, neighbours by contact); sets record.objects
// and record.largest on every rank.
// With ids, also this rank's block's labels (the objects' global ids, 0
// outside), field.box's voxels, as `volseg label` numbers them.
// periodic: the axes along which the domain wraps around.
void count_objects(const Comm& comm, const Field& field, const std::vector<std::uint8_t>& mask, int connectivity,
                   const std::array<bool, 3>& periodic, StepRecord& record, std::vector<std::uint64_t>* ids = nullptr);

}  // namespace volseg::insitu::detail
