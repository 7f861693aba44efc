// SPDX-License-Identifier: MIT
// The brick pyramid: a multiresolution copy of a volume, written beside it,
// so that renderers and the GUI can show a coarse image first and cull bricks
// without reading them. The on-disk format is documented at the top of
// core/pyramid/src/pyramid.cpp. No VTK: segment, the GUI, the in-situ hook and
// the renderer all make and read pyramids through this library.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "volseg/io/comm.hpp"
#include "volseg/io/selection.hpp"
#include "volseg/io/types.hpp"
#include "volseg/io/volume.hpp"
#include "volseg/segment/histogram.hpp"
#include "volseg/segment/operators.hpp"
#include "volseg/segment/progress.hpp"

namespace volseg::pyramid {

// How level k+1 is made from the voxels below it: the scalar's mean over
// valid voxels (NaN where none is valid), or a mask's max (a coarse voxel is
// inside when any fine voxel is).
enum class Reduction { mean, max };
std::string reduction_name(Reduction reduction);

struct Level {
  int level = 0;       // 0: the source volume itself, k: each axis halved k times (rounded up)
  io::Index3 dims{};   // z, y, x
  std::string header;  // the level's .nhdr (level 0: the source path as given)
};

// Statistics of one level-0 brick, over its full-resolution voxels.
struct BrickStats {
  double min = 0, max = 0;   // over valid voxels (unpacked); meaningful when valid > 0
  std::uint64_t valid = 0;   // valid voxels in the brick
  std::uint64_t voxels = 0;  // all voxels in the brick
};

// A pyramid as read from its index (load) or just written (build).
class Pyramid {
 public:
  const std::string& directory() const { return directory_; }
  const std::string& source() const { return source_; }
  const io::VolumeInfo& source_info() const { return source_info_; }
  Reduction reduction() const { return reduction_; }
  // Level-0 brick shape (z, y, x): every level is cut on the same brick grid,
  // level k's brick being the level-0 brick's voxels halved k times.
  const io::Index3& brick_shape() const { return brick_shape_; }
  const io::Index3& brick_grid() const { return brick_grid_; }
  std::int64_t brick_count() const { return brick_grid_[0] * brick_grid_[1] * brick_grid_[2]; }
  const std::vector<Level>& levels() const { return levels_; }  // levels()[k].level == k
  const segment::HistogramEdges& edges() const { return edges_; }
  // The variable and step of the source as the pyramid read it.
  const io::Selection& source_selection() const { return source_selection_; }

  // Brick index (z-major, x fastest) -> its voxels at a level (rounded out so
  // neighbouring bricks share no voxel and cover the level's dims).
  io::Extent brick_extent(std::int64_t brick, int level) const;
  const BrickStats& stats(std::int64_t brick) const { return stats_[static_cast<std::size_t>(brick)]; }
  // The full-resolution histogram of one brick, of any set of bricks, or of
  // the whole volume (the sum of every brick's).
  segment::Histogram histogram(std::int64_t brick) const;
  segment::Histogram histogram() const;
  // The sum over bricks [first, first + count).
  segment::Histogram histogram(std::int64_t first, std::int64_t count) const;

  // Opens a level for reading (collective over comm). Level 0 opens the
  // source with `backend` ("auto": io::resolve_backend for a reader that
  // copies pieces, Access::copy) at `selection` (none: the one the pyramid
  // was built from) with the reader's tuning hints; levels >= 1 are raw
  // volumes read with the posix backend.
  std::unique_ptr<io::VolumeReader> open_level(int level, const Comm& comm, const std::string& backend = "auto",
                                               const std::optional<io::Selection>& selection = std::nullopt,
                                               const std::vector<std::string>& hints = {}) const;

