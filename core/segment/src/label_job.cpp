// SPDX-License-Identifier: MIT
// `volseg label`: two passes over the bricks. Pass 1 reads each brick of
// this rank (a mask, or a scalar volume thresholded as segment does), labels
// it, keeps its parts of objects and the faces a neighbour still needs, and
// keeps its runs and their labels (about 12 bytes a run) while the memory
// bound has room (KeptBricks); the merge numbers every object; pass 2 paints
// each brick's final ids from its kept runs and writes them. A brick whose
// runs did not fit is read and labelled again in pass 2 instead: it costs the
// input's bytes again, not the labels' (four or eight bytes a voxel), so
// memory does not grow with the volume.
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <limits>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>

#include "job_outputs.hpp"
#include "kept_bricks.hpp"
#include "label_bricks.hpp"
#include "label_kernel.hpp"
#include "label_report.hpp"
#include "mask_chain.hpp"
#include "split_job.hpp"
#include "volseg/io/auto_backend.hpp"
#include "volseg/io/dtype_dispatch.hpp"
#include "volseg/io/error.hpp"
#include "volseg/io/files.hpp"
#include "volseg/io/format.hpp"
#include "volseg/io/memory.hpp"
#include "volseg/io/nrrd.hpp"
#include "volseg/io/registry.hpp"
#include "volseg/io/rounds.hpp"
#include "volseg/io/watchdog.hpp"
#include "volseg/segment/brick_driver.hpp"
#include "volseg/segment/expression.hpp"
#include "volseg/segment/label.hpp"
#include "volseg/segment/segment.hpp"
#include "volseg/segment/threshold.hpp"

namespace volseg::segment {
namespace {

using Clock = std::chrono::steady_clock;
double since(Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); }

// This process's peak resident memory: VmHWM, which belongs to the address
// space. (getrusage's ru_maxrss survives exec: a rank started by a big
// parent, say a Python script that just wrote the input, reports the
// parent's peak.)
std::uint64_t max_rss_bytes() {
  if (const std::uint64_t peak = io::peak_resident_bytes()) return peak;
  struct rusage usage {};
  ::getrusage(RUSAGE_SELF, &usage);
  return static_cast<std::uint64_t>(usage.ru_maxrss) * 1024;
}

std::string exact(double value) {
  char text[64];
  std::snprintf(text, sizeof text, "%.17g", value);
  return text;
}

void paint(const BrickLabeler::View& labelled, std::span<const std::uint64_t> ids, io::DType type, void* out) {
  io::visit_dtype(type, [&]<class T>(std::type_identity<T>) {
    if constexpr (std::is_unsigned_v<T> && std::is_integral_v<T>)
      labelled.paint(ids, static_cast<T*>(out));
    else
      throw Error("labels are written as u8, u16, u32 or u64, not " + std::string(io::dtype_name(type)));
  });
}

}  // namespace

io::VolumeInfo labels_info(const io::VolumeInfo& input, io::DType type, std::uint64_t objects, int connectivity,
                           const std::string& source, const std::string& history) {
  io::VolumeInfo labels;
  labels.dims = input.dims;
  labels.dtype = type;
  labels.byte_order = input.byte_order;
  labels.variable = "labels";
  labels.spacing = input.spacing;
  labels.origin = input.origin;
  labels.step = input.step;  // a series' record: its time
  labels.step_time = input.step_time;
  labels.time_units = input.time_units;
  labels.coordinates = input.coordinates;
  for (int a = 0; a < 3; ++a)
    if (auto it = input.attributes.find("dim" + std::to_string(a)); it != input.attributes.end())
      labels.attributes[it->first] = it->second;
  labels.attributes["long_name"] = "connected components (" + std::to_string(connectivity) + "-connected) of " +
                                   (input.variable.empty() ? std::string("the mask") : input.variable);
  labels.attributes["connectivity"] = std::to_string(connectivity);
  labels.attributes["objects"] = std::to_string(objects);
  labels.attributes["numbering"] = "0 background; object k is the k-th met in file order, x fastest";
  labels.attributes["source_file"] = source;
  labels.attributes["history"] = history;
  return labels;
}

