// SPDX-License-Identifier: MIT
// Edits applied where they land. Once an edit has written the edited labels
// (NAME.edited.nhdr, from the labels and the journal, as `volseg edit`
// does), the edits after it change only the voxels they touch: rank 0 reads
// each region an edit reaches (the boxes of the objects it names, its ball,
// a split's box), changes it as the batch edit does, and writes it back,
// keeping the region's bytes before and after so that undo and redo write
// them back. The result is the same bytes as the batch replay of the
// journal; the journal is committed after the labels are synced. Where the
// labels are not a raw NRRD of integers (netCDF, Zarr, ...) or a region is not known,
// every edit writes all the labels again.
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <sstream>
#include <utility>

#include "../state.hpp"
#include "volseg/io/error.hpp"
#include "volseg/io/files.hpp"
#include "volseg/io/nrrd.hpp"
#include "volseg/session/command_line.hpp"

namespace volseg::session::detail {
namespace {

// Past this many voxels in an edit's regions, the edit writes all the
// labels again rather than keep the regions' bytes for undo.
constexpr std::int64_t kMostPatchVoxels = std::int64_t{16} << 20;

// The edited labels as rank 0 patches them: a detached NRRD's raw data
// file of integers (either byte order).
struct RawLabels {
  std::string data;
  std::uint64_t skip = 0;
  io::DType dtype = io::DType::u32;
  io::Index3 dims{};
  std::size_t element = 4;
  bool big_endian = false;
};

std::optional<RawLabels> raw_labels(const State& state) {
  if (state.edited.empty() || state.labels != state.edited) return std::nullopt;
  if (std::filesystem::path(state.edited).extension() != ".nhdr") return std::nullopt;
  std::ifstream in(state.edited);
  std::ostringstream text;
  if (!in || !(text << in.rdbuf())) return std::nullopt;
  const io::NrrdHeader header = io::parse_nrrd(text.str(), state.edited);
  if (io::dtype_is_float(header.info.dtype)) return std::nullopt;
  return RawLabels{header.data_path,
                   header.byte_skip,
                   header.info.dtype,
                   header.info.dims,
                   io::dtype_size(header.info.dtype),
                   header.info.byte_order == io::ByteOrder::big};
}

// The data file, open for reading and writing; closed (and its close
// checked) by close().
class DataFile {
 public:
  explicit DataFile(const RawLabels& labels) : labels_(labels) {
    fd_ = ::open(labels.data.c_str(), O_RDWR | O_CLOEXEC);
    if (fd_ < 0) throw Error("open " + labels.data + ": " + std::strerror(errno));
  }
  ~DataFile() {
    if (fd_ >= 0) ::close(fd_);
  }
  DataFile(const DataFile&) = delete;
  DataFile& operator=(const DataFile&) = delete;

  // A box's bytes, z-major: one pread or pwrite a row of x.
  std::vector<std::byte> read(const io::Extent& box) const {
    std::vector<std::byte> bytes(static_cast<std::size_t>(box.voxels()) * labels_.element);
    rows(box, [&](std::size_t at, off_t offset, std::size_t size) {
      for (std::size_t done = 0; done < size;) {
        const ssize_t n = ::pread(fd_, bytes.data() + at + done, size - done, offset + static_cast<off_t>(done));
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) throw Error("read " + labels_.data + ": " + (n < 0 ? std::strerror(errno) : "end of file"));
        done += static_cast<std::size_t>(n);
      }
    });
    return bytes;
  }
  void write(const io::Extent& box, const std::vector<std::byte>& bytes) const {
    rows(box, [&](std::size_t at, off_t offset, std::size_t size) {
      for (std::size_t done = 0; done < size;) {
        const ssize_t n = ::pwrite(fd_, bytes.data() + at + done, size - done, offset + static_cast<off_t>(done));
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) throw Error("write " + labels_.data + ": " + std::strerror(n < 0 ? errno : EIO));
        done += static_cast<std::size_t>(n);
      }
    });
  }
  void close() {
    const int fd = std::exchange(fd_, -1);
    if (::fdatasync(fd) != 0 || ::close(fd) != 0) throw Error("sync " + labels_.data + ": " + std::strerror(errno));
  }

 private:
  template <typename Row>
  void rows(const io::Extent& box, Row&& row) const {
    const auto& d = labels_.dims;
    const std::size_t size = static_cast<std::size_t>(box.count[2]) * labels_.element;
    std::size_t at = 0;
    for (std::int64_t z = box.offset[0]; z < box.offset[0] + box.count[0]; ++z)
      for (std::int64_t y = box.offset[1]; y < box.offset[1] + box.count[1]; ++y, at += size) {
        const auto voxel = static_cast<std::uint64_t>((z * d[1] + y) * d[2] + box.offset[2]);
        row(at, static_cast<off_t>(labels_.skip + voxel * labels_.element), size);
      }
  }

  RawLabels labels_;
  int fd_ = -1;
};

// A region's ids, changed by `change`, as a patch of the file.
using Change = std::function<void(const io::Extent& box, std::vector<std::uint64_t>& ids)>;

