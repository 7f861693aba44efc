// SPDX-License-Identifier: MIT
// How bricks touch, and the join of the labels on two bricks' faces
// (private to the segment library; label_faces.cpp, used by labeling.cpp's
// Labeling; docs/label.md, "Joins across bricks").
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <vector>

#include "label_kernel.hpp"
#include "volseg/io/types.hpp"
#include "volseg/segment/label.hpp"

namespace volseg::segment::detail {

// How brick b sits beside brick a on each axis: +1 b follows a, -1 b
// precedes it, 0 they overlap; nullopt when the two do not touch.
std::optional<std::array<int, 3>> contact(const io::Extent& a, const io::Extent& b, int connectivity);

// The face of a brick that looks at a neighbour: (axis * 2 + high).
int facing(const std::array<int, 3>& side);
inline int opposite(int face) { return face ^ 1; }

// A brick next to another: with periodic axes, possibly across the
// volume's faces, as its image moved by shift (-1, 0, 1 per axis) times the
// volume's size; a brick that spans a periodic axis is its own neighbour.
struct Neighbour {
  std::int64_t brick;
  std::array<int, 3> shift;
};
// Where the neighbour lies, moved by its shift.
io::Extent moved(const BrickMap& map, const Neighbour& n);
// Of the two views of a brick's contact with its own image, the one that
// joins them (the image after it).
bool first_view(const std::array<int, 3>& shift);
// The bricks that touch brick (by the connectivity), by brick and shift.
std::vector<Neighbour> neighbours(const BrickMap& map, std::int64_t brick, int connectivity);

// Labels that touch across two bricks' faces: a in the first, b in the second.
struct FacePair {
  std::uint32_t a, b;
};

// Pairs (label in a, label in b) of voxels that touch, from a's face toward
// b (side: contact(a, b)): enough of them to join what touches (a spanning
// forest of the contacts, found by a union-find over the two faces'
// labels), each label that touches anything in at least one. With
// classes (a class image), a_classes and b_classes hold each face voxel's
// class, packed as the faces: only voxels of one class touch.
std::vector<FacePair> join_faces(const io::Extent& a, const std::vector<std::uint32_t>& a_face, const io::Extent& b,
                                 const std::vector<std::uint32_t>& b_face, const std::array<int, 3>& side,
                                 int connectivity, const std::uint8_t* a_classes = nullptr,
                                 const std::uint8_t* b_classes = nullptr);

// Foreground voxels face to face across two bricks that share a face
// (not an edge or a corner): two exposed faces fewer per pair, both taken
// off b's part of the object (its shape at values[(base + label - 1) *
// stride], stride records a part).
// With classes, only pairs of one class.
void take_face_pairs(const io::Extent& a, const std::vector<std::uint32_t>& a_face, const io::Extent& b,
                     const std::vector<std::uint32_t>& b_face, const std::array<int, 3>& side,
                     Chunked<ObjectValues>& values, std::uint64_t base, std::size_t stride,
                     const std::uint8_t* a_classes = nullptr, const std::uint8_t* b_classes = nullptr);

}  // namespace volseg::segment::detail
