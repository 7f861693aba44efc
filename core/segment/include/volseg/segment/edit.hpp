// SPDX-License-Identifier: MIT
// `volseg edit`: a journal of edits (merge, delete, split, paint, erase)
// replayed on a labels volume, on any rank count, in bounded memory
// (docs/edit.md). The edits apply in the journal's order; each is a
// function of the labels the edits before it left.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "volseg/io/comm.hpp"
#include "volseg/io/selection.hpp"
#include "volseg/io/types.hpp"
#include "volseg/segment/progress.hpp"

namespace volseg::segment {

// One edit of a journal. Ids are stable: merge gives the group its
// smallest id, delete leaves its ids unused, split keeps the id for the
// part that holds the object's first voxel (file order) and numbers the
// others max id + 1, + 2, ... in file order of their first voxels, where
// max id is the largest id the labels ever held (deleted ones included).
struct Edit {
  enum class Op { merge, del, split, paint, erase };
  Op op = Op::merge;
  std::vector<std::uint64_t> ids;  // merge, delete
  std::uint64_t id = 0;            // split, paint
  std::optional<double> h;         // split by the h-maxima of the object's distance
  std::vector<io::Index3> seeds;   // split from these voxels (z, y, x), each a marker
  io::Index3 center{};             // paint, erase: z, y, x
  double radius = 0;               // paint, erase: voxels, Euclidean
};

// The largest ball radius a paint or erase may have, in voxels.
inline constexpr double kMostRadius = 256;

// A journal's edits ({"edits": [...]}), checked against a volume of dims:
// one line naming the edit's index (from 0) and field for anything wrong.
// `source` names the journal in those lines.
std::vector<Edit> parse_edits(const std::string& text, const io::Index3& dims, const std::string& source);
std::string read_journal(const std::string& path);

struct EditOptions {
  std::string input;  // labels: an unsigned (or signed, nonnegative) integer volume
  io::Selection selection;
  std::string journal;  // the JSON file (its text is read by rank 0 and broadcast)
  std::string output, format;
  // The object table of the edited labels (label --stats's columns, without
  // --values or shape); empty: none.
  std::string stats;
  std::string backend = "auto", output_backend;
  std::vector<std::string> hints, input_hints, output_hints;
  int connectivity = 26;                         // the split's flood and its unmarked pieces
  std::optional<std::array<double, 3>> spacing;  // of the split's distance; nullopt: the labels' own
  std::uint64_t memory_bytes = 0;                // 0: the node's share
  bool force = false;
  ProgressMode progress = ProgressMode::automatic;
  std::string command_line;
};

struct EditResult {
  std::size_t edits = 0;
  std::uint64_t splits_parts = 0;      // parts the splits made, in all
  std::vector<std::uint64_t> new_ids;  // the ids the splits gave, in order
  std::uint64_t max_id = 0;            // after the journal
  std::uint64_t objects = 0;           // --stats: the table's rows
  std::string backend, output_format, output_backend;
  io::Index3 brick_shape{};
  std::int64_t bricks = 0;
  double seconds = 0;
};

EditResult run_edit(const Comm& comm, const EditOptions& options);

// One split of an object of a labels file worked out and not written, for
// a front end to preview (the browser page's "Split"). Collective: every
// rank reads `box` (which holds the whole object) and gets the same parts.
struct SplitPreview {
  io::Index3 dims{};  // the labels'
  io::Extent box;
  std::vector<std::uint64_t> labels;  // box.voxels(), z-major: each voxel's part id, 0 outside the object
  std::vector<std::uint64_t> ids;     // the parts' ids in file order of their first voxels (edit.id first)
};
SplitPreview preview_split(const Comm& comm, const std::string& path, const io::Selection& selection,
                           const io::Extent& box, const Edit& edit, std::uint64_t next_id, int connectivity);

}  // namespace volseg::segment
