// SPDX-License-Identifier: MIT
// The files of a mesh folder (private to the mesh library):
//   info                 {"@type": "neuroglancer_legacy_mesh"}
//   ID:0                 the manifest of object ID: {"fragments": [...]}
//   ID:0:BRICK           one fragment: uint32 vertex count, float32 x y z
//                        per vertex, uint32 triangle indices (little endian),
//                        in Neuroglancer's space: voxel i's centre at
//                        (i + 1/2) x resolution, as a precomputed volume
//                        of the labels places it
//   ply/ID.ply, vtp/ID.vtp, objects.vtm
//                        the whole object (fragments joined, shared vertices
//                        merged) in the volume's own coordinates: voxel i's
//                        centre at origin + i x spacing, as ParaView places
//                        the labels
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "volseg/io/volume.hpp"
#include "volseg/mesh/mesh.hpp"

namespace volseg::mesh {

std::string fragment_name(std::uint64_t id, std::int64_t brick);
// Each returns the bytes written.
std::uint64_t write_fragment(const std::string& path, const Fragment& fragment, const io::VolumeInfo& info);
std::uint64_t write_manifest(const std::string& folder, std::uint64_t id, const std::vector<std::string>& fragments);
std::uint64_t write_mesh_info(const std::string& folder, const io::VolumeInfo& info, const MeshOptions& options);
// An object's fragments joined, in the volume's coordinates.
Fragment read_object(const std::string& folder, const std::vector<std::string>& fragments, const io::VolumeInfo& info);
std::uint64_t write_ply(const std::string& path, const Fragment& mesh);
std::uint64_t write_vtp(const std::string& path, const Fragment& mesh, std::uint64_t id);
std::uint64_t write_vtm(const std::string& path, const std::vector<std::uint64_t>& ids);

}  // namespace volseg::mesh
