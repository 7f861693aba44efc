// SPDX-License-Identifier: MIT
// The command lines that redo what a session did, for a front end to show
// (the Qt window's Command box, the page's "Command line" panel): one
// function, so the GUI and the page say the same thing.
#pragma once

#include <string>

#include "volseg/session/requests.hpp"

namespace volseg::session {

// A word as a POSIX shell reads it back (quoted where it must be).
std::string shell_quoted(const std::string& word);

// The input of a command line: the file opened and its selection
// ("in.nc --var T --time 3", "in.nc --where 'T > 10'").
std::string input_arguments(const OpenRequest& open);

// `volseg segment` of the volume opened and the segment request: its
// selection, thresholds (exactly: they read back as the same doubles),
// operators, backend, hints, format and output.
std::string segment_command_line(const OpenRequest& open, const SegmentRequest& segment);
// `volseg label` of the mask the segment request wrote.
std::string label_command_line(const SegmentRequest& segment, const LabelRequest& label);
// `volseg edit` of the labels with the session's journal of edits.
std::string edit_command_line(const std::string& labels, const std::string& journal, const std::string& output);

}  // namespace volseg::session
