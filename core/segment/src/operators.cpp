// SPDX-License-Identifier: MIT
// The operators' options, the ball morphology of one buffer, and thresholds
// chosen from a histogram (Otsu, multi-Otsu, percentiles).
#include "volseg/segment/operators.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <limits>
#include <sstream>

#include "volseg/io/error.hpp"

namespace volseg::segment {

std::string MaskOperators::describe() const {
  std::ostringstream out;
  out.precision(17);
  const char* sep = "";
  if (seed) {
    out << "hysteresis [" << seed->first << ", " << seed->second << "] (" << connectivity << "-connected)";
    sep = ", ";
  }
  if (open > 0) {
    out << sep << "open " << open;
    sep = ", ";
  }
  if (close > 0) {
    out << sep << "close " << close;
    sep = ", ";
  }
  if (fill_holes) out << sep << "fill holes";
  return out.str();
}

int parse_radius(const std::string& option, const std::string& text) {
  int radius = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), radius);
  if (ec != std::errc() || end != text.data() + text.size())
    throw Error(option + " " + text + ": the radius is a whole number of voxels (0 to " + std::to_string(max_radius) +
                ")");
  if (radius < 0 || radius > max_radius)
    throw Error(option + " " + text + ": the radius must be 0 to " + std::to_string(max_radius) + " voxels");
  return radius;
}

void check_operators(const MaskOperators& operators, const io::Index3& brick_shape) {
  for (const auto& [name, radius] : {std::pair{"--open", operators.open}, std::pair{"--close", operators.close}})
    if (radius < 0 || radius > max_radius)
      throw Error(std::string(name) + " " + std::to_string(radius) + ": the radius must be 0 to " +
                  std::to_string(max_radius) + " voxels");
  if (operators.seed) {
    const auto [lo, hi] = *operators.seed;
    if (std::isnan(lo) || std::isnan(hi)) throw Error("--seed-lo and --seed-hi must not be NaN");
    if (lo > hi) throw Error("--seed-lo is above --seed-hi: the seed range is empty");
  }
  const std::int64_t ghost = operators.ghost();
  const std::int64_t side = std::min({brick_shape[0], brick_shape[1], brick_shape[2]});
  if (ghost > side)
    throw Error("--open " + std::to_string(operators.open) + " and --close " + std::to_string(operators.close) +
                " read " + std::to_string(ghost) + " ghost layers around each brick, more than its smallest side (" +
                std::to_string(side) + "): the ghost limit of bricks of " + std::to_string(brick_shape[2]) + "x" +
                std::to_string(brick_shape[1]) + "x" + std::to_string(brick_shape[0]) +
                " (give a larger --brick or a smaller radius)");
}

std::vector<BallRow> ball_rows(int radius) {
  std::vector<BallRow> rows;
  const int r2 = radius * radius;
  for (int dz = -radius; dz <= radius; ++dz)
    for (int dy = -radius; dy <= radius; ++dy) {
      const int left = r2 - dz * dz - dy * dy;
      if (left < 0) continue;
      int w = static_cast<int>(std::sqrt(static_cast<double>(left)));
      while ((w + 1) * (w + 1) <= left) ++w;
      while (w * w > left) --w;
      rows.push_back({dz, dy, w});
    }
  return rows;
}

