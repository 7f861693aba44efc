// SPDX-License-Identifier: MIT
#include "volseg/segment/convert.hpp"

#include <array>
#include <chrono>
#include <exception>
#include <vector>

#include "job_outputs.hpp"
#include "volseg/io/auto_backend.hpp"
#include "volseg/io/error.hpp"
#include "volseg/io/format.hpp"
#include "volseg/io/registry.hpp"
#include "volseg/io/watchdog.hpp"
#include "volseg/segment/brick_driver.hpp"
#include "volseg/segment/brick_layout.hpp"
#include "volseg/segment/expression.hpp"

namespace volseg::segment {
namespace {

// CDF-2 has bytes, shorts, ints, floats and doubles, all signed.
bool needs_wide_types(io::DType type) {
  return type == io::DType::u8 || type == io::DType::u16 || type == io::DType::u32 || type == io::DType::i64 ||
         type == io::DType::u64;
}

// The output's description: the input's, less what described the input's
// storage; refuses packing a format cannot record (its values would change
// meaning) and lists the missing-value markers it cannot (they become values).
io::VolumeInfo output_info(const io::VolumeInfo& input, io::FileFormat format, const ConvertOptions& options,
                           std::vector<std::string>& dropped) {
  io::VolumeInfo info = input;
  if (info.variable.empty()) info.variable = "data";
  for (auto it = info.attributes.begin(); it != info.attributes.end();) {
    const std::string& key = it->first;
    const bool storage =
        key.rfind("tiff_", 0) == 0 || key == "hdf5" || key == "_NCProperties" || key == "nifti_affine_from";
    it = storage ? info.attributes.erase(it) : std::next(it);
  }
  const io::FormatTraits& traits = io::format_traits(format);
  if ((info.scale_factor || info.add_offset) && !traits.netcdf)
    throw Error(options.input + ": its values are packed (value = stored * " +
                std::to_string(info.scale_factor.value_or(1.0)) + " + " +
                std::to_string(info.add_offset.value_or(0.0)) + "), which " + io::format_name(format) +
                " cannot record; convert to NetCDF (.nc, .nc4) to keep the stored values and their packing");
  if (!traits.keeps_markers) {
    if (info.fill_value) dropped.push_back("_FillValue");
    if (info.missing_value) dropped.push_back("missing_value");
    if (info.valid_range) dropped.push_back("valid_range");
  }
  // NetCDF places an axis by its coordinate variable: one made from the
  // spacing and origin where the input has none (a NRRD or NIfTI input;
  // ParaView and xarray then place the output as volseg placed the input).
  if (traits.keeps_coordinates)
    for (std::size_t xyz = 0; xyz < 3; ++xyz) {
      if (info.coordinates[xyz] || (info.spacing[xyz] == 1 && info.origin[xyz] == 0)) continue;
      io::Coordinate c;
      const auto name = info.attributes.find("dim" + std::to_string(2 - xyz));
      c.name = name != info.attributes.end() ? name->second : std::string(1, "xyz"[xyz]);
      for (std::int64_t k = 0; k < info.dims[2 - xyz]; ++k)
        c.values.push_back(info.origin[xyz] + static_cast<double>(k) * info.spacing[xyz]);
      info.set_coordinate(xyz, std::move(c));
    }
  info.attributes["history"] = options.command_line.empty() ? "volseg convert" : options.command_line;
  info.attributes["source_file"] = options.input;
  return info;
}

}  // namespace

ConvertResult run_convert(const Comm& comm, const ConvertOptions& options) {
  const auto start = std::chrono::steady_clock::now();
  ConvertResult result;
  const io::FileFormat input_format = io::detect_format(comm, options.input);
  result.backend = io::resolve_backend(comm, options.backend, input_format, options.input, io::Access::stream).backend;
  auto reader =
      open_input(result.backend, {options.input, options.selection}, comm,
                 detail::joined(io::hints_for(result.backend, io::Role::reader, options.hints), options.input_hints));
  const io::VolumeInfo& in = reader->info();
  const io::FileFormat format =
      io::output_format(options.output, options.format, input_format, needs_wide_types(in.dtype));
  result.output_format = io::format_name(format);
  io::Writing writing = io::writing_backend(format, result.backend);
  if (!options.output_backend.empty()) writing.backend = options.output_backend;
  result.output_backend = writing.backend;
  detail::refuse_output_over_input(options.output, reader->files());
  detail::check_levels(format, options.output_hints, in.dims);
  result.info = output_info(in, format, options, result.dropped);

  const bool chunked_output = io::format_traits(format).chunked;
  const io::Index3 shape = options.brick_shape.value_or(BrickLayout::job_shape(
      *reader, detail::chunks_for_bricks(reader->capabilities().chunks, format), chunked_output));
  const BrickLayout layout(in.dims, shape);
  result.brick_shape = layout.shape();
  result.bricks = layout.count();
  const auto writer_hints = detail::writer_hints(writing, options.hints, options.output_hints, shape);
  io::CreateRequest request{options.output, result.info, options.force, io::Partial::none};
  request.whole_planes = shape[1] == in.dims[1] && shape[2] == in.dims[2];
  request.bricks = shape;
  auto writer = io::create_writer(writing.backend, request, comm, io::Hints::parse(writer_hints));

  const bool collective = reader->capabilities().collective || writer->capabilities().collective;
  const auto bricks = assign_bricks(layout.count(), comm.rank(), comm.size(), Assignment::block, 0);
  {
    const io::watchdog::Phase phase("convert, the bricks");
    Progress progress(comm, "convert", layout.count(), options.progress);
    BrickDriver driver(comm, layout, bricks, {.progress = &progress, .bytes_per_voxel = io::dtype_size(in.dtype)});
    std::vector<std::byte> buffer(driver.largest_voxels() * io::dtype_size(in.dtype));
    std::exception_ptr error;
    try {
      driver.run(collective, [&](std::optional<std::size_t> k) {
        std::vector<io::Extent> extents;
        if (k) extents.push_back(driver.extent(*k));
        void* into[] = {buffer.data()};
        const void* from[] = {buffer.data()};
        if (reader->capabilities().collective)
          reader->read_all(extents, {into, extents.size()});
        else if (k)
          reader->read(extents[0], buffer.data());
        if (writer->capabilities().collective)
          writer->write_all(extents, {from, extents.size()});
        else if (k)
          writer->write(extents[0], buffer.data());
      });
    } catch (...) {
      error = std::current_exception();
    }
    progress.finish();
    agree(comm, error);
  }
  {
    const io::watchdog::Phase phase("convert, closing and committing the output");
    writer->close();
    reader->close();
  }
  result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return result;
}

}  // namespace volseg::segment
