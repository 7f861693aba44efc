// SPDX-License-Identifier: MIT
#include "volseg/session/transport.hpp"

#include <chrono>
#include <string>
#include <thread>

#include "volseg/io/error.hpp"
#include "volseg/session/session.hpp"

namespace volseg::session {
namespace {

// The request's length, by a non-blocking broadcast (a blocking and a
// non-blocking collective do not match: both sides use this one).
long long broadcast_length(const Comm& comm, long long length) {
  MPI_Request request = MPI_REQUEST_NULL;
  check_mpi(MPI_Ibcast(&length, 1, MPI_LONG_LONG, 0, comm.get(), &request), "MPI_Ibcast");
  auto pause = std::chrono::microseconds(50);
  for (int done = 0;;) {
    check_mpi(MPI_Test(&request, &done, MPI_STATUS_IGNORE), "MPI_Test");
    if (done) return length;
    std::this_thread::sleep_for(pause);
    pause = std::min(pause * 2, std::chrono::microseconds(5000));  // at most 5 ms late
  }
}

}  // namespace

void send_request(const Comm& comm, const Request& request) {
  std::string text = to_json(request).dump();
  broadcast_length(comm, static_cast<long long>(text.size()));
  check_mpi(MPI_Bcast(text.data(), static_cast<int>(text.size()), MPI_CHAR, 0, comm.get()), "MPI_Bcast");
}

Request receive_request(const Comm& comm) {
  std::string text(static_cast<std::size_t>(broadcast_length(comm, 0)), '\0');
  check_mpi(MPI_Bcast(text.data(), static_cast<int>(text.size()), MPI_CHAR, 0, comm.get()), "MPI_Bcast");
  return parse_request(Json::parse(text));
}

void serve(const Comm& comm) {
  Session session(comm);
  for (;;) {
    const Request request = receive_request(comm);
    if (std::holds_alternative<QuitRequest>(request)) break;
    session.execute(request);
  }
}

}  // namespace volseg::session