namespace {

// Up to this radius a buffer a half width costs less than the run tables.
constexpr int small_radius = 4;

// Per row, for every voxel, a run length saturated at 255 (radii are at
// most 32): for an erosion the ones ending (before) and starting (after) at
// x, outside the row counting as ones; for a dilation the distance to the
// nearest one at or before (and at or after) x, none outside the row.
void runs_along_x(const std::uint8_t* in, std::uint8_t* before, std::uint8_t* after, std::int64_t rows,
                  std::int64_t width, bool erode) {
  // Branch-free: a mask's edges are where a branch would mispredict. keep
  // is 1 where the run goes on (a one for an erosion, a zero for a
  // dilation), and the run grows by one below 255.
  const std::uint8_t flip = erode ? 0 : 1;
  for (std::int64_t r = 0; r < rows; ++r) {
    const std::uint8_t* row = in + r * width;
    std::uint8_t* b = before + r * width;
    std::uint8_t* a = after + r * width;
    unsigned run = 255;  // what lies past the row's start
    for (std::int64_t x = 0; x < width; ++x) {
      const unsigned keep = static_cast<unsigned>(row[x] ^ flip);
      run = (run + (run != 255)) * keep;
      b[x] = static_cast<std::uint8_t>(run);
    }
    run = 255;
    for (std::int64_t x = width; x-- > 0;) {
      const unsigned keep = static_cast<unsigned>(row[x] ^ flip);
      run = (run + (run != 255)) * keep;
      a[x] = static_cast<std::uint8_t>(run);
    }
  }
}

// Each row of `from` eroded (or dilated) along x by one voxel either way,
// outside the row counting as foreground (background): a half width one
// more than from's. Loads at x - 1, x, x + 1: vectorised.
void widen_along_x(const std::uint8_t* from, std::uint8_t* to, std::int64_t rows, std::int64_t width, bool erode) {
  for (std::int64_t r = 0; r < rows; ++r) {
    const std::uint8_t* p = from + r * width;
    std::uint8_t* q = to + r * width;
    if (width == 1) {
      q[0] = p[0];
      continue;
    }
    if (erode) {
      q[0] = p[0] & p[1];
#pragma omp simd
      for (std::int64_t x = 1; x < width - 1; ++x) q[x] = p[x - 1] & p[x] & p[x + 1];
      q[width - 1] = p[width - 2] & p[width - 1];
    } else {
      q[0] = p[0] | p[1];
#pragma omp simd
      for (std::int64_t x = 1; x < width - 1; ++x) q[x] = p[x - 1] | p[x] | p[x + 1];
      q[width - 1] = p[width - 2] | p[width - 1];
    }
  }
}

}  // namespace

void morph_ball(const std::uint8_t* in, std::uint8_t* out, const io::Index3& shape, int radius, bool erode) {
  const std::int64_t nz = shape[0], ny = shape[1], nx = shape[2];
  const auto n = static_cast<std::size_t>(nz * ny * nx);
  if (radius <= 0) {
    std::copy(in, in + n, out);
    return;
  }
  const auto rows = ball_rows(radius);
  const std::int64_t plane_rows = nz * ny;
  // Every output row: the AND (OR) over the ball's rows of row_of(o, zz, yy, w).
  auto combine = [&](auto&& row_of) {
    for (std::int64_t z = 0; z < nz; ++z)
      for (std::int64_t y = 0; y < ny; ++y) {
        std::uint8_t* o = out + (z * ny + y) * nx;
        std::fill(o, o + nx, static_cast<std::uint8_t>(erode ? 1 : 0));
        for (const BallRow& row : rows) {
          const std::int64_t zz = z + row.dz, yy = y + row.dy;
          if (zz < 0 || zz >= nz || yy < 0 || yy >= ny) continue;  // outside: the identity of the step
          row_of(o, zz, yy, row.half_width);
        }
      }
  };
  if (radius <= small_radius) {
    // Each half width's rows once, by widening the last by a voxel: R
    // copies of the buffer, and every step a vectorised AND or OR.
    thread_local std::vector<std::uint8_t> widened;
    widened.resize(n * static_cast<std::size_t>(radius));
    const std::uint8_t* from = in;
    for (int w = 1; w <= radius; ++w) {
      std::uint8_t* to = widened.data() + n * static_cast<std::size_t>(w - 1);
      widen_along_x(from, to, plane_rows, nx, erode);
      from = to;
    }
    combine([&](std::uint8_t* o, std::int64_t zz, std::int64_t yy, int w) {
      const std::uint8_t* src =
          (w == 0 ? in : widened.data() + n * static_cast<std::size_t>(w - 1)) + (zz * ny + yy) * nx;
      if (erode) {
#pragma omp simd
        for (std::int64_t x = 0; x < nx; ++x) o[x] &= src[x];
      } else {
#pragma omp simd
        for (std::int64_t x = 0; x < nx; ++x) o[x] |= src[x];
      }
    });
    return;
  }
  // Larger balls: two run tables, whatever the radius.
  thread_local std::vector<std::uint8_t> before, after;
  before.resize(n);
  after.resize(n);
  runs_along_x(in, before.data(), after.data(), plane_rows, nx, erode);
  combine([&](std::uint8_t* o, std::int64_t zz, std::int64_t yy, int half_width) {
    const std::uint8_t* b = before.data() + (zz * ny + yy) * nx;
    const std::uint8_t* a = after.data() + (zz * ny + yy) * nx;
    const auto w = static_cast<std::uint8_t>(half_width);
    // Erosion: ones over [x - w, x + w] (runs longer than w both ways);
    // dilation: a one within w either way.
    if (erode) {
#pragma omp simd
      for (std::int64_t x = 0; x < nx; ++x) o[x] &= static_cast<std::uint8_t>((b[x] > w) & (a[x] > w));
    } else {
#pragma omp simd
      for (std::int64_t x = 0; x < nx; ++x) o[x] |= static_cast<std::uint8_t>((b[x] <= w) | (a[x] <= w));
    }
  });
}

