// SPDX-License-Identifier: MIT
// `volseg label --split` (split_job.hpp, docs/split.md). Four steps:
//   distance   `volseg distance` of the mask into a temporary f32 volume
//              beside the output, and the mask itself as a u8 class image
//              (every foreground voxel class 1)
//   components a labeling of the class image with a table: each connected
//              component's box and first voxel, its rows spread over the ranks
//   floods     each rank takes its rows: reads the component's box of
//              distances (and markers), isolates the component, finds its
//              markers and floods them; regions get colours (1..255) that
//              differ where they touch, and the voxels of colour 2 and up
//              are written into the class image
//   labeling   the class image labelled as classes: regions of one colour
//              that touch are one object only within one region, so every
//              region is an object, numbered in file order
// A component is split on one rank, from its box alone, so the result is
// the same for every rank count and brick size.
#include "split_job.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <unordered_map>

#include "job_outputs.hpp"
#include "label_report.hpp"
#include "split_flood.hpp"
#include "volseg/io/auto_backend.hpp"
#include "volseg/io/dtype_dispatch.hpp"
#include "volseg/io/error.hpp"
#include "volseg/io/files.hpp"
#include "volseg/io/memory.hpp"
#include "volseg/io/nrrd.hpp"
#include "volseg/io/registry.hpp"
#include "volseg/io/watchdog.hpp"
#include "volseg/segment/brick_driver.hpp"
#include "volseg/segment/distance.hpp"
#include "volseg/segment/expression.hpp"

