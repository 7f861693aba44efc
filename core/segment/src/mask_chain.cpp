// SPDX-License-Identifier: MIT
#include "mask_chain.hpp"

#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <map>
#include <optional>

#include "job_outputs.hpp"
#include "volseg/io/dtype_dispatch.hpp"
#include "volseg/io/error.hpp"
#include "volseg/io/registry.hpp"
#include "volseg/io/rounds.hpp"
#include "volseg/io/watchdog.hpp"
#include "volseg/segment/brick_driver.hpp"
#include "volseg/segment/expression.hpp"

namespace volseg::segment::detail {

namespace {

std::size_t voxels_of(const io::Extent& e) { return static_cast<std::size_t>(e.voxels()); }

// extent grown by `layers` on every side, within dims.
io::Extent grown(const io::Extent& extent, std::int64_t layers, const io::Index3& dims) {
  io::Extent out = extent;
  for (int a = 0; a < 3; ++a) {
    const std::int64_t lo = std::max<std::int64_t>(0, extent.offset[a] - layers);
    const std::int64_t hi = std::min(dims[a], extent.offset[a] + extent.count[a] + layers);
    out.offset[a] = lo;
    out.count[a] = hi - lo;
  }
  return out;
}

// Copies the voxels of `inner` out of a buffer of `outer` (inner within outer).
void crop(const std::uint8_t* from, const io::Extent& outer, const io::Extent& inner, std::uint8_t* to) {
  const std::int64_t dz = inner.offset[0] - outer.offset[0], dy = inner.offset[1] - outer.offset[1],
                     dx = inner.offset[2] - outer.offset[2];
  for (std::int64_t z = 0; z < inner.count[0]; ++z)
    for (std::int64_t y = 0; y < inner.count[1]; ++y)
      std::memcpy(to + (z * inner.count[1] + y) * inner.count[2],
                  from + ((z + dz) * outer.count[1] + (y + dy)) * outer.count[2] + dx,
                  static_cast<std::size_t>(inner.count[2]));
}

}  // namespace

ThresholdKernel stored_kernel(const io::VolumeInfo& info, double lo, double hi, const std::string& name) {
  const Packing packing{info.scale_factor.value_or(1.0), info.add_offset.value_or(0.0)};
  if (packing.scale == 0) throw Error(name + ": scale_factor is 0");
  const auto [stored_lo, stored_hi] = packing.to_stored(lo, hi);
  return ThresholdKernel(info.dtype,
                         Threshold{stored_lo, stored_hi, info.fill_value, info.valid_range, info.missing_value}, false);
}

MaskMaker::MaskMaker(const io::VolumeInfo& info, bool mask_input, double lo, double hi, std::string name)
    : info_(info), name_(std::move(name)) {
  if (!mask_input) kernel_.emplace(stored_kernel(info, lo, hi, name_));
}

const std::uint8_t* MaskMaker::make(const std::byte* input, const io::Extent& extent) {
  const std::int64_t n = extent.voxels();
  if (kernel_) {
    mask_.resize(static_cast<std::size_t>(n));
    Stats stats;
    kernel_->run(input, n, false, mask_.data(), stats);
    return mask_.data();
  }
  if (info_.dtype == io::DType::u8 || info_.dtype == io::DType::i8) {
    check(reinterpret_cast<const std::uint8_t*>(input), n, extent);
    return reinterpret_cast<const std::uint8_t*>(input);
  }
  mask_.resize(static_cast<std::size_t>(n));
  io::visit_dtype(info_.dtype, [&]<class T>(std::type_identity<T>) {
    const auto* values = reinterpret_cast<const T*>(input);
    for (std::int64_t i = 0; i < n; ++i)
      mask_[static_cast<std::size_t>(i)] = values[i] == 0 ? 0 : values[i] == 1 ? 1 : 2;
  });
  check(mask_.data(), n, extent);
  return mask_.data();
}

void MaskMaker::check(const std::uint8_t* mask, std::int64_t n, const io::Extent& extent) const {
  std::uint8_t bad = 0;
  for (std::int64_t i = 0; i < n; ++i) bad |= mask[i] & 0xFE;
  if (!bad) return;
  for (std::int64_t i = 0; i < n; ++i)
    if (mask[i] > 1) {
      const std::int64_t x = i % extent.count[2], y = i / extent.count[2] % extent.count[1],
                         z = i / (extent.count[2] * extent.count[1]);
      throw Error("--mask-input: " + name_ + " is not a 0/1 mask: voxel (z,y,x) = (" +
                  std::to_string(extent.offset[0] + z) + "," + std::to_string(extent.offset[1] + y) + "," +
                  std::to_string(extent.offset[2] + x) + ") is neither 0 nor 1 (threshold it with --lo/--hi)");
    }
}

// One stage of the chain.
class MaskStage {
 public:
  virtual ~MaskStage() = default;
  // Collective: what must be known of every brick before any is given.
  virtual void prepare(const Comm&, const BrickMap&, Progress*) {}
  // The mask of extent (nullptr: a round with nothing to read).
  virtual const std::uint8_t* region(const io::Extent* extent) = 0;
  virtual bool collective() const = 0;
};

// The input thresholded (or a 0/1 mask checked), with hysteresis' seeds.
class ThresholdStage final : public MaskStage {
 public:
  ThresholdStage(const ChainInput& input, const std::optional<std::pair<double, double>>& seed)
      : reader_(input.reader),
        info_(input.reader.info()),
        masks_(info_, input.mask_input, input.lo, input.hi, input.name) {
    if (seed && input.mask_input)
      throw Error("--seed-lo/--seed-hi threshold the input: a 0/1 mask (--mask-input) has no values to seed from");
    if (seed) seed_kernel_.emplace(stored_kernel(info_, seed->first, seed->second, input.name));
  }

