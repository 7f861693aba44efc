// SPDX-License-Identifier: MIT
// `volseg distance` (distance.hpp): the column sweep over slabs whole along
// z, a temporary 16-bit volume of offsets, the plane sweep over groups of
// whole planes.
#include <unistd.h>
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <limits>
#include <sstream>

#include "distance_kernel.hpp"
#include "job_outputs.hpp"
#include "mask_chain.hpp"
#include "volseg/io/auto_backend.hpp"
#include "volseg/io/dtype_dispatch.hpp"
#include "volseg/io/error.hpp"
#include "volseg/io/files.hpp"
#include "volseg/io/format.hpp"
#include "volseg/io/memory.hpp"
#include "volseg/io/registry.hpp"
#include "volseg/io/rounds.hpp"
#include "volseg/io/watchdog.hpp"
#include "volseg/segment/brick_driver.hpp"
#include "volseg/segment/distance.hpp"
#include "volseg/segment/expression.hpp"
#include "volseg/segment/label.hpp"
#include "volseg/segment/segment.hpp"

namespace volseg::segment {
namespace {

using Clock = std::chrono::steady_clock;
double since(Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); }

std::string dims_text(const io::Index3& d) {
  return std::to_string(d[2]) + "x" + std::to_string(d[1]) + "x" + std::to_string(d[0]);
}

void check_distance_options(const DistanceOptions& options) {
  if (options.type != io::DType::f32 && options.type != io::DType::f64)
    throw Error("--type: distances are f32 or f64, not " + std::string(io::dtype_name(options.type)));
  if (options.spacing)
    for (const double s : *options.spacing)
      if (!(s > 0) || !std::isfinite(s)) throw Error("--spacing: every entry must be positive and finite");
  if ((options.slab_rows && *options.slab_rows < 1) || (options.plane_group && *options.plane_group < 1))
    throw Error("--slab-rows and --plane-group must be at least 1");
  if (!options.mask_input) {
    if (std::isnan(options.lo) || std::isnan(options.hi)) throw Error("thresholds must not be NaN");
    if (options.lo > options.hi) throw Error("lo > hi: --lo is above --hi");
  }
}

// What run_distance decides before its first sweep.
struct DistancePlan {
  std::unique_ptr<io::VolumeReader> reader;
  io::Writing writing;
  io::MemoryBound bound;
  std::array<double, 3> spacing{};
  io::Index3 slab{}, planes{};  // the two sweeps' brick shapes
};

// The rows of a slab and the planes of a group: each within a share of the
// bound (a quarter, and no more than 64 MiB: larger gains nothing), at
// least one, and enough items that every rank has one where the volume
// allows.
void choose_shapes(const Comm& comm, const DistanceOptions& options, DistancePlan& plan) {
  const io::VolumeInfo& info = plan.reader->info();
  const io::Index3 d = info.dims;
  const std::uint64_t process = io::resident_bytes();
  const std::uint64_t room = plan.bound.bytes > process ? plan.bound.bytes - process : 0;
  const std::uint64_t share = std::min<std::uint64_t>(room / 4, std::uint64_t{64} << 20);
  const auto ranks = static_cast<std::int64_t>(comm.size());
  // A slab's row: input, mask and offsets, and the operators' ghost layers.
  double row = static_cast<double>(d[0] * d[2]) * (static_cast<double>(io::dtype_size(info.dtype)) + 3);
  if (options.operators.any()) row *= 3 + 2 * options.operators.ghost();
  // A plane: offsets in, distances out, the y pass's offsets.
  const double plane = static_cast<double>(d[1] * d[2]) * (2.0 + static_cast<double>(io::dtype_size(options.type)) + 4);
  const double one = std::max(row, plane);
  if (one > static_cast<double>(room) / 2)
    throw Error("distance needs " + io::mib_text(process + static_cast<std::uint64_t>(one * 2)) +
                " per rank (this process " + io::mib_text(process) + ", and one row of " + dims_text({d[0], 1, d[2]}) +
                " voxels or one plane), more than its bound of " + io::mib_text(plan.bound.bytes) + " per rank (" +
                plan.bound.source + "): give more memory (--memory) or more nodes");
  auto count = [&](double unit, std::int64_t most) {
    const auto fit = std::max<std::int64_t>(1, static_cast<std::int64_t>(static_cast<double>(share) / unit));
    return std::clamp<std::int64_t>(std::min(fit, (most + ranks - 1) / ranks), 1, most);
  };
  plan.slab = {d[0], options.slab_rows ? std::min(*options.slab_rows, d[1]) : count(row, d[1]), d[2]};
  plan.planes = {options.plane_group ? std::min(*options.plane_group, d[0]) : count(plane, d[0]), d[1], d[2]};
}

DistancePlan plan_distance(const Comm& comm, const DistanceOptions& options, DistanceResult& result) {
  check_distance_options(options);
  const io::FileFormat input_format = io::detect_format(comm, options.input);
  // Slabs whole along z are strided in the file and copied into the
  // sweep's buffer: read (pread), not mapped, so that a slab's window over
  // the whole file never counts in the rank's memory.
  const io::AutoChoice choice =
      io::resolve_backend(comm, options.backend, input_format, options.input, io::Access::copy);
  result.backend = choice.backend;
  const io::FileFormat output_format = io::output_format(options.output, options.format, input_format, false);
  result.output_format = io::format_name(output_format);
  DistancePlan plan;
  plan.writing = io::writing_backend(output_format, result.backend);
  if (!options.output_backend.empty()) plan.writing.backend = options.output_backend;
  result.output_backend = plan.writing.backend;
  plan.reader =
      open_input(result.backend, {options.input, options.selection}, comm,
                 detail::joined(io::hints_for(result.backend, io::Role::reader, options.hints), options.input_hints));
  const io::VolumeInfo& info = plan.reader->info();
  result.input_info = info;
  for (int a = 0; a < 3; ++a)
    if (info.dims[a] > detail::kMostAlongAxis)
      throw Error("distance: " + options.input + " is " + dims_text(info.dims) + ", more than " +
                  std::to_string(detail::kMostAlongAxis) + " voxels along an axis");
  detail::refuse_output_over_input(options.output, plan.reader->files());
  detail::check_levels(output_format, options.output_hints, info.dims);
  if (!io::is_stream(options.output))
    for (const auto& file : detail::output_files(options.output)) io::refuse_existing(file.string(), options.force);
  plan.spacing = options.spacing.value_or(std::array<double, 3>{info.spacing[2], info.spacing[1], info.spacing[0]});
  for (const double s : plan.spacing)
    if (!(s > 0) || !std::isfinite(s))
      throw Error("distance: " + options.input + " has a spacing that is not positive; give --spacing Z,Y,X");
  result.spacing = plan.spacing;
  collectively(comm, [&] { plan.bound = io::memory_per_rank(comm, options.memory_bytes); });
  choose_shapes(comm, options, plan);
  check_operators(options.operators, plan.slab);
  result.slab = plan.slab;
  result.planes = plan.planes;
  result.memory_bound = plan.bound.bytes;
  result.memory_source = plan.bound.source;
  return plan;
}

// The temporary volume of column offsets, beside the output; removed when
// the job ends, whichever way.
class Scratch {
 public:
  Scratch(const Comm& comm, const std::string& output, const io::Index3& dims) : rank0_(comm.rank() == 0) {
    long long pid = ::getpid();
    check_mpi(MPI_Bcast(&pid, 1, MPI_LONG_LONG, 0, comm.get()), "MPI_Bcast");
    const std::filesystem::path out(output);
    path_ = (out.parent_path() / ("." + out.filename().string() + ".volseg-distance-" + std::to_string(pid) + ".nhdr"))
                .string();
    io::VolumeInfo info;
    info.dims = dims;
    info.dtype = io::DType::u16;
    info.variable = "column_offsets";
    writer_ = io::create_writer("posix", io::CreateRequest{path_, info, true}, comm);
  }
  ~Scratch() {
    writer_.reset();
    reader_.reset();
    if (rank0_)
      for (const auto& file : detail::output_files(path_)) {
        std::error_code ec;
        std::filesystem::remove(file, ec);
      }
  }
  io::VolumeWriter& writer() { return *writer_; }
  // Collective: the sweep that wrote it is done; it is read from now on.
  io::VolumeReader& reopen(const Comm& comm) {
    writer_->close();
    writer_.reset();
    reader_ = open_input("posix", {path_, {}}, comm, {});
    return *reader_;
  }

