// SPDX-License-Identifier: MIT
// volseg-kernel-bench: the threshold kernel alone on data in memory, in
// GB/s of input, with none, about half and all of the voxels in range,
// against a plain copy of the same bytes measured in the same run.
//
// Run: volseg-kernel-bench [--mib 512] [--repeat 5]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "volseg/datasets/generate.hpp"
#include "volseg/segment/threshold.hpp"

using namespace volseg;

namespace {

template <class F>
double best_seconds(int repeat, F&& f) {
  double best = 1e30;
  for (int r = 0; r < repeat; ++r) {
    const auto start = std::chrono::steady_clock::now();
    f();
    best = std::min(best, std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  }
  return best;
}

}  // namespace

int main(int argc, char** argv) {
  std::int64_t mib = 512;
  int repeat = 5;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string a = argv[i];
    if (a == "--mib")
      mib = std::stoll(argv[i + 1]);
    else if (a == "--repeat")
      repeat = std::stoi(argv[i + 1]);
  }
  // The smooth test field of `volseg generate`, as float32.
  const std::int64_t nx = 1024, ny = 256, nz = std::max<std::int64_t>(1, mib * 1024 * 1024 / (4 * nx * ny));
  io::VolumeInfo info;
  info.dims = {nz, ny, nx};
  info.dtype = io::DType::f32;
  std::vector<float> values(static_cast<std::size_t>(nx * ny * nz));
  datasets::FieldSpec spec;
  spec.field = datasets::Field::smooth;
  datasets::fill(spec, info, io::Extent{{0, 0, 0}, {nz, ny, nx}}, values.data());
  std::vector<std::uint8_t> mask(values.size());
  std::vector<float> copy(values.size());
  const double bytes = static_cast<double>(values.size() * sizeof(float));

  const double copy_s = best_seconds(repeat, [&] { std::memcpy(copy.data(), values.data(), values.size() * 4); });
  std::printf("input %.0f MiB f32 (the smooth field); best of %d\n", bytes / (1 << 20), repeat);
  std::printf("%-36s %8s %8s %10s\n", "case", "GB/s", "x copy", "in range");
  std::printf("%-36s %8.2f %8.2f\n", "memcpy", bytes / copy_s / 1e9, 1.0);
  const struct {
    const char* name;
    double lo, hi;
  } cases[] = {{"none in range", 2.0, 3.0}, {"half in range [0.4, 0.6]", 0.4, 0.6}, {"all in range", -1.0, 2.0}};
  for (const bool histogram : {false, true})
    for (const auto& c : cases) {
      segment::Threshold threshold;
      threshold.lo = c.lo;
      threshold.hi = c.hi;
      const segment::ThresholdKernel kernel(io::DType::f32, threshold, histogram);
      segment::Stats stats;
      const double s = best_seconds(repeat, [&] {
        stats = segment::Stats{};
        kernel.run(reinterpret_cast<const std::byte*>(values.data()), static_cast<std::int64_t>(values.size()), false,
                   mask.data(), stats);
      });
      const std::string name = std::string(c.name) + (histogram ? " +histogram" : "");
      std::printf("%-36s %8.2f %8.2f %9.1f%%\n", name.c_str(), bytes / s / 1e9, copy_s / s,
                  100.0 * static_cast<double>(stats.in_range) / static_cast<double>(stats.voxels));
    }
  return 0;
}