std::array<bool, 3> parse_periodic(const std::string& text) {
  std::array<bool, 3> periodic{};
  if (text.empty()) throw Error("--periodic needs the axes that wrap around: any of z, y and x (x, z,y or zyx)");
  for (const char c : text) {
    if (c == ',' || c == ' ') continue;
    const std::string axes = "zyx";
    const auto at = axes.find(c);
    if (at == std::string::npos)
      throw Error("--periodic " + text + ": '" + std::string(1, c) + "' is not an axis (z, y or x)");
    periodic[at] = true;
  }
  return periodic;
}

std::string periodic_text(const std::array<bool, 3>& periodic) {
  std::string text;
  for (int a = 0; a < 3; ++a)
    if (periodic[static_cast<std::size_t>(a)]) text += (text.empty() ? "" : ",") + std::string(1, "zyx"[a]);
  return text;
}

namespace {

// The options that need no file, checked before any work.
void check_label_options(const LabelOptions& options) {
  check_connectivity(options.connectivity);
  if (options.periodic != std::array<bool, 3>{}) {
    if (options.operators.any())
      throw Error(
          "--periodic: the operators (--seed-lo/--seed-hi, --open, --close, --fill-holes) do not wrap "
          "around yet; label their mask from segment instead");
  }
  if (options.classes && options.operators.any())
    throw Error(
        "--classes labels a class image as it is: the operators (--seed-lo/--seed-hi, --open, --close, "
        "--fill-holes) work on 0/1 masks");
  if (!options.mask_input && !options.classes) {
    if (std::isnan(options.lo) || std::isnan(options.hi)) throw Error("thresholds must not be NaN");
    if (options.lo > options.hi)
      throw Error("lo > hi: --lo " + exact(options.lo) + " is above --hi " + exact(options.hi));
  }
  if (options.type != "auto") detail::label_type(options.type, 0);  // a name it knows, before any work
}

// The input's format and reading backend (auto: by access pattern and the
// page cache), the output's format (wide label types) and writing backend.
io::Writing choose_io(const Comm& comm, const LabelOptions& options, LabelResult& result) {
  const io::FileFormat input_format = io::detect_format(comm, options.input);
  const io::AutoChoice choice =
      io::resolve_backend(comm, options.backend, input_format, options.input, io::Access::stream);
  result.backend = choice.backend;
  result.backend_reason = choice.reason;
  result.input_resident = choice.resident;
  const io::FileFormat output_format =
      io::output_format(options.output, options.format, input_format, /*wide_types=*/true);
  result.output_format = io::format_name(output_format);
  io::Writing writing = io::writing_backend(output_format, result.backend);
  writing.backend = detail::label_writer(output_format, writing.backend);
  if (!options.output_backend.empty()) writing.backend = options.output_backend;
  result.output_backend = writing.backend;
  if (!options.mask_output.empty())
    result.mask_format = io::format_name(io::output_format(options.mask_output, {}, input_format, false));
  return writing;
}

// The fields of the table (--values, --values-expr), each voxel for voxel
// the input's, in the order given.
std::vector<std::unique_ptr<io::VolumeReader>> open_fields(const Comm& comm, const LabelOptions& options,
                                                           const std::string& input_backend,
                                                           const io::VolumeInfo& info) {
  field_columns(options.values);  // the names, checked before any file
  auto dims_text = [](const io::Index3& d) {
    return std::to_string(d[2]) + "x" + std::to_string(d[1]) + "x" + std::to_string(d[0]);
  };
  std::vector<std::unique_ptr<io::VolumeReader>> fields;
  for (const ValueField& field : options.values) {
    const io::FileFormat format = io::detect_format(comm, field.file);
    auto reader = open_input(field.file == options.input
                                 ? input_backend
                                 : io::choose_backend(comm, format, field.file, io::Access::stream).backend,
                             {field.file, field.selection}, comm, {});  // a variable, or an expression of them
    if (reader->info().dims != info.dims)
      throw Error("field " + field.name + " (" + field.file + ") is " + dims_text(reader->info().dims) +
                  ", the input " + dims_text(info.dims) + ": they must match voxel for voxel");
    detail::refuse_output_over_input(options.output, reader->files());
    fields.push_back(std::move(reader));
  }
  return fields;
}

// Table and report over no input, the labels or each other; the labels'
// files not over existing ones without --force.
void check_label_outputs(const LabelOptions& options, std::vector<std::string> taken) {
  detail::check_side_output(options.stats, "object table", options.output, options.force, taken, "labels");
  if (!options.stats.empty()) taken.push_back(options.stats);
  detail::check_side_output(options.report, "report", options.output, options.force, taken, "labels");
  if (!io::is_stream(options.output))
    for (const auto& file : detail::output_files(options.output)) io::refuse_existing(file.string(), options.force);
  if (options.mask_output.empty()) return;
  detail::refuse_output_over_input(options.mask_output, taken);
  detail::refuse_output_over_input(options.mask_output, {options.output, options.stats, options.report});
  for (const auto& file : detail::output_files(options.mask_output)) io::refuse_existing(file.string(), options.force);
}

// What run_label decides before its first pass: the input (and --values)
// open with their backends, the labels' format, backend and hints, every
// output checked, the bricks.
struct LabelPlan {
  std::unique_ptr<io::VolumeReader> reader;
  std::vector<std::unique_ptr<io::VolumeReader>> fields;  // --values, --values-expr
  io::Writing writing;
  BrickLayout layout;
  io::MemoryBound bound;    // per rank
  std::uint64_t fixed = 0;  // what a rank holds before any object: the process, one brick's buffers
  std::uint64_t cache = 0;  // the run-label cache, fitted into the bound
};

// A rank's memory before any object: the process as it is, and one brick's
// buffers (input, mask, labels out, --values, and 12 bytes a run of
// foreground, at most a run every 2 voxels). The run-label cache takes what
// is left up to --cache; parts and joins grow in pass 1 (held_bytes).
// Collective: a rank whose bound is too small ends every rank, before pass 1.
void fit_memory(const Comm& comm, const LabelOptions& options, LabelPlan& plan) {
  const auto voxels = static_cast<std::uint64_t>(plan.layout.largest_brick_voxels());
  const std::uint64_t label_size = options.type == "u64" ? 8 : 4;
  std::uint64_t per_voxel = io::dtype_size(plan.reader->info().dtype) + 1 + label_size + 6;
  for (const auto& field : plan.fields) per_voxel += io::dtype_size(field->info().dtype);
  std::uint64_t buffers = voxels * per_voxel;
  if (options.operators.any()) {
    // The chain's buffers per voxel of a brick grown by its ghost layers:
    // input, mask, seeds, two ping-pong buffers, and the morphology's
    // tables (a copy per half width up to radius 4, else two run tables).
    const auto& ops = options.operators;
    const double side = std::cbrt(static_cast<double>(voxels)), ghost = ops.ghost();
    const int radius = std::max(ops.open, ops.close);
    const double grown_per_voxel = static_cast<double>(io::dtype_size(plan.reader->info().dtype)) + 4 +
                                   (radius == 0   ? 0
                                    : radius <= 4 ? radius
                                                  : 2);
    buffers += static_cast<std::uint64_t>(static_cast<double>(voxels) * std::pow((side + 2 * ghost) / side, 3) *
                                          grown_per_voxel);
  }
  collectively(comm, [&] {
    plan.bound = io::memory_per_rank(comm, options.memory_bytes);
    const std::uint64_t process = io::resident_bytes();
    plan.fixed = process + buffers;
    if (plan.fixed > plan.bound.bytes) {
      const auto& shape = plan.layout.shape();
      throw Error("label needs " + io::mib_text(plan.fixed) + " per rank before its first object (this process " +
                  io::mib_text(process) + ", buffers of bricks of " + std::to_string(shape[2]) + "x" +
                  std::to_string(shape[1]) + "x" + std::to_string(shape[0]) + " " + io::mib_text(buffers) +
                  "), more than its bound of " + io::mib_text(plan.bound.bytes) + " per rank (" + plan.bound.source +
                  "): give a smaller --brick, more memory (--memory) or more nodes");
    }
    plan.cache = std::min(options.cache_bytes, plan.bound.bytes - plan.fixed);
  });
}

LabelPlan plan_label(const Comm& comm, const LabelOptions& options, LabelResult& result) {
  check_label_options(options);
  io::Writing writing = choose_io(comm, options, result);
  if (options.periodic != std::array<bool, 3>{} && io::format_traits(io::parse_format(result.output_format)).multiscale)
    throw Error("--periodic: " + result.output_format +
                " labels record each object's box for viewers, which across periodic faces passes the volume's "
                "far face: write .zarr, .nc, .nc4 or .nhdr labels (--stats gives the unwrapped boxes)");
  auto reader =
      open_input(result.backend, {options.input, options.selection}, comm,
                 detail::joined(io::hints_for(result.backend, io::Role::reader, options.hints), options.input_hints));
  const io::VolumeInfo& info = reader->info();
  result.input_info = info;
  if (options.classes && info.dtype != io::DType::u8)
    throw Error("--classes: " + options.input + " is " + std::string(io::dtype_name(info.dtype)) +
                ", and a class image is u8 (classes 1..255, 0 the background)");
  detail::refuse_output_over_input(options.output, reader->files());
  if (options.source_info) result.input_info = *options.source_info;
  detail::check_levels(io::parse_format(result.output_format), options.output_hints, info.dims);
  auto fields = open_fields(comm, options, result.backend, info);
  std::vector<std::string> taken = reader->files();
  for (const auto& field : fields)
    for (const auto& file : field->files()) taken.push_back(file);
  check_label_outputs(options, std::move(taken));
  const io::Index3 shape = options.brick_shape.value_or(detail::label_brick_shape(
      comm, options, info,
      detail::chunks_for_bricks(reader->capabilities().chunks, io::parse_format(result.output_format))));
  const BrickLayout layout(info.dims, shape);
  check_operators(options.operators, layout.shape());
  result.brick_shape = layout.shape();
  result.brick_grid = layout.grid();
  result.brick_count = layout.count();
  LabelPlan plan{std::move(reader), std::move(fields), std::move(writing), layout, {}, 0, 0};
  fit_memory(comm, options, plan);
  result.memory_bound = plan.bound.bytes;
  result.memory_source = plan.bound.source;
  result.cache_bytes = plan.cache;
  return plan;
}

// The two passes over this rank's bricks, and what they share: the
// labeling, the masks, one brick's buffers, the labels kept between them.
struct LabelPasses {
  const Comm& comm;
  const LabelOptions& options;
  LabelPlan& plan;
  const io::VolumeInfo& info;
  Labeling labeling;
  detail::MaskMaker masks;
  std::size_t brick_voxels;
  std::vector<std::byte> input;
  std::vector<std::vector<std::byte>> sources;  // a brick of each field
  std::vector<FieldBrick> fields;               // pointing into sources
  std::unique_ptr<detail::MaskChain> chain;     // with operators: where masks come from
  Progress progress;
  detail::KeptBricks kept;

