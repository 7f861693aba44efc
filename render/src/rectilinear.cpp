// SPDX-License-Identifier: MIT
#include "rectilinear.hpp"

#include <algorithm>
#include <cmath>
#include <vector>

#include "volseg/io/error.hpp"
#include "volseg/segment/decode.hpp"

namespace volseg::render {

bool has_uneven_axis(const Coordinates& coordinates) {
  for (const auto& c : coordinates)
    if (c && !c->uniform()) return true;
  return false;
}

namespace {

// Where each new point of one axis lies between two source levels.
struct Axis {
  std::vector<std::int64_t> below;  // source index at or below the point (the last level: itself)
  std::vector<double> t;            // 0 at `below`, 1 at below + 1
  bool resampled = false;
};

// New points over the coordinate's range, spaced by its smallest step.
Axis plan_axis(const io::Coordinate& c, io::Coordinate& uniform) {
  Axis axis;
  const std::size_t n = c.values.size();
  uniform = c;
  if (c.uniform() || n < 2) {
    for (std::size_t i = 0; i < n; ++i) {
      axis.below.push_back(static_cast<std::int64_t>(i));
      axis.t.push_back(0);
    }
    return axis;
  }
  axis.resampled = true;
  double smallest = INFINITY;
  for (std::size_t i = 1; i < n; ++i) smallest = std::min(smallest, std::abs(c.values[i] - c.values[i - 1]));
  const double span = c.values.back() - c.values.front();
  const auto points = static_cast<std::size_t>(std::clamp<double>(
      std::round(std::abs(span) / smallest) + 1, static_cast<double>(n), 16.0 * static_cast<double>(n)));
  uniform.values.resize(points);
  const bool rising = span > 0;
  std::size_t k = 0;
  for (std::size_t j = 0; j < points; ++j) {
    const double v = j + 1 == points ? c.values.back() : c.values.front() + span * double(j) / double(points - 1);
    uniform.values[j] = v;
    while (k + 2 < n && (rising ? c.values[k + 1] <= v : c.values[k + 1] >= v)) ++k;
    const double t = (v - c.values[k]) / (c.values[k + 1] - c.values[k]);
    axis.below.push_back(static_cast<std::int64_t>(k));
    axis.t.push_back(std::clamp(t, 0.0, 1.0));
  }
  return axis;
}

class Resampled final : public io::VolumeReader {
 public:
  Resampled(std::unique_ptr<io::VolumeReader> source, const Coordinates& grid, Resampling how)
      : io::VolumeReader(io::Capabilities{.collective = source->capabilities().collective}),
        source_(std::move(source)),
        decoder_(source_->info()) {
    const io::VolumeInfo& in = source_->info();
    info_ = in;
    nearest_ = how == Resampling::nearest;
    for (int a = 0; a < 3; ++a) {  // file order z, y, x; coordinates x, y, z
      const auto& c = grid[static_cast<std::size_t>(2 - a)];
      if (c && static_cast<std::int64_t>(c->values.size()) != in.dims[a])
        throw Error(source_->files().front() + " has " + std::to_string(in.dims[a]) + " points along " +
                    (a == 0   ? "z"
                     : a == 1 ? "y"
                              : "x") +
                    ", the volume's " + c->name + " has " + std::to_string(c->values.size()) +
                    ": not the volume's grid");
      if (!c) {
        for (std::int64_t i = 0; i < in.dims[a]; ++i) {
          axes_[a].below.push_back(i);
          axes_[a].t.push_back(0);
        }
        continue;
      }
      io::Coordinate uniform;
      axes_[a] = plan_axis(*c, uniform);
      info_.dims[a] = static_cast<std::int64_t>(uniform.values.size());
      info_.set_coordinate(static_cast<std::size_t>(2 - a), std::move(uniform));
    }
    if (!nearest_) {  // decoded here: missing values are NaN
      info_.dtype = io::DType::f32;
      info_.byte_order = io::native_byte_order();
      info_.fill_value.reset();
      info_.missing_value.reset();
      info_.valid_range.reset();
      info_.scale_factor.reset();
      info_.add_offset.reset();
    }
  }

  const io::VolumeInfo& info() const override { return info_; }
  std::string backend_name() const override { return source_->backend_name(); }
  std::string implementation() const override { return source_->implementation() + ", resampled to a uniform grid"; }
  std::uint64_t bytes_read() const override { return source_->bytes_read(); }
  std::vector<std::string> files() const override { return source_->files(); }

 protected:
  void do_read(const io::Extent& extent, void* buffer) override {
    const io::Extent from = source_extent(extent);
    std::vector<std::byte> raw(static_cast<std::size_t>(from.voxels()) * io::dtype_size(source_->info().dtype));
    if (!from.empty()) source_->read(from, raw.data());
    resample(extent, from, raw, buffer);
  }

