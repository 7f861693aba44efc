// SPDX-License-Identifier: MIT
// Building a pyramid (format: see pyramid.cpp). Every rank streams its block
// of level-0 bricks once (twice when the data's range is not declared: a
// first pass finds min and max for the histogram edges); each brick gives its
// statistics, its histogram and its piece of every coarse level. Ranks write
// their pieces into the level volumes, rank 0 gathers statistics and
// histograms and writes them, and the index last.
#include <sys/stat.h>

#include <array>
#include <charconv>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <set>

#include "files.hpp"
#include "reduce.hpp"
#include "volseg/io/auto_backend.hpp"
#include "volseg/io/error.hpp"
#include "volseg/io/files.hpp"
#include "volseg/io/format.hpp"
#include "volseg/io/hints.hpp"
#include "volseg/io/registry.hpp"
#include "volseg/io/watchdog.hpp"
#include "volseg/pyramid/pyramid.hpp"
#include "volseg/segment/brick_driver.hpp"
#include "volseg/segment/brick_layout.hpp"
#include "volseg/segment/decode.hpp"
#include "volseg/segment/expression.hpp"

namespace volseg::pyramid {

namespace {

namespace fs = std::filesystem;
constexpr std::int64_t largest_brick = 1024;  // 1024^3 voxels: u32 histogram counts cannot overflow

struct Plan {
  std::int64_t brick = 64;
  std::vector<io::Index3> level_dims;  // [0]: the source's
};

io::Index3 level_dims(const io::Index3& dims, int level) {
  const std::int64_t step = std::int64_t{1} << level;
  return {(dims[0] + step - 1) / step, (dims[1] + step - 1) / step, (dims[2] + step - 1) / step};
}

void check_brick(std::int64_t brick) {
  if (brick < 2 || brick > largest_brick || (brick & (brick - 1)) != 0)
    throw Error("--brick " + std::to_string(brick) + ": the pyramid's brick edge must be a power of two from 2 to " +
                std::to_string(largest_brick));
}

Plan make_plan(const io::Index3& dims, const BuildOptions& options) {
  Plan plan;
  plan.brick = options.brick;
  const int most = std::countr_zero(static_cast<std::uint64_t>(options.brick));  // log2(brick)
  const std::int64_t largest = std::max({dims[0], dims[1], dims[2]});
  int coarse = options.levels;
  if (coarse < 0 || coarse > most)
    throw Error("--levels " + std::to_string(coarse) + ": with --brick " + std::to_string(options.brick) +
                " a pyramid has 1 to " + std::to_string(most) + " coarse levels (0: as many as needed)");
  if (coarse == 0) {
    while (coarse < most && ((largest + (std::int64_t{1} << coarse) - 1) >> coarse) > options.brick) ++coarse;
    if (coarse == 0 && largest > 1) coarse = 1;  // one coarse level whenever halving changes anything
  }
  for (int k = 0; k <= coarse; ++k) plan.level_dims.push_back(level_dims(dims, k));
  return plan;
}

bool is_mask(const io::VolumeInfo& info) {
  const auto it = info.attributes.find("flag_values");
  return info.dtype == io::DType::u8 && it != info.attributes.end() && it->second == "0 1";
}

std::string relative_to(const std::string& path, const std::string& directory) {
  std::error_code ec;
  const auto relative = fs::relative(fs::absolute(path), fs::absolute(directory), ec);
  return ec || relative.empty() ? fs::absolute(path).lexically_normal().string() : relative.string();
}

// Rank 0: an empty directory to build in. Returns whether it was created
// here (a failed build then removes it).
bool prepare_directory(const Comm& comm, const std::string& directory, bool force,
                       const std::vector<std::string>& source_files) {
  bool created = false;
  collectively(comm, [&] {
    if (comm.rank() != 0) return;
    std::error_code ec;
    if (!fs::exists(directory)) {
      if (!fs::create_directories(directory, ec) || ec)
        throw Error("cannot create the pyramid directory " + directory + ": " + ec.message());
      created = true;
      return;
    }
    if (!fs::is_directory(directory)) throw Error(directory + " exists and is not a directory");
    for (const auto& file : source_files) {
      const fs::path path(file);
      if (fs::equivalent(path.parent_path().empty() ? "." : path.parent_path(), directory, ec) &&
          files::is_pyramid_file(path.filename().string()))
        throw Error(file + " is the input and lies in the pyramid directory " + directory +
                    ": choose another --pyramid-dir");
    }
    io::refuse_existing(directory, force);
    for (const auto& entry : fs::directory_iterator(directory))
      if (!files::is_pyramid_file(entry.path().filename().string()))
        throw Error(directory + " holds " + entry.path().filename().string() +
                    ", which is not a pyramid's file: not replacing it");
    // The index first: from here on the directory is not a finished pyramid.
    for (const char* first : {files::index}) {
      if (!fs::remove(fs::path(directory) / first, ec) && ec)
        throw Error("cannot remove " + (fs::path(directory) / first).string() + ": " + ec.message());
    }
    for (const auto& entry : fs::directory_iterator(directory))
      if (!fs::remove(entry.path(), ec) && ec)
        throw Error("cannot remove " + entry.path().string() + ": " + ec.message());
  });
  return created;
}

// Rank 0, after a failure: the directory as if the build never ran (the
// writers have removed their temporary files already).
void remove_partial(const std::string& directory, bool created) {
  std::error_code ec;
  if (!fs::is_directory(directory, ec)) return;
  for (const auto& entry : fs::directory_iterator(directory, ec))
    if (files::is_pyramid_file(entry.path().filename().string())) fs::remove(entry.path(), ec);
  if (created) fs::remove(directory, ec);  // only if empty; an error here leaves an empty folder
}

io::VolumeInfo level_info(const io::VolumeInfo& source, const Plan& plan, int level, Reduction reduction,
                          const std::string& input) {
  io::VolumeInfo info;
  info.dims = plan.level_dims[static_cast<std::size_t>(level)];
  info.dtype = reduction == Reduction::max ? io::DType::u8 : io::DType::f32;
  info.byte_order = io::native_byte_order();
  info.variable = source.variable;
  for (std::size_t a = 0; a < 3; ++a) {
    const double factor = static_cast<double>(std::int64_t{1} << level);
    info.spacing[a] = source.spacing[a] * factor;
    // A coarse voxel stands at the centre of the fine voxels it reduces.
    info.origin[a] = source.origin[a] + 0.5 * (factor - 1) * source.spacing[a];
  }
  info.attributes["pyramid_level"] = std::to_string(level);
  info.attributes["pyramid_reduction"] = reduction_name(reduction);
  info.attributes["source_file"] = input;
  if (reduction == Reduction::max) info.attributes["flag_values"] = "0 1";
  return info;
}

struct Job {
  const Comm& comm;
  io::VolumeReader& reader;
  const segment::Decoder& decoder;
  const segment::BrickLayout& layout;
  const std::vector<std::int64_t>& bricks;  // this rank's
  std::vector<std::byte> raw;
  std::vector<double> values;

