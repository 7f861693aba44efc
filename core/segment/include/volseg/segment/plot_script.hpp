// SPDX-License-Identifier: MIT
// volseg's Python scripts (the plots of trace-report and of label --track):
// installed in share/volseg beside the program, found there from the
// program's own place, or in the build tree's share/volseg; run by Debian's
// /usr/bin/python3 (the one with numpy and matplotlib).
#pragma once

#include <string>
#include <vector>

namespace volseg::segment {

// The path of script `name`; throws volseg::Error naming where it looked.
std::string script_path(const std::string& name);

// Runs script `name` with `arguments` and waits for it; throws volseg::Error
// with its exit status (its own message is on stderr above).
void run_script(const std::string& name, const std::vector<std::string>& arguments);

}  // namespace volseg::segment