namespace volseg::segment::detail {
namespace {

using Clock = std::chrono::steady_clock;
double since(Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); }

std::string dims_text(const io::Index3& d) {
  return std::to_string(d[2]) + "x" + std::to_string(d[1]) + "x" + std::to_string(d[0]);
}

void check_split_options(const LabelOptions& options) {
  const SplitOptions& split = options.split;
  if (options.classes) throw Error("--split makes its own class image: give a mask or a threshold, not --classes");
  if (split.markers.empty() && (!(split.h > 0) || !std::isfinite(split.h)))
    throw Error("--h must be a positive number of distance units");
  if (split.spacing)
    for (const double s : *split.spacing)
      if (!(s > 0) || !std::isfinite(s)) throw Error("--spacing: every entry must be positive and finite");
  if (options.periodic != std::array<bool, 3>{})
    throw Error("--split: the distance transform does not wrap around periodic faces; label without --periodic");
  if (split.on_field == "input" && options.mask_input)
    throw Error("--split-on input: the input is a 0/1 mask (--mask-input), with nothing to flood; name a field");
}

// The temporary volumes beside the output, removed when the job ends.
struct SplitFiles {
  SplitFiles(const Comm& comm, const std::string& output) : rank0(comm.rank() == 0) {
    long long pid = ::getpid();
    check_mpi(MPI_Bcast(&pid, 1, MPI_LONG_LONG, 0, comm.get()), "MPI_Bcast");
    const std::filesystem::path out(output);
    const std::string stem = "." + out.filename().string() + ".volseg-split-" + std::to_string(pid);
    distance = (out.parent_path() / (stem + "-distance.nhdr")).string();
    classes = (out.parent_path() / (stem + "-classes.nhdr")).string();
  }
  ~SplitFiles() {
    if (!rank0) return;
    for (const auto& path : {distance, classes})
      for (const auto& file : output_files(path)) {
        std::error_code ec;
        std::filesystem::remove(file, ec);
      }
  }
  bool rank0;
  std::string distance, classes;
};

// The markers file: its shape the input's, an integer type.
std::unique_ptr<io::VolumeReader> open_markers(const Comm& comm, const LabelOptions& options,
                                               const io::VolumeInfo& info) {
  if (options.split.markers.empty()) return nullptr;
  const io::FileFormat format = io::detect_format(comm, options.split.markers);
  auto reader = open_input(io::choose_backend(comm, format, options.split.markers, io::Access::stream).backend,
                           {options.split.markers, options.split.markers_selection}, comm, {});
  const io::VolumeInfo& m = reader->info();
  if (m.dims != info.dims)
    throw Error("--markers " + options.split.markers + " is " + dims_text(m.dims) + ", the input " +
                dims_text(info.dims) + ": they must match voxel for voxel");
  if (m.dtype == io::DType::f32 || m.dtype == io::DType::f64)
    throw Error("--markers " + options.split.markers + " is " + std::string(io::dtype_name(m.dtype)) +
                ": markers are ids, of an integer type");
  return reader;
}

// --split-on: the field that floods, of the input's shape (any type, flooded
// as float32). "input": the input itself, as the threshold reads it.
std::unique_ptr<io::VolumeReader> open_flood_field(const Comm& comm, const LabelOptions& options,
                                                   const io::VolumeInfo& info) {
  const SplitOptions& split = options.split;
  if (split.on_field.empty()) return nullptr;
  const bool input = split.on_field == "input";
  const std::string& path = input ? options.input : split.on_field;
  const io::FileFormat format = io::detect_format(comm, path);
  auto reader = open_input(io::choose_backend(comm, format, path, io::Access::stream).backend,
                           {path, input ? options.selection : split.on_selection}, comm, {});
  const io::VolumeInfo& f = reader->info();
  if (f.dims != info.dims)
    throw Error("--split-on " + path + " is " + dims_text(f.dims) + ", the input " + dims_text(info.dims) +
                ": they must match voxel for voxel");
  return reader;
}

// The components of the class image (all class 1 still), with a table:
// each component's box and first voxel, this rank's slice of the rows.
LabelSummary find_components(const Comm& comm, const LabelOptions& options, io::VolumeReader& classes) {
  const io::Index3 dims = classes.info().dims;
  const BrickLayout layout(dims, BrickLayout::job_shape(dims, 4, std::nullopt));
  Labeling labeling(comm, BrickMap::from_layout(layout, comm.size(), Assignment::block, 0), options.connectivity, 0);
  std::vector<io::Extent> extents;
  for (const auto brick : labeling.mine()) extents.push_back(labeling.map().bricks[static_cast<std::size_t>(brick)]);
  std::vector<std::uint8_t> mask(static_cast<std::size_t>(layout.largest_brick_voxels()));
  BrickDriver bricks(comm, std::move(extents), labeling.mine(), {});
  bricks.run(false, [&](std::optional<std::size_t> k) {
    if (!k) return;
    classes.read(bricks.extent(*k), mask.data());
    labeling.add(bricks.id(*k), mask.data());
  });
  return labeling.finish(KeepRule{}, /*with_table=*/true);
}

// Writes bytes into the class image's data file at voxel offsets: the
// colours of one component's voxels (other ranks write other voxels).
class ClassWriter {
 public:
  explicit ClassWriter(const std::string& header) : path_(io::data_path_for_header(header)) {
    fd_ = ::open(path_.c_str(), O_WRONLY | O_CLOEXEC);
    if (fd_ < 0) throw RankError("split: cannot open " + path_ + ": " + std::strerror(errno));
  }
  ~ClassWriter() {
    if (fd_ >= 0) ::close(fd_);
  }
  void write(std::uint64_t at, const std::uint8_t* bytes, std::size_t n) {
    while (n > 0) {
      const ssize_t done = ::pwrite(fd_, bytes, n, static_cast<off_t>(at));
      if (done < 0 && errno == EINTR) continue;
      if (done <= 0) throw RankError("split: writing " + path_ + ": " + std::strerror(errno));
      bytes += done;
      at += static_cast<std::uint64_t>(done);
      n -= static_cast<std::size_t>(done);
    }
  }
  void close() {
    const int fd = fd_;
    fd_ = -1;
    if (::close(fd) != 0) throw RankError("split: closing " + path_ + ": " + std::strerror(errno));
  }

 private:
  std::string path_;
  int fd_ = -1;
};

struct FloodFigures {
  std::uint64_t markers = 0, flooded = 0, regions = 0;
};

// The split of each component of this rank's slice of the table.
class Floods {
 public:
  Floods(const LabelOptions& options, io::VolumeReader& distance, io::VolumeReader* markers, io::VolumeReader* field,
         std::uint64_t room)
      : options_(options), distance_(distance), markers_(markers), field_(field), room_(room) {}