  // Collective. Calls fn(index in bricks, extent) after reading and decoding
  // each of this rank's bricks, in rounds every rank joins (the brick
  // driver), moving `progress` when given.
  template <class Fn>
  void for_each_brick(segment::Progress* progress, Fn&& fn) {
    const std::size_t element = io::dtype_size(reader.info().dtype);
    segment::BrickDriver driver(comm, layout, bricks, {.progress = progress, .bytes_per_voxel = element});
    driver.run(true, [&](std::optional<std::size_t> k) {
      const io::Extent* extent = k ? &driver.extent(*k) : nullptr;
      raw.resize(extent ? static_cast<std::size_t>(extent->voxels()) * element : 0);
      io::read_in_round(reader, extent, raw.data());
      if (!extent) return;
      values.resize(static_cast<std::size_t>(extent->voxels()));
      decoder.to_double(raw.data(), extent->voxels(), values.data());
      fn(*k, *extent);
    });
  }
};

// The range of the valid voxels of the whole volume (collective).
std::pair<double, double> scan_range(Job& job) {
  double range[2] = {std::numeric_limits<double>::infinity(), std::numeric_limits<double>::infinity()};  // min, -max
  job.for_each_brick(nullptr, [&](std::size_t, const io::Extent&) {
    for (double v : job.values)
      if (!std::isnan(v)) {
        range[0] = std::min(range[0], v);
        range[1] = std::min(range[1], -v);
      }
  });
  double global[2];
  check_mpi(MPI_Allreduce(range, global, 2, MPI_DOUBLE, MPI_MIN, job.comm.get()), "MPI_Allreduce");
  if (std::isinf(global[0])) return {0.0, 0.0};  // no valid voxel anywhere
  return {global[0], -global[1]};
}

struct Local {
  std::vector<BrickStats> stats;
  std::vector<std::uint32_t> histograms;  // bricks x bins
};

void summarise(const std::vector<double>& values, const segment::HistogramEdges& edges, BrickStats& stats,
               std::uint32_t* histogram) {
  stats.voxels = values.size();
  double low = std::numeric_limits<double>::infinity(), high = -low;
  for (double v : values) {
    if (std::isnan(v)) continue;
    ++stats.valid;
    low = std::min(low, v);
    high = std::max(high, v);
    ++histogram[std::clamp(edges.bin(v), 0, edges.bins - 1)];  // rounding of unpacking may step past an edge
  }
  if (stats.valid > 0) {
    stats.min = low;
    stats.max = high;
  }
}

// Each level's writers: the pyramid folder's, and an OME-Zarr input's dataset.
using LevelWriters = std::vector<std::vector<std::unique_ptr<io::VolumeWriter>>>;

void write_pieces(const std::vector<double>& values, const io::Extent& extent, const Plan& plan, Reduction reduction,
                  LevelWriters& writers) {
  detail::Piece piece;
  for (std::size_t k = 1; k < plan.level_dims.size(); ++k) {
    piece =
        k == 1 ? detail::reduce_voxels(values.data(), extent.count, reduction) : detail::reduce_piece(piece, reduction);
    io::Extent coarse;
    for (std::size_t a = 0; a < 3; ++a) coarse.offset[a] = extent.offset[a] >> k;  // bricks align: B >= 2^k
    coarse.count = piece.count;
    if (reduction == Reduction::max) {
      const auto maxima = detail::piece_maxima(piece);
      for (auto& writer : writers[k - 1]) writer->write(coarse, maxima.data());
    } else {
      const auto means = detail::piece_means(piece);
      for (auto& writer : writers[k - 1]) writer->write(coarse, means.data());
    }
  }
}

// Collective. How many datasets an OME-Zarr image's first multiscale lists.
int ome_dataset_count(const Comm& comm, const std::string& image) {
  int count = 0;
  collectively(comm, [&] {
    if (comm.rank() != 0) return;
    std::ifstream in((fs::path(image) / ".zattrs").string());
    const auto doc = nlohmann::json::parse(in, nullptr, false);
    if (!doc.is_discarded() && doc.contains("multiscales") && doc["multiscales"].is_array() &&
        !doc["multiscales"].empty() && doc["multiscales"][0].contains("datasets") &&
        doc["multiscales"][0]["datasets"].is_array())
      count = static_cast<int>(doc["multiscales"][0]["datasets"].size());
  });
  check_mpi(MPI_Bcast(&count, 1, MPI_INT, 0, comm.get()), "MPI_Bcast");
  return count;
}

// An OME-Zarr image's levels k >= 1 as its datasets "k", each a Zarr array
// whose chunks are the bricks' pieces of that level (one writer each).
std::unique_ptr<io::VolumeWriter> ome_level_writer(const Comm& comm, const BuildOptions& options, const Plan& plan,
                                                   int k, const io::VolumeInfo& level) {
  io::CreateRequest request{(fs::path(options.input) / std::to_string(k)).string(), level, options.force};
  const std::int64_t piece = std::max<std::int64_t>(plan.brick >> k, 1);
  request.bricks = io::Index3{piece, piece, piece};
  return io::create_writer("zarr", request, comm);
}

// Collective. The OME-Zarr image's multiscales list its levels: dataset k
// scaled by 2^k from dataset 0, and moved to the centre of the voxels it
// reduces. Written under its temporary name and committed over .zattrs.
void add_ome_levels(const Comm& comm, const std::string& image, const Plan& plan, Reduction reduction) {
  collectively(comm, [&] {
    if (comm.rank() != 0) return;
    const std::string path = (fs::path(image) / ".zattrs").string();
    std::ifstream in(path);
    nlohmann::json doc = nlohmann::json::parse(in, nullptr, false);
    if (doc.is_discarded() || !doc.contains("multiscales")) throw Error(path + ": no multiscales to add levels to");
    auto& m = doc["multiscales"][0];
    auto& datasets = m["datasets"];
    std::array<double, 3> scale{1, 1, 1}, translation{0, 0, 0};
    for (const auto& t : datasets[0].value("coordinateTransformations", nlohmann::json::array())) {
      if (t.value("type", "") == "scale") scale = t["scale"].get<std::array<double, 3>>();
      if (t.value("type", "") == "translation") translation = t["translation"].get<std::array<double, 3>>();
    }
    nlohmann::json levels = nlohmann::json::array({datasets[0]});
    for (std::size_t k = 1; k < plan.level_dims.size(); ++k) {
      const double f = static_cast<double>(std::int64_t{1} << k);
      std::array<double, 3> s{}, t{};
      for (std::size_t a = 0; a < 3; ++a) s[a] = scale[a] * f, t[a] = translation[a] + 0.5 * (f - 1) * scale[a];
      levels.push_back(
          {{"path", std::to_string(k)},
           {"coordinateTransformations", nlohmann::json::array({{{"type", "scale"}, {"scale", s}},
                                                                {{"type", "translation"}, {"translation", t}}})}});
    }
    datasets = levels;
    m["type"] = reduction_name(reduction);
    io::write_file_atomically(path, doc.dump(4) + "\n");
  });
}

// Every brick's statistics and histogram go to their place in the two files,
// written by the rank that summarised the brick: no rank holds every brick's
// (a 1 TiB volume in 64^3 bricks has 4 million, 17 GB of histograms).
// Rank 0 creates the files at their full size first.
void write_tables(const Comm& comm, const std::string& directory, const std::vector<std::int64_t>& bricks,
                  const Local& local, std::int64_t brick_count, int bins) {
  const fs::path dir(directory);
  const std::string records_path = (dir / files::bricks).string(), histograms_path = (dir / files::histograms).string();
  const auto histogram_bytes = static_cast<std::size_t>(bins) * 4;
  collectively(comm, [&] {
    if (comm.rank() != 0) return;
    files::create_sized(records_path, static_cast<std::uint64_t>(brick_count) * files::brick_record_bytes);
    files::create_sized(histograms_path, static_cast<std::uint64_t>(brick_count) * histogram_bytes);
  });
  collectively(comm, [&] {
    std::vector<std::byte> records(bricks.size() * files::brick_record_bytes),
        histograms(bricks.size() * histogram_bytes);
    const auto nb = static_cast<std::size_t>(bins);
    for (std::size_t i = 0; i < bricks.size(); ++i) {
      files::put_brick(&records[i * files::brick_record_bytes], local.stats[i]);
      for (std::size_t j = 0; j < nb; ++j) files::put_u32(&histograms[(i * nb + j) * 4], local.histograms[i * nb + j]);
    }
    files::write_records(records_path, files::brick_record_bytes, bricks, records);
    files::write_records(histograms_path, histogram_bytes, bricks, histograms);
  });
}

nlohmann::json index_json(const BuildOptions& options, const std::string& directory, const io::VolumeInfo& info,
                          const std::vector<std::string>& source_files, Reduction reduction, const Plan& plan,
                          const segment::BrickLayout& layout, const segment::HistogramEdges& edges) {
  using nlohmann::json;
  json source;
  source["path"] = relative_to(options.input, directory);
  source["dims"] = info.dims;
  source["dtype"] = std::string(io::dtype_name(info.dtype));
  source["variable"] = info.variable;
  source["hints"] = options.selection.record();
  source["files"] = json::array();
  for (const auto& file : source_files) {
    struct stat st {};
    if (::stat(file.c_str(), &st) != 0) throw_errno("stat", file);
    source["files"].push_back(
        {{"path", relative_to(file, directory)},
         {"size", static_cast<std::uint64_t>(st.st_size)},
         {"mtime_ns", static_cast<std::int64_t>(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec}});
  }
  json levels = json::array();
  for (std::size_t k = 0; k < plan.level_dims.size(); ++k) {
    const bool source_level = k == 0;
    levels.push_back(
        {{"level", k},
         {"dims", plan.level_dims[k]},
         {"header", source_level ? source["path"].get<std::string>() : files::level_header(static_cast<int>(k))},
         {"dtype", source_level                  ? std::string(io::dtype_name(info.dtype))
                   : reduction == Reduction::max ? "u8"
                                                 : "f32"}});
  }
  return json{{"format", files::format_name},
              {"version", files::format_version},
              {"created_by", options.command_line.empty() ? "volseg pyramid" : options.command_line},
              {"source", source},
              {"reduction", reduction_name(reduction)},
              {"brick", {{"shape", layout.shape()}, {"grid", layout.grid()}, {"count", layout.count()}}},
              {"levels", levels},
              {"histogram",
               {{"lo", edges.lo},
                {"hi", edges.hi},
                {"bins", edges.bins},
                {"integers", edges.integers},
                {"file", files::histograms}}},
              {"bricks", {{"file", files::bricks}, {"record_bytes", files::brick_record_bytes}}}};
}

}  // namespace

Pyramid build(const Comm& comm, const BuildOptions& options) {
  check_brick(options.brick);
  if (options.bins < 1) throw Error("--bins " + std::to_string(options.bins) + ": a histogram needs at least one bin");
  const std::string directory = options.directory.empty() ? default_directory(options.input) : options.directory;
  const std::string backend = io::resolve_backend(comm, options.backend, options.input, io::Access::stream).backend;
  auto reader = segment::open_input(backend, {options.input, options.selection}, comm, options.input_hints);
  const io::VolumeInfo info = reader->info();
  const std::vector<std::string> source_files = reader->files();
  const Reduction reduction = options.reduction.value_or(is_mask(info) ? Reduction::max : Reduction::mean);
  // An OME-Zarr image gets its levels as its own datasets too, for napari
  // and Neuroglancer, unless it was written with them (volseg's writer
  // makes them) and --force does not ask to replace them.
  const bool ome = io::detect_format(comm, options.input) == io::FileFormat::ome_zarr &&
                   (options.force || ome_dataset_count(comm, options.input) <= 1);
  const Plan plan = make_plan(info.dims, options);
  const segment::Decoder decoder(info);
  const segment::BrickLayout layout(info.dims, {plan.brick, plan.brick, plan.brick});
  const auto bricks = segment::assign_bricks(layout.count(), comm.rank(), comm.size(), segment::Assignment::block);
  Job job{comm, *reader, decoder, layout, bricks, {}, {}};

  const bool created = prepare_directory(comm, directory, options.force, source_files);
  try {
    double lo = 0, hi = 0;
    if (!decoder.declared_range(lo, hi) || !std::isfinite(lo) || !std::isfinite(hi)) {
      const io::watchdog::Phase phase("pyramid, the range scan");
      std::tie(lo, hi) = scan_range(job);
    }
    const bool packed = info.scale_factor || info.add_offset;
    const auto edges = segment::HistogramEdges::over(lo, hi, packed ? io::DType::f64 : info.dtype, options.bins);

    LevelWriters writers;
    for (int k = 1; k < static_cast<int>(plan.level_dims.size()); ++k) {
      const io::VolumeInfo level = level_info(info, plan, k, reduction, options.input);
      writers.emplace_back();
      writers.back().push_back(
          io::create_writer("posix", {(fs::path(directory) / files::level_header(k)).string(), level, true}, comm));
      if (ome) writers.back().push_back(ome_level_writer(comm, options, plan, k, level));
    }

    Local local;
    local.stats.resize(bricks.size());
    local.histograms.assign(bricks.size() * static_cast<std::size_t>(edges.bins), 0);
    {
      const io::watchdog::Phase phase("pyramid, the bricks");
      segment::Progress progress(comm, "pyramid", layout.count(), options.progress);
      try {
        job.for_each_brick(&progress, [&](std::size_t i, const io::Extent& extent) {
          summarise(job.values, edges, local.stats[i], &local.histograms[i * static_cast<std::size_t>(edges.bins)]);
          write_pieces(job.values, extent, plan, reduction, writers);
        });
      } catch (...) {
        progress.finish();
        throw;
      }
      progress.finish();
    }
    for (auto& level : writers)
      for (auto& writer : level) writer->close();
    reader->close();
    if (ome) add_ome_levels(comm, options.input, plan, reduction);

    {
      const io::watchdog::Phase phase("pyramid, the brick tables and index");
      write_tables(comm, directory, bricks, local, layout.count(), edges.bins);
    }
    collectively(comm, [&] {
      if (comm.rank() != 0) return;
      const fs::path dir(directory);
      const std::string text =
          index_json(options, directory, info, source_files, reduction, plan, layout, edges).dump(2) + "\n";
      io::write_file_atomically((dir / files::index).string(), text);
    });
  } catch (...) {
    if (comm.rank() == 0) remove_partial(directory, created);
    comm.barrier();
    throw;
  }
  Pyramid result;
  collectively(comm, [&] { result = load(directory); });
  return result;
}

segment::Histogram histogram(const Comm& comm, const HistogramOptions& options) {
  if (options.bins < 1) throw Error("bins " + std::to_string(options.bins) + ": a histogram needs at least one bin");
  // A pyramid of this input (and variable) with these bins: its tables are
  // the answer, each rank adding up a share of the bricks. It is only a
  // shortcut: one that cannot be read (damaged, another version) is passed by.
  std::optional<Pyramid> pyramid;
  try {
    pyramid = find(options.input, options.directory);
  } catch (const Error&) {
    pyramid.reset();
  }
  // Same edges: the bins asked for, or one integer a bin (what any bins at least as many give).
  if (pyramid &&
      !(pyramid->edges().bins == options.bins || (pyramid->edges().integers && pyramid->edges().bins <= options.bins)))
    pyramid.reset();
  if (pyramid && pyramid->source_selection() != options.selection) pyramid.reset();
  int found = pyramid ? 1 : 0, everywhere = 0;
  check_mpi(MPI_Allreduce(&found, &everywhere, 1, MPI_INT, MPI_MIN, comm.get()), "MPI_Allreduce");
  if (everywhere) {
    segment::Histogram local;
    collectively(comm, [&] {
      const std::int64_t n = pyramid->brick_count(), ranks = comm.size(), r = comm.rank();
      local = pyramid->histogram(n * r / ranks, n * (r + 1) / ranks - n * r / ranks);
    });
    segment::Histogram result(local.edges());
    check_mpi(MPI_Allreduce(local.counts().data(), result.counts().data(), local.edges().bins, MPI_UINT64_T, MPI_SUM,
                            comm.get()),
              "MPI_Allreduce");
    return result;
  }

  const std::string backend = io::resolve_backend(comm, options.backend, options.input, io::Access::stream).backend;
  auto reader = segment::open_input(backend, {options.input, options.selection}, comm, options.input_hints);
  const io::VolumeInfo info = reader->info();
  const segment::Decoder decoder(info);
  const std::int64_t edge = 64;
  const segment::BrickLayout layout(info.dims, {edge, edge, edge});
  const auto bricks = segment::assign_bricks(layout.count(), comm.rank(), comm.size(), segment::Assignment::block);
  Job job{comm, *reader, decoder, layout, bricks, {}, {}};
  double lo = 0, hi = 0;
  if (!decoder.declared_range(lo, hi) || !std::isfinite(lo) || !std::isfinite(hi)) {
    const io::watchdog::Phase phase("histogram, the range scan");
    std::tie(lo, hi) = scan_range(job);
  }
  const bool packed = info.scale_factor || info.add_offset;
  segment::Histogram local(segment::HistogramEdges::over(lo, hi, packed ? io::DType::f64 : info.dtype, options.bins));
  {
    const io::watchdog::Phase phase("histogram, the bricks");
    segment::Progress progress(comm, "histogram", layout.count(), options.progress);
    if (options.on_progress) progress.observe(options.on_progress);
    try {
      job.for_each_brick(&progress, [&](std::size_t, const io::Extent&) {
        const auto& edges = local.edges();
        auto& counts = local.counts();
        for (double v : job.values)  // as the pyramid's bricks: a rounding past an edge stays in the end bins
          if (!std::isnan(v)) ++counts[static_cast<std::size_t>(std::clamp(edges.bin(v), 0, edges.bins - 1))];
      });
    } catch (...) {
      progress.finish();
      throw;
    }
    progress.finish();
  }
  reader->close();
  segment::Histogram result(local.edges());
  // (integer data of a narrower range have fewer bins than asked for)
  check_mpi(MPI_Allreduce(local.counts().data(), result.counts().data(), local.edges().bins, MPI_UINT64_T, MPI_SUM,
                          comm.get()),
            "MPI_Allreduce");
  return result;
}

namespace {

double threshold_number(const std::string& option, const std::string& text) {
  double value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || ec != std::errc() || end != text.data() + text.size())
    throw Error(option + " " + text +
                ": not a number or a rule (otsu, multiotsu:K:I for the I-th of the K-1 thresholds of K classes, or "
                "pN for the N-th percentile)");
  return value;
}

}  // namespace

ChosenThresholds choose_thresholds(const Comm& comm, const HistogramOptions& options, const std::string& lo,
                                   const std::string& hi) {
  ChosenThresholds out;
  std::optional<segment::ThresholdRule> rules[2];
  const std::string* texts[2] = {&lo, &hi};
  double* values[2] = {&out.lo, &out.hi};
  const char* names[2] = {"--lo", "--hi"};
  for (int i = 0; i < 2; ++i) {
    if (segment::is_threshold_rule(*texts[i]))
      rules[i] = segment::parse_threshold_rule(names[i], *texts[i]);
    else
      *values[i] = threshold_number(names[i], *texts[i]);
  }
  if (!rules[0] && !rules[1]) return out;
  const segment::Histogram counts = histogram(comm, options);
  out.edges = counts.edges();
  for (int i = 0; i < 2; ++i) {
    if (!rules[i]) continue;
    try {
      *values[i] = segment::choose_threshold(counts, *rules[i], i == 0);
    } catch (const Error& e) {
      throw Error(std::string(names[i]) + " " + rules[i]->text + " of " + options.input + ": " + e.what());
    }
    (i == 0 ? out.lo_rule : out.hi_rule) = rules[i]->text;
  }
  return out;
}

}  // namespace volseg::pyramid
