// SPDX-License-Identifier: MIT
// check: opens the input with a backend and its hints on every rank, as a
// segment job would, so an unknown hint or a bad value is refused before
// any work.
#include "../state.hpp"
#include "volseg/io/auto_backend.hpp"
#include "volseg/segment/expression.hpp"

namespace volseg::session::detail {

void handle(State& state, const CheckRequest& request, const Hooks&, Reply& reply) {
  state.require_volume();
  // The backend the segment job will use, so its hints are the ones checked.
  const std::string reading = io::resolve_backend(state.comm, request.backend, state.path, io::Access::stream).backend;
  auto reader = segment::open_input(reading, {state.path, state.selection}, state.comm, request.hints);
  reader->close();
  reply.data["backend"] = reading;
}

}  // namespace volseg::session::detail
