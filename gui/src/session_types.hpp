// SPDX-License-Identifier: MIT
// The window is one front end of volseg::session (the browser page of
// `volseg web` is the other): its names, as the window's code uses them.
#pragma once

#include "volseg/session/command_line.hpp"
#include "volseg/session/requests.hpp"
#include "volseg/session/session.hpp"
#include "volseg/session/threshold.hpp"
#include "volseg/session/transport.hpp"
#include "volseg/session/worker.hpp"

namespace volseg::gui {

using session::around_mode;
using session::below_edge;
using session::CheckRequest;
using session::count_in_range;
using session::DrawRequest;
using session::Hooks;
using session::Json;
using session::OpenRequest;
using session::otsu;
using session::Planes;
using session::Reply;
using session::Request;
using session::SegmentRequest;
using session::serve;
using session::Session;
using session::SlicesRequest;
using session::Worker;

}  // namespace volseg::gui
