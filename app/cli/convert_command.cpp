// SPDX-License-Identifier: MIT
// `volseg convert IN OUT`: a volume from any format volseg reads into any it writes.
#include <cstdio>

#include "command.hpp"
#include "volseg/io/error.hpp"
#include "volseg/segment/brick_layout.hpp"
#include "volseg/segment/convert.hpp"

namespace volseg::cli {
namespace {

class ConvertCommand final : public Command {
 public:
  CLI::App* add_to(CLI::App& app) override {
    auto* sub = app.add_subcommand(
        "convert",
        "Copy a volume into another format, bricked and parallel (values as stored: same type and geometry)");
    auto& o = options_;
    sub->add_option("input", o.input, input_help)->required();
    auto* out =
        sub->add_option("output", o.output,
                        "NAME.nhdr (raw), NAME.nii (NIfTI-1), NAME.vti (VTK image data), NAME.tif (TIFF), NAME.nc, "
                        "NAME.nc4, NAME.hdf5 (plain HDF5), NAME.zarr, NAME.ome.zarr or NAME.precomputed (also "
                        "precomputed://PATH)")
            ->required();
    accept_precomputed_url(*out, o.format);
    sub->add_option(
        "--format", o.format,
        "Output format: raw | cdf2 | cdf5 | netcdf4 | hdf5 | zarr | ome-zarr | precomputed (default: by extension)");
    selection_.add_to(*sub);
    sub->add_option("--backend", o.backend, "Backend that reads (auto: by format)")->capture_default_str();
    sub->add_option("--out-backend", o.output_backend, "Backend that writes (default: by format)");
    sub->add_option("--hint", o.hints, "Backend hint key=value (repeatable)");
    sub->add_option("--in-hint", input_hints_, "Hint for the reader only (repeatable)");
    sub->add_option("--out-hint", o.output_hints,
                    "Hint for the writer only (repeatable): compressor=, chunks= (Zarr), deflate= (NetCDF-4)");
    add_levels_option(*sub, o.output_hints);
    sub->add_option("--brick", brick_,
                    "Brick shape Z,Y,X (default: about 12 MiB of whole rows/planes, or the input's chunks)");
    sub->add_flag("--force", o.force, "Replace an existing output");
    verbosity_.add_to(*sub);
    return sub;
  }

  void run(const Context& context) override {
    auto& o = options_;
    if (!brick_.empty()) o.brick_shape = segment::parse_shape(brick_);
    o.progress = verbosity_.mode();
    o.command_line = context.command_line;
    o.selection = selection_.selection();
    o.input_hints = input_hints_;
    const auto result = segment::run_convert(context.comm, o);
    if (context.comm.rank() != 0) return;
    for (const auto& what : result.dropped)
      std::fprintf(
          stderr,
          "volseg: warning: %s: %s is not kept (the %s format has no place for it); those voxels are values there\n",
          o.output.c_str(), what.c_str(), result.output_format.c_str());
    if (verbosity_.quiet) return;
    const auto& info = result.info;
    std::printf("converted %s -> %s (%s, written by %s)\n", o.input.c_str(), o.output.c_str(),
                result.output_format.c_str(), result.output_backend.c_str());
    std::printf("  %lld x %lld x %lld %s, %lld bricks of %lld x %lld x %lld, read by %s, %.2f s (%.0f MB/s)\n",
                static_cast<long long>(info.dims[2]), static_cast<long long>(info.dims[1]),
                static_cast<long long>(info.dims[0]), std::string(io::dtype_name(info.dtype)).c_str(),
                static_cast<long long>(result.bricks), static_cast<long long>(result.brick_shape[2]),
                static_cast<long long>(result.brick_shape[1]), static_cast<long long>(result.brick_shape[0]),
                result.backend.c_str(), result.seconds,
                static_cast<double>(info.bytes()) / 1e6 / std::max(result.seconds, 1e-9));
    std::fflush(stdout);
  }

 private:
  segment::ConvertOptions options_;
  Verbosity verbosity_;
  std::string brick_;
  SelectionOptions selection_;
  std::vector<std::string> input_hints_;
};

}  // namespace

std::unique_ptr<Command> make_convert_command() { return std::make_unique<ConvertCommand>(); }

}  // namespace volseg::cli
