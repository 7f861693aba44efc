// SPDX-License-Identifier: MIT
// Levels of a multiscale output (OME-Zarr's multiscales, Neuroglancer's
// scales): each level halves every axis of the one before it (rounded up),
// an image by the mean of the 2x2x2 voxels below, a mask or labels by their
// mode (the most frequent non-zero value, ties to the smaller one, as
// igneous and tensorstore downsample segmentations), so no object gains a
// voxel it never had and thin objects survive a few levels.
#pragma once

#include <optional>
#include <string>

#include "volseg/io/types.hpp"
#include "volseg/io/volume.hpp"

namespace volseg::io {

enum class Downsampling { mean, mode };

// Mode for a mask (flag_values) or labels (numbering), mean otherwise.
Downsampling downsampling_for(const VolumeInfo& info);
const char* downsampling_name(Downsampling how);  // "mean", "mode"

// A level's voxels: dims halved `level` times, rounded up.
Index3 level_dims(const Index3& dims, int level);

// How many levels (the full resolution counted) a multiscale of `dims` in
// chunks of `chunks` gets: `asked` when not 0, checked (throws volseg::Error
// naming `option` when its coarsest level would halve an axis below one
// voxel); 0 asks for levels down to the first that fits one chunk.
int level_count(const Index3& dims, const Index3& chunks, int asked, const std::string& option = "--levels");

// One step down: `fine` holds count voxels (z, y, x, x fastest) of dtype in
// native order, `coarse` receives level_dims(count, 1) of them. The mean
// skips NaN and `missing` (a fill value marking no data) and gives `missing`
// (or NaN, or 0) where all are skipped; integer means round to nearest.
void downsample(Downsampling how, DType dtype, const void* fine, const Index3& count, void* coarse,
                std::optional<long double> missing = std::nullopt);

}  // namespace volseg::io
