// SPDX-License-Identifier: MIT
// Connected components of a mask, brick by brick and across ranks, in memory
// bounded by the bricks and the objects that touch their boundaries
// (docs/label.md). What a user of the labelling sees:
//   run_label     the job over files: `volseg label` (label_job.cpp), its
//                 options (LabelOptions, the table's fields) and its result
//   Labeling      the same labelling of masks that something else supplies
//                 brick by brick (the in-situ hook, Python's volseg.label)
//   the table     the objects measured (ObjectPart, ObjectValues, ObjectShape)
// The kernel below them (the brick labeller, the merge's parts and arrays)
// is private to the library: core/segment/src/label_kernel.hpp.
#pragma once

#include <array>
#include <cstdint>
#include <limits>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "volseg/io/comm.hpp"
#include "volseg/io/selection.hpp"
#include "volseg/io/types.hpp"
#include "volseg/segment/brick_layout.hpp"
#include "volseg/segment/cancel.hpp"
#include "volseg/segment/operators.hpp"
#include "volseg/segment/progress.hpp"

namespace volseg::segment {

// 6: voxels sharing a face; 18: a face or an edge; 26: also a corner
// (scipy.ndimage.generate_binary_structure(3, 1 | 2 | 3)). Throws on others.
int check_connectivity(int connectivity);

// What one brick holds of an object, or (merged) a whole object. Sums are
// exact integers, so a table does not depend on how the volume was split.
struct ObjectPart {
  std::uint64_t first = 0;  // file-order index (x fastest) of its first voxel
  std::uint64_t voxels = 0;
  std::uint64_t sum[3] = {};            // of the voxels' z, y and x
  std::int32_t lo[3] = {}, hi[3] = {};  // bounding box z,y,x, inclusive
  // Flags, or-ed when parts merge: touches_boundary (the volume's), seeded
  // (holds a voxel of the hysteresis seed range). A segment is no part of an
  // object: it stands for `voxels` kept objects of one brick that touch no
  // face it shares, consecutive in file order from `first` (the merge
  // numbers them as one, and joins nothing to it). wraps_z/y/x: across
  // periodic faces the object reaches itself along that axis, moved by a
  // period (it percolates): it has no unwrapped extent along it.
  std::uint32_t border = 0;
  static constexpr std::uint32_t touches_boundary = 1, seeded = 2, segment = 4;
  static constexpr std::uint32_t wraps_z = 8, wraps_y = 16, wraps_x = 32;
  void merge(const ObjectPart& other);
};

// Which merged objects a labeling keeps (numbers); the others get id 0 and
// count as dropped. min_voxels: at least that many voxels; seeded: only
// those with a seed voxel (hysteresis); inside: only those that touch no
// face of the volume (the holes of a mask, as background components).
struct KeepRule {
  KeepRule() = default;
  // Not an aggregate: a number in a larger brace list cannot slip into it.
  explicit KeepRule(std::uint64_t min, bool seeded_only = false, bool inside_only = false)
      : min_voxels(min), seeded(seeded_only), inside(inside_only) {}
  std::uint64_t min_voxels = 0;
  bool seeded = false;
  bool inside = false;
  template <class Part>  // ObjectPart, or the merge's 16-byte part (first, voxels, border)
  bool keeps(const Part& part) const {
    const std::uint32_t border = part.border;
    if ((border & ObjectPart::segment) != 0) return true;  // kept as its brick was labelled
    return part.voxels >= min_voxels && (!seeded || (border & ObjectPart::seeded) != 0) &&
           (!inside || (border & ObjectPart::touches_boundary) == 0);
  }
};

// What a table measures of an object past its ObjectPart, carried only
// when asked for: the values of a source scalar inside it (--values), and
// its shape (the table's shape columns, ObjectShape). A part with several
// fields carries a record per field, in the order given; the first also
// holds the shape (moments, faces), the others leave it at zero.
struct ObjectValues {
  double min = 0, max = 0, sum = 0;
  double weighted[3] = {};  // sums of value times z, y and x (index): sum-weighted, the value's centroid
  // Exact sums over the voxels of z*z, y*y, x*x, z*y, z*x, y*x (indices).
  std::uint64_t moments[6] = {};
  // Voxel faces normal to z, y and x next to background or the volume's
  // boundary. A part's count may go below zero: a face between two bricks'
  // voxels is taken off the later brick's part, and merged parts add up.
  std::int64_t faces[3] = {};
  void merge(const ObjectValues& other);
};

// The shape of an object as skimage.measure.regionprops defines it (in
// voxel units), and its exposed surface (ObjectValues::faces) in the
// spacing's units.
struct ObjectShape {
  double surface_area = 0;                // faces times their areas from the spacing
  double equivalent_diameter = 0;         // of the ball of as many voxels: (6 N / pi)^(1/3)
  double inertia[3] = {};                 // the inertia tensor's eigenvalues, descending (>= 0)
  double major_axis = 0, minor_axis = 0;  // sqrt(10 (e0 + e1 - e2)), sqrt(10 (-e0 + e1 + e2))
  double sphericity = 0;                  // pi^(1/3) (6 V)^(2/3) / surface area, V the volume
};
// spacing: x, y, z (io::VolumeInfo's).
ObjectShape object_shape(const ObjectPart& part, const ObjectValues& measures, const std::array<double, 3>& spacing);

// Where each brick of a volume is and which rank labels it: every rank
// holds the same description.
struct BrickMap {
  io::Index3 dims{};
  std::vector<io::Extent> bricks;  // disjoint, covering the volume
  std::vector<int> owner;          // rank of each brick
  // A regular grid of bricks (BrickLayout's numbering) finds neighbours by
  // index; without one (grid 0) every pair of bricks is checked.
  io::Index3 grid{}, shape{};
  // Axes (z, y, x) along which the volume wraps around: voxels on its two
  // faces are neighbours, as in a simulation's periodic domain.
  std::array<bool, 3> periodic{};
  static BrickMap from_layout(const BrickLayout& layout, int comm_size, Assignment assignment, std::uint64_t seed);
};

// One rank's slice of the object table: the objects with ids first_id,
// first_id + 1, ..., in that order (the ranks' slices in rank order cover
// every object once; no rank holds the whole).
class ObjectTable {
 public:
  // The rows as the merge leaves them (label_kernel.hpp); none: no rows.
  struct Rows;
  ObjectTable() noexcept;
  ObjectTable(std::uint64_t first, std::unique_ptr<Rows> rows) noexcept;
  ObjectTable(ObjectTable&&) noexcept;
  ObjectTable& operator=(ObjectTable&&) noexcept;
  ~ObjectTable();

