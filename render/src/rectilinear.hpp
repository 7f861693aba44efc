// SPDX-License-Identifier: MIT
// Volumes whose coordinate variables are uneven (a rectilinear grid: ocean
// and atmosphere levels at 0, 10, 20, 30, 50 ... m) drawn in their own
// coordinates: resampled, as they are read, onto a uniform grid over the
// same coordinate range, with the uneven axis's smallest step (at most 16
// times its points). Floats are interpolated linearly between the two
// levels around each new point (the nearer one where either is missing);
// integers (masks, labels) take the nearer level, so a mask's voxel spans
// half the way to each neighbouring level, as its cell does.
#pragma once

#include <array>
#include <memory>
#include <optional>

#include "volseg/io/volume.hpp"

namespace volseg::render {

using Coordinates = std::array<std::optional<io::Coordinate>, 3>;  // x, y, z

// True when an axis has an uneven coordinate variable.
bool has_uneven_axis(const Coordinates& coordinates);

// How a source is resampled: a field linearly (float32 out, NaN for missing
// values), a mask or labels from the nearer level (its own type out).
enum class Resampling { linear, nearest };

// The reader on the uniform grid of `grid` (the field's coordinates, also
// for its mask, whose dims must be the field's): its info has the new dims
// and uniform coordinates. Reads go to the source a slab at a time, so
// memory stays what the caller's extents need (plus one level on each
// side). The source itself when no axis of grid is uneven.
std::unique_ptr<io::VolumeReader> resample_uneven(std::unique_ptr<io::VolumeReader> source, const Coordinates& grid,
                                                  Resampling how);

}  // namespace volseg::render
