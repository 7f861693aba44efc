// SPDX-License-Identifier: MIT
// A private virtual X server (Xvfb) for a node whose ranks have no display:
// Debian's VTK draws through GLX only (no EGL, no OSMesa), so frames need an
// X server even offscreen. One rank of the node starts it; every rank of the
// node draws on it; it ends when the last of them has ended, however they
// end (normally, by a signal, SIGKILL, the watchdog, MPI_Abort).
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

namespace volseg::render {

struct PrivateXServer {
  std::string display;    // ":N", for DISPLAY
  std::string authority;  // the cookie file, for XAUTHORITY
};

// The Xvfb program on PATH, or "" when there is none.
std::string find_xvfb();

// Starts Xvfb on a free display number (Xvfb's -displayfd) with a fresh
// MIT-MAGIC-COOKIE-1 in a private folder (mode 0700), and a keeper process
// that stops it and removes the folder once this process and every process
// of `node_ranks` (this node's other ranks that draw on it) have ended. The
// keeper holds the read end of a pipe only this process writes to, so even
// SIGKILL of this process ends the server. Throws volseg::Error naming what
// failed (with Xvfb's own last line when it did not start).
PrivateXServer start_private_x_server(const std::string& xvfb, const std::vector<pid_t>& node_ranks);

}  // namespace volseg::render