  LabelPasses(const Comm& c, const LabelOptions& o, LabelPlan& p)
      : comm(c),
        options(o),
        plan(p),
        info(p.reader->info()),
        labeling(c, map_of(c, o, p), o.connectivity, p.fields.size(), /*with_shape=*/!o.stats.empty()),
        masks(info, o.mask_input, o.lo, o.hi, o.input),
        brick_voxels(static_cast<std::size_t>(p.layout.largest_brick_voxels())),
        input(o.operators.any() ? 0 : brick_voxels * io::dtype_size(info.dtype)),  // the chain reads its own
        chain(make_chain(c, o, p, labeling.map())),
        progress(c, "label", (2 + (chain ? chain->passes() : 0)) * p.layout.count(), o.progress),
        kept(p.cache) {
    labeling.set_classes(o.classes);
    if (o.on_progress) progress.observe(o.on_progress);
    for (const auto& field : p.fields) {
      const io::VolumeInfo& f = field->info();
      sources.emplace_back(brick_voxels * io::dtype_size(f.dtype));
      fields.push_back({sources.back().data(), f.dtype, f.scale_factor.value_or(1.0), f.add_offset.value_or(0.0)});
    }
  }

  static BrickMap map_of(const Comm& c, const LabelOptions& o, const LabelPlan& p) {
    auto map = BrickMap::from_layout(p.layout, c.size(), o.assignment, o.seed);
    map.periodic = o.periodic;
    return map;
  }

