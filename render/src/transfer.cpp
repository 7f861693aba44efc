// SPDX-License-Identifier: MIT
// Colormaps, opacity functions, camera and mode parsing: the plain values a
// frame is described by.
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <map>
#include <sstream>

#include "volseg/io/error.hpp"
#include "volseg/render/render.hpp"

namespace volseg::render {
namespace {

// Control points at equal steps of t; colours between them are linear.
const std::map<std::string, std::vector<Rgb>>& colormaps() {
  static const std::map<std::string, std::vector<Rgb>> maps = {
      {"viridis",
       {{0.267, 0.005, 0.329},
        {0.283, 0.141, 0.458},
        {0.254, 0.265, 0.530},
        {0.207, 0.372, 0.553},
        {0.164, 0.471, 0.558},
        {0.128, 0.567, 0.551},
        {0.135, 0.659, 0.518},
        {0.267, 0.749, 0.441},
        {0.478, 0.821, 0.318},
        {0.741, 0.873, 0.150},
        {0.993, 0.906, 0.144}}},
      {"inferno",
       {{0.001, 0.000, 0.014},
        {0.087, 0.045, 0.225},
        {0.258, 0.039, 0.406},
        {0.416, 0.090, 0.433},
        {0.578, 0.148, 0.404},
        {0.735, 0.216, 0.330},
        {0.865, 0.317, 0.226},
        {0.954, 0.469, 0.099},
        {0.987, 0.645, 0.040},
        {0.964, 0.843, 0.273},
        {0.988, 0.998, 0.645}}},
      {"coolwarm",
       {{0.230, 0.299, 0.754},
        {0.406, 0.537, 0.934},
        {0.602, 0.731, 0.999},
        {0.788, 0.845, 0.939},
        {0.930, 0.820, 0.761},
        {0.967, 0.657, 0.537},
        {0.887, 0.413, 0.324},
        {0.706, 0.016, 0.150}}},
      {"gray", {{0, 0, 0}, {1, 1, 1}}},
      {"rainbow", {{0, 0, 1}, {0, 1, 1}, {0, 1, 0}, {1, 1, 0}, {1, 0, 0}}},
  };
  return maps;
}

std::vector<std::string> split(const std::string& text, char separator) {
  std::vector<std::string> parts;
  std::stringstream stream(text);
  std::string part;
  while (std::getline(stream, part, separator)) parts.push_back(part);
  return parts;
}

double number(const std::string& text, const std::string& what) {
  char* end = nullptr;
  const double value = std::strtod(text.c_str(), &end);
  if (text.empty() || end != text.c_str() + text.size() || !std::isfinite(value))
    throw Error(what + ": '" + text + "' is not a number");
  return value;
}

}  // namespace

std::uint16_t Quantizer::quantize(double value) const {
  if (std::isnan(value)) return invalid;
  const double l = std::round(level(value));
  return static_cast<std::uint16_t>(std::clamp(l, 1.0, double(top)));
}

std::vector<std::string> colormap_names() {
  std::vector<std::string> names;
  for (const auto& [name, points] : colormaps()) names.push_back(name);
  return names;
}

void check_colormap(const std::string& name) {
  if (colormaps().count(name)) return;
  std::string known;
  for (const auto& n : colormap_names()) known += (known.empty() ? "" : ", ") + n;
  throw Error("unknown colormap '" + name + "' (known: " + known + ")");
}

Rgb colormap_at(const std::string& name, double t) {
  check_colormap(name);
  const auto& points = colormaps().at(name);
  t = std::clamp(std::isfinite(t) ? t : 0.0, 0.0, 1.0) * static_cast<double>(points.size() - 1);
  const auto i = std::min(static_cast<std::size_t>(t), points.size() - 2);
  const double f = t - static_cast<double>(i);
  const Rgb& a = points[i];
  const Rgb& b = points[i + 1];
  return {a.r + (b.r - a.r) * f, a.g + (b.g - a.g) * f, a.b + (b.b - a.b) * f};
}

double TransferFunction::opacity_at(double value) const {
  if (opacity.empty() || value < opacity.front().value || value > opacity.back().value) return 0;
  for (std::size_t i = 1; i < opacity.size(); ++i) {
    const auto& a = opacity[i - 1];
    const auto& b = opacity[i];
    if (value <= b.value)
      return b.value == a.value ? std::max(a.alpha, b.alpha)
                                : a.alpha + (b.alpha - a.alpha) * (value - a.value) / (b.value - a.value);
  }
  return opacity.back().alpha;
}

double TransferFunction::max_opacity(double a, double b) const {
  double best = std::max(opacity_at(a), opacity_at(b));
  for (const auto& point : opacity)  // a piecewise-linear function peaks at its points
    if (point.value >= a && point.value <= b) best = std::max(best, point.alpha);
  return best;
}

std::vector<OpacityPoint> parse_opacity(const std::string& text, double lo, double hi) {
  std::vector<OpacityPoint> points;
  if (text == "ramp") return {{lo, 0.0}, {hi, 0.6}};
  if (text == "shells") {  // bands that let the inner structure show
    const int bands = 8;
    for (int i = 0; i <= bands; ++i) {
      const double v = lo + (hi - lo) * i / bands;
      points.push_back({v, i % 2 ? 0.35 : 0.02});
    }
    return points;
  }
  for (const auto& item : split(text, ',')) {
    const auto pair = split(item, ':');
    if (pair.size() != 2) throw Error("--tf: '" + item + "' is not VALUE:OPACITY (or use ramp, shells)");
    OpacityPoint point{number(pair[0], "--tf value"), number(pair[1], "--tf opacity")};
    if (point.alpha < 0 || point.alpha > 1) throw Error("--tf: opacity " + pair[1] + " is outside [0, 1]");
    if (!points.empty() && point.value < points.back().value)
      throw Error("--tf: values must not decrease ('" + item + "')");
    points.push_back(point);
  }
  if (points.empty()) throw Error("--tf: no points");
  return points;
}

Camera parse_camera(const std::string& text) {
  const auto parts = split(text, ',');
  if (parts.size() < 2 || parts.size() > 3)
    throw Error("--camera: '" + text + "' is not AZIMUTH,ELEVATION[,ZOOM] (degrees)");
  Camera camera;
  camera.azimuth = number(parts[0], "--camera azimuth");
  camera.elevation = number(parts[1], "--camera elevation");
  if (parts.size() == 3) camera.zoom = number(parts[2], "--camera zoom");
  if (camera.zoom <= 0) throw Error("--camera: zoom must be positive");
  return camera;
}

Modes parse_modes(const std::vector<std::string>& names, const std::vector<double>& iso_values) {
  Modes modes;
  bool iso = false;
  for (const auto& list : names)
    for (const auto& name : split(list, ',')) {
      if (name == "volume")
        modes.volume = true;
      else if (name == "mask")
        modes.mask = true;
      else if (name == "slices")
        modes.slices = true;
      else if (name == "iso")
        iso = true;
      else
        throw Error("unknown mode '" + name + "' (known: volume, mask, iso, slices)");
    }
  if (iso && iso_values.empty()) throw Error("mode iso needs values (--iso VALUE...)");
  if (!iso_values.empty()) modes.iso = iso_values;
  if (!modes.any()) modes.volume = true;
  return modes;
}

}  // namespace volseg::render
