// SPDX-License-Identifier: MIT
// volseg-label-kernel: one rank's brick labeller alone, in memory, on a raw
// u8 mask: label each slab brick (runs, row joins, numbering) and paint its
// u32 labels, as `volseg label` does, without files, the object table, the
// merge across bricks or a second pass. It answers how the labelling itself
// compares with cc3d's compute (bench/label_bench.py prints that beside
// it); best of --repeat, seconds per phase.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <numeric>
#include <vector>

#include <CLI/CLI.hpp>

#include "label_kernel.hpp"  // the brick labeller: private to volseg_segment (core/segment/src)

int main(int argc, char** argv) {
  CLI::App app{"The brick labeller alone on a raw u8 mask of Z,Y,X voxels: label and paint, slab brick by slab brick"};
  std::string path;
  std::vector<std::int64_t> dims;
  int connectivity = 26, planes = 12, repeat = 3;
  app.add_option("mask", path, "Raw u8 mask file (x fastest)")->required();
  app.add_option("--dims", dims, "Z,Y,X")->delimiter(',')->expected(3)->required();
  app.add_option("--connectivity", connectivity, "6, 18 or 26")->capture_default_str();
  app.add_option("--planes", planes, "Planes per brick (volseg label's default on 512^2 planes: 12)")
      ->capture_default_str();
  app.add_option("--repeat", repeat, "Best of")->capture_default_str();
  CLI11_PARSE(app, argc, argv);
  try {
    const std::int64_t plane = dims[1] * dims[2];
    std::vector<std::uint8_t> mask(static_cast<std::size_t>(dims[0] * plane));
    std::ifstream in(path, std::ios::binary);
    if (!in.read(reinterpret_cast<char*>(mask.data()), static_cast<std::streamsize>(mask.size())))
      throw std::runtime_error(path + " holds fewer than " + std::to_string(mask.size()) + " bytes");
    volseg::segment::BrickLabeler labeler(connectivity);
    std::vector<std::uint32_t> labels(static_cast<std::size_t>(planes * plane));
    std::vector<std::uint64_t> ids;
    using Clock = std::chrono::steady_clock;
    double best_label = 1e30, best_paint = 1e30;
    std::uint64_t objects = 0;
    for (int r = 0; r < repeat; ++r) {
      double label = 0, paint = 0;
      objects = 0;
      for (std::int64_t z = 0; z < dims[0]; z += planes) {
        const volseg::io::Index3 shape{std::min<std::int64_t>(planes, dims[0] - z), dims[1], dims[2]};
        const auto t0 = Clock::now();
        labeler.label(mask.data() + z * plane, shape);
        const auto t1 = Clock::now();
        ids.resize(labeler.objects() + 1u);
        std::iota(ids.begin(), ids.end(), std::uint64_t{0});
        labeler.paint<std::uint32_t>(ids, labels.data());
        const auto t2 = Clock::now();
        label += std::chrono::duration<double>(t1 - t0).count();
        paint += std::chrono::duration<double>(t2 - t1).count();
        objects += labeler.objects();
      }
      best_label = std::min(best_label, label);
      best_paint = std::min(best_paint, paint);
    }
    std::printf("{\"label_s\": %.4f, \"paint_s\": %.4f, \"brick_objects\": %llu}\n", best_label, best_paint,
                static_cast<unsigned long long>(objects));
  } catch (const std::exception& error) {
    std::fprintf(stderr, "volseg-label-kernel: error: %s\n", error.what());
    return 1;
  }
  return 0;
}