  void do_read_all(std::span<const io::Extent> extents, std::span<void* const> buffers) override {
    std::vector<io::Extent> from;
    std::vector<std::vector<std::byte>> raw;
    std::vector<void*> targets;
    for (const auto& e : extents) {
      from.push_back(source_extent(e));
      raw.emplace_back(static_cast<std::size_t>(from.back().voxels()) * io::dtype_size(source_->info().dtype));
      targets.push_back(raw.back().data());
    }
    source_->read_all(from, targets);
    for (std::size_t i = 0; i < extents.size(); ++i) resample(extents[i], from[i], raw[i], buffers[i]);
  }

  void do_close() override { source_->close(); }

 private:
  // The source levels the extent's points lie between.
  io::Extent source_extent(const io::Extent& e) const {
    if (e.empty()) return {};
    io::Extent from;
    for (int a = 0; a < 3; ++a) {
      const auto& axis = axes_[a];
      const std::int64_t lo = axis.below[static_cast<std::size_t>(e.offset[a])];
      std::int64_t hi = axis.below[static_cast<std::size_t>(e.offset[a] + e.count[a] - 1)];
      if (axis.resampled) hi = std::min(hi + 1, source_->info().dims[a] - 1);
      from.offset[a] = lo;
      from.count[a] = hi - lo + 1;
    }
    return from;
  }

  void resample(const io::Extent& e, const io::Extent& from, const std::vector<std::byte>& raw, void* buffer) const {
    if (e.empty()) return;
    const std::size_t size = io::dtype_size(source_->info().dtype);
    std::vector<float> values;
    if (!nearest_) {
      values.resize(static_cast<std::size_t>(from.voxels()));
      decoder_.to_float(raw.data(), from.voxels(), values.data());
    }
    // Per axis: the two source points (relative to `from`) and the weight.
    struct Tap {
      std::int64_t i0, i1;
      double t;
    };
    std::vector<Tap> taps[3];
    for (int a = 0; a < 3; ++a)
      for (std::int64_t j = 0; j < e.count[a]; ++j) {
        const auto at = static_cast<std::size_t>(e.offset[a] + j);
        const std::int64_t i0 = axes_[a].below[at] - from.offset[a];
        const double t = axes_[a].t[at];
        taps[a].push_back({i0, t > 0 ? i0 + 1 : i0, t});
      }
    const std::int64_t ny = from.count[1], nx = from.count[2];
    auto index = [&](std::int64_t z, std::int64_t y, std::int64_t x) { return (z * ny + y) * nx + x; };
    std::int64_t out = 0;
    for (const Tap& z : taps[0])
      for (const Tap& y : taps[1])
        for (const Tap& x : taps[2]) {
          if (nearest_) {  // the nearer level
            const std::int64_t i = index(z.t < 0.5 ? z.i0 : z.i1, y.t < 0.5 ? y.i0 : y.i1, x.t < 0.5 ? x.i0 : x.i1);
            std::copy_n(raw.data() + i * static_cast<std::int64_t>(size), size,
                        static_cast<std::byte*>(buffer) + out * static_cast<std::int64_t>(size));
          } else {
            double sum = 0;
            for (int c = 0; c < 8; ++c) {
              const double w = ((c & 4) ? z.t : 1 - z.t) * ((c & 2) ? y.t : 1 - y.t) * ((c & 1) ? x.t : 1 - x.t);
              if (w == 0) continue;
              sum += w * values[static_cast<std::size_t>(
                             index((c & 4) ? z.i1 : z.i0, (c & 2) ? y.i1 : y.i0, (c & 1) ? x.i1 : x.i0))];
            }
            if (std::isnan(sum))  // a missing corner: the nearest value
              sum = values[static_cast<std::size_t>(
                  index(z.t < 0.5 ? z.i0 : z.i1, y.t < 0.5 ? y.i0 : y.i1, x.t < 0.5 ? x.i0 : x.i1))];
            static_cast<float*>(buffer)[out] = static_cast<float>(sum);
          }
          ++out;
        }
  }

  std::unique_ptr<io::VolumeReader> source_;
  segment::Decoder decoder_;
  io::VolumeInfo info_;
  Axis axes_[3];
  bool nearest_ = false;  // nearest level (a mask), else linear
};

}  // namespace

std::unique_ptr<io::VolumeReader> resample_uneven(std::unique_ptr<io::VolumeReader> source, const Coordinates& grid,
                                                  Resampling how) {
  if (!has_uneven_axis(grid)) return source;
  return std::make_unique<Resampled>(std::move(source), grid, how);
}

}  // namespace volseg::render