  std::uint64_t first_id = 1;
  std::size_t size() const;
  const ObjectPart& part(std::size_t i) const;
  // With values only: field k's record (the first holds the shape too).
  const ObjectValues& values_of(std::size_t i, std::size_t k = 0) const;

 private:
  std::unique_ptr<Rows> rows_;
};

struct LabelSummary {
  std::uint64_t objects = 0;         // kept (numbered), after min_voxels
  std::uint64_t dropped = 0;         // smaller than min_voxels
  std::uint64_t foreground = 0;      // voxels of kept objects
  std::uint64_t boundary_parts = 0;  // parts that touch another brick: the merge's size
  std::uint64_t joins = 0;           // links between parts of bricks that touch (a spanning forest of their contacts)
  std::uint64_t largest = 0;         // voxels of the largest kept object
  // When asked for, this rank's slice of the table (with values, their
  // values too).
  ObjectTable table;
};

// One field's values of a brick for Labeling::add: its voxels packed as
// the mask, of dtype, unpacked as value * scale + offset.
struct FieldBrick {
  const void* data = nullptr;
  io::DType dtype = io::DType::u8;
  double scale = 1, offset = 0;
};

namespace detail {
struct LabelingInternals;  // label_kernel.hpp: what the library itself reaches inside
}

// The distributed labeling of a BrickMap's bricks, whatever supplies their
// masks (files: run_label; a simulation's blocks: the in-situ hook).
// Collective where marked; every rank calls in the same order.
class Labeling {
 public:
  // fields: add() gets that many fields' values of each brick; with_shape:
  // the parts carry shape measures (either carries ObjectValues records,
  // max(fields, 1) a part).
  Labeling(const Comm& comm, BrickMap map, int connectivity, std::size_t fields, bool with_shape = false);
  Labeling(const Labeling&) = delete;
  Labeling& operator=(const Labeling&) = delete;
  ~Labeling();

