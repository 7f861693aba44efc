// SPDX-License-Identifier: MIT
// `volseg label --split` (private to the segment library; split_job.cpp,
// called by run_label; docs/split.md).
#pragma once

#include "volseg/io/comm.hpp"
#include "volseg/segment/label.hpp"

namespace volseg::segment::detail {

// Collective: the distance of the mask, its components' markers and
// floods into a class image beside the output, then the labeling of that
// image (LabelOptions::classes) with every option of options.
LabelResult run_split_label(const Comm& comm, const LabelOptions& options);

}  // namespace volseg::segment::detail
