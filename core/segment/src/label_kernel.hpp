// SPDX-License-Identifier: MIT
// The labelling's kernel, private to the segment library (label.hpp is what
// its users see; docs/label.md, "The algorithm"):
//   BrickLabeler  one brick's own voxels: runs along x joined by union-find
//                 (label_brick.cpp)
//   PartCore      a part of an object as the merge needs it without a table
//   Chunked       the growing arrays that hold parts and their values
//   ObjectTable::Rows  a table's rows as the merge leaves them
#pragma once

#include <algorithm>
#include <bit>
#include <cstdint>
#include <new>
#include <span>
#include <type_traits>
#include <vector>

#include "volseg/io/memory.hpp"
#include "volseg/io/types.hpp"
#include "volseg/segment/label.hpp"

namespace volseg::segment {

// A part as the merge needs it when no table is asked for (the objects
// numbered in their bricks, Labeling::number_in_bricks): ObjectPart's first
// voxel, voxels (up to 2^48) and flags, in 16 bytes rather than 72.
struct PartCore {
  std::uint64_t first = 0;
  std::uint64_t voxels : 48 = 0;
  std::uint64_t border : 16 = 0;
  void merge(const PartCore& other) {
    first = std::min(first, other.first);
    voxels += other.voxels;
    border |= other.border;
  }
};
static_assert(sizeof(PartCore) == 16 && ObjectPart::wraps_x < (1u << 16));

// A growing array of plain records in chunks of at least 32 MiB: appending
// never moves what is there (no reallocation's double peak), each chunk is
// its own mapping (io::allocate_huge), so freeing hands it back to the
// system at once, and pages not yet written take no memory. The chunks are
// advised as huge pages: one fault per 2 MiB rather than one per 56 parts.
template <class T>
class Chunked {
  static_assert(std::is_trivially_copyable_v<T> && std::is_trivially_destructible_v<T>);

 public:
  static constexpr std::size_t bits = std::bit_width((std::size_t{33} << 20) / sizeof(T));
  static constexpr std::size_t chunk = std::size_t{1} << bits;
  Chunked() = default;
  Chunked(Chunked&&) noexcept = default;
  Chunked& operator=(Chunked&&) noexcept = default;
  std::size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  T& operator[](std::size_t i) { return reinterpret_cast<T*>(chunks_[i >> bits].get())[i & (chunk - 1)]; }
  const T& operator[](std::size_t i) const {
    return reinterpret_cast<const T*>(chunks_[i >> bits].get())[i & (chunk - 1)];
  }
  void push_back(const T& value) {
    if ((size_ >> bits) == chunks_.size()) {
      chunks_.push_back(io::allocate_huge(chunk * sizeof(T)));
    }
    ::new (&(*this)[size_]) T(value);
    ++size_;
  }
  // Keeps the first n (n <= size()), freeing the chunks past them.
  void shrink(std::size_t n) {
    size_ = std::min(n, size_);
    chunks_.resize((size_ + chunk - 1) >> bits);
  }
  void clear() { shrink(0); }

 private:
  std::vector<io::HugeBuffer> chunks_;
  std::size_t size_ = 0;
};

// A table's rows (ObjectTable): records in any order and the order of ids
// (empty: as stored); values holds `records` a part, in the parts' order.
struct ObjectTable::Rows {
  Chunked<ObjectPart> parts;
  Chunked<ObjectValues> values;
  std::size_t records = 1;
  std::vector<std::uint64_t> order;
  std::size_t at(std::size_t i) const { return order.empty() ? i : order[i]; }
};

// Labels the foreground (nonzero bytes) of one brick: 1..objects() in the
// order of each object's first voxel (x fastest). Reused brick after brick;
// memory is about 12 bytes per run of foreground along x.
// The rows before (z, y) that can touch it, and how far a run reaches into
// them along x (1: diagonally), by the neighbours the connectivity allows.
struct RowBefore {
  int dz, dy;
  std::int32_t reach;
};
template <int Connectivity>
constexpr auto rows_before() {
  constexpr std::int32_t edge = Connectivity >= 18, corner = Connectivity == 26;
  if constexpr (Connectivity == 6)
    return std::array<RowBefore, 2>{{{0, -1, 0}, {-1, 0, 0}}};
  else
    return std::array<RowBefore, 4>{{{0, -1, edge}, {-1, 0, edge}, {-1, -1, corner}, {-1, 1, corner}}};
}

class BrickLabeler {
 public:
  explicit BrickLabeler(int connectivity);
  // Classes: the mask's nonzero bytes are classes (1..255), and only
  // voxels of one class join (skimage.measure.label of a class image);
  // runs end where the class changes. Off: every nonzero byte is
  // foreground.
  void set_classes(bool on) { classes_ = on; }
  bool classes() const { return classes_; }
  // mask holds shape's voxels, packed x fastest.
  void label(const std::uint8_t* mask, const io::Index3& shape);
  std::uint32_t objects() const { return objects_; }
  const io::Index3& shape() const { return shape_; }