  static std::unique_ptr<detail::MaskChain> make_chain(const Comm& c, const LabelOptions& o, LabelPlan& p,
                                                       const BrickMap& map) {
    if (!o.operators.any()) return nullptr;
    return std::make_unique<detail::MaskChain>(
        c, map, detail::ChainInput{*p.reader, o.mask_input, o.lo, o.hi, o.input, o.output}, o.operators,
        /*seeds_to_caller=*/o.mask_output.empty());  // --mask-out writes the mask after hysteresis
  }

  // The mask of a brick (nullptr: a round with nothing), read through the
  // chain or thresholded here.
  const std::uint8_t* mask(const io::Extent* extent) {
    if (chain) return chain->brick(extent);
    io::read_in_round(*plan.reader, extent, input.data());
    if (options.classes) return extent ? reinterpret_cast<const std::uint8_t*>(input.data()) : nullptr;
    return extent ? masks.make(input.data(), *extent) : nullptr;
  }

  // The keep rule of the job's objects: min_voxels, and the seeds when the
  // chain left hysteresis to this labeling.
  KeepRule keep() const { return KeepRule{options.min_voxels, chain && chain->caller_seeds(), false}; }

  // This rank's bricks, driven with the progress bar; `bytes_per_voxel`
  // of each brick counts as moved.
  BrickDriver driver(std::size_t bytes_per_voxel) {
    std::vector<io::Extent> extents;
    for (const auto brick : labeling.mine()) extents.push_back(labeling.map().bricks[static_cast<std::size_t>(brick)]);
    return {comm, std::move(extents), labeling.mine(), {.progress = &progress, .bytes_per_voxel = bytes_per_voxel}};
  }

