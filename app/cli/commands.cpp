// SPDX-License-Identifier: MIT
#include "commands.hpp"

#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <iostream>
#include <sstream>

#include "volseg/datasets/generate.hpp"
#include "volseg/io/error.hpp"
#include "volseg/io/registry.hpp"

namespace volseg::cli {

void Commands::add_to(CLI::App& app) {
  add_info(app);
  add_backends(app);
  add_generate(app);
  add_segment(app);
  app.footer("Dimensions and brick shapes are given in file order Z,Y,X (x fastest), as ncdump lists them.\n"
             "Run 'volseg SUBCOMMAND --help' for the options of each.");
}

void Commands::run() {
  if (chosen_) chosen_();
}

void Commands::add_info(CLI::App& app) {
  auto* sub = app.add_subcommand("info", "Describe a volume: dimensions, type, byte order, attributes");
  sub->add_option("file", info_.path, "Volume (a raw volume is named by its .nhdr header)")->required();
  sub->add_option("--backend", info_.backend, "Backend that opens it")->capture_default_str();
  sub->callback([this] { chosen_ = [this] { run_info(); }; });
}

void Commands::add_backends(CLI::App& app) {
  auto* sub = app.add_subcommand("backends", "List the I/O backends and whether this build has them");
  sub->callback([this] { chosen_ = [this] { run_backends(); }; });
}

void Commands::add_generate(CLI::App& app) {
  auto* sub = app.add_subcommand("generate", "Write a synthetic volume with a known answer, in parallel");
  sub->add_option("output", generate_.path, "Output header, NAME.nhdr (data goes to NAME.raw)")->required();
  sub->add_option("--field", generate_.field, "shells | smooth | noise")->capture_default_str();
  sub->add_option("--dims", generate_.dims, "Z,Y,X or N for a cube")->capture_default_str();
  sub->add_option("--dtype", generate_.dtype, "u8 | i16 | u16 | i32 | f32 | f64")->capture_default_str();
  sub->add_option("--endian", generate_.endian, "little | big")->capture_default_str();
  sub->add_option("--shell-width", generate_.shell_width, "Voxels per shell (shells)")->capture_default_str();
  sub->add_option("--seed", generate_.seed, "Seed (noise)")->capture_default_str();
  sub->add_option("--backend", generate_.backend, "Backend that writes it")->capture_default_str();
  sub->add_option("--hint", generate_.hints, "Backend hint key=value (repeatable)");
  sub->add_flag("--force", generate_.force, "Replace an existing output");
  sub->add_flag("--quiet", generate_.quiet, "No progress and no summary");
  sub->add_option("--progress", generate_.progress, "auto | bar | lines | none (under mpirun auto means lines)")
      ->capture_default_str();
  sub->callback([this] { chosen_ = [this] { run_generate(); }; });
}

void Commands::add_segment(CLI::App& app) {
  auto* sub = app.add_subcommand("segment", "Threshold a volume into a u8 {0,1} mask: lo <= v <= hi");
  auto& o = segment_;
  sub->add_option("input", o.input, "Input volume (raw: its .nhdr header)")->required();
  sub->add_option("--lo", o.lo, "Lowest value in the mask")->required();
  sub->add_option("--hi", o.hi, "Highest value in the mask")->required();
  sub->add_option("--out", o.output, "Output mask (raw: NAME.nhdr)")->required();
  sub->add_option("--backend", o.backend, "Backend that reads (see 'volseg backends')")->capture_default_str();
  sub->add_option("--out-backend", o.output_backend, "Backend that writes (default: as --backend)");
  sub->add_option("--hint", o.hints, "Backend hint key=value (repeatable); an unknown key is an error");
  sub->add_option("--brick", segment_brick_, "Brick shape Z,Y,X (default: about 12 MiB of whole rows/planes)");
  sub->add_option("--assign", segment_assign_, "Bricks to ranks: block | cyclic | random")->capture_default_str();
  sub->add_option("--seed", o.seed, "Seed of --assign random")->capture_default_str();
  sub->add_option("--report", segment_report_, "Write a JSON report with per-rank timings here");
  sub->add_flag("--force", o.force, "Replace an existing mask and report");
  sub->add_flag("--quiet", segment_quiet_, "No progress and no summary");
  sub->add_option("--progress", segment_progress_, "auto | bar | lines | none (under mpirun auto means lines)")
      ->capture_default_str();
  sub->callback([this] { chosen_ = [this] { run_segment(); }; });
}

void Commands::run_info() {
  auto reader = io::open_reader(info_.backend, info_.path, comm_);
  const auto& info = reader->info();
  if (comm_.rank() == 0) {
    std::printf("%s\n", info_.path.c_str());
    std::printf("  dims (z,y,x):  %lld %lld %lld\n", static_cast<long long>(info.dims[0]),
                static_cast<long long>(info.dims[1]), static_cast<long long>(info.dims[2]));
    std::printf("  dtype:         %s, %s-endian\n", std::string(io::dtype_name(info.dtype)).c_str(),
                std::string(io::byte_order_name(info.byte_order)).c_str());
    std::printf("  size:          %llu bytes (%.3f GB)\n", static_cast<unsigned long long>(info.bytes()),
                static_cast<double>(info.bytes()) / 1e9);
    std::printf("  spacing (x,y,z): %g %g %g\n", info.spacing[0], info.spacing[1], info.spacing[2]);
    if (info.fill_value) std::printf("  _FillValue:    %.17g\n", *info.fill_value);
    if (info.valid_range) std::printf("  valid_range:   %.17g %.17g\n", (*info.valid_range)[0], (*info.valid_range)[1]);
    for (const auto& [key, value] : info.attributes) std::printf("  %s: %s\n", key.c_str(), value.c_str());
  }
  reader->close();
}

void Commands::run_backends() {
  if (comm_.rank() != 0) return;
  for (const auto& backend : io::builtin_registry().all()) {
    std::printf("%-12s %-28s %s%s\n", backend.name.c_str(), backend.formats.c_str(), backend.description.c_str(),
                backend.open ? "" : ("  [unavailable: " + backend.unavailable + "]").c_str());
  }
}

void Commands::run_generate() {
  auto& g = generate_;
  io::VolumeInfo info;
  auto dtype = io::parse_dtype(g.dtype);
  if (!dtype) throw Error("unknown dtype '" + g.dtype + "' (known: u8, i16, u16, i32, f32, f64)");
  info.dtype = *dtype;
  if (g.endian != "little" && g.endian != "big") throw Error("unknown byte order '" + g.endian + "' (little or big)");
  info.byte_order = g.endian == "little" ? io::ByteOrder::little : io::ByteOrder::big;
  info.dims = segment::parse_shape(g.dims);
  datasets::FieldSpec spec{datasets::parse_field(g.field), g.shell_width, g.seed};
  info.variable = g.field;
  info.attributes["field"] = g.field;
  info.attributes["history"] = command_line_;
  if (spec.field == datasets::Field::shells) info.attributes["shell_width"] = std::to_string(g.shell_width);
  if (spec.field == datasets::Field::noise) info.attributes["seed"] = std::to_string(g.seed);
  const io::Hints hints = io::Hints::parse(g.hints);
  auto writer = io::create_writer(g.backend, {g.path, info, g.force}, comm_, hints);
  auto progress = g.quiet ? segment::ProgressMode::none : segment::parse_progress_mode(g.progress);
  datasets::generate(comm_, spec, *writer, progress);
  writer->close();
  if (comm_.rank() == 0 && !g.quiet)
    std::printf("wrote %s (%lld x %lld x %lld %s, %.3f GB)\n", g.path.c_str(), static_cast<long long>(info.dims[2]),
                static_cast<long long>(info.dims[1]), static_cast<long long>(info.dims[0]),
                std::string(io::dtype_name(info.dtype)).c_str(), static_cast<double>(info.bytes()) / 1e9);
}

void Commands::run_segment() {
  auto& o = segment_;
  if (!segment_brick_.empty()) o.brick_shape = segment::parse_shape(segment_brick_);
  o.assignment = segment::parse_assignment(segment_assign_);
  o.progress = segment_quiet_ ? segment::ProgressMode::none : segment::parse_progress_mode(segment_progress_);
  o.command_line = command_line_;
  o.report = segment_report_;
  auto result = segment::run_segment(comm_, o);
  if (comm_.rank() != 0) return;
  if (!segment_quiet_) {
    std::fputs(segment::summary(o, result).c_str(), stdout);
    if (!segment_report_.empty()) std::printf("  report: %s\n", segment_report_.c_str());
  }
}

}  // namespace volseg::cli
