// SPDX-License-Identifier: MIT
// `volseg mesh`: every rank meshes its bricks' objects into fragment files,
// then each rank gathers the fragments of the ids it owns (id modulo the
// ranks) into their manifests and, when asked, a .ply or .vtp per object.
// The folder is written under a temporary name and renamed when every rank
// has succeeded.
#include <sys/resource.h>
#include <sys/stat.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <unordered_set>

#include "mesh_files.hpp"
#include "volseg/io/auto_backend.hpp"
#include "volseg/io/collective_output.hpp"
#include "volseg/io/downsample.hpp"
#include "volseg/io/error.hpp"
#include "volseg/io/files.hpp"
#include "volseg/io/hints.hpp"
#include "volseg/io/label_ids.hpp"
#include "volseg/io/memory.hpp"
#include "volseg/io/messages.hpp"
#include "volseg/io/registry.hpp"
#include "volseg/mesh/mesh.hpp"
#include "volseg/segment/brick_layout.hpp"

namespace volseg::mesh {

namespace {

using Clock = std::chrono::steady_clock;

std::uint64_t peak_bytes() {
  if (const std::uint64_t peak = io::peak_resident_bytes()) return peak;
  struct rusage usage {};
  ::getrusage(RUSAGE_SELF, &usage);
  return static_cast<std::uint64_t>(usage.ru_maxrss) * 1024;
}

// Refuses, before anything is written, what cannot be meshed.
void check_input(const io::VolumeInfo& info, const MeshOptions& options) {
  const auto& a = info.attributes;
  if (dtype_is_float(info.dtype))
    throw Error(options.input + ": " + std::string(io::dtype_name(info.dtype)) +
                " values are not labels: mesh the output of volseg label (or segment's mask)");
  const bool labels = a.count("numbering") > 0 || a.count("ome_zarr_image_label") > 0 || a.count("flag_values") > 0 ||
                      a.count("precomputed_type") > 0;
  if (!labels && !options.as_labels)
    throw Error(options.input +
                ": does not say it holds labels (no numbering or flag_values attribute, as volseg label and segment "
                "write): give --as-labels to mesh every non-zero value as an object");
  if (auto it = a.find("objects"); it != a.end() && !options.ids.empty()) {
    const std::uint64_t objects = std::stoull(it->second);
    const std::uint64_t largest = *std::max_element(options.ids.begin(), options.ids.end());
    if (largest > objects)
      throw Error("--ids: object " + std::to_string(largest) + " is past the labels' table, which has " +
                  std::to_string(objects) + " objects");
  }
}

struct FragmentRecord {
  std::uint64_t id;
  std::int64_t brick;
};

// Pass over this rank's bricks: a fragment file per object per brick.
struct Mesher {
  const Comm& comm;
  const MeshOptions& options;
  io::VolumeReader& reader;
  const std::string& folder;
  MeshResult& result;
  std::vector<FragmentRecord> records;
  std::uint64_t bytes = 0;

  // Reads a brick and the voxels around it; with simplify, the labels
  // halved that many times (the brick and its ghost are in halved voxels).
  void read_brick(const io::Extent& brick, const io::Index3& dims, BrickLabels& labels, std::vector<std::byte>& raw,
                  std::vector<std::uint64_t>& fine) {
    const auto& info = reader.info();
    labels.brick = brick;
    labels.region = io::with_ghost(brick, dims, ghost);
    const std::int64_t f = std::int64_t{1} << options.simplify;
    io::Extent read = labels.region;
    for (std::size_t a = 0; a < 3; ++a) {
      read.offset[a] = labels.region.offset[a] * f;
      read.count[a] = std::min(labels.region.count[a] * f, info.dims[a] - read.offset[a]);
    }
    raw.resize(static_cast<std::size_t>(read.voxels()) * io::dtype_size(info.dtype));
    reader.read(read, raw.data());
    fine.resize(static_cast<std::size_t>(read.voxels()));
    io::widen_labels(info.dtype, raw.data(), fine.data(), fine.size(), options.input);
    io::Index3 count = read.count;
    for (int k = 0; k < options.simplify; ++k) {
      const io::Index3 half = io::level_dims(count, 1);
      labels.ids.resize(static_cast<std::size_t>(half[0] * half[1] * half[2]));
      io::downsample(io::Downsampling::mode, io::DType::u64, fine.data(), count, labels.ids.data());
      fine.swap(labels.ids);
      count = half;
    }
    labels.ids.swap(fine);
  }

