// SPDX-License-Identifier: MIT
#include "label_bricks.hpp"

#include <algorithm>
#include <limits>

#include "volseg/io/error.hpp"
#include "volseg/io/memory.hpp"
#include "volseg/segment/brick_layout.hpp"

namespace volseg::segment::detail {

// The bricks when --brick names none. Each brick face is merge work, and a
// brick of a few planes is mostly faces: 1024^3 f32 on 2 ranks labelled in
// 2.7 s with bricks of 3 planes and 0.9 s with 16; 512x2048x2048 in 6.0 s
// with 4 planes of 2048^2 and 1.9 s with 16. So whole planes (rows where a
// plane is too large, or whole chunks of a chunked input), 16 of them or
// 16 Mi voxels (64 MiB of u32 labels), whichever is more, within an eighth
// of the smallest rank's memory bound (a brick's buffers take about dtype
// + 11 bytes a voxel) and small enough that every rank gets 4 bricks; never
// below the 3 Mi voxels (12 MiB of labels) every job had before. Whole
// planes are what direct writes need (create_labels). Collective: the
// ranks agree.
io::Index3 label_brick_shape(const Comm& comm, const LabelOptions& options, const io::VolumeInfo& info,
                             const std::optional<io::Index3>& chunks) {
  const auto [nz, ny, nx] = info.dims;
  const auto plane = static_cast<std::uint64_t>(ny * nx);
  const std::uint64_t least = std::uint64_t{3} << 20, most = std::max(std::uint64_t{16} << 20, 16 * plane);
  std::uint64_t bound = io::memory_per_rank(comm, options.memory_bytes).bytes;
  check_mpi(MPI_Allreduce(MPI_IN_PLACE, &bound, 1, MPI_UINT64_T, MPI_MIN, comm.get()), "MPI_Allreduce");
  const std::uint64_t per_voxel = io::dtype_size(info.dtype) + 11;
  const std::uint64_t share = plane * static_cast<std::uint64_t>(nz) / (4 * static_cast<std::uint64_t>(comm.size()));
  const std::uint64_t voxels = std::clamp(std::min({bound / 8 / per_voxel, share, most}), least, most);
  const std::size_t target = static_cast<std::size_t>(voxels) * 4;
  return chunks ? BrickLayout::chunk_aligned_shape(info.dims, 4, *chunks, target)
                : BrickLayout::default_shape(info.dims, 4, target);
}

namespace {

// The largest label a type holds, exactly (a double rounds 2^64 - 1 up).
std::uint64_t most_labels(io::DType type) {
  switch (type) {
    case io::DType::u8:
      return std::numeric_limits<std::uint8_t>::max();
    case io::DType::u16:
      return std::numeric_limits<std::uint16_t>::max();
    case io::DType::u32:
      return std::numeric_limits<std::uint32_t>::max();
    default:
      return std::numeric_limits<std::uint64_t>::max();
  }
}

}  // namespace

io::DType label_type(const std::string& asked, std::uint64_t objects) {
  const std::pair<const char*, io::DType> types[] = {
      {"u8", io::DType::u8}, {"u16", io::DType::u16}, {"u32", io::DType::u32}, {"u64", io::DType::u64}};
  if (asked == "auto") return objects <= most_labels(io::DType::u32) ? io::DType::u32 : io::DType::u64;
  for (const auto& [name, type] : types)
    if (asked == name) {
      const std::uint64_t most = most_labels(type);
      if (objects > most)
        throw Error("--label-type " + asked + " holds at most " + std::to_string(most) + " labels, and the mask has " +
                    std::to_string(objects) + " objects (use a wider type, or auto)");
      return type;
    }
  throw Error("unknown label type '" + asked + "' (auto, u8, u16, u32 or u64)");
}

std::string label_writer(io::FileFormat format, const std::string& backend) {
  // Labels are 4 bytes a voxel where segment's mask is 1: written through a
  // map, each page faults in and is dirtied twice (1024^3 u32 on 2 ranks:
  // 10.4 s with mmap against 3.0 s with pwrite), so raw labels are written
  // with pwrite whatever reads the input.
  return format == io::FileFormat::raw && backend.find("mmap") != std::string::npos ? "posix" : backend;
}

bool direct_label_writes(io::FileFormat format, const std::string& backend, bool whole_planes,
                         const std::vector<std::string>& hints) {
  // Through the page cache into the file's reserved (fallocate) blocks, 16
  // GiB of u16 labels of a 2048^3 volume took 40 s on 2 ranks here; direct,
  // 6 s (docs/label.md, "On a volume larger than memory").
  const bool capable = format == io::FileFormat::raw &&
                       (backend == "posix" || backend.rfind("mmap", 0) == 0 || backend.rfind("ranged-", 0) == 0);
  const bool user_said = std::any_of(hints.begin(), hints.end(),
                                     [](const std::string& hint) { return hint.rfind("direct_write=", 0) == 0; });
  return capable && whole_planes && !user_said;
}

}  // namespace volseg::segment::detail