  // Pass 1: label every brick, keep parts and faces; the mask to
  // mask_out, when given.
  void label_bricks(io::VolumeWriter* mask_out) {
    auto& reader = *plan.reader;
    auto bricks = driver(io::dtype_size(info.dtype));
    bool collective = reader.capabilities().collective || (mask_out && mask_out->capabilities().collective);
    for (const auto& field : plan.fields) collective = collective || field->capabilities().collective;
    if (chain) chain->prepare(&progress);
    bricks.run(collective, [&](std::optional<std::size_t> k) {
      const io::Extent* extent = k ? &bricks.extent(*k) : nullptr;
      const std::uint8_t* brick_mask = mask(extent);
      if (mask_out) io::write_in_round(*mask_out, extent, options.classes ? binary(brick_mask, extent) : brick_mask);
      for (std::size_t f = 0; f < plan.fields.size(); ++f)
        io::read_in_round(*plan.fields[f], extent, sources[f].data());
      if (!extent) return;
      const std::int64_t brick = bricks.id(*k);
      labeling.add(brick, brick_mask, fields);
      if (chain && chain->caller_seeds()) labeling.seed(chain->seeds());
      const std::uint64_t held = plan.fixed + kept.used() + labeling.held_bytes();
      kept.keep(brick, detail::LabelingInternals::labeler(labeling).view(),
                held < plan.bound.bytes ? plan.bound.bytes - held : 0);
      check_memory(*k + 1, bricks.size());
    });
  }

  // A class image's brick as the 0/1 mask --mask-out writes (null: none).
  const std::uint8_t* binary(const std::uint8_t* classes, const io::Extent* extent) {
    if (!extent) return nullptr;
    const auto n = static_cast<std::size_t>(extent->voxels());
    binary_mask.resize(n);
    for (std::size_t i = 0; i < n; ++i) binary_mask[i] = classes[i] != 0;
    return binary_mask.data();
  }
  std::vector<std::uint8_t> binary_mask;

  // Makes room for this rank's objects by dropping kept bricks, and stops
  // pass 1 when they outgrow its bound even so: better now, with a line
  // naming it, than killed by the kernel in the merge.
  void check_memory(std::size_t done, std::size_t bricks) {
    std::uint64_t held = plan.fixed + kept.used() + labeling.held_bytes();
    if (held > plan.bound.bytes) held -= kept.shed(held - plan.bound.bytes);
    if (held <= plan.bound.bytes) return;
    throw RankError("label: the objects of this rank's first " + std::to_string(done) + " of " +
                    std::to_string(bricks) + " bricks (" + std::to_string(labeling.part_count()) +
                    " parts, about 100 bytes each with the merge's share) need " + io::mib_text(held) +
                    ", past its bound of " + io::mib_text(plan.bound.bytes) + " per rank (" + plan.bound.source +
                    "): use more ranks (or nodes), or --memory where the node has more");
  }

