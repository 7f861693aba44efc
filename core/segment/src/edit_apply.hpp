// SPDX-License-Identifier: MIT
// The edits of a journal as functions of the labels (private to the segment
// library; edit_apply.cpp, used by edit_job.cpp; docs/edit.md). A split's
// parts are worked out once, in the object's box, and kept as that box's
// new ids; every other edit is a function of a voxel's id and position.
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "volseg/io/types.hpp"
#include "volseg/segment/edit.hpp"

namespace volseg::segment::detail {

// What a split made: the new id of every voxel of the object in its box
// (0 elsewhere), and the ids it gave.
struct SplitParts {
  io::Extent box;
  std::vector<std::uint64_t> ids;  // box.voxels(), z-major
  std::vector<std::uint64_t> given;
};

class EditChain {
 public:
  explicit EditChain(std::vector<Edit> edits) : edits_(std::move(edits)), splits_(edits_.size()) {}
  const std::vector<Edit>& edits() const { return edits_; }
  // Edits [0, upto) applied to the labels of `extent`, held as u64.
  void apply(const io::Extent& extent, std::uint64_t* labels, std::size_t upto) const;
  void set_split(std::size_t index, SplitParts parts) { splits_[index] = std::move(parts); }
  const SplitParts& split(std::size_t index) const { return splits_[index]; }

 private:
  std::vector<Edit> edits_;
  std::vector<SplitParts> splits_;  // by edit index; empty where not a split
};

// The split of object `id` in `box` (its labels there, after the edits
// before it): the watershed of its negated distance (outside the object
// background, spacing z, y, x) from its h-maxima or from seeds (each
// must lie in the object; `where` names the edit in errors), every piece
// no marker reaches a part of its own; the part that holds the object's
// first voxel keeps `id`, the others take next_id, next_id + 1, ... in
// file order of their first voxels.
SplitParts split_object(const io::Extent& box, const std::vector<std::uint64_t>& labels, const Edit& edit,
                        const std::array<double, 3>& spacing, int connectivity, std::uint64_t next_id,
                        const std::string& where);

}  // namespace volseg::segment::detail
