// SPDX-License-Identifier: MIT
// The X display every render window of this process shares. Apart from VTK's
// headers: Xlib defines macros (Status, Bool) that clash with them.
#include "display.hpp"

#include <X11/Xlib.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <mutex>
#include <string>

#include "volseg/io/error.hpp"
#include "volseg/render/render.hpp"

namespace volseg::render {

void* x_display() {
  static std::mutex mutex;
  static Display* display = nullptr;
  std::lock_guard<std::mutex> lock(mutex);
  if (display) return display;
  const char* name = std::getenv("DISPLAY");
  if (!name || !*name)
    throw Error(
        "no X display (DISPLAY is not set): volseg renders through OpenGL on X; run it under "
        "'xvfb-run -a' on a node without one (see the README)");
  // A busy X server (Xvfb compiling its keymap for its first client) refuses
  // connections for a moment when many ranks of a node connect at once; VTK
  // would abort the process on that. Wait for it, up to about ten seconds,
  // and give VTK this one connection for every window.
  for (int attempt = 0; attempt < 60 && !display; ++attempt) {
    display = XOpenDisplay(name);
    if (!display) ::usleep(static_cast<useconds_t>(std::min(20000 * (attempt + 1), 200000)));
  }
  if (!display)
    throw Error("cannot open the X display '" + std::string(name) +
                "'; run under 'xvfb-run -a' on a node without one (see the README)");
  return display;
}

void check_display(const Comm& comm) {
  collectively(comm, [&] {
    try {
      x_display();
    } catch (const Error& e) {
      throw Error(std::string(e.what()) + " (rank " + std::to_string(comm.rank()) + ")");
    }
  });
}

}  // namespace volseg::render