  // Pass 2: the ids of each brick, painted from its kept runs, or from the
  // input read and labelled again where they were not kept, and written.
  // When every rank kept every brick, nothing is read.
  void write_labels(io::VolumeWriter& writer, io::DType type) {
    auto& reader = *plan.reader;
    std::vector<std::byte> out(brick_voxels * io::dtype_size(type));
    BrickLabeler labeler(options.connectivity);
    labeler.set_classes(options.classes);
    int again = std::any_of(labeling.mine().begin(), labeling.mine().end(),
                            [&](std::int64_t brick) { return !kept.holds(brick); });
    check_mpi(MPI_Allreduce(MPI_IN_PLACE, &again, 1, MPI_INT, MPI_MAX, comm.get()), "MPI_Allreduce");
    bricks_read_again = 0;
    auto bricks = driver(io::dtype_size(type));
    bricks.run((again && reader.capabilities().collective) || writer.capabilities().collective,
               [&](std::optional<std::size_t> k) {
                 const io::Extent* extent = k ? &bricks.extent(*k) : nullptr;
                 const std::int64_t brick = extent ? bricks.id(*k) : -1;
                 const BrickLabeler::View* restored = extent ? kept.find(brick) : nullptr;
                 // The chain's stages read in collective rounds: every brick
                 // goes through it again once any rank reads.
                 const std::uint8_t* brick_mask =
                     again && (chain || !restored) ? mask(restored && !chain ? nullptr : extent) : nullptr;
                 if (extent) {
                   if (!restored) {
                     labeler.label(brick_mask, extent->count);
                     ++bricks_read_again;
                   }
                   const BrickLabeler::View labelled = restored ? *restored : labeler.view();
                   const auto ids = labeling.ids(brick);
                   if (ids.size() != labelled.objects + 1u)
                     throw Error("internal error: brick " + std::to_string(brick) + " labelled differently in pass 2");
                   paint(labelled, ids, type, out.data());
                   kept.release(brick);
                 }
                 io::write_in_round(writer, extent, out.data());
               });
  }
  std::uint64_t bricks_read_again = 0;
};

std::unique_ptr<io::VolumeWriter> create_labels(const Comm& comm, const LabelOptions& options, const LabelPlan& plan,
                                                const LabelResult& result, io::DType type) {
  const io::VolumeInfo& info = result.input_info;
  io::CreateRequest request{options.output,
                            labels_info(info, type, result.summary.objects, options.connectivity,
                                        options.source_name.empty() ? options.input : options.source_name,
                                        options.command_line.empty() ? "volseg label" : options.command_line),
                            options.force, io::Partial::none};
  if (options.periodic != std::array<bool, 3>{}) request.info.attributes["periodic"] = periodic_text(options.periodic);
  const auto& shape = plan.layout.shape();
  request.whole_planes = shape[1] >= info.dims[1] && shape[2] >= info.dims[2];
  request.bricks = shape;
  auto writer_hints = detail::joined(
      detail::joined(io::hints_for(plan.writing.backend, io::Role::writer, options.hints), plan.writing.hints),
      options.output_hints);
  if (detail::direct_label_writes(io::parse_format(result.output_format), result.output_backend, request.whole_planes,
                                  writer_hints))
    writer_hints.push_back("direct_write=1");
  return io::create_writer(result.output_backend, request, comm, io::Hints::parse(writer_hints));
}

// --mask-out: the labelled mask, as segment writes masks.
std::unique_ptr<io::VolumeWriter> create_mask_out(const Comm& comm, const LabelOptions& options, const LabelPlan& plan,
                                                  const LabelResult& result) {
  const io::VolumeInfo& info = result.input_info;
  io::CreateRequest request{options.mask_output,
                            mask_info(info, options.lo, options.hi, options.input,
                                      options.command_line.empty() ? "volseg label" : options.command_line),
                            options.force, io::Partial::none};
  const auto& shape = plan.layout.shape();
  request.whole_planes = shape[1] == info.dims[1] && shape[2] == info.dims[2];
  request.bricks = shape;
  const io::Writing writing = io::writing_backend(io::parse_format(result.mask_format), result.backend);
  auto hints = detail::joined(io::hints_for(writing.backend, io::Role::writer, options.hints), writing.hints);
  return io::create_writer(writing.backend, request, comm, io::Hints::parse(hints));
}

// The first ids' objects (on rank 0), for formats that record them with
// the labels (OME-Zarr's image-label properties).
std::vector<io::SegmentInfo> segment_rows(const Comm& comm, const LabelSummary& summary) {
  std::vector<ObjectPart> rows;
  std::vector<ObjectValues> values;
  gather_report_rows(comm, summary, 0, rows, values);
  std::vector<io::SegmentInfo> out;
  out.reserve(rows.size());
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const auto& r = rows[i];
    io::SegmentInfo s{.id = i + 1, .voxels = r.voxels};
    for (std::size_t a = 0; a < 3; ++a) {
      s.centroid[a] = r.voxels > 0 ? static_cast<double>(r.sum[a]) / static_cast<double>(r.voxels) : 0;
      s.lo[a] = r.lo[a];
      s.hi[a] = r.hi[a];
    }
    out.push_back(s);
  }
  return out;
}

