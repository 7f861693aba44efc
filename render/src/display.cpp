// SPDX-License-Identifier: MIT
// Apart from VTK's headers: Xlib defines macros (Status, Bool) that clash with them.
#include <X11/Xlib.h>

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <string>

#include "volseg/io/error.hpp"
#include "volseg/render/render.hpp"

namespace volseg::render {

void check_display(const Comm& comm) {
  collectively(comm, [&] {
    const char* name = std::getenv("DISPLAY");
    if (!name || !*name)
      throw Error("no X display (DISPLAY is not set): volseg renders through OpenGL on X; run it under "
                  "'xvfb-run -a' on a node without one (see the README)");
    // A busy X server (Xvfb compiling its keymap for the first client)
    // refuses connections with EAGAIN for a moment when many ranks of a node
    // connect at once: wait for it, up to about ten seconds.
    Display* display = nullptr;
    for (int attempt = 0; attempt < 100 && !display; ++attempt) {
      errno = 0;
      display = XOpenDisplay(name);
      if (display) break;
      ::usleep(static_cast<useconds_t>(std::min(20000 * (attempt + 1), 200000)));
    }
    if (!display)
      throw Error("cannot open the X display '" + std::string(name) + "' on rank " + std::to_string(comm.rank()) +
                  "; run under 'xvfb-run -a' on a node without one");
    XCloseDisplay(display);
  });
}

}  // namespace volseg::render