  const BrickMap& map() const { return map_; }
  // This rank's bricks, ascending.
  const std::vector<std::int64_t>& mine() const { return mine_; }

  // Before the first add(), for a labeling without values, shape or table:
  // the objects that touch no face a brick shares with a neighbour are kept
  // or dropped (keep) and numbered in their brick, as runs of objects
  // (ObjectPart::segment); only those that touch such a face take part in
  // the merge, as 16-byte parts. finish() then takes the same keep
  // rule (seeded rules need seed() after add(): not here) and no table.
  // A volume of 2^48 voxels or more (what a 16-byte part counts) keeps the
  // full parts: the call does nothing.
  void number_in_bricks(const KeepRule& keep);
  // Before the first add(): the masks are class images (nonzero bytes are
  // classes 1..255): objects are the connected regions of one class, as
  // skimage.measure.label of the image with background 0.
  void set_classes(bool on);
  // Pass 1, one of mine() in ascending order: labels its mask (and folds in
  // its fields' values, one FieldBrick each), joins it to the bricks this
  // rank labelled before.
  void add(std::int64_t brick, const std::uint8_t* mask, std::span<const FieldBrick> fields = {});
  // After add(): flags the parts of the brick just added that hold a
  // nonzero byte of seeds (hysteresis; KeepRule::seeded keeps only those).
  void seed(const std::uint8_t* seeds);
  // Collective: joins across ranks, merges the parts into objects, numbers
  // them by their first voxel and drops those under min_voxels; returns
  // the figures, and with_table this rank's slice of the table.
  LabelSummary finish(const KeepRule& keep, bool with_table);
  LabelSummary finish(std::uint64_t min_voxels, bool with_table) { return finish(KeepRule{min_voxels}, with_table); }
  // Pass 2: ids[label] of a brick of mine() (ids[0] = 0), after finish();
  // valid until the next call.
  std::span<const std::uint64_t> ids(std::int64_t brick) const;
  // Pass 2: writes the labels of a brick of mine() into out (its voxels,
  // packed as its mask), after finish(): ids(brick)[label] over each
  // object, 0 for the background. mask: the brick's, as add() had it; it is
  // labelled again unless it is the brick labelled last (by add() or
  // paint()), and then not read. T: std::uint8_t, std::uint16_t,
  // std::uint32_t or std::uint64_t.
  template <class T>
  void paint(std::int64_t brick, const std::uint8_t* mask, T* out);
  // Bytes held now for faces waiting for a neighbour (docs/label.md's bound).
  std::uint64_t face_bytes() const;
  // What this labeling holds for the merge, and will add to it: its parts
  // (with values), their joins and waiting faces, and per part the merge's
  // root, id and order (24 bytes).
  std::uint64_t held_bytes() const;
  std::uint64_t part_count() const;

