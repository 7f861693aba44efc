// SPDX-License-Identifier: MIT
// `volseg edit`: a journal replayed on a labels volume in two passes over
// the bricks (docs/edit.md). Pass 1 finds the largest id and, for every id
// the journal names, whether it is there and its box. The journal is then
// followed on every rank alike: ids checked as each edit finds them, a
// split's object read in its box (a superset: the boxes of what merged into
// it and what was painted with it), the edits before it applied there, and
// its parts worked out, the same on every rank. Pass 2 applies every edit
// to each brick and writes it.
#include <algorithm>
#include <chrono>
#include <map>
#include <optional>
#include <set>
#include <span>
#include <unordered_map>

#include "edit_apply.hpp"
#include "job_outputs.hpp"
#include "label_report.hpp"
#include "volseg/io/auto_backend.hpp"
#include "volseg/io/dtype_dispatch.hpp"
#include "volseg/io/error.hpp"
#include "volseg/io/files.hpp"
#include "volseg/io/format.hpp"
#include "volseg/io/label_ids.hpp"
#include "volseg/io/memory.hpp"
#include "volseg/io/messages.hpp"
#include "volseg/io/registry.hpp"
#include "volseg/io/rounds.hpp"
#include "volseg/io/watchdog.hpp"
#include "volseg/segment/brick_driver.hpp"
#include "volseg/segment/brick_layout.hpp"
#include "volseg/segment/edit.hpp"
#include "volseg/segment/expression.hpp"

