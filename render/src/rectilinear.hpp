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

#include <memory>

#include "volseg/io/volume.hpp"

namespace volseg::render {

// True when an axis of info has an uneven coordinate variable.
bool has_uneven_axis(const io::VolumeInfo& info);

// The reader on the uniform grid (its info: the new dims, uniform
// coordinates, float32 with NaN for missing values unless the source is an
// integer type). Reads go to the source, a slab at a time, so memory stays
// what the caller's extents need (plus one level on each side).
std::unique_ptr<io::VolumeReader> resample_uneven(std::unique_ptr<io::VolumeReader> source);

}  // namespace volseg::render
