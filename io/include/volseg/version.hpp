// SPDX-License-Identifier: MIT
// Which volseg this is: written into every output's provenance (the
// volseg_version attribute beside history, NRRD's comments, the reports'
// JSON, the objects' tables, the images' PNG text) and printed by
// --version, so that any file says which volseg made it.
#pragma once

namespace volseg {

// The release and the git commit the build came from, as a PEP 440 version:
// "0.1.0+g1a2b3c4d5e6f", with ".dirty" when the tree had uncommitted
// changes to tracked files; "0.1.0" when built outside a git checkout.
const char* version();

}  // namespace volseg
