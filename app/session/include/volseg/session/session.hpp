// SPDX-License-Identifier: MIT
// What every rank of an interactive session does. Rank 0's front end (the
// Qt window, the web server) posts typed requests (requests.hpp) to its
// worker thread (worker.hpp), which sends each one to every rank
// (transport.hpp); every rank executes it through the libraries the command
// line uses (io, segment, pyramid, render), one handler a kind
// (app/session/src/handlers/). No Qt and no web server here.
//
// What a reply carries on rank 0, by kind:
//   open     info text, variables, dims, levels, value range and the
//            full-resolution histogram (the pyramid's, built on first open)
//   check    the backend a job would read with (or the error opening gives)
//   segment  stats, per-rank times, summary, trace rows; the mask then shows
//            in frames and slices
//   render   an image and the level drawn
//   slices   three planes (values and mask) at one level
//   label    the objects of the mask and their table (the largest 20000)
//   surface  a coarse surface of the mask, the band or one object
// Errors of any rank reach every rank (volseg::agree) and come back as the
// reply's error; the session goes on.
#pragma once

#include <nlohmann/json.hpp>

#include <array>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "volseg/io/comm.hpp"
#include "volseg/render/render.hpp"
#include "volseg/segment/cancel.hpp"
#include "volseg/segment/progress.hpp"
#include "volseg/session/requests.hpp"

namespace volseg::session {

// Three axis planes through a point: 0 is the z plane (y rows, x columns),
// 1 the y plane (z rows, x columns), 2 the x plane (z rows, y columns).
struct Planes {
  int level = 0;
  io::Index3 dims{};                 // of the level
  std::array<std::int64_t, 3> at{};  // the plane indices: z, y, x
  std::array<int, 3> rows{}, columns{};
  std::array<std::vector<float>, 3> values;       // NaN where invalid
  std::array<std::vector<std::uint8_t>, 3> mask;  // empty: no mask yet
  // The labels (edited ones after an edit) under the planes, each level
  // voxel its first full-resolution voxel's id; empty: not labelled yet.
  std::array<std::vector<std::uint32_t>, 3> labels;
  std::array<double, 3> spacing{1, 1, 1};  // x, y, z of the level
};

// A triangle surface drawn in the page (world coordinates, as render draws).
struct Surface {
  int level = 0;
  std::array<double, 6> bounds{};
  std::vector<float> points, normals;  // x, y, z
  std::vector<std::uint32_t> triangles;
  std::int64_t object = 0;
};

struct Reply {
  std::string kind;   // requests.hpp's kinds[].name
  Json tag;           // the front end's own label of the request, as posted
  std::string error;  // empty: done
  bool cancelled = false;
  double seconds = 0;  // executing it, on rank 0
  Json data;
  render::Image image;             // render
  std::shared_ptr<Planes> planes;  // slices
  std::shared_ptr<Surface> surface;
  // open: the request as it opened (with the variable and step it chose
  // where none was named), for a front end's command lines.
  std::optional<OpenRequest> opened;
};

// Rank 0's ties to the window while a request runs.
struct Hooks {
  const segment::CancelFlag* cancel = nullptr;
  segment::ProgressObserver progress;
};

namespace detail {
struct State;
}

class Session {
 public:
  explicit Session(const Comm& comm);  // collective
  ~Session();                          // collective (the renderer)
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  // Collective: every rank calls it with the same request.
  Reply execute(const Request& request, const Hooks& hooks = {});

 private:
  std::unique_ptr<detail::State> state_;
};

}  // namespace volseg::session
