// SPDX-License-Identifier: MIT
// Segmentation past one band (docs/operators.md): hysteresis, thresholds
// chosen from the histogram, opening and closing with a ball, filled holes.
// segment and label apply them in one fixed order:
//
//   threshold lo <= v <= hi (lo and hi numbers, or chosen: ThresholdRule)
//   hysteresis   keep the components with a voxel in [seed_lo, seed_hi]
//   open R       erosion, then dilation, by ball(R)
//   close R      dilation, then erosion, by ball(R)
//   fill holes   background components (6-connected) that touch no face
//                of the volume become foreground
//   min voxels   (label) objects smaller than that are dropped
//
// Every step runs brick by brick on any number of ranks: morphology reads
// each brick with ghost layers, hysteresis and hole filling are labelings
// merged across bricks and ranks as `volseg label` merges its objects.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "volseg/io/types.hpp"
#include "volseg/segment/histogram.hpp"

namespace volseg::segment {

// The operators after the threshold; all off by default.
struct MaskOperators {
  std::optional<std::pair<double, double>> seed;  // hysteresis: [seed_lo, seed_hi]
  int connectivity = 26;                          // of hysteresis' components
  int open = 0, close = 0;                        // ball radii in voxels; 0: off
  bool fill_holes = false;

  bool any() const { return seed || open > 0 || close > 0 || fill_holes; }
  bool morphology() const { return open > 0 || close > 0; }
  // Layers of voxels a brick is read with around it so that its own voxels
  // come out exact: an opening or a closing is two passes of its radius.
  int ghost() const { return 2 * open + 2 * close; }
  // "hysteresis [0.5, 1], open 2, fill holes" (empty: none).
  std::string describe() const;
};

// The largest radius --open and --close take.
constexpr int max_radius = 32;

// Throws volseg::Error with one line for what cannot run: a radius below 0
// or above max_radius, or ghost layers deeper than the smallest side of a
// brick (brick_shape: the job's); an empty or reversed seed range.
void check_operators(const MaskOperators& operators, const io::Index3& brick_shape);

// Parses a radius option's text: a whole number of voxels, 0 to max_radius.
int parse_radius(const std::string& option, const std::string& text);

// The offsets of scikit-image's ball(radius): dz^2 + dy^2 + dx^2 <= r^2.
// Per (dz, dy) the half width w of its run of dx, -w..w.
struct BallRow {
  int dz, dy, half_width;
};
std::vector<BallRow> ball_rows(int radius);

// Erosion (erode) or dilation of a 0/1 mask of `shape` voxels (x fastest)
// by ball(radius), into out (same size, not the input). Voxels outside the
// buffer count as foreground for an erosion and background for a dilation:
// scikit-image's rule at a volume's faces (an object at the boundary is not
// eaten), and at a brick's cut faces a value only ghost layers hold.
void morph_ball(const std::uint8_t* in, std::uint8_t* out, const io::Index3& shape, int radius, bool erode);

// --- Thresholds chosen from the histogram -----------------------------------

// "otsu", "multiotsu:K:I" (the I-th, from 1, of the K - 1 thresholds of K
// classes) or "pN" / "pN.N" (the N-th percentile of the valid voxels).
struct ThresholdRule {
  enum class Kind { otsu, multi_otsu, percentile } kind = Kind::otsu;
  int classes = 2, index = 1;
  double percent = 50;
  std::string text;  // as given
};

// Whether text names a rule rather than a number.
bool is_threshold_rule(const std::string& text);
// Throws volseg::Error naming option and the accepted forms.
ThresholdRule parse_threshold_rule(const std::string& option, const std::string& text);

// The thresholds of `classes` classes that maximise the between-class
// variance of the histogram's bins (Otsu; multi-Otsu for classes > 2), as
// indices of the last bin of each class but the last, ascending: the
// classes scikit-image's threshold_multiotsu(hist=...) separates.
// Throws when the histogram has fewer occupied bins than classes (one
// value only: a constant volume).
std::vector<int> otsu_bins(const Histogram& histogram, int classes);

// The number a rule stands for, for a lower (lo) or an upper threshold:
// the value between class and class + 1 (lo: the first value above the
// lower class; hi: the last of it. Integer bins give integers; other bins
// the edge between the two bins) or the percentile (linear within its bin).
double choose_threshold(const Histogram& histogram, const ThresholdRule& rule, bool lower);

}  // namespace volseg::segment