  void run(const ObjectTable& table, ClassWriter& out, FloodFigures& figures, Progress& progress) {
    for (std::size_t i = 0; i < table.size(); ++i) {
      const ObjectPart& part = table.part(i);
      split(part, out, figures);
      progress.advance(1, part.voxels * sizeof(float));
    }
  }

 private:
  void split(const ObjectPart& part, ClassWriter& out, FloodFigures& figures) {
    if (part.voxels < 2) return;
    io::Extent box;
    for (int a = 0; a < 3; ++a) {
      box.offset[a] = part.lo[a];
      box.count[a] = part.hi[a] - part.lo[a] + 1;
    }
    const io::Index3 padded{box.count[0] + 2, box.count[1] + 2, box.count[2] + 2};
    const auto n = static_cast<std::size_t>(padded[0] * padded[1] * padded[2]);
    // distances, foreground, inside, markers, the heaps' entries
    const std::uint64_t need = static_cast<std::uint64_t>(n) * 48;
    if (need > room_)
      throw RankError("--split: object " + std::to_string(part.first) + " (first voxel) of " +
                      std::to_string(part.voxels) + " voxels spans a box of " + dims_text(box.count) +
                      ", whose flood needs " + io::mib_text(need) + ", more than the " + io::mib_text(room_) +
                      " left of this rank's memory bound: give more memory (--memory) or split a smaller mask");
    ComponentBox component;
    component.shape = padded;
    read_box(box, component);
    std::vector<std::uint8_t> foreground(n, 0);
    for (std::size_t i = 0; i < n; ++i) foreground[i] = component.height[i] > 0;
    auto padded_index = [&](std::uint64_t global) {
      const auto& d = distance_.info().dims;
      const auto x = static_cast<std::int64_t>(global % static_cast<std::uint64_t>(d[2]));
      const auto y =
          static_cast<std::int64_t>(global / static_cast<std::uint64_t>(d[2]) % static_cast<std::uint64_t>(d[1]));
      const auto z = static_cast<std::int64_t>(global / static_cast<std::uint64_t>(d[2] * d[1]));
      return component.index(z - box.offset[0], y - box.offset[1], x - box.offset[2]);
    };
    isolate(component, foreground, padded_index(part.first), options_.connectivity);
    if (field_) read_field(box, component);
    std::vector<std::uint32_t> regions;
    const std::uint32_t count = markers_ ? read_markers(box, component, regions)
                                         : h_maxima(component, options_.split.h, regions, /*zero_background=*/!field_);
    figures.markers += count;
    if (count < 2) return;
    ++figures.flooded;
    figures.regions += count;
    flood(component, regions, options_.connectivity);
    const auto colours = colour_regions(component, regions, count, options_.connectivity);
    write_colours(box, component, regions, colours, out);
  }

  void read_box(const io::Extent& box, ComponentBox& component) {
    std::vector<float> values(static_cast<std::size_t>(box.voxels()));
    distance_.read(box, values.data());
    component.height.assign(static_cast<std::size_t>(component.shape[0] * component.shape[1] * component.shape[2]), 0);
    std::size_t at = 0;
    for (std::int64_t z = 0; z < box.count[0]; ++z)
      for (std::int64_t y = 0; y < box.count[1]; ++y)
        for (std::int64_t x = 0; x < box.count[2]; ++x) component.height[component.index(z, y, x)] = values[at++];
  }

