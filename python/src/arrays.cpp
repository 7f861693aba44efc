// SPDX-License-Identifier: MIT
// Calls on arrays in memory: volseg.threshold (segment's kernel) and
// volseg.label (the labelling of `volseg label`, on one rank's array).
#include <algorithm>
#include <exception>
#include <memory>
#include <thread>
#include <vector>

#include "common.hpp"
#include "volseg/io/comm.hpp"
#include "volseg/io/error.hpp"
#include "volseg/segment/brick_layout.hpp"
#include "volseg/segment/label.hpp"
#include "volseg/segment/threshold.hpp"

namespace volseg::python {
namespace {

// `volseg.threshold(array, lo, hi)`: segment's kernel on an array in memory.
py::array threshold(const py::array& values, double lo, double hi, std::optional<double> fill,
                    std::optional<std::pair<double, double>> valid_range) {
  require_contiguous(values, "the array");
  if (!(lo <= hi)) throw Error("lo " + std::to_string(lo) + " is above hi " + std::to_string(hi) + " (or NaN)");
  const io::DType type = dtype_of(values);
  segment::Threshold threshold{lo, hi, std::nullopt, std::nullopt, std::nullopt};
  if (fill) threshold.fill_value = *fill;
  if (valid_range) threshold.valid_range = std::array<double, 2>{valid_range->first, valid_range->second};
  const segment::ThresholdKernel kernel(type, threshold, /*histogram=*/false);
  std::vector<py::ssize_t> shape(values.shape(), values.shape() + values.ndim());
  py::array_t<std::uint8_t> mask(shape);
  const auto* input = static_cast<const std::byte*>(values.data());
  std::uint8_t* output = mask.mutable_data();
  const auto count = static_cast<std::int64_t>(values.size());
  {
    // The GIL is released, so the kernel runs on every core for a large
    // array (numpy's comparison runs on one): pieces of whole 64 KiB of mask.
    py::gil_scoped_release release;
    const std::size_t size = io::dtype_size(type);
    const std::int64_t piece = std::int64_t{1} << 16;
    const auto cores = static_cast<std::int64_t>(std::max(1u, std::thread::hardware_concurrency()));
    const std::int64_t threads = std::clamp<std::int64_t>(count / (std::int64_t{16} << 20), 1, cores);
    // Every thread but the last a whole number of pieces; the last to the end.
    const std::int64_t share = ((count + threads - 1) / threads + piece - 1) / piece * piece;
    std::vector<std::thread> workers;
    std::vector<std::exception_ptr> errors(static_cast<std::size_t>(threads));
    for (std::int64_t t = 0; t < threads; ++t) {
      const std::int64_t begin = std::min(count, t * share);
      const std::int64_t end = t + 1 == threads ? count : std::min(count, begin + share);
      auto work = [&, t, begin, end] {
        try {
          segment::Stats stats;
          kernel.run(input + begin * static_cast<std::int64_t>(size), end - begin, /*swapped=*/false, output + begin,
                     stats);
        } catch (...) {
          errors[static_cast<std::size_t>(t)] = std::current_exception();
        }
      };
      if (t + 1 == threads) {
        work();
      } else {
        try {
          workers.emplace_back(work);
        } catch (...) {  // no thread: this one does the piece
          work();
        }
      }
    }
    for (auto& w : workers) w.join();
    for (auto& e : errors)
      if (e) std::rethrow_exception(e);
  }
  return mask;
}

// Copies brick `extent` of a C-order volume of dims into out (packed).
template <class T>
void copy_brick(const T* volume, const io::Index3& dims, const io::Extent& extent, T* out, bool to_volume) {
  for (std::int64_t z = 0; z < extent.count[0]; ++z)
    for (std::int64_t y = 0; y < extent.count[1]; ++y) {
      const std::int64_t at = ((extent.offset[0] + z) * dims[1] + extent.offset[1] + y) * dims[2] + extent.offset[2];
      T* brick_row = out + (z * extent.count[1] + y) * extent.count[2];
      if (to_volume)
        std::copy_n(brick_row, extent.count[2], const_cast<T*>(volume) + at);
      else
        std::copy_n(volume + at, extent.count[2], brick_row);
    }
}

template <class T>
void paint_labels(const std::uint8_t* mask, const io::Index3& dims, const segment::BrickLayout& layout,
                  segment::Labeling& labeling, T* out) {
  std::vector<std::uint8_t> brick;
  std::vector<T> labels;
  for (std::int64_t b = 0; b < layout.count(); ++b) {
    const io::Extent extent = layout.brick(b);
    brick.resize(static_cast<std::size_t>(extent.voxels()));
    labels.resize(brick.size());
    copy_brick(mask, dims, extent, brick.data(), false);
    labeling.paint(b, brick.data(), labels.data());  // labels a brick the same way every time
    copy_brick(out, dims, extent, labels.data(), true);
  }
}

// `volseg.label(mask, connectivity)`: the labelling of `volseg label` on
// one rank's array, brick by brick (the brick pass and the merge of the
// distributed labelling, on MPI_COMM_SELF). Objects are numbered 1, 2, ...
// in the order of their first voxel (C order), as scipy.ndimage.label does.
py::tuple label(const py::array& mask, int connectivity, std::uint64_t min_voxels) {
  require_contiguous(mask, "the mask");
  const py::dtype type = mask.dtype();
  if (!(type.kind() == 'b' || (type.kind() == 'u' && type.itemsize() == 1)))
    throw Error("label: the mask must be uint8 or bool (nonzero is foreground), not " +
                py::str(static_cast<py::handle>(type)).cast<std::string>() +
                ": pass mask != 0, or volseg.threshold's mask");
  if (mask.ndim() != 3 && mask.ndim() != 2)
    throw Error("label: the mask must have 2 or 3 dimensions, not " + std::to_string(mask.ndim()));
  if (mask.ndim() == 2 && (connectivity == 4 || connectivity == 8)) connectivity = connectivity == 4 ? 6 : 26;
  segment::check_connectivity(connectivity);
  const io::Index3 dims = mask.ndim() == 3 ? io::Index3{mask.shape(0), mask.shape(1), mask.shape(2)}
                                           : io::Index3{1, mask.shape(0), mask.shape(1)};
  for (auto d : dims)
    if (d > std::int64_t{1} << 30) throw Error("label: an axis of more than 2^30 voxels");
  std::vector<py::ssize_t> shape(mask.shape(), mask.shape() + mask.ndim());
  const char* axes[3] = {"z", "y", "x"};
  const int first_axis = mask.ndim() == 3 ? 0 : 1;     // a 2D mask's table has y and x only
  if (dims[0] == 0 || dims[1] == 0 || dims[2] == 0) {  // as scipy: no voxel, no object
    py::dict table;
    table["id"] = py::array_t<std::uint64_t>(0);
    table["voxels"] = py::array_t<std::uint64_t>(0);
    for (const char* suffix : {"_min", "_max"})
      for (int a = first_axis; a < 3; ++a) table[py::str(std::string(axes[a]) + suffix)] = py::array_t<std::int64_t>(0);
    for (int a = first_axis; a < 3; ++a) table[py::str(std::string("centroid_") + axes[a])] = py::array_t<double>(0);
    table["touches_boundary"] = py::array_t<bool>(0);
    py::array_t<std::uint32_t> labels(shape);
    return py::make_tuple(labels, table);
  }
  const auto* voxels = static_cast<const std::uint8_t*>(mask.data());
  const std::int64_t edge = 256;  // bricks of at most 16 Mi voxels: one copied brick is all label adds
  const segment::BrickLayout layout(
      dims, {std::min(edge, std::max<std::int64_t>(dims[0], 1)), std::min(edge, std::max<std::int64_t>(dims[1], 1)),
             std::min(edge, std::max<std::int64_t>(dims[2], 1))});
  const Comm self(MPI_COMM_SELF);
  segment::LabelSummary summary;
  std::unique_ptr<segment::Labeling> labeling;
  {
    py::gil_scoped_release release;
    labeling = std::make_unique<segment::Labeling>(
        self, segment::BrickMap::from_layout(layout, 1, segment::Assignment::block, 0), connectivity, false);
    std::vector<std::uint8_t> brick;
    for (std::int64_t b = 0; b < layout.count(); ++b) {
      const io::Extent extent = layout.brick(b);
      brick.resize(static_cast<std::size_t>(extent.voxels()));
      copy_brick(voxels, dims, extent, brick.data(), false);
      labeling->add(b, brick.data());
    }
    summary = labeling->finish(min_voxels, true);
  }
  const bool wide = summary.objects > 0xffffffffu;
  py::array labels = wide ? py::array(py::array_t<std::uint64_t>(shape)) : py::array(py::array_t<std::uint32_t>(shape));
  void* out = labels.mutable_data();
  {
    py::gil_scoped_release release;
    if (wide)
      paint_labels(voxels, dims, layout, *labeling, static_cast<std::uint64_t*>(out));
    else
      paint_labels(voxels, dims, layout, *labeling, static_cast<std::uint32_t*>(out));
  }

  // The table: the columns of `volseg label --stats`, in voxel units.
  const segment::ObjectTable& t = summary.table;
  const auto n = static_cast<py::ssize_t>(t.size());
  py::array_t<std::uint64_t> id(n), count(n);
  py::array_t<std::int64_t> lo[3] = {py::array_t<std::int64_t>(n), py::array_t<std::int64_t>(n),
                                     py::array_t<std::int64_t>(n)};
  py::array_t<std::int64_t> hi[3] = {py::array_t<std::int64_t>(n), py::array_t<std::int64_t>(n),
                                     py::array_t<std::int64_t>(n)};
  py::array_t<double> centroid[3] = {py::array_t<double>(n), py::array_t<double>(n), py::array_t<double>(n)};
  py::array_t<bool> border(n);
  for (py::ssize_t i = 0; i < n; ++i) {
    const segment::ObjectPart& p = t.part(static_cast<std::size_t>(i));
    id.mutable_at(i) = t.first_id + static_cast<std::uint64_t>(i);
    count.mutable_at(i) = p.voxels;
    for (int a = 0; a < 3; ++a) {
      lo[a].mutable_at(i) = p.lo[a];
      hi[a].mutable_at(i) = p.hi[a];
      centroid[a].mutable_at(i) = static_cast<double>(p.sum[a]) / static_cast<double>(p.voxels);
    }
    // On the mask's own faces (a 2D mask's single plane is no face).
    bool touches = false;
    for (int a = first_axis; a < 3; ++a) touches = touches || p.lo[a] == 0 || p.hi[a] == dims[a] - 1;
    border.mutable_at(i) = touches;
  }
  py::dict table;
  table["id"] = id;
  table["voxels"] = count;
  for (int a = first_axis; a < 3; ++a) table[py::str(std::string(axes[a]) + "_min")] = lo[a];
  for (int a = first_axis; a < 3; ++a) table[py::str(std::string(axes[a]) + "_max")] = hi[a];
  for (int a = first_axis; a < 3; ++a) table[py::str(std::string("centroid_") + axes[a])] = centroid[a];
  table["touches_boundary"] = border;
  return py::make_tuple(labels, table);
}

}  // namespace

void bind_arrays(py::module_& m) {
  m.def("threshold", &threshold, py::arg("array"), py::arg("lo"), py::arg("hi"), py::arg("fill") = py::none(),
        py::arg("valid_range") = py::none(),
        "uint8 mask of lo <= v <= hi (NaN, fill and values outside valid_range are 0), segment's kernel");
  m.def("label", &label, py::arg("mask"), py::arg("connectivity") = 26, py::arg("min_voxels") = 0,
        "(labels, table): the connected components of a 2D or 3D uint8/bool mask in memory, numbered 1, 2, ... "
        "by first voxel (C order) as scipy.ndimage.label numbers them (whose default structure is the cross: "
        "connectivity 6, or 4 in 2D; volseg's default is 26, as `volseg label`); labels uint32 (uint64 past 2^32 - 1 "
        "objects); table a dict "
        "of numpy columns (id, voxels, z_min ... x_max, centroid_z ... centroid_x, touches_boundary). Objects under "
        "min_voxels are dropped (0) and the rest renumbered. connectivity 6, 18 or 26 (4 or 8 in 2D: 6 or 26)");
}

}  // namespace volseg::python
