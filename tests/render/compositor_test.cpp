// SPDX-License-Identifier: MIT
// IceT ordered blending on 1-4 ranks against the "over" operator computed
// here: every rank holds a constant premultiplied colour, and the result on
// rank 0 must be the front-to-back blend in the order given.
#include <gtest/gtest.h>
#include <mpi.h>

#include <array>
#include <cmath>
#include <vector>

#include "compositor.hpp"
#include "volseg/io/error.hpp"

using namespace volseg;
using volseg::render::Compositor;

namespace {

// Rank r's colour: a distinct hue at partial opacity, premultiplied.
std::array<float, 4> colour(int rank) {
  const float alpha = 0.2f + 0.15f * static_cast<float>(rank % 5);
  const float rgb[3] = {rank % 3 == 0 ? 1.0f : 0.2f, rank % 3 == 1 ? 1.0f : 0.3f, rank % 3 == 2 ? 1.0f : 0.1f};
  std::array<float, 4> c{rgb[0] * alpha, rgb[1] * alpha, rgb[2] * alpha, alpha};
  for (auto& v : c) v = std::round(v * 255) / 255;  // as 8 bits hold it
  return c;
}

std::array<float, 4> blend_in(const std::vector<int>& order) {
  std::array<float, 4> out{0, 0, 0, 0};
  for (int r : order) {  // front to back: what is in front covers what is behind
    const auto c = colour(r);
    for (int k = 0; k < 4; ++k) out[k] += (1 - out[3]) * c[k];
  }
  return out;
}

}  // namespace

TEST(Compositor, OrderedBlendMatchesTheOverOperator) {
  Comm comm(MPI_COMM_WORLD);
  Compositor compositor(comm);
  const int width = 37, height = 23;
  std::vector<int> forward(static_cast<std::size_t>(comm.size()));
  for (int r = 0; r < comm.size(); ++r) forward[static_cast<std::size_t>(r)] = r;
  std::vector<int> backward(forward.rbegin(), forward.rend());
  for (const auto& order : {forward, backward}) {
    std::vector<std::uint8_t> image(static_cast<std::size_t>(width * height) * 4);
    const auto mine = colour(comm.rank());
    for (std::size_t i = 0; i < image.size(); ++i) image[i] = static_cast<std::uint8_t>(std::lround(mine[i % 4] * 255));
    // A column this rank leaves empty shows that transparent pixels pass.
    for (int y = 0; y < height; ++y)
      for (int k = 0; k < 4; ++k) image[static_cast<std::size_t>(y * width + comm.rank()) * 4 + k] = 0;
    const auto result = compositor.blend(image.data(), width, height, order);
    if (comm.rank() != 0) {
      EXPECT_TRUE(result.empty());
      continue;
    }
    ASSERT_EQ(result.size(), image.size());
    const auto expected = blend_in(order);
    // 8-bit blending rounds once per rank: within one level per rank.
    const float tolerance = static_cast<float>(comm.size()) / 255 + 1e-6f;
    for (int k = 0; k < 4; ++k)
      EXPECT_NEAR(result[static_cast<std::size_t>(5 * width + 30) * 4 + k] / 255.0f, expected[k], tolerance);
    // Column r lacks rank r's colour.
    std::vector<int> without;
    for (int r : order)
      if (r != 0) without.push_back(r);
    const auto column0 = blend_in(without);
    for (int k = 0; k < 4; ++k)
      EXPECT_NEAR(result[static_cast<std::size_t>(7 * width + 0) * 4 + k] / 255.0f, column0[k], tolerance);
    if (comm.size() > 1) {  // the order matters: a different order gives a different colour
      const auto other = blend_in(order == forward ? backward : forward);
      float difference = 0;
      for (int k = 0; k < 3; ++k) difference += std::abs(other[k] - expected[k]);
      EXPECT_GT(difference, 4 * tolerance);
    }
  }
}

TEST(Compositor, RefusesAnOrderOfTheWrongLength) {
  Comm comm(MPI_COMM_WORLD);
  Compositor compositor(comm);
  std::vector<std::uint8_t> image(4 * 4 * 4, 0);
  EXPECT_THROW(compositor.blend(image.data(), 4, 4, std::vector<int>(static_cast<std::size_t>(comm.size() + 1), 0)),
               volseg::Error);
}