// Pass 1, the merge, pass 2. On an error no labels are left behind.
void execute_label(const Comm& comm, const LabelOptions& options, LabelPlan& plan, LabelResult& result,
                   LabelResult::Times& times) {
  const bool segments = io::format_traits(io::parse_format(result.output_format)).multiscale;
  const bool with_table = !options.stats.empty() || !options.report.empty() || segments;
  LabelPasses passes(comm, options, plan);
  // Without a table, the objects inside a brick never reach the merge.
  if (!with_table && plan.fields.empty() && !(passes.chain && passes.chain->caller_seeds()))
    passes.labeling.number_in_bricks(passes.keep());
  std::exception_ptr error;
  std::unique_ptr<io::VolumeWriter> writer, mask_out;
  try {
    const auto pass1 = Clock::now();
    {
      const io::watchdog::Phase phase("label, pass 1 (read and label the bricks)");
      if (!options.mask_output.empty()) mask_out = create_mask_out(comm, options, plan, result);
      passes.label_bricks(mask_out.get());
    }
    times.label = since(pass1);
    const auto merge = Clock::now();
    {
      const io::watchdog::Phase phase("label, the merge across bricks and ranks");
      result.summary = passes.labeling.finish(passes.keep(), with_table);
    }
    times.merge = since(merge);

    const io::DType type = detail::label_type(options.type, result.summary.objects);
    result.label_type = io::dtype_name(type);
    const auto pass2 = Clock::now();
    const io::watchdog::Phase phase("label, pass 2 (paint the ids and write)");
    writer = create_labels(comm, options, plan, result, type);
    passes.write_labels(*writer, type);
    std::uint64_t figures[2] = {plan.reader->bytes_read(), passes.bricks_read_again};
    check_mpi(MPI_Allreduce(MPI_IN_PLACE, figures, 2, MPI_UINT64_T, MPI_SUM, comm.get()), "MPI_Allreduce");
    result.bytes_read = figures[0];
    result.bricks_read_again = figures[1];
    if (io::format_traits(io::parse_format(result.output_format)).multiscale)
      writer->describe_segments(segment_rows(comm, result.summary));
    if (mask_out) mask_out->close();
    writer->close();
    plan.reader->close();
    for (const auto& field : plan.fields) field->close();
    times.write = since(pass2);
  } catch (...) {
    error = std::current_exception();
  }
  passes.progress.finish();
  if (error) {
    writer.reset();  // removes its temporary file
    mask_out.reset();
    std::rethrow_exception(error);
  }
}

// Every rank's times, on rank 0; the job's seconds on every rank.
void gather_label_times(const Comm& comm, const LabelResult::Times& times, LabelResult& result) {
  double mine_times[5] = {times.label, times.merge, times.write, times.total, static_cast<double>(times.max_rss)};
  std::vector<double> all(static_cast<std::size_t>(5 * comm.size()));
  check_mpi(MPI_Gather(mine_times, 5, MPI_DOUBLE, all.data(), 5, MPI_DOUBLE, 0, comm.get()), "MPI_Gather");
  for (int r = 0; comm.rank() == 0 && r < comm.size(); ++r) {
    const double* v = &all[static_cast<std::size_t>(5 * r)];
    result.ranks.push_back({v[0], v[1], v[2], v[3], static_cast<std::uint64_t>(v[4])});
  }
  check_mpi(MPI_Allreduce(&times.total, &result.seconds, 1, MPI_DOUBLE, MPI_MAX, comm.get()), "MPI_Allreduce");
}

}  // namespace