// --- Thresholds chosen from the histogram -----------------------------------

bool is_threshold_rule(const std::string& text) {
  return text == "otsu" || text.rfind("multiotsu", 0) == 0 || (text.size() > 1 && text[0] == 'p');
}

ThresholdRule parse_threshold_rule(const std::string& option, const std::string& text) {
  auto bad = [&](const std::string& why) {
    return Error(option + " " + text + ": " + why +
                 " (a number, otsu, multiotsu:K:I for the I-th of the K-1 thresholds of K classes, or pN for the "
                 "N-th percentile)");
  };
  ThresholdRule rule;
  rule.text = text;
  if (text == "otsu") return rule;
  auto whole = [&](std::string_view part, int& value) {
    const auto [end, ec] = std::from_chars(part.data(), part.data() + part.size(), value);
    return ec == std::errc() && end == part.data() + part.size();
  };
  if (text.rfind("multiotsu", 0) == 0) {
    rule.kind = ThresholdRule::Kind::multi_otsu;
    const std::string_view rest = std::string_view(text).substr(9);
    const auto colon = rest.find(':', 1);
    if (rest.empty() || rest[0] != ':' || colon == std::string_view::npos ||
        !whole(rest.substr(1, colon - 1), rule.classes) || !whole(rest.substr(colon + 1), rule.index))
      throw bad("multi-Otsu is multiotsu:K:I");
    if (rule.classes < 2 || rule.classes > 8) throw bad("the classes K are 2 to 8");
    if (rule.index < 1 || rule.index > rule.classes - 1)
      throw bad("the index I is 1 to K-1 = " + std::to_string(rule.classes - 1));
    return rule;
  }
  if (text.size() > 1 && text[0] == 'p') {
    rule.kind = ThresholdRule::Kind::percentile;
    const auto [end, ec] = std::from_chars(text.data() + 1, text.data() + text.size(), rule.percent);
    if (ec != std::errc() || end != text.data() + text.size()) throw bad("a percentile is p followed by a number");
    if (!(rule.percent >= 0 && rule.percent <= 100)) throw bad("a percentile is 0 to 100");
    return rule;
  }
  throw bad("not a number or a rule");
}

