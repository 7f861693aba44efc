// SPDX-License-Identifier: MIT
// Backends "ranged-mmap" and "ranged-uring": raw volumes read through Fogal
// & Krüger's ranged API (io/ranged). read_any() opens one range over the bytes of
// all the extents asked for, and hands extents out in the order readanyv
// finds them complete; read() is read_any() of one extent, copied out.
// Masks are written with pwrite, as "posix" does.
//
// Hints: queue_depth (uring requests in flight, 32), request_size (bytes per
// uring request, 4M), max_memory (bytes the range may hold or advise at once,
// 128M), direct (uring reads with O_DIRECT, 1).
#include <algorithm>
#include <atomic>
#include <memory>
#include <vector>

#include "raw/raw_volume.hpp"
#include "volseg/io/error.hpp"
#include "volseg/io/ranged.hpp"
#include "volseg/io/registry.hpp"

namespace volseg::io {

Backend make_posix_backend();

namespace {

// readanyv is given the first kWindow extents still wanted: enough choice
// for the engines' budgets, and no quadratic cost on jobs of many bricks.
constexpr std::size_t kWindow = 64;

class RangeArrivals final : public Arrivals {
 public:
  struct Brick {
    ranged::Block block;
    std::vector<std::pair<std::int64_t, std::int64_t>> runs;  // (values, index in extent) per piece
  };

  RangeArrivals(std::unique_ptr<ranged::Range> range, std::vector<Brick> bricks, bool needs_swap,
                std::atomic<std::uint64_t>& bytes_read)
      : range_(std::move(range)), bricks_(std::move(bricks)), needs_swap_(needs_swap), bytes_read_(bytes_read) {
    remaining_.resize(bricks_.size());
    for (std::size_t i = 0; i < remaining_.size(); ++i) remaining_[i] = i;
  }

  std::optional<Arrival> next() override {
    if (remaining_.empty()) return std::nullopt;
    const std::size_t window = std::min(kWindow, remaining_.size());
    wanted_.clear();
    for (std::size_t w = 0; w < window; ++w) wanted_.push_back(bricks_[remaining_[w]].block);
    ranged::View view = range_->readanyv(wanted_);
    const std::size_t index = remaining_[view.block];
    if (view.block != 0) ++out_of_order_;
    remaining_.erase(remaining_.begin() + static_cast<std::ptrdiff_t>(view.block));
    const Brick& brick = bricks_[index];
    std::vector<Run> runs;
    for (std::size_t p = 0; p < view.pieces.size(); ++p) {
      if (view.pieces[p].size() != brick.block.pieces[p].length)
        throw Error("read_any: a brick reaches past the end of its range");  // cannot happen: the range covers all
      runs.push_back(Run{view.pieces[p].data(), brick.runs[p].first, brick.runs[p].second});
    }
    bytes_read_ += brick.block.bytes();
    ranged::Range* range = range_.get();
    return Arrival{index, Mapping(std::move(runs), needs_swap_, [range, view]() mutable { range->release(view); })};
  }

  void close() override {
    range_->finished();
    range_->close();
  }

  std::uint64_t out_of_order() const override { return out_of_order_; }

 private:
  std::unique_ptr<ranged::Range> range_;
  std::vector<Brick> bricks_;
  std::vector<std::size_t> remaining_;  // indices not yet handed out, in the order asked
  std::vector<ranged::Block> wanted_;
  std::uint64_t out_of_order_ = 0;
  bool needs_swap_;
  std::atomic<std::uint64_t>& bytes_read_;
};

class RangedReader final : public VolumeReader {
 public:
  RangedReader(const std::string& path, const Comm& comm, ranged::Engine engine, const ranged::Options& options,
               const std::string& array)
      : VolumeReader({.read_any = true}), input_(path, comm, true, array), engine_(engine), options_(options) {}
  const VolumeInfo& info() const override { return input_.header().info; }
  std::string backend_name() const override { return std::string("ranged-") + ranged::engine_name(engine_); }
  std::string implementation() const override {
    return backend_name() + " (Fogal & Krüger readanyv; queue depth " + std::to_string(options_.queue_depth) +
           ", requests of " + std::to_string(options_.request_bytes) + " B, at most " +
           std::to_string(options_.max_bytes) + " B held)";
  }