  const std::uint8_t* region(const io::Extent* extent) override {
    if (!extent) {
      io::read_in_round(reader_, nullptr, nullptr);
      return nullptr;
    }
    const std::size_t n = voxels_of(*extent);
    input_.resize(n * io::dtype_size(info_.dtype));
    io::read_in_round(reader_, extent, input_.data());
    const std::uint8_t* mask = masks_.make(input_.data(), *extent);
    if (seed_kernel_) {
      Stats ignored;
      seeds_.resize(n);
      seed_kernel_->run(input_.data(), static_cast<std::int64_t>(n), false, seeds_.data(), ignored);
    }
    if (counting_ && core_ && masks_.kernel()) count(*extent, *core_);
    return mask;
  }
  bool collective() const override { return reader_.capabilities().collective; }
  const std::uint8_t* seeds() const { return seeds_.data(); }

  // Statistics of the core of each region from now on (ghosts left out).
  void set_core(const io::Extent* core) { core_ = core; }
  void counting(bool on) { counting_ = on; }
  const Stats& stats() const { return stats_; }

 private:
  // The kernel again over the rows of the core, for the statistics only.
  void count(const io::Extent& outer, const io::Extent& core) {
    const std::size_t size = io::dtype_size(info_.dtype);
    scratch_.resize(static_cast<std::size_t>(core.count[2]));
    for (std::int64_t z = 0; z < core.count[0]; ++z)
      for (std::int64_t y = 0; y < core.count[1]; ++y) {
        const std::int64_t at =
            ((z + core.offset[0] - outer.offset[0]) * outer.count[1] + (y + core.offset[1] - outer.offset[1])) *
                outer.count[2] +
            core.offset[2] - outer.offset[2];
        masks_.kernel()->run(input_.data() + static_cast<std::size_t>(at) * size, core.count[2], false, scratch_.data(),
                             stats_);
      }
  }

  io::VolumeReader& reader_;
  const io::VolumeInfo& info_;
  MaskMaker masks_;
  std::optional<ThresholdKernel> seed_kernel_;
  std::vector<std::byte> input_;
  std::vector<std::uint8_t> seeds_, scratch_;
  const io::Extent* core_ = nullptr;
  bool counting_ = false;
  Stats stats_;
};

// Opening, then closing, by balls: a brick read with ghost layers.
class MorphologyStage final : public MaskStage {
 public:
  MorphologyStage(MaskStage& base, const MaskOperators& operators, const io::Index3& dims)
      : base_(base), open_(operators.open), close_(operators.close), ghost_(operators.ghost()), dims_(dims) {}

  const std::uint8_t* region(const io::Extent* extent) override {
    if (!extent) return base_.region(nullptr);
    const io::Extent outer = grown(*extent, ghost_, dims_);
    const std::uint8_t* in = base_.region(&outer);
    const std::size_t n = voxels_of(outer);
    a_.resize(n);
    b_.resize(n);
    const std::uint8_t* current = in;
    auto step = [&](int radius, bool erode) {
      std::uint8_t* target = current == a_.data() ? b_.data() : a_.data();
      morph_ball(current, target, outer.count, radius, erode);
      current = target;
    };
    if (open_ > 0) {
      step(open_, true);
      step(open_, false);
    }
    if (close_ > 0) {
      step(close_, false);
      step(close_, true);
    }
    out_.resize(voxels_of(*extent));
    crop(current, outer, *extent, out_.data());
    return out_.data();
  }
  bool collective() const override { return base_.collective(); }

