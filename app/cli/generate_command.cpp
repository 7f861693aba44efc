// SPDX-License-Identifier: MIT
// `volseg generate`: a synthetic volume with a known answer, written in parallel.
#include <cstdio>
#include <filesystem>

#include "command.hpp"
#include "volseg/datasets/generate.hpp"
#include "volseg/io/error.hpp"
#include "volseg/io/files.hpp"
#include "volseg/io/format.hpp"
#include "volseg/io/nrrd.hpp"
#include "volseg/io/registry.hpp"
#include "volseg/io/trace.hpp"
#include "volseg/segment/segment.hpp"

namespace volseg::cli {
namespace {

class GenerateCommand final : public Command {
 public:
  CLI::App* add_to(CLI::App& app) override {
    auto* sub = app.add_subcommand("generate", "Write a synthetic volume with a known answer, in parallel");
    sub->add_option("output", path_, "Output: NAME.nhdr (raw, data in NAME.raw) or NAME.nc")->required();
    sub->add_option("--format", format_, "raw | cdf2 | cdf5 | netcdf4 (default: by extension)");
    sub->add_option("--var", variable_, "NetCDF variable name (default: the field's name)");
    sub->add_option("--field", field_, "shells | smooth | noise")->capture_default_str();
    sub->add_option("--dims", dims_, "Z,Y,X or N for a cube")->capture_default_str();
    sub->add_option("--dtype", dtype_, "i8 | u8 | i16 | u16 | i32 | u32 | i64 | u64 | f32 | f64")
        ->capture_default_str();
    sub->add_option("--endian", endian_, "little | big")->capture_default_str();
    sub->add_option("--shell-width", shell_width_, "Voxels per shell (shells)")->capture_default_str();
    sub->add_option("--seed", seed_, "Seed (noise)")->capture_default_str();
    sub->add_option("--backend", backend_, "Backend that writes it (default: by format)");
    sub->add_option("--hint", hints_, "Backend hint key=value (repeatable)");
    sub->add_option("--trace", trace_, "Record every I/O call into this CSV file (docs/trace.md)");
    sub->add_flag("--force", force_, "Replace an existing output");
    verbosity_.add_to(*sub);
    return sub;
  }

  void run(const Context& context) override {
    const Comm& comm = context.comm;
    const io::VolumeInfo info = planned_volume(context.command_line);
    const datasets::FieldSpec spec{datasets::parse_field(field_), shell_width_, seed_};
    const io::FileFormat format = io::output_format(path_, format_, std::nullopt, false, "output");
    io::Writing writing = io::writing_backend(format, "posix");
    if (!backend_.empty()) writing.backend = backend_;
    auto hint_list = hints_;
    hint_list.insert(hint_list.end(), writing.hints.begin(), writing.hints.end());
    const io::Hints hints = io::Hints::parse(hint_list);
    if (!trace_.empty()) {
      check_trace_path();
      io::trace::enable(comm);
    }
    auto writer = io::create_writer(writing.backend, {path_, info, force_}, comm, hints);
    auto progress = verbosity_.mode();
    datasets::generate(comm, spec, *writer, progress);
    writer->close();
    if (!trace_.empty()) {
      io::trace::disable();
      io::trace::write_gathered(comm, trace_);
    }
    if (comm.rank() == 0 && !verbosity_.quiet)
      std::printf("wrote %s (%lld x %lld x %lld %s, %.3f GB)\n", path_.c_str(), static_cast<long long>(info.dims[2]),
                  static_cast<long long>(info.dims[1]), static_cast<long long>(info.dims[0]),
                  std::string(io::dtype_name(info.dtype)).c_str(), static_cast<double>(info.bytes()) / 1e9);
  }

 private:
  // The volume the options describe, checked before anything is written.
  io::VolumeInfo planned_volume(const std::string& command_line) const {
    io::VolumeInfo info;
    auto dtype = io::parse_dtype(dtype_);
    if (!dtype) throw Error("unknown dtype '" + dtype_ + "' (known: i8, u8, i16, u16, i32, u32, i64, u64, f32, f64)");
    info.dtype = *dtype;
    if (endian_ != "little" && endian_ != "big") throw Error("unknown byte order '" + endian_ + "' (little or big)");
    info.byte_order = endian_ == "little" ? io::ByteOrder::little : io::ByteOrder::big;
    info.dims = segment::parse_shape(dims_);
    io::check_volume_size(info.dims, info.dtype, "--dims " + dims_);
    const auto field = datasets::parse_field(field_);
    info.variable = variable_.empty() ? field_ : variable_;
    info.attributes["field"] = field_;
    info.attributes["history"] = command_line;
    if (field == datasets::Field::shells) info.attributes["shell_width"] = std::to_string(shell_width_);
    if (field == datasets::Field::noise) info.attributes["seed"] = std::to_string(seed_);
    return info;
  }

  // As segment's: never over the volume, nor an existing file without --force.
  void check_trace_path() const {
    namespace fs = std::filesystem;
    std::vector<std::string> outputs{path_};
    if (fs::path(path_).extension() == ".nhdr") outputs.push_back(io::data_path_for_header(path_));
    std::error_code ec;
    for (const auto& output : outputs)
      if (fs::weakly_canonical(trace_, ec) == fs::weakly_canonical(output, ec))
        throw Error("trace " + trace_ + " would overwrite the volume's " + output);
    if (fs::is_directory(trace_)) throw Error("trace " + trace_ + " is a directory");
    io::refuse_existing(trace_, force_, io::Streams::written_in_place);
  }

  std::string path_, field_ = "shells", dtype_ = "f32", endian_ = "little", dims_ = "256", backend_, format_, variable_,
                     trace_;
  std::int64_t shell_width_ = 8;
  std::uint64_t seed_ = 1;
  std::vector<std::string> hints_;
  bool force_ = false;
  Verbosity verbosity_;
};

}  // namespace

std::unique_ptr<Command> make_generate_command() { return std::make_unique<GenerateCommand>(); }

}  // namespace volseg::cli