Patch patch(const DataFile& file, const RawLabels& labels, const io::Extent& box, const Change& change) {
  Patch p{box, file.read(box), {}};
  const auto n = static_cast<std::size_t>(box.voxels());
  std::vector<std::uint64_t> ids(n);
  const std::size_t e = labels.element;
  // Byte b of a voxel's value holds bits 8 b.. of its id (little-endian),
  // or the bits of byte e - 1 - b (big-endian: a header copied from a
  // netCDF input says so). Ids are nonnegative, so signed types read alike.
  const auto bit = [&](std::size_t b) { return 8 * (labels.big_endian ? e - 1 - b : b); };
  for (std::size_t i = 0; i < n; ++i)
    for (std::size_t b = 0; b < e; ++b)
      ids[i] |= std::uint64_t{std::to_integer<std::uint8_t>(p.before[i * e + b])} << bit(b);
  change(box, ids);
  p.after.resize(p.before.size());
  for (std::size_t i = 0; i < n; ++i)
    for (std::size_t b = 0; b < e; ++b) p.after[i * e + b] = static_cast<std::byte>((ids[i] >> bit(b)) & 0xff);
  return p;
}

// Rank 0: the regions an edit (its journal entry) changes, and how; empty
// where they are not known here (an id without a box).
std::vector<std::pair<io::Extent, Change>> changes_of(const State& state, const Json& entry, const RawLabels& labels,
                                                      const segment::SplitPreview* split) {
  std::vector<std::pair<io::Extent, Change>> out;
  const std::string op = entry.at("op");
  if (op == "merge" || op == "delete") {
    // One change for every region: each maps all the group's ids, so where
    // two objects' boxes overlap their regions' bytes agree (the regions
    // are read before any is written, and written one after another).
    const auto ids = std::make_shared<std::vector<std::uint64_t>>(entry.at("ids").get<std::vector<std::uint64_t>>());
    const auto found = std::make_shared<std::set<std::uint64_t>>();
    const std::uint64_t to = op == "merge" ? *std::min_element(ids->begin(), ids->end()) : 0;
    const Change change = [ids, found, to](const io::Extent&, std::vector<std::uint64_t>& v) {
      for (auto& x : v)
        if (x != 0 && std::find(ids->begin(), ids->end(), x) != ids->end()) found->insert(x), x = to;
    };
    for (const auto id : *ids) {
      const auto it = state.regions.find(static_cast<std::int64_t>(id));
      if (it == state.regions.end()) return {};
      for (const auto& box : it->second) out.emplace_back(extent_of(box), change);
    }
    // As the batch edit refuses an id the labels no longer hold (checked
    // once every region is changed, before any is written).
    out.emplace_back(io::Extent{}, [ids, found, op](const io::Extent&, std::vector<std::uint64_t>&) {
      for (const auto id : *ids)
        if (!found->count(id))
          throw Error("edit " + op + ": the labels do not hold object " + std::to_string(id) + " at this point");
    });
  } else if (op == "paint" || op == "erase") {
    const auto center = entry.at("center").get<std::array<std::int64_t, 3>>();
    const double radius = entry.at("radius").get<double>();
    const std::uint64_t to = op == "paint" ? entry.at("id").get<std::uint64_t>() : 0;
    out.emplace_back(ball_extent(center, radius, labels.dims), [center, radius, to](const io::Extent& box,
                                                                                    std::vector<std::uint64_t>& v) {
      const double r2 = radius * radius;
      std::size_t i = 0;
      for (std::int64_t z = box.offset[0]; z < box.offset[0] + box.count[0]; ++z)
        for (std::int64_t y = box.offset[1]; y < box.offset[1] + box.count[1]; ++y)
          for (std::int64_t x = box.offset[2]; x < box.offset[2] + box.count[2]; ++x, ++i) {
            const double dz = static_cast<double>(z - center[0]), dy = static_cast<double>(y - center[1]),
                         dx = static_cast<double>(x - center[2]);
            if (dz * dz + dy * dy + dx * dx <= r2) v[i] = to;
          }
    });
  } else if (op == "split" && split != nullptr) {
    out.emplace_back(split->box, [split](const io::Extent&, std::vector<std::uint64_t>& v) {
      for (std::size_t i = 0; i < v.size(); ++i)
        if (split->labels[i] != 0) v[i] = split->labels[i];
    });
  }
  return out;
}

// The largest id an edit leaves ever held.
std::uint64_t max_after(std::uint64_t before, const Json& entry, const segment::SplitPreview* split) {
  if (entry.value("op", "") == "paint") return std::max(before, entry.at("id").get<std::uint64_t>());
  if (split != nullptr)
    for (const auto id : split->ids) before = std::max(before, id);
  return before;
}

// The regions kept for undo and redo, within kMostKeptBytes in all: past
// it the oldest edits' are dropped (undoing those writes all the labels).
constexpr std::size_t kMostKeptBytes = std::size_t{512} << 20;
void trim_patches(State& state) {
  std::size_t bytes = 0;
  const auto size = [](const std::optional<Patches>& p) {
    std::size_t n = 0;
    if (p)
      for (const auto& r : p->regions) n += r.before.size() + r.after.size();
    return n;
  };
  for (const auto& p : state.patches) bytes += size(p);
  for (const auto& p : state.undone_patches) bytes += size(p);
  for (auto& p : state.patches) {
    if (bytes <= kMostKeptBytes) break;
    bytes -= size(p);
    p.reset();
  }
}