 private:
  MaskStage& base_;
  int open_, close_, ghost_;
  io::Index3 dims_;
  std::vector<std::uint8_t> a_, b_, out_;
};

// The components of the base's mask (hysteresis: those with a seed) or of
// its background (filled holes: those that touch no face of the volume),
// from a labeling of every brick; then per brick the mask they make.
class ComponentStage final : public MaskStage {
 public:
  enum class Kind { hysteresis, holes };
  ComponentStage(MaskStage& base, ThresholdStage* seeds, Kind kind, int connectivity)
      : base_(base), seeds_(seeds), kind_(kind), connectivity_(connectivity), labeler_(connectivity) {}

  void prepare(const Comm& comm, const BrickMap& map, Progress* progress) override {
    const io::watchdog::Phase phase(kind_ == Kind::holes ? "fill holes: labelling the background"
                                                         : "hysteresis: labelling the low mask");
    labeling_ = std::make_unique<Labeling>(comm, map, connectivity_, false);
    std::vector<io::Extent> extents;
    for (const auto brick : labeling_->mine()) {
      extents.push_back(map.bricks[static_cast<std::size_t>(brick)]);
      brick_of_[key(extents.back())] = brick;
    }
    BrickDriver driver(comm, std::move(extents), labeling_->mine(), {.progress = progress});
    driver.run(collective(), [&](std::optional<std::size_t> k) {
      const io::Extent* extent = k ? &driver.extent(*k) : nullptr;
      const std::uint8_t* mask = base_.region(extent);
      if (!extent) return;
      labeling_->add(driver.id(*k), subject(mask, voxels_of(*extent)));
      if (kind_ == Kind::hysteresis) labeling_->seed(seeds_->seeds());
    });
    summary_ = labeling_->finish(KeepRule{0, kind_ == Kind::hysteresis, kind_ == Kind::holes}, false);
  }

  const std::uint8_t* region(const io::Extent* extent) override {
    const std::uint8_t* mask = base_.region(extent);
    if (!extent) return nullptr;
    const auto found = brick_of_.find(key(*extent));
    if (found == brick_of_.end()) throw Error("internal error: a component stage asked for a region not a brick");
    const std::size_t n = voxels_of(*extent);
    labeler_.label(subject(mask, n), extent->count);
    const auto ids = labeling_->ids(found->second);
    if (ids.size() != labeler_.objects() + 1u) throw Error("internal error: a brick labelled differently again");
    kept_.assign(ids.size(), 0);
    for (std::size_t i = 1; i < ids.size(); ++i) kept_[i] = ids[i] != 0;
    out_.resize(n);
    labeler_.paint<std::uint8_t>(kept_, out_.data());
    if (kind_ == Kind::holes)
      for (std::size_t i = 0; i < n; ++i) out_[i] |= mask[i];
    return out_.data();
  }
  bool collective() const override { return base_.collective(); }
  const LabelSummary& summary() const { return summary_; }

 private:
  static io::Index3 key(const io::Extent& e) { return e.offset; }  // bricks are disjoint: a corner names one
  // What is labelled: the mask, or its background.
  const std::uint8_t* subject(const std::uint8_t* mask, std::size_t n) {
    if (kind_ == Kind::hysteresis) return mask;
    inverse_.resize(n);
    for (std::size_t i = 0; i < n; ++i) inverse_[i] = mask[i] ^ 1;
    return inverse_.data();
  }

  MaskStage& base_;
  ThresholdStage* seeds_;
  Kind kind_;
  int connectivity_;
  std::unique_ptr<Labeling> labeling_;
  BrickLabeler labeler_;
  LabelSummary summary_;
  std::map<io::Index3, std::int64_t> brick_of_;
  std::vector<std::uint8_t> inverse_, out_;
  std::vector<std::uint64_t> kept_;
};

// The base's masks of every brick written once to a temporary raw volume
// beside the output, then read back in any region (ghost layers included).
class SpillStage final : public MaskStage {
 public:
  // The input's statistics are counted on this pass, where each brick is
  // thresholded once (threshold).
  SpillStage(MaskStage& base, ThresholdStage& threshold, const ChainInput& input)
      : base_(base), threshold_(threshold), output_(input.output) {}
  ~SpillStage() override {
    reader_.reset();
    if (rank0_ && !path_.empty())
      for (const auto& file : output_files(path_)) {
        std::error_code ec;
        std::filesystem::remove(file, ec);
      }
  }

