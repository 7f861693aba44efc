// SPDX-License-Identifier: MIT
// What a front end may ask a session, one type per kind. A front end builds
// these values itself (the Qt window) or parses them where its messages
// arrive (the page's protocol, web/src/protocol.cpp); the session's worker
// sends them to every rank as JSON (to_json, parse_request) and each rank
// runs the one handler of the kind (app/session/src/<kind>.cpp).
//
// The kinds are listed once, in `kinds` below: the session dispatches by it,
// the web server asks it which kinds are jobs and which may replace each
// other in the queue, and a test checks the page's messages against it.
#pragma once

#include <nlohmann/json.hpp>

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "volseg/io/selection.hpp"
#include "volseg/segment/operators.hpp"

namespace volseg::session {

using Json = nlohmann::json;

// Opens a volume on every rank and finds (or builds) its pyramid.
struct OpenRequest {
  std::string path;
  io::Selection selection;  // a variable (none: a file's only or first), a step, an expression
  std::string backend = "auto";
  std::string pyramid_dir;  // empty: beside the file (or the user's cache)
};

// Opens the input as a segment job with these would: refused hints and
// backends come back as the reply's error.
struct CheckRequest {
  std::string backend = "auto";
  std::vector<std::string> hints;
};

// Thresholds the open volume into a mask file (then its pyramid).
struct SegmentRequest {
  double lo = 0, hi = 0;
  segment::MaskOperators operators;  // hysteresis, open, close, fill holes
  std::string output, format;        // format: empty, by the output's extension
  std::string backend = "auto";
  std::vector<std::string> hints;
  bool force = false;
  std::string command_line;  // the mask's history; empty: the front end's name
};

// Draws a frame with every rank (IceT) and returns it on rank 0.
struct DrawRequest {
  int width = 512, height = 512;
  double azimuth = 30, elevation = 20, zoom = 1;
  bool volume = true, mask = true, slices = false;  // modes
  std::optional<std::array<double, 2>> threshold;   // lo, hi: the band's surface before a mask exists
  std::array<double, 3> slice_at{0.5, 0.5, 0.5};    // x, y, z fractions
  bool annotations = true;
  std::optional<int> level;  // none: auto, by `memory`
  std::uint64_t memory = std::uint64_t{512} << 20;
  std::optional<std::string> opacity;  // render's --opacity; none: a ramp (faint behind a mask)
  double mask_opacity = 1;
  std::string mask_surface = "smooth";
  std::array<double, 3> scale{1, 1, 1};  // x, y, z
  std::string title;
  std::string meshes;  // a `volseg mesh` folder whose objects `mesh_ids` are drawn
  std::vector<std::uint64_t> mesh_ids;
};

// Three axis planes (values and mask) at one level, read on rank 0.
struct SlicesRequest {
  std::array<double, 3> at{0.5, 0.5, 0.5};  // x, y, z fractions
  std::int64_t max_side = 768;
};

// Labels the mask's objects (as `volseg label MASK --mask-input`).
struct LabelRequest {
  std::string output;
  int connectivity = 26;
  std::uint64_t min_voxels = 0;
  bool force = false;
  std::string command_line;
};

// A coarse surface for a page to turn itself: of the mask, of the band
// lo..hi before a mask exists, or of one labelled object.
struct SurfaceRequest {
  std::optional<std::array<double, 2>> band;
  std::optional<std::int64_t> object;
  std::int64_t max_side = 128;
  std::size_t max_triangles = 100000;
};

// Splits one labelled object (volseg edit's "split"): previews its parts,
// or with `apply` adds the split to the session's journal and writes the
// labels again from the journal (as `volseg edit LABELS --edits JOURNAL`).
struct SplitRequest {
  std::int64_t object = 0;
  std::optional<double> h;                         // the h-maxima of its distance; none: seeds
  std::vector<std::array<std::int64_t, 3>> seeds;  // z, y, x
  int connectivity = 26;
  bool apply = false;
  std::optional<std::int64_t> base;  // with apply: the journal's length the asker saw (as EditRequest's)
};

// One edit of the labelled objects (volseg edit's merge, delete, paint and
// erase), or undo / redo of the last: the journal beside the labels gains
// (or loses) it and the labels are written again from the whole journal, as
// `volseg edit LABELS --edits JOURNAL` does in batch. `base`, when given,
// is the number of edits the asker's view holds: an edit based on a state
// that has changed since (another page's edit) is refused, never applied
// twice or lost.
struct EditRequest {
  std::string op;                        // merge | delete | paint | erase | undo | redo | save
  std::vector<std::int64_t> ids;         // merge, delete
  std::int64_t id = 0;                   // paint
  std::array<std::int64_t, 3> center{};  // paint, erase: z, y, x
  double radius = 0;                     // paint, erase: voxels
  std::optional<std::int64_t> base;      // the journal's length the asker saw
  int connectivity = 26;                 // of the journal's splits, when they are replayed
};

struct CloseRequest {};  // forgets the volume
struct QuitRequest {};   // ends every rank's serving loop

using Request = std::variant<OpenRequest, CheckRequest, SegmentRequest, DrawRequest, SlicesRequest, LabelRequest,
                             SurfaceRequest, SplitRequest, EditRequest, CloseRequest, QuitRequest>;

// Every kind, in the variant's order: its name in the session's JSON and
// replies, its message type in the page's protocol (empty: the page does not
// send it), whether it is a job (the page runs one at a time and shows it
// busy), and whether a newer one may replace one still queued (a view that
// turns asks faster than frames come).
struct Kind {
  std::string_view name, page_type;
  bool job, replaceable;
};
inline constexpr std::array<Kind, std::variant_size_v<Request>> kinds{{
    {"open", "open", true, false},
    {"check", "", false, false},
    {"segment", "segment", true, false},
    {"render", "frame", false, true},
    {"slices", "slices", false, true},
    {"label", "label", true, false},
    {"surface", "surface", false, false},
    {"split", "split", true, false},
    {"edit", "edit", true, false},
    {"close", "", false, false},
    {"quit", "", false, false},
}};

const Kind& kind_of(const Request& request);
// The kind of a page's message type; nullptr when there is none.
const Kind* kind_of_page_type(std::string_view type);

// The request as JSON ({"kind": name, ...}) and back. parse_request checks
// each field's type and range and throws volseg::Error with one line naming
// the field at fault; an unknown kind or field is an error, not ignored.
Json to_json(const Request& request);
Request parse_request(const Json& json);

}  // namespace volseg::session