  // --split-on: the field's values replace the distance inside the
  // component, as float32; the flood takes the highest first, so the
  // height is -FIELD (watershed(FIELD)), or FIELD when negated.
  void read_field(const io::Extent& box, ComponentBox& component) {
    const io::DType dtype = field_->info().dtype;
    std::vector<std::byte> raw(static_cast<std::size_t>(box.voxels()) * io::dtype_size(dtype));
    field_->read(box, raw.data());
    const float sign = options_.split.on_negate ? 1.0F : -1.0F;
    io::visit_dtype(dtype, [&]<class T>(std::type_identity<T>) {
      const T* values = reinterpret_cast<const T*>(raw.data());
      std::size_t at = 0;
      for (std::int64_t z = 0; z < box.count[0]; ++z)
        for (std::int64_t y = 0; y < box.count[1]; ++y)
          for (std::int64_t x = 0; x < box.count[2]; ++x, ++at) {
            const std::size_t i = component.index(z, y, x);
            if (component.inside[i]) component.height[i] = sign * static_cast<float>(values[at]);
          }
    });
  }

  // The markers file's ids inside the component, renumbered 1..M in file
  // order of each id's first voxel.
  std::uint32_t read_markers(const io::Extent& box, const ComponentBox& component, std::vector<std::uint32_t>& out) {
    const io::DType dtype = markers_->info().dtype;
    std::vector<std::byte> raw(static_cast<std::size_t>(box.voxels()) * io::dtype_size(dtype));
    markers_->read(box, raw.data());
    out.assign(component.height.size(), 0);
    std::unordered_map<std::int64_t, std::uint32_t> index;
    io::visit_dtype(dtype, [&]<class T>(std::type_identity<T>) {
      if constexpr (std::is_integral_v<T>) {
        const T* ids = reinterpret_cast<const T*>(raw.data());
        std::size_t at = 0;
        for (std::int64_t z = 0; z < box.count[0]; ++z)
          for (std::int64_t y = 0; y < box.count[1]; ++y)
            for (std::int64_t x = 0; x < box.count[2]; ++x, ++at) {
              const auto id = static_cast<std::int64_t>(ids[at]);
              const std::size_t i = component.index(z, y, x);
              if (id == 0 || !component.inside[i]) continue;
              auto [it, added] = index.emplace(id, static_cast<std::uint32_t>(index.size() + 1));
              out[i] = it->second;
            }
      }
    });
    return static_cast<std::uint32_t>(index.size());
  }

  // Runs of voxels of colour 2 and up, written where they lie in the volume.
  void write_colours(const io::Extent& box, const ComponentBox& component, const std::vector<std::uint32_t>& regions,
                     const std::vector<std::uint8_t>& colours, ClassWriter& out) {
    const auto& d = distance_.info().dims;
    std::vector<std::uint8_t> run;
    for (std::int64_t z = 0; z < box.count[0]; ++z)
      for (std::int64_t y = 0; y < box.count[1]; ++y) {
        const std::uint64_t row = (static_cast<std::uint64_t>(box.offset[0] + z) * static_cast<std::uint64_t>(d[1]) +
                                   static_cast<std::uint64_t>(box.offset[1] + y)) *
                                      static_cast<std::uint64_t>(d[2]) +
                                  static_cast<std::uint64_t>(box.offset[2]);
        std::int64_t start = -1;
        run.clear();
        for (std::int64_t x = 0; x <= box.count[2]; ++x) {
          std::uint8_t colour = 0;
          if (x < box.count[2]) {
            const std::size_t i = component.index(z, y, x);
            if (component.inside[i] && regions[i] != 0) colour = colours[regions[i] - 1];
          }
          if (colour >= 2) {
            if (start < 0) start = x;
            run.push_back(colour);
          } else if (start >= 0) {
            out.write(row + static_cast<std::uint64_t>(start), run.data(), run.size());
            start = -1;
            run.clear();
          }
        }
      }
  }

  const LabelOptions& options_;
  io::VolumeReader& distance_;
  io::VolumeReader* markers_;
  io::VolumeReader* field_;
  std::uint64_t room_;
};

}  // namespace

