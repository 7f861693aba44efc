// SPDX-License-Identifier: MIT
// The X display every render window of this process shares, and where it
// comes from: the user's DISPLAY, or a private Xvfb that volseg starts for
// each node whose ranks have none (Debian's VTK has neither EGL nor OSMesa:
// vtkRenderingOpenGLConfigure.h leaves VTK_OPENGL_HAS_EGL and
// VTK_OPENGL_HAS_OSMESA undefined, so GLX on some X server it is). Apart
// from VTK's headers: Xlib defines macros (Status, Bool) that clash with them.
#include "display.hpp"

#include <X11/Xlib.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <string>
#include <vector>

#include "private_x_server.hpp"
#include "volseg/io/error.hpp"
#include "volseg/render/render.hpp"

namespace volseg::render {

namespace {

std::mutex display_mutex;
Display* opened = nullptr;
// How this process draws, for the line rank 0 prints: "" until known.
std::string way;

bool display_set() {
  const char* name = std::getenv("DISPLAY");
  return name && *name;
}

// Collective over comm: every node where some rank has no DISPLAY gets one
// private Xvfb, started by its lowest rank, and every rank there without a
// DISPLAY draws on it. Throws the same error on every rank of the node when
// it cannot start (no Xvfb installed, Xvfb failed).
void provide_private_display(const Comm& comm) {
  MPI_Comm node_comm = MPI_COMM_NULL;
  check_mpi(MPI_Comm_split_type(comm.get(), MPI_COMM_TYPE_SHARED, comm.rank(), MPI_INFO_NULL, &node_comm),
            "MPI_Comm_split_type");
  Comm node(node_comm);
  MPI_Comm_free(&node_comm);
  int lacks = display_set() ? 0 : 1, node_lacks = 0;
  check_mpi(MPI_Allreduce(&lacks, &node_lacks, 1, MPI_INT, MPI_MAX, node.get()), "MPI_Allreduce");
  if (!node_lacks) return;
  const pid_t self = ::getpid();
  std::vector<pid_t> pids(static_cast<size_t>(node.size()));
  check_mpi(MPI_Gather(&self, 1, MPI_INT, pids.data(), 1, MPI_INT, 0, node.get()), "MPI_Gather");
  // Rank 0 of the node starts it; its answer is "+DISPLAY\nXAUTHORITY" or
  // "-error", the same on every rank of the node.
  std::string answer;
  if (node.rank() == 0) {
    try {
      const std::string xvfb = find_xvfb();
      if (xvfb.empty())
        throw Error(
            "no X display (DISPLAY is not set) and no Xvfb to start one: Debian's VTK draws through X "
            "only; install the xvfb package (apt-get install xvfb) or run where DISPLAY names an X server");
      pids.erase(pids.begin());  // the keeper watches this process through a pipe
      const PrivateXServer server = start_private_x_server(xvfb, pids);
      answer = "+" + server.display + "\n" + server.authority;
    } catch (const std::exception& e) {
      answer = std::string("-") + e.what();
    }
  }
  answer = node.broadcast(answer, 0);
  if (answer.empty() || answer[0] == '-') throw Error(answer.empty() ? "no private X server" : answer.substr(1));
  if (!lacks) return;
  const auto newline = answer.find('\n');
  const std::string display = answer.substr(1, newline - 1), authority = answer.substr(newline + 1);
  ::setenv("DISPLAY", display.c_str(), 1);
  ::setenv("XAUTHORITY", authority.c_str(), 1);
  way = "no X display (DISPLAY is not set): drawing on a private Xvfb, " + display +
        " (one per node, started by volseg, stopped with the job)";
}

}  // namespace

void* x_display() {
  std::lock_guard<std::mutex> lock(display_mutex);
  if (opened) return opened;
  const char* name = std::getenv("DISPLAY");
  if (!name || !*name)
    throw Error(
        "no X display (DISPLAY is not set): volseg starts a private Xvfb in its collective calls "
        "(render::check_display); this program drew before it called one");
  // A busy X server (Xvfb compiling its keymap for its first client) refuses
  // connections for a moment when many ranks of a node connect at once; VTK
  // would abort the process on that. Wait for it, up to about ten seconds,
  // and give VTK this one connection for every window.
  for (int attempt = 0; attempt < 60 && !opened; ++attempt) {
    opened = XOpenDisplay(name);
    if (!opened) ::usleep(static_cast<useconds_t>(std::min(20000 * (attempt + 1), 200000)));
  }
  if (!opened)
    throw Error("cannot open the X display '" + std::string(name) +
                "' (DISPLAY): no X server answers there; start it, or unset DISPLAY and volseg starts a "
                "private Xvfb of its own");
  if (way.empty()) way = "drawing on the X display " + std::string(name) + " (DISPLAY)";
  return opened;
}

std::string check_display(const Comm& comm, Drawing drawing) {
  collectively(comm, [&] {
    if (drawing == Drawing::window && !display_set())
      throw Error(
          "no X display (DISPLAY is not set) to show the window on; for pictures without a display "
          "give --screenshot or --window-shot with --quit");
  });
  int lacks = display_set() ? 0 : 1, any_lacks = 0;
  check_mpi(MPI_Allreduce(&lacks, &any_lacks, 1, MPI_INT, MPI_MAX, comm.get()), "MPI_Allreduce");
  if (any_lacks) collectively(comm, [&] { provide_private_display(comm); });
  collectively(comm, [&] { x_display(); });
  return display_way();
}

std::string display_way() {
  std::lock_guard<std::mutex> lock(display_mutex);
  return way;
}

}  // namespace volseg::render
