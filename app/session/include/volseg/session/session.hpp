// SPDX-License-Identifier: MIT
// What every rank of a GUI session does. Rank 0's window sends requests (JSON
// objects with a "kind"); rank 0's worker thread broadcasts each one and every
// rank executes it through the libraries the command line uses (io, segment,
// pyramid, render). No Qt here: the window only sees Replies.
//
// Requests, and what their reply carries on rank 0:
//   open     {path, var? or expr? or where?, time?, backend?, pyramid_dir?}
//            -> info text, variables, dims, levels, value range and the
//               full-resolution histogram (the pyramid's, built on first open)
//   check    {backend, hints[]}   -> ok, or the error opening the input gives
//   segment  {lo, hi, output, format?, backend?, hints[]}
//            -> stats, per-rank times, summary, trace rows; the mask then
//               shows in render and slices
//   render   {width, height, level ("auto" | N), camera{azimuth, elevation,
//            zoom}, modes{volume, mask, slices}, lo?, hi?, slice_at[3],
//            annotations, memory} -> an image and the level drawn
//   slices   {at[3], max_side}    -> three planes (values and mask) at one level
//   label    {output, connectivity?, min_voxels?, force?}
//            -> the objects of the mask and their table (the largest 20000)
//   surface  {lo?, hi?, object?, max_side?}
//            -> a coarse surface (Surface) of the mask, of the band lo..hi
//               before a mask exists, or of one labelled object
//   close    {}                   -> forgets the volume
//   quit     {}                   (the serving loop ends)
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
#include "volseg/pyramid/pyramid.hpp"
#include "volseg/render/render.hpp"
#include "volseg/segment/cancel.hpp"
#include "volseg/segment/progress.hpp"

namespace volseg::session {

using Json = nlohmann::json;

// Three axis planes through a point: 0 is the z plane (y rows, x columns),
// 1 the y plane (z rows, x columns), 2 the x plane (z rows, y columns).
struct Planes {
  int level = 0;
  io::Index3 dims{};                 // of the level
  std::array<std::int64_t, 3> at{};  // the plane indices: z, y, x
  std::array<int, 3> rows{}, columns{};
  std::array<std::vector<float>, 3> values;       // NaN where invalid
  std::array<std::vector<std::uint8_t>, 3> mask;  // empty: no mask yet
  std::array<double, 3> spacing{1, 1, 1};         // x, y, z of the level
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
  std::string kind;
  std::string error;  // empty: done
  bool cancelled = false;
  double seconds = 0;  // executing it, on rank 0
  Json data;
  render::Image image;             // render
  std::shared_ptr<Planes> planes;  // slices
  std::shared_ptr<Surface> surface;
};

// Rank 0's ties to the window while a request runs.
struct Hooks {
  const segment::CancelFlag* cancel = nullptr;
  segment::ProgressObserver progress;
};

class Session {
 public:
  explicit Session(const Comm& comm);  // collective
  ~Session();                          // collective (the renderer)
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  // Collective: every rank calls it with the same request.
  Reply execute(const Json& request, const Hooks& hooks = {});

 private:
  void open(const Json& request, Reply& reply);
  void check(const Json& request, Reply& reply);
  void segment(const Json& request, const Hooks& hooks, Reply& reply);
  void draw(const Json& request, Reply& reply);
  void add_meshes(const Json& meshes, render::FrameSettings& frame);
  void slices(const Json& request, Reply& reply);
  void label(const Json& request, const Hooks& hooks, Reply& reply);
  void surface(const Json& request, Reply& reply);
  Surface object_surface(std::int64_t id, std::int64_t max_side) const;
  void close();

  Comm comm_;
  // the open volume
  std::string path_, backend_ = "auto", pyramid_dir_;
  std::vector<std::string> selection_;                        // var=, time=
  std::array<std::optional<io::Coordinate>, 3> coordinates_;  // the input's (CF), x, y, z
  std::optional<io::Index3> resampled_dims_;                  // an uneven axis: the uniform grid it is drawn on
  std::optional<pyramid::Pyramid> pyramid_, mask_pyramid_;
  std::string mask_;
  std::array<double, 2> range_{0, 1};
  // the labels of the mask, and each listed object's box (z, y, x lo, then hi)
  std::string labels_;
  std::map<std::int64_t, std::array<std::int64_t, 6>> boxes_;
  // the renderer and the pieces it has drawn (a coarse one for camera drags
  // and a fine one), keyed by level and mask
  std::unique_ptr<render::Renderer> renderer_;
  // Objects' meshes a frame draws ("meshes": {"folder", "ids"}), read once.
  std::map<std::pair<std::string, std::uint64_t>, std::shared_ptr<const render::ObjectSurface>> surfaces_;
  std::map<std::pair<int, std::string>, render::Piece> pieces_;
  std::pair<int, std::string> shown_{-1, ""};
  std::optional<std::array<double, 2>> shown_threshold_;
};

// The loop of ranks other than 0: execute what rank 0 broadcasts until quit.
void serve(const Comm& comm);

// Rank 0's request to every rank (send_request on rank 0, receive_request on
// the others). A rank waiting for the next request sleeps between polls
// instead of spinning in MPI_Bcast: an idle session leaves its cores to
// others (the browser drawing the page on the same node, other jobs).
void send_request(const Comm& comm, const std::string& request);
std::string receive_request(const Comm& comm);

}  // namespace volseg::session