 private:
  friend Pyramid load(const std::string& directory);
  friend struct Builder;
  std::string directory_, source_;
  io::VolumeInfo source_info_;
  Reduction reduction_ = Reduction::mean;
  io::Index3 brick_shape_{}, brick_grid_{};
  std::vector<Level> levels_;
  segment::HistogramEdges edges_;
  std::vector<BrickStats> stats_;
  // Per-brick histograms are read from this file on demand (pread), so a
  // loaded pyramid does not hold brick_count x bins counts in memory.
  std::string histograms_path_;
  io::Selection source_selection_;  // the variable and step the source was read at
  struct SourceFile {
    std::string path;  // resolved
    std::uint64_t size = 0;
    std::int64_t mtime_ns = 0;
  };
  std::vector<SourceFile> source_files_;  // what find() checks to tell a stale pyramid
  friend std::optional<Pyramid> find(const std::string& input, const std::string& directory,
                                     const io::Selection& selection);
};

struct BuildOptions {
  std::string input;
  std::string directory;                 // empty: default_directory(input)
  std::string backend = "auto";          // reads the input
  io::Selection selection;               // which volume of input: --var, --time, --expr
  std::vector<std::string> input_hints;  // the reader's tuning hints
  std::int64_t brick = 64;               // level-0 brick edge (a power of two, >= 2)
  int levels = 0;                        // 0: until the coarsest level fits one brick, at most log2(brick)
  int bins = segment::HistogramEdges::default_bins;
  std::optional<Reduction> reduction;  // default: max for a mask (u8 with flag_values "0 1"), else mean
  bool force = false;                  // replace an existing pyramid
  segment::ProgressMode progress = segment::ProgressMode::automatic;
  std::string command_line;
};

// "DIR/NAME.pyramid" for "DIR/NAME.nhdr" or "DIR/NAME.nc".
std::string default_directory(const std::string& input);

// Collective over comm. Reads the input once (twice when its range is not
// declared: a first pass finds min and max for the histogram edges), writes
// every level and the index, the index last under a temporary name, so a
// pyramid without index.json is not finished. Throws volseg::Error on every
// rank if any rank fails, leaving nothing behind.
Pyramid build(const Comm& comm, const BuildOptions& options);

// The exact histogram of a volume's valid voxels (NaN, fill, missing and
// values outside valid_range left out), over the edges a pyramid of it would
// have (HistogramEdges::over its declared or scanned range): the pyramid's
// own, read from its tables, when a current one with `bins` bins is there
// (find), else one pass over the volume (two when its range is not declared).
// Collective over comm; writes nothing. What the GUI shows, and
// `volseg.histogram` in Python.
struct HistogramOptions {
  std::string input;
  std::string directory;  // where to look for a pyramid; empty: the default one
  std::string backend = "auto";
  io::Selection selection;               // which volume of input: --var, --time, --expr
  std::vector<std::string> input_hints;  // the reader's tuning hints
  int bins = segment::HistogramEdges::default_bins;
  segment::ProgressMode progress = segment::ProgressMode::none;
  segment::ProgressObserver on_progress;  // rank 0, bricks of the pass (not called when a pyramid answers)
};
segment::Histogram histogram(const Comm& comm, const HistogramOptions& options);

// Collective: thresholds given as text, each a number or a rule chosen from
// the input's exact histogram (segment::ThresholdRule: otsu,
// multiotsu:K:I, pN). The histogram is read only when a rule is given;
// then `edges` are its edges. Throws volseg::Error naming the option (--lo,
// --hi) for a text that is neither, or a rule the histogram cannot answer
// (a constant volume).
struct ChosenThresholds {
  double lo = 0, hi = 0;
  std::string lo_rule, hi_rule;  // the rules as given; empty for numbers
  std::optional<segment::HistogramEdges> edges;
  // Into a job's options (segment::SegmentOptions, segment::LabelOptions).
  template <class Options>
  void apply_to(Options& options) const {
    options.lo = lo;
    options.hi = hi;
    options.lo_rule = lo_rule;
    options.hi_rule = hi_rule;
  }
};
ChosenThresholds choose_thresholds(const Comm& comm, const HistogramOptions& options, const std::string& lo,
                                   const std::string& hi);

// Reads DIR/index.json. Throws volseg::Error naming the file and the problem.
Pyramid load(const std::string& directory);
// The pyramid of `input` in `directory` (empty: the default one), if there is
// one that belongs to it (same source dims and variable); nullopt otherwise.
// selection: the volume of the file: a pyramid of another variable, step
// or expression of the same file is not this one's.
std::optional<Pyramid> find(const std::string& input, const std::string& directory = {},
                            const io::Selection& selection = {});

}  // namespace volseg::pyramid
