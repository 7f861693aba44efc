// SPDX-License-Identifier: MIT
// What the segment and label jobs share about their files (private to the
// segment library): outputs never over inputs, side outputs (report, trace,
// table) checked before the job, the output format, CF packing, tracing.
#pragma once

#include <filesystem>
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "volseg/io/comm.hpp"
#include "volseg/io/format.hpp"
#include "volseg/segment/operators.hpp"

namespace volseg::segment::detail {

// The files an output path will create: a raw header names its data file too.
std::vector<std::filesystem::path> output_files(const std::string& path);

// Compared by identity (links, "..", symlinks), not by spelling.
void refuse_output_over_input(const std::string& output, const std::vector<std::string>& input_files);

// --levels (the writer hint levels=) checked against the volume before the
// job starts: a multiscale output's levels, none for other formats.
void check_levels(io::FileFormat format, const std::vector<std::string>& output_hints, const io::Index3& dims);

// A report, trace or table: never over the inputs (taken), the output or
// each other, never over an existing file without force (streams such as
// /dev/null excepted), and its folder must be writable.
void check_side_output(const std::string& path, const std::string& what, const std::string& output, bool force,
                       std::vector<std::string> taken, const std::string& output_noun = "mask");

// The report's "backend_choice" when --backend auto chose (reason not
// empty): the backend, why, and the page-cache share it sampled (-1: none).
void add_backend_choice(nlohmann::json& report, const std::string& backend, const std::string& reason, double resident);

// The report's "operators": each operator (null or false when off), the
// order they ran in, and whether the seed range reaches outside [lo, hi]
// (allowed: only seeds inside the band can be in a component).
nlohmann::json operators_json(const MaskOperators& operators, double lo, double hi);
// The report's threshold rules: {"lo": "otsu", "hi": null}.
nlohmann::json rules_json(const std::string& lo_rule, const std::string& hi_rule);

std::vector<std::string> joined(std::vector<std::string> a, const std::vector<std::string>& b);

// A job's writer hints: the --hint ones the writing backend takes, the
// format's own, then --out-hint; chunks=brick (netcdf4, hdf5) becomes the
// job's brick shape.
std::vector<std::string> writer_hints(const io::Writing& writing, const std::vector<std::string>& hints,
                                      const std::vector<std::string>& output_hints, const io::Index3& shape);

// The input's chunks, as BrickLayout::job_shape aligns bricks to them, unless
// the output needs bricks of whole rows (.nii.gz: a gzip member a brick, one
// run of the file each), which job_shape's default shape gives.
std::optional<io::Index3> chunks_for_bricks(const std::optional<io::Index3>& input_chunks, io::FileFormat output);

// CF packing of stored values: value = stored * scale + offset.
struct Packing {
  double scale = 1, offset = 0;
  bool packed() const { return scale != 1 || offset != 0; }
  // The stored-value range that unpacks into [lo, hi].
  std::pair<double, double> to_stored(double lo, double hi) const {
    double a = (lo - offset) / scale, b = (hi - offset) / scale;
    return scale > 0 ? std::pair{a, b} : std::pair{b, a};
  }
  std::pair<double, double> to_values(double low, double high) const {
    double a = low * scale + offset, b = high * scale + offset;
    return scale > 0 ? std::pair{a, b} : std::pair{b, a};
  }
};

// Tracing is on for one job only, also when it fails.
class TraceSession {
 public:
  TraceSession(const Comm& comm, bool on);
  ~TraceSession();
  TraceSession(const TraceSession&) = delete;
  TraceSession& operator=(const TraceSession&) = delete;

 private:
  bool on_;
};

}  // namespace volseg::segment::detail