namespace volseg::segment {
namespace {

using detail::EditChain;

// A box in z, y, x: lo inclusive, hi exclusive; empty while lo > hi.
struct Box {
  io::Index3 lo{INT64_MAX, INT64_MAX, INT64_MAX}, hi{INT64_MIN, INT64_MIN, INT64_MIN};
  bool empty() const { return lo[0] > hi[0]; }
  void add(const io::Index3& a, const io::Index3& b) {
    for (int k = 0; k < 3; ++k) lo[k] = std::min(lo[k], a[k]), hi[k] = std::max(hi[k], b[k]);
  }
  io::Extent extent() const {
    io::Extent e;
    for (int k = 0; k < 3; ++k) e.offset[k] = lo[k], e.count[k] = hi[k] - lo[k];
    return e;
  }
};

std::uint64_t most_id(io::DType type) {
  std::uint64_t most = 0;
  io::visit_dtype(type, [&]<class T>(std::type_identity<T>) {
    if constexpr (std::is_integral_v<T>) most = static_cast<std::uint64_t>(std::numeric_limits<T>::max());
  });
  return most;
}

// Pass 1's findings, the same on every rank after the reductions.
struct Survey {
  std::uint64_t max_id = 0;
  std::map<std::uint64_t, Box> boxes;  // every id the journal names that is there
};

Survey survey(const Comm& comm, io::VolumeReader& reader, const BrickLayout& layout, const std::vector<Edit>& edits,
              const std::string& path, ProgressMode mode) {
  std::set<std::uint64_t> named;
  for (const Edit& e : edits) {
    named.insert(e.ids.begin(), e.ids.end());
    if (e.id) named.insert(e.id);
  }
  const std::vector<std::uint64_t> ids(named.begin(), named.end());
  std::vector<std::int64_t> lo(ids.size() * 3, INT64_MAX), hi(ids.size() * 3, INT64_MIN);
  std::uint64_t max_id = 0;
  const io::DType type = reader.info().dtype;
  const bool collective = reader.capabilities().collective;
  const io::watchdog::Phase phase("edit, pass 1: the ids the journal names");
  Progress progress(comm, "survey", layout.count(), mode);
  BrickDriver driver(comm, layout, assign_bricks(layout.count(), comm.rank(), comm.size(), Assignment::block, 0),
                     {.progress = &progress, .bytes_per_voxel = io::dtype_size(type)});
  std::vector<std::byte> raw(driver.largest_voxels() * io::dtype_size(type));
  std::vector<std::uint64_t> labels(driver.largest_voxels());
  std::exception_ptr error;
  try {
    driver.run(collective, [&](std::optional<std::size_t> k) {
      const io::Extent* extent = k ? &driver.extent(*k) : nullptr;
      io::read_in_round(reader, extent, raw.data());
      if (!extent) return;
      const auto n = static_cast<std::size_t>(extent->voxels());
      io::widen_labels(type, raw.data(), labels.data(), n, path);
      std::uint64_t last = 0;
      std::ptrdiff_t at = -1;
      for (std::size_t i = 0; i < n; ++i) {
        const std::uint64_t v = labels[i];
        if (v != last) {
          last = v;
          max_id = std::max(max_id, v);
          const auto it = std::lower_bound(ids.begin(), ids.end(), v);
          at = it != ids.end() && *it == v ? it - ids.begin() : -1;
        }
        if (at < 0) continue;
        const auto nx = static_cast<std::size_t>(extent->count[2]), ny = static_cast<std::size_t>(extent->count[1]);
        const std::int64_t p[3] = {extent->offset[0] + static_cast<std::int64_t>(i / (nx * ny)),
                                   extent->offset[1] + static_cast<std::int64_t>(i / nx % ny),
                                   extent->offset[2] + static_cast<std::int64_t>(i % nx)};
        for (int a = 0; a < 3; ++a) {
          lo[static_cast<std::size_t>(at) * 3 + a] = std::min(lo[static_cast<std::size_t>(at) * 3 + a], p[a]);
          hi[static_cast<std::size_t>(at) * 3 + a] = std::max(hi[static_cast<std::size_t>(at) * 3 + a], p[a] + 1);
        }
      }
    });
  } catch (...) {
    error = std::current_exception();
  }
  progress.finish();
  agree(comm, error);
  check_mpi(MPI_Allreduce(MPI_IN_PLACE, &max_id, 1, MPI_UINT64_T, MPI_MAX, comm.get()), "MPI_Allreduce");
  check_mpi(MPI_Allreduce(MPI_IN_PLACE, lo.data(), static_cast<int>(lo.size()), MPI_INT64_T, MPI_MIN, comm.get()),
            "MPI_Allreduce");
  check_mpi(MPI_Allreduce(MPI_IN_PLACE, hi.data(), static_cast<int>(hi.size()), MPI_INT64_T, MPI_MAX, comm.get()),
            "MPI_Allreduce");
  Survey s;
  s.max_id = max_id;
  for (std::size_t k = 0; k < ids.size(); ++k) {
    if (lo[k * 3] == INT64_MAX) continue;
    Box box;
    box.add({lo[k * 3], lo[k * 3 + 1], lo[k * 3 + 2]}, {hi[k * 3], hi[k * 3 + 1], hi[k * 3 + 2]});
    s.boxes[ids[k]] = box;
  }
  return s;
}

// The journal followed on every rank: ids checked, splits worked out.
class Replay {
 public:
  Replay(const Comm& comm, io::VolumeReader& reader, EditChain& chain, Survey survey, const EditOptions& options,
         std::uint64_t room)
      : comm_(comm),
        reader_(reader),
        chain_(chain),
        boxes_(std::move(survey.boxes)),
        max_id_(survey.max_id),
        options_(options),
        room_(room) {}

  void run(EditResult& result) {
    const auto& edits = chain_.edits();
    for (std::size_t k = 0; k < edits.size(); ++k) {
      const Edit& edit = edits[k];
      const std::string where = options_.journal + ": edit " + std::to_string(k);
      switch (edit.op) {
        case Edit::Op::merge: {
          for (const auto id : edit.ids) require(id, where, "ids");
          const std::uint64_t to = *std::min_element(edit.ids.begin(), edit.ids.end());
          for (const auto id : edit.ids)
            if (id != to) boxes_[to].add(boxes_[id].lo, boxes_[id].hi), boxes_.erase(id);
          break;
        }
        case Edit::Op::del:
          for (const auto id : edit.ids) require(id, where, "ids");
          for (const auto id : edit.ids) boxes_.erase(id);
          break;
        case Edit::Op::paint: {
          const auto r = static_cast<std::int64_t>(edit.radius);
          const auto& dims = reader_.info().dims;
          io::Index3 lo{}, hi{};
          for (int a = 0; a < 3; ++a)
            lo[a] = std::max<std::int64_t>(0, edit.center[a] - r), hi[a] = std::min(dims[a], edit.center[a] + r + 1);
          boxes_[edit.id].add(lo, hi);
          max_id_ = std::max(max_id_, edit.id);
          break;
        }
        case Edit::Op::erase:
          break;
        case Edit::Op::split:
          require(edit.id, where, "id");
          split(k, where, result);
          break;
      }
    }
    result.max_id = max_id_;
  }