  std::unique_ptr<Arrivals> do_read_any(std::span<const Extent> extents) override {
    const std::size_t size = dtype_size(info().dtype);
    std::uint64_t first = UINT64_MAX, last = 0;
    std::vector<RangeArrivals::Brick> bricks(extents.size());
    for (std::size_t e = 0; e < extents.size(); ++e) {
      raw::for_each_run(
          info().dims, extents[e], size, input_.header().byte_skip,
          [&](std::uint64_t offset, std::int64_t count, std::int64_t index) {
            bricks[e].block.pieces.push_back(ranged::Piece{offset, static_cast<std::uint64_t>(count) * size});
            bricks[e].runs.emplace_back(count, index);
            first = std::min(first, offset);
            last = std::max(last, offset + static_cast<std::uint64_t>(count) * size);
          });
    }
    if (first > last) first = last = 0;  // nothing to read
    for (auto& brick : bricks)
      for (auto& piece : brick.block.pieces) piece.offset -= first;
    auto range =
        ranged::open_range(engine_, input_.header().data_path, first, last - first, ranged::Access::read, options_);
    return std::make_unique<RangeArrivals>(std::move(range), std::move(bricks), input_.needs_swap(), bytes_read_);
  }

  void do_read(const Extent& extent, void* buffer) override {
    auto arrivals = read_any({&extent, 1});
    while (auto arrival = arrivals->next()) {
      raw::copy_out(arrival->values, buffer, dtype_size(info().dtype));
      arrival->values.release();
    }
    arrivals->close();
  }

  void do_close() override { input_.close(); }
  std::uint64_t bytes_read() const override { return bytes_read_; }
  std::vector<std::string> files() const override { return input_.files(); }

 private:
  raw::RawInput input_;
  ranged::Engine engine_;
  ranged::Options options_;
  std::atomic<std::uint64_t> bytes_read_{0};
};

ranged::Options options_from(const Hints& hints) {
  ranged::Options options;
  const auto depth = hints.get_int("queue_depth", options.queue_depth);
  if (depth < 1 || depth > 4096) throw Error("hint queue_depth must be between 1 and 4096");
  options.queue_depth = static_cast<unsigned>(depth);
  const auto request = hints.get_size("request_size", static_cast<std::int64_t>(options.request_bytes));
  if (request < 4096) throw Error("hint request_size must be at least 4096 bytes");
  options.request_bytes = static_cast<std::uint64_t>(request);
  const auto memory = hints.get_size("max_memory", static_cast<std::int64_t>(options.max_bytes));
  if (memory < 1) throw Error("hint max_memory must be positive");
  options.max_bytes = static_cast<std::uint64_t>(memory);
  options.direct = hints.get_bool("direct", options.direct);
  return options;
}

Backend make_ranged_backend(ranged::Engine engine) {
  Backend backend;
  backend.name = std::string("ranged-") + ranged::engine_name(engine);
  backend.formats = "raw (NRRD .nhdr)";
  backend.extension = ".nhdr";
  backend.raw_layout = true;
  backend.description =
      engine == ranged::Engine::mmap
          ? "Fogal & Krüger's readanyv on a mapping: WILLNEED ahead, hands out a brick mincore finds resident"
          : "Fogal & Krüger's readanyv on io_uring: bricks handed out as their reads complete";
  backend.hints = {{"queue_depth", HintFor::readers}, {"request_size", HintFor::readers},
                   {"max_memory", HintFor::readers},  {"direct", HintFor::readers},
                   {"fsync", HintFor::writers},       {"direct_write", HintFor::writers}};
  const std::string name = backend.name;
  backend.open = [name, engine](const OpenRequest& request, const Comm& comm,
                                const Hints& hints) -> std::unique_ptr<VolumeReader> {
    auto options = options_from(hints);
    request.selection.refuse_step_and_glob(name);
    hints.reject_unused(name);
    return std::make_unique<RangedReader>(request.path, comm, engine, options, request.selection.variable);
  };
  // Masks: pwrite, as posix (which reads fsync and checks the rest).
  backend.create = make_posix_backend().create;
  return backend;
}

}  // namespace

Backend make_ranged_mmap_backend() { return make_ranged_backend(ranged::Engine::mmap); }
Backend make_ranged_uring_backend() { return make_ranged_backend(ranged::Engine::uring); }

}  // namespace volseg::io