LabelResult run_split_label(const Comm& comm, const LabelOptions& options) {
  check_split_options(options);
  // Everything the labeling would refuse, refused before the distance.
  if (!io::is_stream(options.output))
    for (const auto& file : output_files(options.output)) io::refuse_existing(file.string(), options.force);
  // The markers checked against the input before anything is written.
  // So is the field of --split-on.
  std::unique_ptr<io::VolumeReader> markers, field;
  if (!options.split.markers.empty() || !options.split.on_field.empty()) {
    const io::FileFormat format = io::detect_format(comm, options.input);
    const auto choice = io::resolve_backend(comm, options.backend, format, options.input, io::Access::stream);
    const io::VolumeInfo info = open_input(choice.backend, {options.input, options.selection}, comm, {})->info();
    markers = open_markers(comm, options, info);
    field = open_flood_field(comm, options, info);
  }
  SplitFiles files(comm, options.output);
  LabelResult::Split figures;
  // 1. The distance, and the mask as the class image.
  DistanceOptions d;
  d.input = options.input;
  d.output = files.distance;
  d.mask_input = options.mask_input;
  d.binary_mask = options.mask_input;
  d.lo = options.lo;
  d.hi = options.hi;
  d.operators = options.operators;
  d.spacing = options.split.spacing;
  d.backend = options.backend;
  d.selection = options.selection;
  d.hints = options.hints;
  d.input_hints = options.input_hints;
  d.memory_bytes = options.memory_bytes;
  d.mask_output = files.classes;
  d.force = true;
  d.progress = options.progress;
  d.command_line = options.command_line;
  const auto start = Clock::now();
  const DistanceResult distance = run_distance(comm, d);
  figures.distance_seconds = since(start);
  // 2. The components, 3. their floods.
  const auto floods_start = Clock::now();
  {
    const io::watchdog::Phase phase("label --split: the components' markers and floods");
    auto classes = open_input("posix", {files.classes, {}}, comm, {});
    auto distances = open_input("posix", {files.distance, {}}, comm, {});
    const LabelSummary components = find_components(comm, options, *classes);
    const io::MemoryBound bound = io::memory_per_rank(comm, options.memory_bytes);
    const std::uint64_t process = io::resident_bytes();
    FloodFigures mine;
    Progress progress(comm, "split", static_cast<std::int64_t>(components.objects), options.progress, "objects");
    if (options.on_progress) progress.observe(options.on_progress);
    try {
      collectively(comm, [&] {
        ClassWriter out(files.classes);
        Floods(options, *distances, markers.get(), field.get(), bound.bytes > process ? bound.bytes - process : 0)
            .run(components.table, out, mine, progress);
        out.close();
      });
    } catch (...) {
      progress.finish();
      throw;
    }
    progress.finish();
    std::uint64_t sums[3] = {mine.markers, mine.flooded, mine.regions};
    check_mpi(MPI_Allreduce(MPI_IN_PLACE, sums, 3, MPI_UINT64_T, MPI_SUM, comm.get()), "MPI_Allreduce");
    figures.markers = sums[0];
    figures.flooded = sums[1];
    figures.regions = sums[2];
  }
  figures.flood_seconds = since(floods_start);
  // 4. The class image labelled, with every option the user gave.
  LabelOptions inner = options;
  inner.split = {};
  inner.input = files.classes;
  inner.classes = true;
  inner.mask_input = false;
  inner.operators = {};
  inner.selection = {};
  inner.backend = "posix";
  inner.input_hints = {};
  inner.source_info = distance.input_info;
  inner.source_name = options.input;
  inner.report.clear();
  LabelResult result = run_label(comm, inner);
  result.split = figures;
  result.seconds += figures.distance_seconds + figures.flood_seconds;
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

}  // namespace volseg::segment::detail

namespace volseg::segment {

void parse_split_on(const std::string& text, SplitOptions& split) {
  std::string field = text;
  split.on_negate = !field.empty() && field[0] == '-';
  if (split.on_negate) field.erase(0, 1);
  if (field.empty()) throw Error("--split-on " + text + ": name a field (input, or FILE[:VAR])");
  split.on_selection = {};
  if (field == "input") {
    split.on_field = field;
    return;
  }
  const auto [file, variable] = file_and_variable(field);
  split.on_field = file;
  split.on_selection.variable = variable;
}

}  // namespace volseg::segment
