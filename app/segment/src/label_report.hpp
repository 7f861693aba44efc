// SPDX-License-Identifier: MIT
// What `volseg label` writes beside the labels (private to the segment
// library): the object table and the JSON report, on rank 0.
#pragma once

#include <string>

#include "volseg/io/volume.hpp"
#include "volseg/segment/label.hpp"

namespace volseg::segment {

// One CSV row per object, in id order (docs/label.md, "Object table").
void write_object_table(const std::string& path, const LabelSummary& summary, const io::VolumeInfo& info,
                        bool with_values);
// The report: the job's figures and the first rows of the table.
void write_label_report(const std::string& path, const LabelOptions& options, const LabelResult& result);

}  // namespace volseg::segment
