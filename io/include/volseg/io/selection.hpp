// SPDX-License-Identifier: MIT
// What part of a file a job reads: a variable, a step, a folder's slices, or
// an expression over several files. Built once from the user's options (the
// command line, the GUI, the page's protocol, Python) and handed, typed, to
// open_reader and the jobs; string hints only tune a backend (cache=,
// nonblocking=).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "volseg/io/error.hpp"
#include "volseg/io/hints.hpp"

namespace volseg {

// A time series opened with no step chosen (no --time) where it has several:
// the caller may choose one itself (info describes step 0) instead of failing.
// Its kind survives an agreement (volseg::agree).
class StepRequired : public Error {
 public:
  using Error::Error;
};

}  // namespace volseg

namespace volseg::io {

struct Selection {
  std::string variable;              // --var: a NetCDF/Zarr variable or a raw file's array; empty: the only one
  std::optional<std::int64_t> step;  // --time: one step of a time axis; none: the file's default
  std::string glob;                  // --glob: a folder's TIFF slices
  // --expr / --where: a voxel expression over operands, or a condition
  // (--where) that selects voxels instead of computing values.
  std::string expression;
  bool condition = false;
  std::vector<std::string> operands;  // --operand name=file:var, in the user's order

  bool has_expression() const { return !expression.empty(); }
  // The same selection at another step (series jobs open each step in turn).
  Selection at_step(std::int64_t step) const;
  // The variable and step only: what one operand of an expression opens.
  Selection of_variable(const std::string& name) const;

  // Refusals of a backend that cannot honour a part of the selection, with
  // the messages users have seen since these were hints.
  void refuse_variable(std::string_view backend) const;
  void refuse_step(std::string_view backend) const;
  void refuse_glob(std::string_view backend) const;
  // Raw backends: neither a step nor a glob.
  void refuse_step_and_glob(std::string_view backend) const;

  // The variable and step as a pyramid's index records its source
  // (["var=T", "time=3"], the form indexes have always had); from_record
  // reads them back. Defined beside the hint parser (io/src/hints.cpp).
  std::vector<std::string> record() const;
  static Selection from_record(const std::vector<std::string>& items);

  bool operator==(const Selection&) const = default;
};

// What open_reader is asked to open.
struct OpenRequest {
  std::string path;
  Selection selection;
};

}  // namespace volseg::io
