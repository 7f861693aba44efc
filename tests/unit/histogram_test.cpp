// SPDX-License-Identifier: MIT
// The one histogram: edges, integer bins, exact counts on edges, estimates
// inside a bin, and merging only with the same edges.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "volseg/io/error.hpp"
#include "volseg/segment/histogram.hpp"

using namespace volseg;
using segment::Histogram;
using segment::HistogramEdges;

TEST(HistogramEdges, FloatEdgesSpanTheRangeInEqualBins) {
  const auto edges = HistogramEdges::over(-2.0, 6.0, io::DType::f32, 8);
  EXPECT_FALSE(edges.integers);
  EXPECT_EQ(edges.bins, 8);
  EXPECT_DOUBLE_EQ(edges.lo, -2.0);
  EXPECT_DOUBLE_EQ(edges.hi, 6.0);
  EXPECT_DOUBLE_EQ(edges.width(), 1.0);
  EXPECT_DOUBLE_EQ(edges.edge(3), 1.0);
  EXPECT_EQ(edges.bin(-2.0), 0);
  EXPECT_EQ(edges.bin(0.999), 2);
  EXPECT_EQ(edges.bin(1.0), 3);  // an edge value opens its bin
  EXPECT_EQ(edges.bin(6.0), 7);  // hi falls in the last bin
  EXPECT_EQ(edges.bin(-2.0001), -1);
  EXPECT_EQ(edges.bin(6.0001), 8);
  EXPECT_EQ(edges.bin(std::nan("")), -1);
}

TEST(HistogramEdges, BinAgreesWithEdgeForEveryEdge) {
  // Edges that are not exact binary fractions: bin() must still put every
  // edge value in the bin that it opens.
  const auto edges = HistogramEdges::over(0.1, 0.7, io::DType::f64, 1000);
  for (int i = 0; i < edges.bins; ++i) {
    ASSERT_EQ(edges.bin(edges.edge(i)), i) << i;
    ASSERT_EQ(edges.bin(std::nextafter(edges.edge(i + 1), -1.0)), i) << i;
  }
}

TEST(HistogramEdges, IntegerDataWithFewValuesGetsOneBinPerInteger) {
  const auto edges = HistogramEdges::over(-3, 10, io::DType::i16, 1024);
  EXPECT_TRUE(edges.integers);
  EXPECT_EQ(edges.bins, 14);
  EXPECT_DOUBLE_EQ(edges.lo, -3.5);
  EXPECT_DOUBLE_EQ(edges.hi, 10.5);
  for (int v = -3; v <= 10; ++v) EXPECT_EQ(edges.bin(v), v + 3);
  // Too many integers for the bins asked for: plain equal bins.
  const auto wide = HistogramEdges::over(0, 5000, io::DType::i32, 1024);
  EXPECT_FALSE(wide.integers);
  EXPECT_EQ(wide.bins, 1024);
  // Float data never gets integer bins.
  EXPECT_FALSE(HistogramEdges::over(0, 10, io::DType::f32, 1024).integers);
}

TEST(HistogramEdges, RejectsBadRanges) {
  EXPECT_THROW(HistogramEdges::over(2, 1, io::DType::f32), Error);
  EXPECT_THROW(HistogramEdges::over(0, std::numeric_limits<double>::infinity(), io::DType::f32), Error);
  EXPECT_THROW(HistogramEdges::over(std::nan(""), 1, io::DType::f32), Error);
  EXPECT_THROW(HistogramEdges::over(0, 1, io::DType::f32, 0), Error);
  const auto constant = HistogramEdges::over(7, 7, io::DType::f32, 16);
  EXPECT_LT(constant.lo, 7);
  EXPECT_GT(constant.hi, 7);
}

TEST(Histogram, CountsAtEdgesAreExactInsideABinEstimated) {
  Histogram h(HistogramEdges::over(0, 10, io::DType::f64, 10));
  // Bin i gets i + 1 values, spread inside it.
  for (int i = 0; i < 10; ++i)
    for (int k = 0; k <= i; ++k) h.add(i + 0.5 * (k + 1) / (i + 2));
  EXPECT_EQ(h.total(), 55u);
  auto exact = h.count_between(2, 5);  // bins 2, 3, 4: 3 + 4 + 5
  EXPECT_TRUE(exact.exact);
  EXPECT_DOUBLE_EQ(exact.voxels, 12);
  auto all = h.count_between(0, 10);
  EXPECT_TRUE(all.exact);
  EXPECT_DOUBLE_EQ(all.voxels, 55);
  auto half = h.count_between(2.5, 5);  // half of bin 2 estimated
  EXPECT_FALSE(half.exact);
  EXPECT_DOUBLE_EQ(half.voxels, 1.5 + 4 + 5);
  auto none = h.count_between(20, 30);
  EXPECT_DOUBLE_EQ(none.voxels, 0);
}

TEST(Histogram, IntegerBinsCountExactlyForAnyIntegerThresholds) {
  Histogram h(HistogramEdges::over(0, 9, io::DType::u8));
  for (int v = 0; v <= 9; ++v)
    for (int k = 0; k < v; ++k) h.add(v);  // value v appears v times
  auto c = h.count_between(3, 3);
  EXPECT_TRUE(c.exact);
  EXPECT_DOUBLE_EQ(c.voxels, 3);
  c = h.count_between(2.2, 4.9);  // the integers 3 and 4
  EXPECT_TRUE(c.exact);
  EXPECT_DOUBLE_EQ(c.voxels, 7);
}

TEST(Histogram, ValuesOutsideTheEdgesAreKeptApart) {
  Histogram h(HistogramEdges::over(0, 1, io::DType::f32, 4));
  h.add(-1);
  h.add(2);
  h.add(0.5);
  EXPECT_EQ(h.below(), 1u);
  EXPECT_EQ(h.above(), 1u);
  EXPECT_EQ(h.total(), 1u);
  EXPECT_FALSE(h.count_between(-5, 5).exact);  // where the outside values lie is unknown
}

TEST(Histogram, MergesOnlyWithTheSameEdges) {
  const auto edges = HistogramEdges::over(0, 4, io::DType::f32, 4);
  Histogram a(edges), b(edges);
  a.add(0.5);
  b.add(0.5);
  b.add(3.5);
  a.merge(b);
  EXPECT_EQ(a.counts()[0], 2u);
  EXPECT_EQ(a.counts()[3], 1u);
  EXPECT_EQ(a.total(), 3u);
  Histogram other(HistogramEdges::over(0, 5, io::DType::f32, 4));
  EXPECT_THROW(a.merge(other), Error);
  Histogram finer(HistogramEdges::over(0, 4, io::DType::f32, 8));
  EXPECT_THROW(a.merge(finer), Error);
}