std::vector<io::Extent> boxes_of(const std::vector<Patch>& regions) {
  std::vector<io::Extent> boxes;
  for (const auto& p : regions) boxes.push_back(p.box);
  return boxes;
}

}  // namespace

void shift_patches(State& state, const std::string& op) {
  if (op == "undo" && !state.patches.empty()) {
    state.undone_patches.push_back(std::move(state.patches.back()));
    state.patches.pop_back();
  } else if (op == "redo" && !state.undone_patches.empty()) {
    state.patches.push_back(std::move(state.undone_patches.back()));
    state.undone_patches.pop_back();
  } else if (op != "undo" && op != "redo") {
    state.patches.emplace_back();
    state.undone_patches.clear();
  }
}

void commit_journal(const State& state, const std::vector<std::string>& edits) {
  Json journal{{"labels", state.labels_source}, {"edits", Json::array()}};
  for (const auto& e : edits) journal["edits"].push_back(Json::parse(e));
  io::write_file_atomically(state.journal, journal.dump(1) + "\n");
}

bool apply_in_place(State& state, const std::string& op, const Json& entry, const segment::SplitPreview* split,
                    std::vector<std::string> edits, std::vector<std::string> undone, Json& applied) {
  const auto start = std::chrono::steady_clock::now();
  const Comm& comm = state.comm;
  std::optional<Patches> done;
  std::vector<io::Extent> written;  // rank 0's: the regions written
  int in_place = 0;
  collectively(comm, [&] {
    if (comm.rank() != 0) return;
    const auto labels = raw_labels(state);
    if (!labels) return;
    if (op == "undo" || op == "redo") {
      // The regions of the edit undone (or redone), written back.
      const auto& from = op == "undo" ? state.patches : state.undone_patches;
      if (from.empty() || !from.back()) return;
      DataFile file(*labels);
      const auto& regions = from.back()->regions;
      if (op == "undo")
        for (auto p = regions.rbegin(); p != regions.rend(); ++p) file.write(p->box, p->before);
      else
        for (const auto& p : regions) file.write(p.box, p.after);
      file.close();
      written = boxes_of(regions);
      in_place = 1;
      return;
    }
    const auto changes = changes_of(state, entry, *labels, split);
    std::int64_t voxels = 0;
    for (const auto& c : changes) voxels += c.first.voxels();
    if (changes.empty() || voxels > kMostPatchVoxels) return;
    DataFile file(*labels);
    Patches made;
    made.max_before = state.max_id;
    made.max_after = max_after(state.max_id, entry, split);
    if (made.max_after > (labels->element >= 8 ? ~std::uint64_t{0} : (std::uint64_t{1} << (8 * labels->element)) - 1))
      return;  // the batch edit refuses it, with its line
    // Every region changed in memory first (a refusal writes nothing), then written.
    for (const auto& [box, change] : changes) {
      if (box.voxels() > 0) {
        made.regions.push_back(patch(file, *labels, box, change));
      } else {
        std::vector<std::uint64_t> none;
        change(box, none);  // a check over what the regions held
      }
    }
    for (const auto& p : made.regions) file.write(p.box, p.after);
    file.close();
    written = boxes_of(made.regions);
    done = std::move(made);
    in_place = 1;
  });
  check_mpi(MPI_Bcast(&in_place, 1, MPI_INT, 0, comm.get()), "MPI_Bcast");
  if (!in_place) return false;
  state.labels_written(&written);
  collectively(comm, [&] {
    if (comm.rank() == 0) commit_journal(state, edits);
  });
  // The state follows: the journal, the regions for undo and redo, and the
  // largest id ever held (rank 0 holds the regions: it tells the others).
  std::uint64_t max_id = state.max_id;
  if (op == "undo" || op == "redo") {
    shift_patches(state, op);
    const auto& last = op == "undo" ? state.undone_patches.back() : state.patches.back();
    if (last) max_id = op == "undo" ? last->max_before : last->max_after;
  } else {
    if (done) max_id = done->max_after;
    state.patches.push_back(std::move(done));
    state.undone_patches.clear();
    trim_patches(state);
  }
  check_mpi(MPI_Bcast(&max_id, 1, MPI_UINT64_T, 0, comm.get()), "MPI_Bcast");
  state.max_id = max_id;
  state.edits = std::move(edits);
  state.undone = std::move(undone);
  state.surfaces.clear();
  state.pieces.clear();
  if (comm.rank() == 0)
    applied = {{"output", state.edited},
               {"journal", state.journal},
               {"edits", state.edits.size()},
               {"command", edit_command_line(state.labels_source, state.journal, state.edited)},
               {"in_place", true},
               {"seconds", std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count()}};
  return true;
}

}  // namespace volseg::session::detail