 private:
  struct State;
  friend struct detail::LabelingInternals;
  const Comm& comm_;
  BrickMap map_;
  int connectivity_;
  std::size_t fields_;
  bool with_shape_;
  std::size_t records_;  // ObjectValues a part: max(fields, 1) with fields or a shape, else 0
  std::vector<std::int64_t> mine_;
  State* state_;  // the parts, joins, faces and ids, and the brick labeler
};

// --- The job over files -----------------------------------------------------

// --periodic's axes: any of z, y and x, with or without commas ("x",
// "z,y", "zyx"); throws naming what is not an axis.
std::array<bool, 3> parse_periodic(const std::string& text);
// "z,x" (empty when none).
std::string periodic_text(const std::array<bool, 3>& periodic);

// A field of the object table: a volume voxel for voxel the input's, or
// an expression of a file's variables (hints "expr=..."), and the name of
// its columns (NAME_min, ...; `value_min`, ... for one field not named).
struct ValueField {
  std::string name = "value";
  bool named = false;       // named by the user (FILE:VAR, NAME=EXPR)
  std::string file;         // the volume, or the file the expression reads
  io::Selection selection;  // its variable, step or expression
};
// The column prefix of each field: "value" for one field not named, else
// its name. Throws on two of one name, or a name that cannot head a column.
std::vector<std::string> field_columns(const std::vector<ValueField>& fields);

// FILE or FILE:VAR (a colon names a variable where the text is no file
// itself and what comes before the colon is): (file, variable or "").
std::pair<std::string, std::string> file_and_variable(const std::string& text);

// What --values and --values-expr ask for (label_fields.cpp).
struct FieldRequest {
  std::vector<std::string> values;       // FILE or FILE:VAR, each a field (NAME: VAR, else the file's name)
  std::vector<std::string> expressions;  // [NAME=]EXPR, each a field (NAME: expr, expr2, ...)
  std::string variable;                  // the variable of the one FILE (--values-var)
  std::optional<std::int64_t> time;      // the step of the fields' 4D variables (--values-time)
  // The expressions read the variables of the one FILE given without :VAR
  // (which is then no field itself), else those of input, at the input's
  // step and files (input_selection: its step and glob).
  std::string input;
  io::Selection input_selection;
};
// The fields in order: the files', then the expressions'. Throws, naming
// it, on a request that names no one field set.
std::vector<ValueField> value_fields(const FieldRequest& request);

// label --split: touching objects apart by a watershed of the distance
// transform from markers (docs/split.md).
struct SplitOptions {
  bool on = false;
  // A labels volume of the input's shape: each nonzero id a marker. Empty:
  // the h-maxima of the distance, each connected maximum a marker.
  std::string markers;
  io::Selection markers_selection;  // its variable
  double h = 0.5;                   // h-maxima's height, in the distance's units
  // z, y, x units of the distance; nullopt: the input's own spacing.
  std::optional<std::array<double, 3>> spacing;
  // What floods instead of the distance (--split-on): empty, the distance;
  // "input", the input's own values; else a volume of the input's shape.
  // The flood is skimage.segmentation.watershed(FIELD, markers), lowest
  // values first, so bright boundaries are met last; with on_negate,
  // watershed(-FIELD). --h markers are then FIELD's h-minima (h-maxima of
  // -FIELD) within each component, in FIELD's units.
  std::string on_field;
  io::Selection on_selection;
  bool on_negate = false;
};

// --split-on's text into split: "input", "FILE[:VAR]", either after "-"
// (flood the negation); one line naming the option when it names nothing.
void parse_split_on(const std::string& text, SplitOptions& split);

struct LabelOptions {
  std::string input, output;
  bool mask_input = false;  // input is a 0/1 mask; else threshold with lo/hi
  // input is a u8 class image: objects are the connected regions of one
  // nonzero value (Labeling::set_classes); no threshold, no operators.
  bool classes = false;
  SplitOptions split;
  // The volume the input stands for (the split's class image stands for
  // the file it was made from): the labels' geometry, attributes and
  // report take its description and name. Unset: the input's own.
  std::optional<io::VolumeInfo> source_info;
  std::string source_name;
  double lo = 0, hi = 0;
  std::string lo_rule, hi_rule;  // what chose lo and hi ("otsu", ...), for the report; empty: numbers
  // Hysteresis, open, close, fill holes between the threshold and the
  // labeling (operators.hpp's order; then min_voxels).
  MaskOperators operators;
  int connectivity = 26;
  // Axes z, y, x along which the volume wraps around (BrickMap::periodic).
  std::array<bool, 3> periodic{};
  std::string type = "auto";  // auto | u8 | u16 | u32 | u64
  std::string stats;          // CSV object table; empty: none
  // The mask that was labelled (after the operators, before min_voxels),
  // written from pass 1's read; format by its name; empty: none.
  std::string mask_output;
  std::string report;  // JSON report; empty: none
  std::uint64_t min_voxels = 0;
  // Per rank, the most that keeps pass 1's bricks (runs and labels, about
  // 12 bytes a run of foreground) for pass 2, within the memory bound (by
  // default all it leaves); bricks past it are read and labelled again.
  std::uint64_t cache_bytes = std::numeric_limits<std::uint64_t>::max();
  // Memory per rank (--memory); 0: this node's available memory shared by
  // its ranks (io::memory_per_rank). The run-label cache shrinks to fit it.
  std::uint64_t memory_bytes = 0;
  // The table's fields (--values, --values-expr): each object's min, max,
  // mean, sum and value-weighted centroid of each.
  std::vector<ValueField> values;
  std::string backend = "auto", output_backend, format;
  io::Selection selection;  // which volume of input: --var, --time, --glob, --expr
  std::vector<std::string> hints, input_hints, output_hints;
  std::optional<io::Index3> brick_shape;
  Assignment assignment = Assignment::block;
  std::uint64_t seed = 0;
  bool force = false;
  ProgressMode progress = ProgressMode::automatic;
  ProgressObserver on_progress;  // rank 0: each rank's bricks as they finish (a front end's bars)
  std::string command_line;
};

struct LabelResult {
  io::VolumeInfo input_info;
  // --split: markers found (or read), components that held two or more
  // (flooded), and seconds of the distance and of the floods.
  struct Split {
    std::uint64_t markers = 0, flooded = 0, regions = 0;
    double distance_seconds = 0, flood_seconds = 0;
  };
  std::optional<Split> split;
  std::string backend, output_backend, output_format, label_type;
  std::string mask_format;     // of --mask-out
  std::string backend_reason;  // why --backend auto chose backend; empty when named
  double input_resident = -1;  // page-cache share auto sampled; -1: not sampled
  io::Index3 brick_shape{}, brick_grid{};
  std::int64_t brick_count = 0;
  std::uint64_t memory_bound = 0;  // per rank, the job held to it (rank 0's)
  std::string memory_source;       // where it came from
  std::uint64_t cache_bytes = 0;   // the run-label cache, after fitting it into the bound
  LabelSummary summary;
  std::uint64_t bytes_read = 0;         // of the input, all ranks and passes
  std::uint64_t bricks_read_again = 0;  // by pass 2: their runs were not kept
  // Per rank (rank 0 holds all): seconds of pass 1 (read and label), the
  // merge, pass 2 (relabel and write) and the peak resident set in bytes.
  struct Times {
    double label = 0, merge = 0, write = 0, total = 0;
    std::uint64_t max_rss = 0;
  };
  std::vector<Times> ranks;
  double seconds = 0;
  int comm_size = 1;
};

// Collective. Throws volseg::Error on every rank when any fails, leaving no
// labels, table or report behind.
LabelResult run_label(const Comm& comm, const LabelOptions& options);
std::string label_summary(const LabelOptions& options, const LabelResult& result);

// The label volume's description: type, dims, spacing and origin of input.
io::VolumeInfo labels_info(const io::VolumeInfo& input, io::DType type, std::uint64_t objects, int connectivity,
                           const std::string& source, const std::string& history);

}  // namespace volseg::segment