std::vector<int> otsu_bins(const Histogram& histogram, int classes) {
  const auto& counts = histogram.counts();
  const auto& edges = histogram.edges();
  const int bins = edges.bins;
  const auto occupied = std::count_if(counts.begin(), counts.end(), [](std::uint64_t c) { return c > 0; });
  if (occupied < classes)
    throw Error(occupied <= 1 ? std::string("the volume holds one value only: no threshold separates it")
                              : "the volume holds " + std::to_string(occupied) + " values only: they do not make " +
                                    std::to_string(classes) + " classes");
  // Prefix sums of counts and of count * bin centre; a class of bins
  // (i, j] adds S^2 / W to the between-class variance (up to constants).
  std::vector<double> w(static_cast<std::size_t>(bins) + 1, 0), s(static_cast<std::size_t>(bins) + 1, 0);
  for (int i = 0; i < bins; ++i) {
    const double c = static_cast<double>(counts[static_cast<std::size_t>(i)]);
    const double centre = (edges.edge(i) + edges.edge(i + 1)) / 2;
    w[static_cast<std::size_t>(i) + 1] = w[static_cast<std::size_t>(i)] + c;
    s[static_cast<std::size_t>(i) + 1] = s[static_cast<std::size_t>(i)] + c * centre;
  }
  auto term = [&](int i, int j) {  // bins i..j-1
    const double weight = w[static_cast<std::size_t>(j)] - w[static_cast<std::size_t>(i)];
    if (weight <= 0) return 0.0;
    const double sum = s[static_cast<std::size_t>(j)] - s[static_cast<std::size_t>(i)];
    return sum * sum / weight;
  };
  // Skip empty bins at both ends: a class is never only empty bins there
  // (scikit-image trims them too).
  int first = 0, last = bins;
  while (counts[static_cast<std::size_t>(first)] == 0) ++first;
  while (counts[static_cast<std::size_t>(last - 1)] == 0) --last;
  // best[k][j]: the most of k + 1 classes over bins first..j-1; from[k][j]
  // where the last of them begins. The first maximum wins, as argmax.
  const auto span = static_cast<std::size_t>(last - first + 1);
  std::vector<std::vector<double>> best(static_cast<std::size_t>(classes), std::vector<double>(span, -1));
  std::vector<std::vector<int>> from(static_cast<std::size_t>(classes), std::vector<int>(span, 0));
  for (int j = first + 1; j <= last; ++j) best[0][static_cast<std::size_t>(j - first)] = term(first, j);
  for (int k = 1; k < classes; ++k)
    for (int j = first + k + 1; j <= last; ++j) {
      double most = -1;
      int at = 0;
      for (int i = first + k; i < j; ++i) {
        const double prior = best[static_cast<std::size_t>(k) - 1][static_cast<std::size_t>(i - first)];
        if (prior < 0) continue;
        const double v = prior + term(i, j);
        if (v > most) {
          most = v;
          at = i;
        }
      }
      best[static_cast<std::size_t>(k)][static_cast<std::size_t>(j - first)] = most;
      from[static_cast<std::size_t>(k)][static_cast<std::size_t>(j - first)] = at;
    }
  std::vector<int> last_bins(static_cast<std::size_t>(classes) - 1);
  int j = last;
  for (int k = classes - 1; k >= 1; --k) {
    j = from[static_cast<std::size_t>(k)][static_cast<std::size_t>(j - first)];
    last_bins[static_cast<std::size_t>(k) - 1] = j - 1;
  }
  return last_bins;
}

double choose_threshold(const Histogram& histogram, const ThresholdRule& rule, bool lower) {
  const auto& edges = histogram.edges();
  if (rule.kind == ThresholdRule::Kind::percentile) {
    const auto& counts = histogram.counts();
    const std::uint64_t total = histogram.total();
    if (total == 0) throw Error("the volume has no valid voxel: no percentile");
    const double want = rule.percent / 100 * static_cast<double>(total);
    double below = 0;
    for (int i = 0; i < edges.bins; ++i) {
      const double c = static_cast<double>(counts[static_cast<std::size_t>(i)]);
      if (c > 0 && below + c >= want) {
        if (edges.integers) return edges.lo + 0.5 + i;  // the integer that bin holds
        return edges.edge(i) + edges.width() * std::clamp((want - below) / c, 0.0, 1.0);
      }
      below += c;
    }
    return edges.hi;
  }
  const auto bins = otsu_bins(histogram, rule.kind == ThresholdRule::Kind::otsu ? 2 : rule.classes);
  const int last = bins[static_cast<std::size_t>(rule.kind == ThresholdRule::Kind::otsu ? 0 : rule.index - 1)];
  if (edges.integers) {
    const double value = edges.lo + 0.5 + last;  // the lower class's highest integer
    return lower ? value + 1 : value;
  }
  return edges.edge(last + 1);
}

}  // namespace volseg::segment