// A job is planned (inputs checked, backends, formats and outputs decided),
// then executed (two passes and the merge), then reported.
LabelResult run_label(const Comm& comm, const LabelOptions& options) {
  if (options.split.on) return detail::run_split_label(comm, options);
  const auto job_start = Clock::now();
  LabelResult result;
  result.comm_size = comm.size();
  LabelResult::Times times;
  LabelPlan plan = plan_label(comm, options, result);
  execute_label(comm, options, plan, result, times);
  times.total = since(job_start);
  times.max_rss = max_rss_bytes();
  gather_label_times(comm, times, result);
  if (!options.stats.empty())
    write_object_table(comm, options.stats, result.summary, result.input_info,
                       {field_columns(options.values), /*shape=*/true, options.periodic != std::array<bool, 3>{}});
  if (!options.report.empty()) {
    std::vector<ObjectPart> rows;
    std::vector<ObjectValues> values;
    gather_report_rows(comm, result.summary, options.values.size(), rows, values);
    collectively(comm, [&] {
      if (comm.rank() == 0) write_label_report(options.report, options, result, rows, values);
    });
  }
  return result;
}

std::string label_summary(const LabelOptions& options, const LabelResult& result) {
  const auto& info = result.input_info;
  const auto& s = result.summary;
  double slowest = 0, pass1 = 0, merge = 0, pass2 = 0;
  std::uint64_t rss = 0;
  for (const auto& r : result.ranks) {
    slowest = std::max(slowest, r.total);
    pass1 = std::max(pass1, r.label);
    merge = std::max(merge, r.merge);
    pass2 = std::max(pass2, r.write);
    rss = std::max(rss, r.max_rss);
  }
  std::ostringstream out;
  out.precision(4);
  out << "labelled " << options.input << " (" << info.dims[2] << "x" << info.dims[1] << "x" << info.dims[0] << " "
      << io::dtype_name(info.dtype) << ") on " << result.comm_size << " rank(s), " << result.brick_count
      << " bricks of " << result.brick_shape[2] << "x" << result.brick_shape[1] << "x" << result.brick_shape[0] << ", "
      << options.connectivity << "-connected\n";
  if (!result.backend_reason.empty())
    out << "  backend auto: " << result.backend << ", " << result.backend_reason << "\n";
  if (options.operators.any())
    out << "  mask: [" << options.lo << ", " << options.hi << "], then " << options.operators.describe() << "\n";
  if (options.periodic != std::array<bool, 3>{})
    out << "  periodic along " << periodic_text(options.periodic) << ": objects across those faces are one\n";
  if (result.split) {
    const auto& split = *result.split;
    out << "  split: " << split.markers << " markers ("
        << (options.split.markers.empty() ? "h-maxima of the distance, h " + exact(options.split.h)
                                          : "ids of " + options.split.markers)
        << "); " << split.flooded << " components of two or more flooded into " << split.regions
        << " objects; distance " << split.distance_seconds << " s, floods " << split.flood_seconds << " s\n";
  }
  out << "  " << s.objects << " objects, " << s.foreground << " voxels";
  if (s.dropped > 0)
    out << "; " << s.dropped << " dropped ("
        << (options.operators.seed && !options.operators.morphology() && !options.operators.fill_holes
                ? "without a seed voxel, or smaller than "
                : "smaller than ")
        << options.min_voxels << " voxels)";
  out << "\n  " << s.boundary_parts << " parts joined across bricks by " << s.joins << " links\n"
      << "  time " << result.seconds << " s (pass 1 " << pass1 << ", merge " << merge << ", pass 2 " << pass2 << "), "
      << static_cast<double>(info.voxels()) / result.seconds / 1e6 << " Mvoxels/s; peak memory per rank "
      << static_cast<double>(rss) / (1 << 20) << " MiB\n"
      << "  labels (" << result.label_type << ", " << result.output_format << "): " << options.output << "\n";
  if (options.type == "auto" && result.label_type == "u64")
    out << "  the labels are u64: " << s.objects << " objects are more than u32 holds (4294967295)\n";
  if (result.bricks_read_again > 0)
    out << "  pass 2 read and labelled " << result.bricks_read_again << " of " << result.brick_count
        << " bricks again: their runs did not fit in the memory bound\n";
  if (!options.mask_output.empty()) out << "  mask (u8, " << result.mask_format << "): " << options.mask_output << "\n";
  if (!options.stats.empty()) out << "  object table: " << options.stats << "\n";
  return out.str();
}

}  // namespace volseg::segment