  struct Run {
    std::int32_t begin, end;
  };
  // A run and a label narrowed to 16 bits, for a brick at most 65535 wide
  // and of at most 65535 objects (KeptBricks).
  struct Run16 {
    std::uint16_t begin, end;
  };
  // A labelled brick as its runs and their labels: all that paint() needs,
  // without the mask. view() shows the brick last labelled, in runs and
  // labels (about 12 bytes a run of foreground and 4 a row); the passes keep
  // copies of it (KeptBricks) to paint in pass 2 without labelling again,
  // narrowed where they fit (runs16, labels16 in place of runs, labels).
  struct View {
    io::Index3 shape{};
    std::span<const Run> runs;
    std::span<const std::uint32_t> row_start, labels;
    std::uint32_t objects = 0;
    std::span<const Run16> runs16;
    std::span<const std::uint16_t> labels16;
    std::uint64_t bytes() const {
      return runs.size_bytes() + row_start.size_bytes() + labels.size_bytes() + runs16.size_bytes() +
             labels16.size_bytes();
    }
    // Writes ids[label] for every voxel (ids[0] for the background).
    template <class T>
    void paint(std::span<const std::uint64_t> ids, T* out) const;
  };
  View view() const { return {shape_, runs_, row_start_, labels_, objects_, {}, {}}; }

  // Appends the brick's parts of objects to parts (label L at the size
  // parts had plus L - 1); extent places the brick in a volume of dims.
  void measure(const io::Extent& extent, const io::Index3& dims, Chunked<ObjectPart>& parts) const;
  // What measure_in_brick() counts of the objects it keeps or drops itself.
  struct InBrick {
    std::uint64_t kept_voxels = 0, largest = 0, dropped = 0;
  };
  // Labeling::number_in_bricks' measure: the objects flagged in shared
  // (index = label) become parts (PartCore: first voxel, voxels,
  // touches_boundary);
  // the others are kept or dropped here (keep) and the kept ones go into
  // segments (ObjectPart::segment): runs of them in file order, cut at
  // each part and, unless the brick holds whole planes, at each row. slots
  // gets, per label - 1, the index of its part or segment among those this
  // brick appended (bit 31 set for a segment), or kNoSlot when dropped.
  static constexpr std::uint32_t kNoSlot = 0xffffffffu, kSegmentSlot = 0x80000000u;
  void measure_in_brick(const io::Extent& extent, const io::Index3& dims, const std::vector<std::uint8_t>& shared,
                        const KeepRule& keep, std::vector<std::uint32_t>& slots, Chunked<PartCore>& parts,
                        InBrick& figures) const;
  // Flags ObjectPart::seeded on the parts (label L at parts[base + L - 1])
  // of the brick last labelled whose runs hold a nonzero byte of seeds
  // (the brick's voxels, packed as its mask).
  void mark_seeds(const std::uint8_t* seeds, Chunked<ObjectPart>& parts, std::size_t base) const;
  // Folds the source values (the brick's voxels, native order, of dtype,
  // unpacked as value * scale + offset) into values[(label - 1) * stride],
  // zeroed by the caller (a record per object and field: values points at
  // the field's first).
  void measure_values(const void* source, io::DType dtype, double scale, double offset, const io::Extent& extent,
                      ObjectValues* values, std::size_t stride = 1) const;
  // Adds the brick's shape measures (second moments, exposed faces inside
  // the brick) to values[(label - 1) * stride]; extent places the brick.
  void measure_shape(const io::Extent& extent, ObjectValues* values, std::size_t stride = 1) const;
  // The labels on one face of the brick: axis 0 (z), 1 (y) or 2 (x), its low
  // or high side, packed over the other two axes in order.
  std::vector<std::uint32_t> face(int axis, bool high) const;
  // With classes: the class of each voxel of that face, packed as face()'s.
  std::vector<std::uint8_t> face_classes(int axis, bool high) const;
  // Writes ids[label] for every voxel (ids[0] for the background).
  template <class T>
  void paint(std::span<const std::uint64_t> ids, T* out) const {
    view().paint(ids, out);
  }

 private:
  void find_runs(const std::uint8_t* mask);
  void find_class_runs(const std::uint8_t* mask);
  template <int Connectivity>
  void join_rows();
  template <int Connectivity>
  void join_class_rows();

  int connectivity_;
  bool classes_ = false;
  io::Index3 shape_{};
  std::vector<Run> runs_;
  std::vector<std::uint8_t> run_class_;   // with classes: each run's
  std::vector<std::uint32_t> row_start_;  // runs of row r: [row_start_[r], row_start_[r + 1])
  std::vector<std::uint32_t> labels_;     // each run's label
  std::vector<std::uint32_t> first_run_;  // each label's first run (label - 1)
  std::vector<std::uint32_t> pairs_;      // join_rows: one row's touching runs, (i, k) pairs
  std::uint32_t objects_ = 0;
};

namespace detail {

// What the library's own code reaches inside a Labeling (labeling.cpp).
struct LabelingInternals {
  // The labeler of the brick labelled last (by add() or paint()): pass 1
  // keeps a copy of its view for pass 2 (KeptBricks).
  static const BrickLabeler& labeler(const Labeling& labeling);
};

}  // namespace detail

}  // namespace volseg::segment
