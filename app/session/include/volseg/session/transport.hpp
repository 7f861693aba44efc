// SPDX-License-Identifier: MIT
// Rank 0's requests to every rank: send_request on rank 0 (its worker
// thread), receive_request on the others, each request as its JSON
// (requests.hpp's to_json). A rank waiting for the next request sleeps
// between polls instead of spinning in MPI_Bcast: an idle session leaves its
// cores to others (the browser drawing the page on the same node, other jobs).
#pragma once

#include "volseg/io/comm.hpp"
#include "volseg/session/requests.hpp"

namespace volseg::session {

// Collective over comm (rank 0 sends, the others receive the same request).
void send_request(const Comm& comm, const Request& request);
Request receive_request(const Comm& comm);

// The loop of ranks other than 0: execute what rank 0 sends until quit.
void serve(const Comm& comm);

}  // namespace volseg::session
