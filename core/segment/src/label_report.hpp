// SPDX-License-Identifier: MIT
// What `volseg label` writes beside the labels (private to the segment
// library): the object table, by every rank, and the JSON report.
#pragma once

#include <string>
#include <vector>

#include "volseg/io/comm.hpp"

#include "volseg/io/volume.hpp"
#include "volseg/segment/label.hpp"

namespace volseg::segment {

// The table's optional columns: each field's min, mean, max, sum and
// value-weighted centroid (fields: their column prefixes, field_columns()),
// the shape (ObjectShape). Either needs the parts' ObjectValues.
struct TableColumns {
  std::vector<std::string> fields;
  bool shape = false;
  bool periodic = false;  // a last column `wraps`: the axes along which an object reaches itself
};

// Collective. One CSV row per object, in id order (docs/label.md, "Object
// table"): each rank writes its slice of the table (summary.table) at its
// place in one file, committed when every rank has written.
void write_object_table(const Comm& comm, const std::string& path, const LabelSummary& summary,
                        const io::VolumeInfo& info, TableColumns columns);
// Rank 0. The table's columns of write_object_table (without fields or
// shape) for objects named by id, in the order given (ids may skip: an
// edited labels volume's), written to a temporary name and committed.
struct IdPart {
  std::uint64_t id = 0;
  ObjectPart part;
};
void write_object_rows(const std::string& path, const std::vector<IdPart>& rows, const io::VolumeInfo& info);
// Collective. The rows the report lists (the first 100,000 ids), on rank 0,
// and with fields their values (fields records a row).
void gather_report_rows(const Comm& comm, const LabelSummary& summary, std::size_t fields,
                        std::vector<ObjectPart>& rows, std::vector<ObjectValues>& values);
// Rank 0. The report: the job's figures and the first rows of the table.
void write_label_report(const std::string& path, const LabelOptions& options, const LabelResult& result,
                        const std::vector<ObjectPart>& table, const std::vector<ObjectValues>& table_values);

}  // namespace volseg::segment
