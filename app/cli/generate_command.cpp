// SPDX-License-Identifier: MIT
// `volseg generate`: a synthetic volume with a known answer, written in parallel.
#include <charconv>
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
    sub->add_option("--field", field_,
                    "shells | smooth | noise | spheres (balls in touching groups of 1-4, each group clear of the "
                    "others; the balls listed in NAME.spheres.csv)")
        ->capture_default_str();
    sub->add_option("--dims", dims_, "Z,Y,X or N for a cube")->capture_default_str();
    sub->add_option("--dtype", dtype_, "i8 | u8 | i16 | u16 | i32 | u32 | i64 | u64 | f32 | f64")
        ->capture_default_str();
    sub->add_option("--endian", endian_, "little | big")->capture_default_str();
    sub->add_option("--shell-width", shell_width_, "Voxels per shell (shells)")->capture_default_str();
    sub->add_option("--seed", seed_, "Seed (noise, spheres)")->capture_default_str();
    sub->add_option("--count", count_, "How many balls (spheres)")->capture_default_str();
    sub->add_option("--radius", radius_,
                    "MIN,MAX or R: the balls' radii in whole voxels (spheres; default: MAX the largest R for which "
                    "count balls of radius R fill half the box their centres may take, MIN = ceil(MAX/2))");
    sub->add_option("--backend", backend_, "Backend that writes it (default: by format)");
    sub->add_option("--hint", hints_, "Backend hint key=value (repeatable)");
    sub->add_option("--trace", trace_, "Record every I/O call into this CSV file (docs/trace.md)");
    sub->add_flag("--force", force_, "Replace an existing output");
    verbosity_.add_to(*sub);
    return sub;
  }

  void run(const Context& context) override {
    const Comm& comm = context.comm;
    datasets::FieldSpec spec = field_spec();
    const io::VolumeInfo info = planned_volume(spec, context.command_line);
    // The balls, placed the same on every rank, before anything is written.
    std::string spheres_path;
    if (spec.field == datasets::Field::spheres) {
      spec.balls = datasets::place_spheres(spec, info.dims);
      spheres_path = spheres_csv_path();
      collectively(comm, [&] {
        if (comm.rank() == 0) io::refuse_existing(spheres_path, force_);
      });
    }
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
    // The balls beside the volume, once it is whole.
    if (!spheres_path.empty())
      collectively(comm, [&] {
        if (comm.rank() == 0) io::write_file_atomically(spheres_path, datasets::spheres_csv(spec.balls));
      });
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
  // The field the options describe (for spheres --radius parsed; the
  // ranges are checked by datasets::sphere_radii).
  datasets::FieldSpec field_spec() const {
    datasets::FieldSpec spec;
    spec.field = datasets::parse_field(field_);
    spec.shell_width = shell_width_;
    spec.seed = seed_;
    spec.count = count_;
    if (spec.field == datasets::Field::spheres && !radius_.empty()) {
      // MIN,MAX or R, whole numbers.
      std::vector<std::int64_t> values;
      for (std::size_t begin = 0; begin <= radius_.size();) {
        const std::size_t end = std::min(radius_.find(',', begin), radius_.size());
        std::int64_t value = 0;
        auto [stop, ec] = std::from_chars(radius_.data() + begin, radius_.data() + end, value);
        if (ec != std::errc() || stop != radius_.data() + end)
          throw Error("--radius '" + radius_ + "': expected MIN,MAX or R in whole voxels");
        values.push_back(value);
        begin = end + 1;
      }
      if (values.size() > 2) throw Error("--radius '" + radius_ + "': expected MIN,MAX or R in whole voxels");
      spec.radius_min = values.front();
      spec.radius_max = values.back();
      // Both 0 would ask for the default: refused here like any radius below 1.
      if (spec.radius_max < 1 || spec.radius_min < 1)
        throw Error("--radius " + radius_ + ": radii must be at least 1 voxel");
    }
    return spec;
  }

  // The volume the options describe, checked before anything is written.
  io::VolumeInfo planned_volume(const datasets::FieldSpec& spec, const std::string& command_line) const {
    io::VolumeInfo info;
    auto dtype = io::parse_dtype(dtype_);
    if (!dtype) throw Error("unknown dtype '" + dtype_ + "' (known: i8, u8, i16, u16, i32, u32, i64, u64, f32, f64)");
    info.dtype = *dtype;
    if (endian_ != "little" && endian_ != "big") throw Error("unknown byte order '" + endian_ + "' (little or big)");
    info.byte_order = endian_ == "little" ? io::ByteOrder::little : io::ByteOrder::big;
    info.dims = segment::parse_shape(dims_);
    io::check_volume_size(info.dims, info.dtype, "--dims " + dims_);
    const auto field = spec.field;
    info.variable = variable_.empty() ? field_ : variable_;
    info.attributes["field"] = field_;
    info.attributes["history"] = command_line;
    if (field == datasets::Field::shells) info.attributes["shell_width"] = std::to_string(shell_width_);
    if (field == datasets::Field::noise || field == datasets::Field::spheres)
      info.attributes["seed"] = std::to_string(seed_);
    if (field == datasets::Field::spheres) {
      const auto radii = datasets::sphere_radii(spec, info.dims);  // throws on a bad --count or --radius
      info.attributes["count"] = std::to_string(spec.count);
      info.attributes["radius"] = std::to_string(radii[0]) + "," + std::to_string(radii[1]);
    }
    return info;
  }

  // NAME.spheres.csv beside the output NAME.EXT (or the folder NAME.EXT/).
  std::string spheres_csv_path() const {
    std::filesystem::path path(path_);
    if (!path.has_filename()) path = path.parent_path();
    return path.replace_extension(".spheres.csv").string();
  }

  // As segment's: never over the volume, nor an existing file without --force.
  void check_trace_path() const {
    namespace fs = std::filesystem;
    std::vector<std::string> outputs{path_};
    if (fs::path(path_).extension() == ".nhdr") outputs.push_back(io::data_path_for_header(path_));
    if (datasets::parse_field(field_) == datasets::Field::spheres) outputs.push_back(spheres_csv_path());
    std::error_code ec;
    for (const auto& output : outputs)
      if (fs::weakly_canonical(trace_, ec) == fs::weakly_canonical(output, ec))
        throw Error("trace " + trace_ + " would overwrite the volume's " + output);
    if (fs::is_directory(trace_)) throw Error("trace " + trace_ + " is a directory");
    io::refuse_existing(trace_, force_, io::Streams::written_in_place);
  }

  std::string path_, field_ = "shells", dtype_ = "f32", endian_ = "little", dims_ = "256", backend_, format_, variable_,
                     trace_, radius_;
  std::int64_t shell_width_ = 8, count_ = 64;
  std::uint64_t seed_ = 1;
  std::vector<std::string> hints_;
  bool force_ = false;
  Verbosity verbosity_;
};

}  // namespace

std::unique_ptr<Command> make_generate_command() { return std::make_unique<GenerateCommand>(); }

}  // namespace volseg::cli
