// SPDX-License-Identifier: MIT
// Neuroglancer's compressed_segmentation encoding of one chunk of uint32 or
// uint64 labels (neuroglancer's src/sliceview/compressed_segmentation/
// README.md): blocks of 8x8x8 voxels, each a table of the labels it holds
// and every voxel's index into it in 0, 1, 2, 4, 8, 16 or 32 bits. Labels
// are mostly large runs of one id, so most blocks are a header and one
// table entry.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "volseg/io/types.hpp"

namespace volseg::io::precomputed {

// values: count voxels (z, y, x; x fastest) of u32 or u64 labels -> the
// chunk file's bytes (one channel).
std::vector<std::byte> encode_compressed_segmentation(const void* values, DType dtype, const Index3& count);

// The other way: a chunk file of count voxels (one channel) into values;
// throws volseg::Error naming `where` when the file is not such a chunk.
void decode_compressed_segmentation(const std::vector<std::byte>& stored, DType dtype, const Index3& count,
                                    void* values, const std::string& where);

}  // namespace volseg::io::precomputed