 private:
  bool rank0_;
  std::string path_;
  std::unique_ptr<io::VolumeWriter> writer_;
  std::unique_ptr<io::VolumeReader> reader_;
};

io::VolumeInfo distance_info(const DistanceOptions& options, const io::VolumeInfo& input,
                             const std::array<double, 3>& spacing) {
  io::VolumeInfo out;
  out.dims = input.dims;
  out.dtype = options.type;
  out.variable = "distance";
  out.spacing = input.spacing;
  out.origin = input.origin;
  out.step = input.step;
  out.step_time = input.step_time;
  out.time_units = input.time_units;
  out.coordinates = input.coordinates;
  for (int a = 0; a < 3; ++a)
    if (auto it = input.attributes.find("dim" + std::to_string(a)); it != input.attributes.end())
      out.attributes[it->first] = it->second;
  char text[96];
  std::snprintf(text, sizeof text, "%.17g,%.17g,%.17g", spacing[0], spacing[1], spacing[2]);
  out.attributes["long_name"] = "Euclidean distance to the nearest background voxel";
  out.attributes["sampling_zyx"] = text;
  out.attributes["black_border"] = options.black_border ? "true" : "false";
  out.attributes["source_file"] = options.input;
  out.attributes["history"] = options.command_line.empty() ? "volseg distance" : options.command_line;
  return out;
}

// The mask of a region's values: nonzero (a mask input) or lo <= v <= hi.
class Foreground {
 public:
  Foreground(const DistanceOptions& options, const io::VolumeInfo& info)
      : nonzero_(options.mask_input && !options.binary_mask),
        info_(info),
        maker_(info, options.mask_input, options.lo, options.hi, options.input) {}
  const std::uint8_t* make(const std::byte* values, const io::Extent& extent) {
    if (!nonzero_) return maker_.make(values, extent);
    const auto n = static_cast<std::size_t>(extent.voxels());
    mask_.resize(n);
    io::visit_dtype(info_.dtype, [&]<class T>(std::type_identity<T>) {
      const T* v = reinterpret_cast<const T*>(values);
      for (std::size_t i = 0; i < n; ++i) mask_[i] = v[i] != T(0);
    });
    return mask_.data();
  }

