// SPDX-License-Identifier: MIT
#include "job_outputs.hpp"

#include "volseg/io/downsample.hpp"
#include "volseg/io/hints.hpp"

#include <unistd.h>

#include <nlohmann/json.hpp>

#include "volseg/io/error.hpp"
#include "volseg/io/files.hpp"
#include "volseg/io/nrrd.hpp"
#include "volseg/io/registry.hpp"
#include "volseg/io/trace.hpp"

namespace volseg::segment::detail {

std::vector<std::filesystem::path> output_files(const std::string& path) {
  std::vector<std::filesystem::path> files{path};
  if (std::filesystem::path(path).extension() == ".nhdr") files.emplace_back(io::data_path_for_header(path));
  return files;
}

void check_levels(io::FileFormat format, const std::vector<std::string>& output_hints, const io::Index3& dims) {
  const auto asked = static_cast<int>(io::Hints::parse(output_hints).get_int("levels", 0));
  if (asked == 0) return;
  if (!io::format_traits(format).multiscale && asked > 1)
    throw Error("--levels " + std::to_string(asked) + ": a " + io::format_name(format) +
                " output holds one level; write .ome.zarr or precomputed for a multiscale one");
  io::level_count(dims, dims, asked);
}

void refuse_output_over_input(const std::string& output, const std::vector<std::string>& input_files) {
  namespace fs = std::filesystem;
  auto same = [](const fs::path& a, const fs::path& b) {
    std::error_code ec;
    if (fs::exists(a, ec) && fs::exists(b, ec)) return fs::equivalent(a, b, ec);
    return fs::weakly_canonical(a, ec) == fs::weakly_canonical(b, ec);
  };
  for (const auto& out : output_files(output))
    for (const auto& in : input_files)
      if (same(out, in)) throw Error("output " + out.string() + " is the input " + in);
}

void check_side_output(const std::string& path, const std::string& what, const std::string& output, bool force,
                       std::vector<std::string> taken, const std::string& output_noun) {
  namespace fs = std::filesystem;
  if (path.empty()) return;
  for (const auto& file : output_files(output)) taken.push_back(file.string());
  try {
    refuse_output_over_input(path, taken);
  } catch (const Error&) {
    throw Error(what + " " + path + " would overwrite the input, the " + output_noun + " or the report");
  }
  if (fs::is_directory(path)) throw Error(what + " " + path + " is a directory");  // before the job, not after
  io::refuse_existing(path, force, io::Streams::written_in_place);
  fs::path folder = fs::path(path).parent_path();
  if (folder.empty()) folder = ".";
  if (::access(folder.c_str(), W_OK) != 0) throw_errno("cannot write the " + what + " in", folder.string());
}

std::vector<std::string> joined(std::vector<std::string> a, const std::vector<std::string>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

TraceSession::TraceSession(const Comm& comm, bool on) : on_(on) {
  if (on_) io::trace::enable(comm);
}

TraceSession::~TraceSession() {
  if (on_) io::trace::disable();
}

void add_backend_choice(nlohmann::json& report, const std::string& backend, const std::string& reason,
                        double resident) {
  if (reason.empty()) return;
  report["backend_choice"] = {
      {"backend", backend},
      {"reason", reason},
      {"resident_fraction", resident >= 0 ? nlohmann::json(resident) : nlohmann::json(nullptr)}};
}

nlohmann::json operators_json(const MaskOperators& operators, double lo, double hi) {
  nlohmann::json out;
  out["order"] = "threshold, hysteresis, open, close, fill holes, min voxels";
  out["seed"] = operators.seed ? nlohmann::json{operators.seed->first, operators.seed->second} : nlohmann::json();
  out["seeds_outside_band"] = operators.seed && (operators.seed->first < lo || operators.seed->second > hi);
  out["connectivity"] = operators.connectivity;
  out["open"] = operators.open;
  out["close"] = operators.close;
  out["fill_holes"] = operators.fill_holes;
  out["ghost_layers"] = operators.ghost();
  return out;
}

nlohmann::json rules_json(const std::string& lo_rule, const std::string& hi_rule) {
  auto rule = [](const std::string& r) { return r.empty() ? nlohmann::json() : nlohmann::json(r); };
  return {{"lo", rule(lo_rule)}, {"hi", rule(hi_rule)}};
}

std::optional<io::Index3> chunks_for_bricks(const std::optional<io::Index3>& input_chunks, io::FileFormat output) {
  if (!io::format_traits(output).follows_input_chunks) return std::nullopt;
  return input_chunks;
}

std::vector<std::string> writer_hints(const io::Writing& writing, const std::vector<std::string>& hints,
                                      const std::vector<std::string>& output_hints, const io::Index3& shape) {
  auto all = joined(joined(io::hints_for(writing.backend, io::Role::writer, hints), writing.hints), output_hints);
  for (auto& hint : all)
    if (hint == "chunks=brick")
      hint = "chunks=" + std::to_string(shape[0]) + "," + std::to_string(shape[1]) + "," + std::to_string(shape[2]);
  return all;
}

}  // namespace volseg::segment::detail