  void prepare(const Comm& comm, const BrickMap& map, Progress* progress) override {
    const io::watchdog::Phase phase("hysteresis: writing the kept mask for the morphology's ghost layers");
    long long pid = ::getpid();
    check_mpi(MPI_Bcast(&pid, 1, MPI_LONG_LONG, 0, comm.get()), "MPI_Bcast");
    namespace fs = std::filesystem;
    const fs::path out(output_);
    std::string name = ".";
    name += out.filename().string();
    name += ".volseg-spill-";
    name += std::to_string(pid);
    name += ".nhdr";
    path_ = (out.parent_path() / name).string();
    rank0_ = comm.rank() == 0;
    io::VolumeInfo info;
    info.dims = map.dims;
    info.dtype = io::DType::u8;
    info.variable = "mask";
    auto writer = io::create_writer("posix", io::CreateRequest{path_, info, true}, comm);
    std::vector<io::Extent> extents;
    std::vector<std::int64_t> ids;
    for (std::size_t b = 0; b < map.bricks.size(); ++b)
      if (map.owner[b] == comm.rank()) {
        extents.push_back(map.bricks[b]);
        ids.push_back(static_cast<std::int64_t>(b));
      }
    BrickDriver driver(comm, std::move(extents), std::move(ids), {.progress = progress});
    threshold_.counting(true);
    driver.run(base_.collective(), [&](std::optional<std::size_t> k) {
      const io::Extent* extent = k ? &driver.extent(*k) : nullptr;
      threshold_.set_core(extent);
      const std::uint8_t* mask = base_.region(extent);
      if (extent) writer->write(*extent, mask);
    });
    threshold_.counting(false);
    writer->close();
    reader_ = open_input("posix", {path_, {}}, comm, {});
  }

  const std::uint8_t* region(const io::Extent* extent) override {
    if (!extent) return nullptr;
    buffer_.resize(voxels_of(*extent));
    reader_->read(*extent, buffer_.data());
    return buffer_.data();
  }
  bool collective() const override { return false; }

 private:
  MaskStage& base_;
  ThresholdStage& threshold_;
  std::string output_, path_;
  bool rank0_ = false;
  std::unique_ptr<io::VolumeReader> reader_;
  std::vector<std::uint8_t> buffer_;
};

MaskChain::MaskChain(const Comm& comm, const BrickMap& map, const ChainInput& input, const MaskOperators& operators,
                     bool seeds_to_caller)
    : comm_(comm), map_(map), operators_(operators) {
  auto threshold = std::make_unique<ThresholdStage>(input, operators.seed);
  threshold_ = threshold.get();
  stages_.push_back(std::move(threshold));
  auto add = [&](std::unique_ptr<MaskStage> stage, int passes) {
    passes_ += passes;
    stages_.push_back(std::move(stage));
  };
  const bool after = operators.morphology() || operators.fill_holes;
  if (operators.seed) {
    if (seeds_to_caller && !after)
      caller_seeds_ = true;
    else
      add(std::make_unique<ComponentStage>(*stages_.back(), threshold_, ComponentStage::Kind::hysteresis,
                                           operators.connectivity),
          1);
    if (operators.morphology()) {
      add(std::make_unique<SpillStage>(*stages_.back(), *threshold_, input), 1);
      spilled_ = true;
    }
  }
  if (operators.morphology()) add(std::make_unique<MorphologyStage>(*stages_.back(), operators, map.dims), 0);
  if (operators.fill_holes)
    add(std::make_unique<ComponentStage>(*stages_.back(), nullptr, ComponentStage::Kind::holes, 6), 1);
}

MaskChain::~MaskChain() = default;

void MaskChain::prepare(Progress* progress) {
  for (auto& stage : stages_) stage->prepare(comm_, map_, progress);
}

const std::uint8_t* MaskChain::brick(const io::Extent* extent) {
  threshold_->set_core(extent);
  return stages_.back()->region(extent);
}

const std::uint8_t* MaskChain::seeds() const { return threshold_->seeds(); }
void MaskChain::count_stats(bool on) { threshold_->counting(on && !spilled_); }
const Stats& MaskChain::stats() const { return threshold_->stats(); }
bool MaskChain::collective() const { return stages_.front()->collective(); }

}  // namespace volseg::segment::detail