 private:
  void require(std::uint64_t id, const std::string& where, const char* field) const {
    if (!boxes_.count(id))
      throw Error(where + ": '" + field + "' names object " + std::to_string(id) +
                  ", which the labels do not hold at this point");
  }

  void split(std::size_t k, const std::string& where, EditResult& result) {
    const Edit& edit = chain_.edits()[k];
    const io::Extent box = boxes_.at(edit.id).extent();
    const auto n = static_cast<std::uint64_t>(box.voxels());
    const std::uint64_t need = n * (8 + 8 + 1 + 2 + 4 + 48);  // labels, parts, object, offsets, distance, flood
    if (need > room_)
      throw Error(where + ": object " + std::to_string(edit.id) + " spans a box of " + std::to_string(box.count[2]) +
                  "x" + std::to_string(box.count[1]) + "x" + std::to_string(box.count[0]) + " whose split needs " +
                  io::mib_text(need) + ", more than the " + io::mib_text(room_) +
                  " this rank has left: give more memory (--memory)");
    // Every rank reads the box and works the split out alike.
    const io::DType type = reader_.info().dtype;
    std::vector<std::byte> raw(static_cast<std::size_t>(n) * io::dtype_size(type));
    const io::Extent extents[] = {box};
    void* buffers[] = {raw.data()};
    if (reader_.capabilities().collective)
      reader_.read_all(extents, buffers);
    else
      reader_.read(box, raw.data());
    std::vector<std::uint64_t> labels(static_cast<std::size_t>(n));
    io::widen_labels(type, raw.data(), labels.data(), labels.size(), options_.input);
    chain_.apply(box, labels.data(), k);
    const std::array<double, 3> spacing = options_.spacing.value_or(
        std::array<double, 3>{reader_.info().spacing[2], reader_.info().spacing[1], reader_.info().spacing[0]});
    detail::SplitParts parts =
        detail::split_object(box, labels, edit, spacing, options_.connectivity, max_id_ + 1, where);
    for (const auto id : parts.given) boxes_[id] = boxes_.at(edit.id);
    if (!parts.given.empty()) max_id_ = parts.given.back();
    result.splits_parts += parts.given.size() + 1;
    result.new_ids.insert(result.new_ids.end(), parts.given.begin(), parts.given.end());
    chain_.set_split(k, std::move(parts));
  }

  const Comm& comm_;
  io::VolumeReader& reader_;
  EditChain& chain_;
  std::map<std::uint64_t, Box> boxes_;
  std::uint64_t max_id_;
  const EditOptions& options_;
  std::uint64_t room_;
};

// --stats: each object's voxels, coordinate sums, box and first voxel over
// the bricks this rank writes (a run of one id looked up once).
class TableParts {
 public:
  explicit TableParts(const io::Index3& dims) : dims_(dims) {}
  void add(const io::Extent& e, const std::uint64_t* ids) {
    std::size_t i = 0;
    for (std::int64_t z = e.offset[0]; z < e.offset[0] + e.count[0]; ++z)
      for (std::int64_t y = e.offset[1]; y < e.offset[1] + e.count[1]; ++y) {
        const bool face = z == 0 || z == dims_[0] - 1 || y == 0 || y == dims_[1] - 1;
        ObjectPart* part = nullptr;
        std::uint64_t last = 0;
        for (std::int64_t x = e.offset[2]; x < e.offset[2] + e.count[2]; ++x, ++i) {
          const std::uint64_t id = ids[i];
          if (id == 0) continue;
          const std::uint64_t at = static_cast<std::uint64_t>((z * dims_[1] + y) * dims_[2] + x);
          if (part == nullptr || id != last) {
            auto [it, fresh] = parts_.try_emplace(id);
            part = &it->second;
            last = id;
            if (fresh) {
              part->first = at;
              const std::int32_t zyx[3] = {static_cast<std::int32_t>(z), static_cast<std::int32_t>(y),
                                           static_cast<std::int32_t>(x)};
              for (int a = 0; a < 3; ++a) part->lo[a] = part->hi[a] = zyx[a];
            }
          }
          part->first = std::min(part->first, at);
          ++part->voxels;
          part->sum[0] += static_cast<std::uint64_t>(z);
          part->sum[1] += static_cast<std::uint64_t>(y);
          part->sum[2] += static_cast<std::uint64_t>(x);
          const std::int32_t zyx[3] = {static_cast<std::int32_t>(z), static_cast<std::int32_t>(y),
                                       static_cast<std::int32_t>(x)};
          for (int a = 0; a < 3; ++a)
            part->lo[a] = std::min(part->lo[a], zyx[a]), part->hi[a] = std::max(part->hi[a], zyx[a]);
          if (face || x == 0 || x == dims_[2] - 1) part->border |= ObjectPart::touches_boundary;
        }
      }
  }
  // Collective. Every rank's parts merged on rank 0, in id order.
  std::vector<IdPart> gather(const Comm& comm) const {
    std::vector<IdPart> mine;
    mine.reserve(parts_.size());
    for (const auto& [id, part] : parts_) mine.push_back({id, part});
    const auto all = io::gather(comm.get(), std::span<const IdPart>(mine));
    std::map<std::uint64_t, ObjectPart> merged;
    for (const auto& [id, part] : all) {
      auto [it, fresh] = merged.try_emplace(id, part);
      if (!fresh) it->second.merge(part);
    }
    std::vector<IdPart> rows;
    rows.reserve(merged.size());
    for (const auto& [id, part] : merged) rows.push_back({id, part});
    return rows;
  }