  void run(const segment::BrickLayout& bricks, const std::vector<std::int64_t>& mine) {
    const auto& info = reader.info();
    const std::unordered_set<std::uint64_t> wanted(options.ids.begin(), options.ids.end());
    segment::Progress progress(comm, "mesh", bricks.count(), options.progress);
    const double f = static_cast<double>(std::int64_t{1} << options.simplify), shift = (f - 1) / 2;
    std::exception_ptr error;
    try {
      BrickLabels labels;
      labels.dims = bricks.dims();
      std::vector<std::byte> raw;
      std::vector<std::uint64_t> fine;
      for (const std::int64_t brick : mine) {
        read_brick(bricks.brick(brick), bricks.dims(), labels, raw, fine);
        for (const auto& object : objects_in(labels)) {
          if (!wanted.empty() && wanted.count(object.id) == 0) continue;
          Fragment fragment = surface_nets(labels, object, options.smooth);
          if (fragment.triangles.empty()) continue;
          if (options.simplify > 0)  // a halved voxel's centre among the voxels below it
            for (float& v : fragment.vertices) v = static_cast<float>(v * f + shift);
          bytes += write_fragment(folder + "/" + fragment_name(object.id, brick), fragment, info);
          records.push_back({object.id, brick});
          result.triangles += fragment.triangle_count();
          result.vertices += fragment.vertex_count();
        }
        progress.advance(1, raw.size());
      }
    } catch (...) {
      error = std::current_exception();
    }
    progress.finish();
    agree(comm, error);
  }
};

// Each id's fragments reach the rank that owns it (id modulo the ranks),
// which writes its manifest and, when asked, its .ply and .vtp.
std::vector<std::uint64_t> assemble(const Comm& comm, const MeshOptions& options, const io::VolumeInfo& info,
                                    const std::string& folder, std::vector<FragmentRecord>& records,
                                    std::uint64_t& bytes) {
  std::vector<std::vector<FragmentRecord>> outgoing(static_cast<std::size_t>(comm.size()));
  for (const auto& r : records) outgoing[r.id % static_cast<std::uint64_t>(comm.size())].push_back(r);
  std::vector<FragmentRecord> mine = io::exchange(comm.get(), outgoing);
  std::sort(mine.begin(), mine.end(), [](const FragmentRecord& a, const FragmentRecord& b) {
    return std::tie(a.id, a.brick) < std::tie(b.id, b.brick);
  });
  std::vector<std::uint64_t> ids;
  std::exception_ptr error;
  try {
    for (std::size_t i = 0; i < mine.size();) {
      std::size_t j = i;
      std::vector<std::string> names;
      for (; j < mine.size() && mine[j].id == mine[i].id; ++j)
        names.push_back(fragment_name(mine[j].id, mine[j].brick));
      const std::uint64_t id = mine[i].id;
      bytes += write_manifest(folder, id, names);
      if (options.ply || options.vtp) {
        const Fragment whole = read_object(folder, names, info);
        if (options.ply) bytes += write_ply(folder + "/ply/" + std::to_string(id) + ".ply", whole);
        if (options.vtp) bytes += write_vtp(folder + "/vtp/" + std::to_string(id) + ".vtp", whole, id);
      }
      ids.push_back(id);
      i = j;
    }
  } catch (...) {
    error = std::current_exception();
  }
  agree(comm, error);
  return ids;
}

// Bricks for meshing (over the volume at `dims`, the input halved
// `simplify` times): 128 voxels a side, halved with it (at least 16), so the
// three layers read around each brick cost about 15% more. Over a chunked
// input (Zarr, compressed TIFF) a brick is whole chunks, as segment's are
// (BrickLayout::job_shape): each chunk is decoded by the bricks that hold it
// and, through the layers around them, by their neighbours, not by every
// brick that crosses it (a 1024^3 OME-Zarr in plane chunks decoded each
// plane for each of the 64 bricks of 128^3 that cross it). A chunk thinner
// than 128 along an axis is stacked up to it while a brick stays within
// 8 Mi voxels (a brick is read as its type and held as 64-bit ids).
io::Index3 mesh_brick_shape(const io::Index3& dims, const std::optional<io::Index3>& input_chunks, int simplify) {
  const std::int64_t target = std::max<std::int64_t>(16, std::int64_t{128} >> simplify);
  io::Index3 shape{target, target, target};
  if (!input_chunks) return shape;
  constexpr std::int64_t budget = std::int64_t{8} << 20;
  io::Index3 chunk{};
  for (int a = 0; a < 3; ++a) chunk[a] = std::clamp<std::int64_t>((*input_chunks)[a] >> simplify, 1, dims[a]);
  shape = chunk;
  for (int a = 0; a < 3; ++a) {
    if (shape[a] >= target) continue;
    const std::int64_t others = shape[0] * shape[1] * shape[2] / shape[a];
    std::int64_t stack = (target + chunk[a] - 1) / chunk[a];
    while (stack > 1 && chunk[a] * stack * others > budget) --stack;
    shape[a] = std::min(dims[a], chunk[a] * stack);
  }
  return shape;
}

}  // namespace

MeshResult run_mesh(const Comm& comm, const MeshOptions& options) {
  const auto start = Clock::now();
  MeshResult result;
  result.comm_size = comm.size();
  const std::string backend = io::resolve_backend(comm, options.backend, options.input, io::Access::copy).backend;
  auto reader =
      io::open_reader(backend, {options.input, options.selection}, comm, io::Hints::parse(options.input_hints));
  const io::VolumeInfo info = reader->info();
  check_input(info, options);
  if (options.output.empty()) throw Error("mesh: give --out DIR");
  io::refuse_existing(options.output, options.force);

  // With simplify, bricks of halved voxels, smaller so that the voxels read
  // for one stay about the same.
  if (options.simplify < 0 || options.simplify > 6)
    throw Error("--simplify " + std::to_string(options.simplify) + ": 0 to 6 halvings");
  const io::Index3 dims = io::level_dims(info.dims, options.simplify);
  if (options.simplify > 0 &&
      std::min({info.dims[0], info.dims[1], info.dims[2]}) < (std::int64_t{1} << options.simplify))
    throw Error("--simplify " + std::to_string(options.simplify) + ": halves the volume's shortest axis below a voxel");
  const io::Index3 shape =
      options.brick_shape.value_or(mesh_brick_shape(dims, reader->capabilities().chunks, options.simplify));
  const segment::BrickLayout layout(dims, shape);
  result.brick_shape = layout.shape();
  result.brick_count = layout.count();

  io::CollectiveOutput output(comm, options.output, io::CollectiveOutput::Start::folder);
  const std::string& folder = output.temporary();
  collectively(comm, [&] {
    if (comm.rank() != 0) return;
    for (const std::string& f : {folder + "/ply", folder + "/vtp"}) {
      if (!(f.ends_with("ply") ? options.ply : options.vtp)) continue;
      if (::mkdir(f.c_str(), 0777) != 0) throw_errno("mkdir", f);
    }
  });

  Mesher mesher{comm, options, *reader, folder, result, {}, 0};
  mesher.run(layout, segment::assign_bricks(layout.count(), comm.rank(), comm.size(), segment::Assignment::block));
  reader->close();
  std::uint64_t bytes = mesher.bytes;
  std::uint64_t counts[4] = {mesher.records.size(), result.triangles, result.vertices, 0};
  const auto ids = assemble(comm, options, info, folder, mesher.records, bytes);
  counts[3] = ids.size();
  std::vector<std::uint64_t> all_ids = io::gather(comm.get(), std::span<const std::uint64_t>(ids));
  collectively(comm, [&] {
    if (comm.rank() != 0) return;
    std::sort(all_ids.begin(), all_ids.end());
    bytes += write_mesh_info(folder, info, options);
    if (options.vtp) bytes += write_vtm(folder + "/objects.vtm", all_ids);
  });
  output.commit(comm, false, options.force);
  io::sum_in_place(comm.get(), counts);
  std::uint64_t total_bytes[1] = {bytes};
  io::sum_in_place(comm.get(), total_bytes);
  result.fragments = counts[0];
  result.triangles = counts[1];
  result.vertices = counts[2];
  result.objects = counts[3];
  result.bytes = total_bytes[0];
  std::uint64_t peak = peak_bytes();
  check_mpi(MPI_Allreduce(MPI_IN_PLACE, &peak, 1, MPI_UINT64_T, MPI_MAX, comm.get()), "MPI_Allreduce");
  result.max_rss = peak;
  double seconds = std::chrono::duration<double>(Clock::now() - start).count();
  check_mpi(MPI_Allreduce(MPI_IN_PLACE, &seconds, 1, MPI_DOUBLE, MPI_MAX, comm.get()), "MPI_Allreduce");
  result.seconds = seconds;
  return result;
}

std::string mesh_summary(const MeshOptions& options, const MeshResult& result) {
  std::ostringstream out;
  out.precision(4);
  out << "meshed " << options.input << " on " << result.comm_size << " rank(s), " << result.brick_count << " bricks of "
      << result.brick_shape[2] << "x" << result.brick_shape[1] << "x" << result.brick_shape[0]
      << (options.smooth ? ", smooth" : ", voxel surfaces") << "\n"
      << "  " << result.objects << " objects, " << result.fragments << " fragments, " << result.triangles
      << " triangles, " << result.vertices << " vertices, " << static_cast<double>(result.bytes) / (1 << 20) << " MiB\n"
      << "  time " << result.seconds << " s; peak memory per rank " << static_cast<double>(result.max_rss) / (1 << 20)
      << " MiB\n"
      << "  meshes (Neuroglancer precomputed legacy";
  if (options.ply) out << ", .ply";
  if (options.vtp) out << ", .vtp and objects.vtm";
  out << "): " << options.output << "\n";
  return out.str();
}

std::vector<std::uint64_t> parse_ids(const std::string& text) {
  std::vector<std::uint64_t> ids;
  std::stringstream in(text);
  std::string item;
  while (std::getline(in, item, ',')) {
    std::uint64_t a = 0, b = 0;
    char dash = 0;
    std::istringstream one(item);
    if (!(one >> a) || a == 0) throw Error("--ids: '" + item + "' is not an object id (1 or more) or a range A-B");
    b = a;
    if (one >> dash) {
      if (dash != '-' || !(one >> b) || b < a) throw Error("--ids: '" + item + "' is not a range A-B with A <= B");
    }
    if (one.rdbuf()->in_avail() != 0) throw Error("--ids: '" + item + "' has more than an id or a range");
    if (b - a > (std::uint64_t{1} << 26)) throw Error("--ids: the range '" + item + "' is too long");
    for (std::uint64_t id = a; id <= b; ++id) ids.push_back(id);
  }
  if (ids.empty()) throw Error("--ids: no id given");
  return ids;
}

}  // namespace volseg::mesh