 private:
  bool nonzero_;
  const io::VolumeInfo& info_;
  detail::MaskMaker maker_;
  std::vector<std::uint8_t> mask_;
};

struct Sweeps {
  const Comm& comm;
  const DistanceOptions& options;
  DistancePlan& plan;
  Progress& progress;

  // This rank's share of a layout's bricks, in order (block assignment).
  static std::vector<io::Extent> mine(const Comm& comm, const BrickLayout& layout) {
    const BrickMap map = BrickMap::from_layout(layout, comm.size(), Assignment::block, 0);
    std::vector<io::Extent> out;
    for (std::size_t b = 0; b < map.bricks.size(); ++b)
      if (map.owner[b] == comm.rank()) out.push_back(map.bricks[b]);
    return out;
  }

  // Sweep 1: each slab's mask and its column offsets, into the scratch.
  void columns(io::VolumeWriter& scratch) {
    const io::VolumeInfo& info = plan.reader->info();
    const BrickLayout layout(info.dims, plan.slab);
    std::unique_ptr<detail::MaskChain> chain;
    BrickMap map = BrickMap::from_layout(layout, comm.size(), Assignment::block, 0);
    if (options.operators.any())
      chain = std::make_unique<detail::MaskChain>(
          comm, map,
          detail::ChainInput{*plan.reader, options.mask_input, options.lo, options.hi, options.input, options.output},
          options.operators, /*seeds_to_caller=*/false);
    const auto voxels = static_cast<std::size_t>(layout.largest_brick_voxels());
    std::vector<std::byte> input(chain ? 0 : voxels * io::dtype_size(info.dtype));
    std::vector<std::uint16_t> kz(voxels);
    Foreground foreground(options, info);
    BrickDriver bricks(comm, mine(comm, layout), {},
                       {.progress = &progress, .bytes_per_voxel = io::dtype_size(info.dtype)});
    if (chain) chain->prepare(&progress);
    bricks.run(plan.reader->capabilities().collective || (chain && chain->collective()),
               [&](std::optional<std::size_t> k) {
                 const io::Extent* extent = k ? &bricks.extent(*k) : nullptr;
                 const std::uint8_t* mask = nullptr;
                 if (chain) {
                   mask = chain->brick(extent);
                 } else {
                   io::read_in_round(*plan.reader, extent, input.data());
                   if (extent) mask = foreground.make(input.data(), *extent);
                 }
                 if (!extent) return;
                 detail::column_offsets(mask, extent->count, options.black_border, kz.data());
                 scratch.write(*extent, kz.data());
               });
  }

