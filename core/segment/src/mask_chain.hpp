// SPDX-License-Identifier: MIT
// The operators of volseg/segment/operators.hpp as a chain of stages, each
// giving the mask of a brick from the stage before it (private to the
// segment library; docs/operators.md):
//
//   threshold    reads the input (a brick, or a brick with ghost layers)
//   components   hysteresis or filled holes: a labeling of every rank's
//                bricks first (prepare), then per brick its kept components
//   spill        hysteresis before morphology: the kept mask written once
//                to a temporary raw volume beside the output, so that ghost
//                layers can be read from it (memory stays one brick's)
//   morphology   open, then close, of a brick read with ghost layers
//
// Every stage reads at most once per brick and call, so the chain runs in
// a collective backend's rounds: a call with no extent is this rank's part
// in a round with nothing to read.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "label_kernel.hpp"
#include "volseg/io/comm.hpp"
#include "volseg/io/volume.hpp"
#include "volseg/segment/label.hpp"
#include "volseg/segment/operators.hpp"
#include "volseg/segment/progress.hpp"
#include "volseg/segment/threshold.hpp"

namespace volseg::segment::detail {

// The u8 {0,1} mask of a brick (or any region) of the input: lo <= v <= hi
// (unpacked units), or with mask_input the input's own 0/1 voxels, checked
// (the first voxel that is neither is named). Shared by label's plain
// passes and the chain's threshold stage.
class MaskMaker {
 public:
  MaskMaker(const io::VolumeInfo& info, bool mask_input, double lo, double hi, std::string name);
  // input: the region's values (native order); returns its mask, which
  // may be input itself (a u8 mask).
  const std::uint8_t* make(const std::byte* input, const io::Extent& extent);
  // The threshold's kernel (null for a mask input).
  const ThresholdKernel* kernel() const { return kernel_ ? &*kernel_ : nullptr; }

 private:
  void check(const std::uint8_t* mask, std::int64_t n, const io::Extent& extent) const;

  const io::VolumeInfo& info_;
  std::string name_;
  std::optional<ThresholdKernel> kernel_;
  std::vector<std::uint8_t> mask_;
};

// The kernel of lo <= v <= hi in the input's stored units (CF packing
// undone once); throws on a scale_factor of 0.
ThresholdKernel stored_kernel(const io::VolumeInfo& info, double lo, double hi, const std::string& name);

struct ChainInput {
  io::VolumeReader& reader;
  bool mask_input = false;  // a 0/1 mask; else lo <= v <= hi (unpacked units)
  double lo = 0, hi = 0;
  std::string name;    // the input, for messages
  std::string output;  // the job's output: temporary files go beside it
};

class MaskStage;
class ThresholdStage;

class MaskChain {
 public:
  // seeds_to_caller: a caller that labels the chain's masks itself (label)
  // takes hysteresis' seeds (seeds()) into its own labeling when nothing
  // follows hysteresis, rather than the chain labelling twice.
  MaskChain(const Comm& comm, const BrickMap& map, const ChainInput& input, const MaskOperators& operators,
            bool seeds_to_caller);
  MaskChain(const MaskChain&) = delete;
  MaskChain& operator=(const MaskChain&) = delete;
  ~MaskChain();

  // Passes over every brick prepare() makes (for a progress bar's total).
  int passes() const { return passes_; }
  // Collective: the labelings and the spill the chain needs.
  void prepare(Progress* progress);
  // The final mask of one of this rank's bricks of the map, in its shape;
  // nullptr (and no extent) for a round with nothing to read.
  const std::uint8_t* brick(const io::Extent* extent);
  // With seeds_to_caller and hysteresis: the last brick's seed voxels.
  bool caller_seeds() const { return caller_seeds_; }
  const std::uint8_t* seeds() const;
  // Statistics of the input over the bricks given since count_stats(true):
  // each voxel once, ghost layers left out.
  void count_stats(bool on);
  const Stats& stats() const;
  bool collective() const;

 private:
  const Comm& comm_;
  const BrickMap& map_;
  MaskOperators operators_;
  bool caller_seeds_ = false;
  bool spilled_ = false;  // the statistics were counted in the spill's pass
  int passes_ = 0;
  ThresholdStage* threshold_ = nullptr;  // the first stage
  std::vector<std::unique_ptr<MaskStage>> stages_;
};

}  // namespace volseg::segment::detail