 private:
  io::Index3 dims_;
  std::unordered_map<std::uint64_t, ObjectPart> parts_;
};

}  // namespace

EditResult run_edit(const Comm& comm, const EditOptions& options) {
  const auto start = std::chrono::steady_clock::now();
  EditResult result;
  const io::FileFormat input_format = io::detect_format(comm, options.input);
  result.backend = io::resolve_backend(comm, options.backend, input_format, options.input, io::Access::stream).backend;
  auto reader =
      open_input(result.backend, {options.input, options.selection}, comm,
                 detail::joined(io::hints_for(result.backend, io::Role::reader, options.hints), options.input_hints));
  const io::VolumeInfo& in = reader->info();
  if (in.dtype == io::DType::f32 || in.dtype == io::DType::f64)
    throw Error(options.input + " is " + std::string(io::dtype_name(in.dtype)) + ": labels are of an integer type");
  if (options.connectivity != 6 && options.connectivity != 18 && options.connectivity != 26)
    throw Error("--connectivity must be 6, 18 or 26");
  std::string text = comm.rank() == 0 ? read_journal(options.journal) : std::string();
  text = comm.broadcast(text);
  EditChain chain(parse_edits(text, in.dims, options.journal));
  result.edits = chain.edits().size();

  const io::FileFormat format = io::output_format(options.output, options.format, input_format, true);
  result.output_format = io::format_name(format);
  io::Writing writing = io::writing_backend(format, result.backend);
  if (!options.output_backend.empty()) writing.backend = options.output_backend;
  result.output_backend = writing.backend;
  detail::refuse_output_over_input(options.output, reader->files());
  detail::check_levels(format, options.output_hints, in.dims);
  if (!io::is_stream(options.output))
    for (const auto& file : detail::output_files(options.output)) io::refuse_existing(file.string(), options.force);
  if (!options.stats.empty())
    detail::check_side_output(options.stats, "object table", options.output, options.force,
                              {options.input, options.journal}, "labels");

  const io::Index3 shape = BrickLayout::job_shape(
      *reader, detail::chunks_for_bricks(reader->capabilities().chunks, format), io::format_traits(format).chunked);
  const BrickLayout layout(in.dims, shape);
  result.brick_shape = layout.shape();
  result.bricks = layout.count();

  Survey found = survey(comm, *reader, layout, chain.edits(), options.input, options.progress);
  const io::MemoryBound bound = io::memory_per_rank(comm, options.memory_bytes);
  const std::uint64_t process = io::resident_bytes();
  {
    const io::watchdog::Phase phase("edit: the journal followed, its splits worked out");
    std::exception_ptr error;
    try {
      Replay(comm, *reader, chain, std::move(found), options, bound.bytes > process ? bound.bytes - process : 0)
          .run(result);
    } catch (...) {
      error = std::current_exception();
    }
    agree(comm, error);
  }
  if (result.max_id > most_id(in.dtype))
    throw Error(options.journal + ": the edits need id " + std::to_string(result.max_id) + ", more than " +
                std::string(io::dtype_name(in.dtype)) + " labels hold: write the labels as a wider type first");

  io::VolumeInfo info = in;
  info.attributes["history"] = options.command_line.empty() ? "volseg edit" : options.command_line;
  info.attributes["edits"] = options.journal;
  io::CreateRequest request{options.output, info, options.force, io::Partial::none};
  request.whole_planes = shape[1] == in.dims[1] && shape[2] == in.dims[2];
  request.bricks = shape;
  auto writer =
      io::create_writer(writing.backend, request, comm,
                        io::Hints::parse(detail::writer_hints(writing, options.hints, options.output_hints, shape)));
  const bool collective = reader->capabilities().collective || writer->capabilities().collective;
  std::vector<IdPart> rows;  // --stats: rank 0's
  {
    const io::watchdog::Phase phase("edit, pass 2: the edits applied and written");
    Progress progress(comm, "edit", layout.count(), options.progress);
    BrickDriver driver(comm, layout, assign_bricks(layout.count(), comm.rank(), comm.size(), Assignment::block, 0),
                       {.progress = &progress, .bytes_per_voxel = io::dtype_size(in.dtype)});
    std::vector<std::byte> raw(driver.largest_voxels() * io::dtype_size(in.dtype));
    std::vector<std::uint64_t> labels(driver.largest_voxels());
    std::optional<TableParts> table;
    if (!options.stats.empty()) table.emplace(in.dims);
    std::exception_ptr error;
    try {
      driver.run(collective, [&](std::optional<std::size_t> k) {
        const io::Extent* extent = k ? &driver.extent(*k) : nullptr;
        io::read_in_round(*reader, extent, raw.data());
        if (extent) {
          const auto n = static_cast<std::size_t>(extent->voxels());
          io::widen_labels(in.dtype, raw.data(), labels.data(), n, options.input);
          chain.apply(*extent, labels.data(), chain.edits().size());
          if (table) table->add(*extent, labels.data());
          io::narrow_labels(in.dtype, labels.data(), raw.data(), n);
        }
        io::write_in_round(*writer, extent, raw.data());
      });
    } catch (...) {
      error = std::current_exception();
    }
    progress.finish();
    agree(comm, error);
    if (table) rows = table->gather(comm);
  }
  {
    const io::watchdog::Phase phase("edit, closing and committing the labels");
    writer->close();
    reader->close();
  }
  if (!options.stats.empty()) {
    // After the labels are committed: a table never describes labels that are not there.
    const io::watchdog::Phase phase("edit: the object table");
    std::exception_ptr error;
    try {
      if (comm.rank() == 0) write_object_rows(options.stats, rows, in);
    } catch (...) {
      error = std::current_exception();
    }
    agree(comm, error);
    result.objects = rows.size();
  }
  result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return result;
}

SplitPreview preview_split(const Comm& comm, const std::string& path, const io::Selection& selection,
                           const io::Extent& box, const Edit& edit, std::uint64_t next_id, int connectivity) {
  const io::FileFormat format = io::detect_format(comm, path);
  auto reader = open_input(io::resolve_backend(comm, "auto", format, path, io::Access::stream).backend,
                           {path, selection}, comm, {});
  const io::VolumeInfo& info = reader->info();
  const io::DType type = info.dtype;
  if (type == io::DType::f32 || type == io::DType::f64)
    throw Error(path + " is " + std::string(io::dtype_name(type)) + ": labels are of an integer type");
  const auto n = static_cast<std::size_t>(box.voxels());
  std::vector<std::byte> raw(n * io::dtype_size(type));
  const io::Extent extents[] = {box};
  void* buffers[] = {raw.data()};
  if (reader->capabilities().collective)
    reader->read_all(extents, buffers);
  else
    reader->read(box, raw.data());
  reader->close();
  std::vector<std::uint64_t> labels(n);
  io::widen_labels(type, raw.data(), labels.data(), n, path);
  const std::array<double, 3> spacing{info.spacing[2], info.spacing[1], info.spacing[0]};
  detail::SplitParts parts = detail::split_object(box, labels, edit, spacing, connectivity, next_id, "split");
  SplitPreview preview{info.dims, box, std::move(parts.ids), {edit.id}};
  preview.ids.insert(preview.ids.end(), parts.given.begin(), parts.given.end());
  return preview;
}

}  // namespace volseg::segment