  // Sweep 2: each group of planes finished along y and x, and written.
  void planes(io::VolumeReader& scratch, io::VolumeWriter& writer, io::VolumeWriter* mask_out, DistanceResult& result) {
    const io::VolumeInfo& info = plan.reader->info();
    const BrickLayout layout(info.dims, plan.planes);
    const auto voxels = static_cast<std::size_t>(layout.largest_brick_voxels());
    const auto plane = static_cast<std::size_t>(info.dims[1] * info.dims[2]);
    std::vector<std::uint16_t> kz(voxels);
    std::vector<std::byte> out(voxels * io::dtype_size(options.type));
    std::vector<std::uint8_t> foreground_mask(mask_out ? voxels : 0);
    detail::PlaneDistance transform(info.dims[1], info.dims[2], plan.spacing, options.black_border);
    std::uint64_t foreground = 0;
    bool infinite = false;
    BrickDriver bricks(comm, mine(comm, layout), {},
                       {.progress = &progress, .bytes_per_voxel = io::dtype_size(options.type)});
    bricks.run(writer.capabilities().collective, [&](std::optional<std::size_t> k) {
      const io::Extent* extent = k ? &bricks.extent(*k) : nullptr;
      if (extent) {
        scratch.read(*extent, kz.data());
        const auto n = static_cast<std::size_t>(extent->voxels());
        io::visit_dtype(options.type, [&]<class T>(std::type_identity<T>) {
          if constexpr (std::is_floating_point_v<T>) {
            T* d = reinterpret_cast<T*>(out.data());
            for (std::int64_t p = 0; p < extent->count[0]; ++p)
              transform.run(kz.data() + static_cast<std::size_t>(p) * plane, d + static_cast<std::size_t>(p) * plane);
            for (std::size_t i = 0; i < n; ++i) {
              foreground += d[i] > 0;
              infinite |= std::isinf(d[i]);
            }
            if (mask_out)
              for (std::size_t i = 0; i < n; ++i) foreground_mask[i] = d[i] > 0;
          }
        });
      }
      io::write_in_round(writer, extent, out.data());
      if (mask_out && extent) mask_out->write(*extent, foreground_mask.data());
    });
    double largest = transform.largest();
    check_mpi(MPI_Allreduce(MPI_IN_PLACE, &foreground, 1, MPI_UINT64_T, MPI_SUM, comm.get()), "MPI_Allreduce");
    check_mpi(MPI_Allreduce(MPI_IN_PLACE, &largest, 1, MPI_DOUBLE, MPI_MAX, comm.get()), "MPI_Allreduce");
    int any_infinite = infinite;
    check_mpi(MPI_Allreduce(MPI_IN_PLACE, &any_infinite, 1, MPI_INT, MPI_MAX, comm.get()), "MPI_Allreduce");
    result.foreground = foreground;
    result.largest = largest;
    result.no_background = any_infinite != 0;
  }
};

std::unique_ptr<io::VolumeWriter> create_output(const Comm& comm, const DistanceOptions& options,
                                                const DistancePlan& plan, const DistanceResult& result) {
  io::CreateRequest request{options.output, distance_info(options, result.input_info, plan.spacing), options.force,
                            io::Partial::none};
  request.whole_planes = true;
  request.bricks = plan.planes;
  auto hints = detail::joined(
      detail::joined(io::hints_for(plan.writing.backend, io::Role::writer, options.hints), plan.writing.hints),
      options.output_hints);
  return io::create_writer(result.output_backend, request, comm, io::Hints::parse(hints));
}

}  // namespace

