// SPDX-License-Identifier: MIT
#pragma once

namespace volseg::render {

// This process's connection to $DISPLAY (an Xlib Display*), opened once,
// waiting while the server is busy; throws volseg::Error when there is none.
// Every render window uses it, so VTK never opens one itself (and never
// aborts the process when that fails).
void* x_display();

}  // namespace volseg::render
