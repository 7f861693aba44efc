// SPDX-License-Identifier: MIT
#include "volseg/session/session.hpp"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>

#include "state.hpp"
#include "volseg/io/error.hpp"

namespace volseg::session {

Session::Session(const Comm& comm) : state_(std::make_unique<detail::State>(comm)) {}

Session::~Session() {
  state_->pieces.clear();
  state_->renderer.reset();  // collective: every rank's session ends together
}

Reply Session::execute(const Request& request, const Hooks& hooks) {
  Reply reply;
  reply.kind = std::string(kind_of(request).name);
  const auto start = std::chrono::steady_clock::now();
  try {
    collectively(state_->comm,
                 [&] { std::visit([&](const auto& r) { detail::handle(*state_, r, hooks, reply); }, request); });
  } catch (const std::exception& e) {
    reply.error = e.what();
    reply.cancelled = dynamic_cast<const Cancelled*>(&e) != nullptr;
    reply.image = {};
    reply.planes.reset();
  }
  reply.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return reply;
}

namespace detail {

render::Source State::field(bool with_pyramid) const {
  render::Source source;
  source.path = path;
  source.backend = backend;
  source.selection = selection;
  if (with_pyramid) source.pyramid = pyramid;
  source.coordinates = coordinates;  // reversed axes (depth) drawn as in `volseg render`
  return source;
}

render::Source State::mask_source(bool with_pyramid) const {
  render::Source source;
  source.path = mask;
  source.coordinates = coordinates;  // drawn on the field's grid
  if (with_pyramid) source.pyramid = mask_pyramid;
  return source;
}

void State::forget_mask() {
  mask.clear();
  labels.clear();
  boxes.clear();
  regions.clear();
  labels_source.clear();
  journal.clear();
  edited.clear();
  edits.clear();
  undone.clear();
  patches.clear();
  undone_patches.clear();
  max_id = 0;
  mask_pyramid.reset();
  ++mask_generation;
  labels_written();
  pieces.clear();
  shown = {-1, ""};
  shown_threshold.reset();
}

void State::close() {
  forget_mask();
  path.clear();
  pyramid.reset();
  ++volume_generation;
  selection = {};
}

void State::add_region(std::int64_t id, const Box& box) {
  constexpr std::size_t kMostRegions = 16;
  const auto join = [](Box& to, const Box& from) {
    for (int a = 0; a < 3; ++a) to[a] = std::min(to[a], from[a]), to[3 + a] = std::max(to[3 + a], from[3 + a]);
  };
  const auto [it, fresh] = boxes.try_emplace(id, box);
  if (!fresh) join(it->second, box);
  auto& list = regions[id];
  const auto inside = [&](const Box& outer) {
    for (int a = 0; a < 3; ++a)
      if (box[a] < outer[a] || box[3 + a] > outer[3 + a]) return false;
    return true;
  };
  if (std::any_of(list.begin(), list.end(), inside)) return;  // held already
  list.push_back(box);
  if (list.size() > kMostRegions) list.assign(1, it->second);
}

void State::labels_written(const std::vector<io::Extent>* written) {
  // Past a few regions reading the planes again costs less than patching them.
  constexpr std::size_t kMostRegions = 64;
  auto& cached = plane_cache.written;
  if (written != nullptr && cached.size() + written->size() <= kMostRegions) {
    cached.insert(cached.end(), written->begin(), written->end());
    return;
  }
  ++labels_generation;
  cached.clear();
}

void State::require_volume() const {
  if (!pyramid) throw Error("no volume is open");
}

void handle(State& state, const CloseRequest&, const Hooks&, Reply&) { state.close(); }

void handle(State&, const QuitRequest&, const Hooks&, Reply&) {}  // the serving loop ends before it

std::string shared_temporary(const Comm& comm, const std::string& what) {
  return comm.broadcast(comm.rank() == 0 ? (std::filesystem::temp_directory_path() /
                                            ("volseg-session-" + std::to_string(::getpid()) + "-" + what))
                                               .string()
                                         : std::string());
}

}  // namespace detail
}  // namespace volseg::session