std::array<double, 3> parse_spacing(const std::string& text) {
  std::array<double, 3> spacing{};
  std::istringstream in(text);
  std::string item;
  int n = 0;
  while (std::getline(in, item, ',')) {
    if (n == 3) throw Error("--spacing " + text + ": give three numbers Z,Y,X");
    std::size_t used = 0;
    double value = 0;
    try {
      value = std::stod(item, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used == 0 || used != item.size()) throw Error("--spacing " + text + ": '" + item + "' is not a number");
    if (!(value > 0) || !std::isfinite(value))
      throw Error("--spacing " + text + ": every entry must be positive and finite, not " + item);
    spacing[static_cast<std::size_t>(n++)] = value;
  }
  if (n != 3) throw Error("--spacing " + text + ": give three numbers Z,Y,X");
  return spacing;
}

DistanceResult run_distance(const Comm& comm, const DistanceOptions& options) {
  const auto start = Clock::now();
  DistanceResult result;
  result.comm_size = comm.size();
  DistancePlan plan = plan_distance(comm, options, result);
  const io::VolumeInfo& info = plan.reader->info();
  const BrickLayout slabs(info.dims, plan.slab), groups(info.dims, plan.planes);
  const int chain_passes = options.operators.any() ? 2 : 0;  // at most: hysteresis or holes, and a spill
  Progress progress(comm, "distance", (1 + chain_passes) * slabs.count() + groups.count(), options.progress);
  Sweeps sweeps{comm, options, plan, progress};
  DistanceResult::Times times;
  std::exception_ptr error;
  std::unique_ptr<io::VolumeWriter> writer;
  try {
    Scratch scratch(comm, options.output, info.dims);
    result.scratch_bytes = static_cast<std::uint64_t>(info.voxels()) * 2;
    const auto columns = Clock::now();
    {
      const io::watchdog::Phase phase("distance, sweep 1 (read the slabs, offsets along z)");
      sweeps.columns(scratch.writer());
    }
    io::VolumeReader& offsets = scratch.reopen(comm);
    times.columns = since(columns);
    const auto planes = Clock::now();
    {
      const io::watchdog::Phase phase("distance, sweep 2 (planes along y and x, and write)");
      writer = create_output(comm, options, plan, result);
      std::unique_ptr<io::VolumeWriter> mask_out;
      if (!options.mask_output.empty()) {
        io::VolumeInfo mask_info = distance_info(options, result.input_info, plan.spacing);
        mask_info.dtype = io::DType::u8;
        mask_info.variable = "foreground";
        mask_out = io::create_writer("posix", io::CreateRequest{options.mask_output, mask_info, true}, comm);
      }
      sweeps.planes(offsets, *writer, mask_out.get(), result);
      if (mask_out) mask_out->close();
      writer->close();
      plan.reader->close();
    }
    times.planes = since(planes);
  } catch (...) {
    error = std::current_exception();
  }
  progress.finish();
  if (error) {
    writer.reset();
    std::rethrow_exception(error);
  }
  times.total = since(start);
  times.max_rss = io::peak_resident_bytes();
  double mine[4] = {times.columns, times.planes, times.total, static_cast<double>(times.max_rss)};
  std::vector<double> all(static_cast<std::size_t>(4 * comm.size()));
  check_mpi(MPI_Gather(mine, 4, MPI_DOUBLE, all.data(), 4, MPI_DOUBLE, 0, comm.get()), "MPI_Gather");
  for (int r = 0; comm.rank() == 0 && r < comm.size(); ++r) {
    const double* v = &all[static_cast<std::size_t>(4 * r)];
    result.ranks.push_back({v[0], v[1], v[2], static_cast<std::uint64_t>(v[3])});
  }
  check_mpi(MPI_Allreduce(&times.total, &result.seconds, 1, MPI_DOUBLE, MPI_MAX, comm.get()), "MPI_Allreduce");
  return result;
}

std::string distance_summary(const DistanceOptions& options, const DistanceResult& result) {
  const auto& info = result.input_info;
  double columns = 0, planes = 0;
  std::uint64_t rss = 0;
  for (const auto& r : result.ranks) {
    columns = std::max(columns, r.columns);
    planes = std::max(planes, r.planes);
    rss = std::max(rss, r.max_rss);
  }
  std::ostringstream out;
  out.precision(6);
  out << "distance of " << options.input << " (" << dims_text(info.dims) << " " << io::dtype_name(info.dtype) << ") on "
      << result.comm_size << " rank(s): slabs of " << dims_text(result.slab) << ", planes in groups of "
      << result.planes[0] << "\n";
  if (!options.mask_input)
    out << "  mask: [" << options.lo << ", " << options.hi << "]"
        << (options.operators.any() ? ", then " + options.operators.describe() : std::string()) << "\n";
  out << "  spacing z,y,x " << result.spacing[0] << "," << result.spacing[1] << "," << result.spacing[2]
      << (options.black_border ? "; outside the volume is background" : "") << "\n";
  out << "  " << result.foreground << " foreground voxels, largest distance " << result.largest << "\n";
  if (result.no_background)
    out << "  the volume has no background voxel: every distance is inf (give --black-border to measure to the "
           "volume's faces)\n";
  out.precision(4);
  out << "  time " << result.seconds << " s (columns " << columns << ", planes " << planes << "), "
      << static_cast<double>(info.voxels()) / result.seconds / 1e6 << " Mvoxels/s; peak memory per rank "
      << static_cast<double>(rss) / (1 << 20) << " MiB\n"
      << "  distances (" << io::dtype_name(options.type) << ", " << result.output_format << "): " << options.output
      << "\n";
  return out.str();
}

}  // namespace volseg::segment
