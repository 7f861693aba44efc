// SPDX-License-Identifier: MIT
#include "mesh_files.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <unordered_map>

#include "volseg/io/error.hpp"

namespace volseg::mesh {

namespace {

// The folder is a temporary one until the job commits it, so each file is
// written in place; every call checked.
std::uint64_t write_whole(const std::string& path, const void* data, std::size_t size) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
  if (fd < 0) throw_errno("create", path);
  const auto* p = static_cast<const char*>(data);
  std::size_t done = 0;
  while (done < size) {
    const ssize_t n = ::write(fd, p + done, size - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const int saved = errno;
      ::close(fd);
      throw_errno("write", path, saved);
    }
    done += static_cast<std::size_t>(n);
  }
  if (::close(fd) != 0) throw_errno("close", path);
  return size;
}

std::uint64_t write_text(const std::string& path, const std::string& text) {
  return write_whole(path, text.data(), text.size());
}

template <class T>
void append(std::string& out, const T* values, std::size_t count) {
  out.append(reinterpret_cast<const char*>(values), count * sizeof(T));
}

std::vector<char> read_whole(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw_errno("open", path);
  std::vector<char> data;
  char buffer[1 << 16];
  for (;;) {
    const ssize_t n = ::read(fd, buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const int saved = errno;
      ::close(fd);
      throw_errno("read", path, saved);
    }
    if (n == 0) break;
    data.insert(data.end(), buffer, buffer + n);
  }
  if (::close(fd) != 0) throw_errno("close", path);
  return data;
}

}  // namespace

std::string fragment_name(std::uint64_t id, std::int64_t brick) {
  return std::to_string(id) + ":0:" + std::to_string(brick);
}

std::uint64_t write_fragment(const std::string& path, const Fragment& fragment, const io::VolumeInfo& info) {
  std::string out;
  const auto n = static_cast<std::uint32_t>(fragment.vertex_count());
  out.reserve(4 + fragment.vertices.size() * 4 + fragment.triangles.size() * 4);
  append(out, &n, 1);
  for (std::size_t i = 0; i < fragment.vertices.size(); ++i) {
    const float v = static_cast<float>((fragment.vertices[i] + 0.5) * info.spacing[i % 3]);
    append(out, &v, 1);
  }
  append(out, fragment.triangles.data(), fragment.triangles.size());
  return write_whole(path, out.data(), out.size());
}

std::uint64_t write_manifest(const std::string& folder, std::uint64_t id, const std::vector<std::string>& fragments) {
  return write_text(folder + "/" + std::to_string(id) + ":0", nlohmann::json{{"fragments", fragments}}.dump());
}

std::uint64_t write_mesh_info(const std::string& folder, const io::VolumeInfo& info, const MeshOptions& options) {
  nlohmann::json doc{{"@type", "neuroglancer_legacy_mesh"}};
  doc["volseg"] = {{"source", options.input},     {"smooth", options.smooth},  {"simplify", options.simplify},
                   {"spacing_xyz", info.spacing}, {"origin_xyz", info.origin}, {"command", options.command_line}};
  return write_text(folder + "/info", doc.dump(2) + "\n");
}

Fragment read_object(const std::string& folder, const std::vector<std::string>& fragments, const io::VolumeInfo& info) {
  Fragment whole;
  struct Hash {
    std::size_t operator()(const std::array<float, 3>& p) const {
      std::uint32_t b[3];
      std::memcpy(b, p.data(), sizeof b);
      return (std::size_t{b[0]} * 73856093u) ^ (std::size_t{b[1]} * 19349663u) ^ (std::size_t{b[2]} * 83492791u);
    }
  };
  std::unordered_map<std::array<float, 3>, std::uint32_t, Hash> index;  // fragments share their seams' vertices
  for (const auto& name : fragments) {
    const std::string path = folder + "/" + name;
    const auto data = read_whole(path);
    std::uint32_t n = 0;
    if (data.size() < 4) throw Error(path + ": not a mesh fragment");
    std::memcpy(&n, data.data(), 4);
    const std::size_t vertex_bytes = std::size_t{n} * 12;
    if (data.size() < 4 + vertex_bytes || (data.size() - 4 - vertex_bytes) % 12 != 0)
      throw Error(path + ": not a mesh fragment of " + std::to_string(n) + " vertices");
    std::vector<std::uint32_t> local(n);
    for (std::uint32_t i = 0; i < n; ++i) {
      std::array<float, 3> p;
      std::memcpy(p.data(), data.data() + 4 + std::size_t{i} * 12, 12);
      auto [it, added] = index.emplace(p, static_cast<std::uint32_t>(whole.vertex_count()));
      if (added)
        for (int a = 0; a < 3; ++a)
          whole.vertices.push_back(static_cast<float>(p[a] - 0.5 * info.spacing[a] + info.origin[a]));
      local[i] = it->second;
    }
    const std::size_t indices = (data.size() - 4 - vertex_bytes) / 4;
    for (std::size_t i = 0; i < indices; ++i) {
      std::uint32_t v = 0;
      std::memcpy(&v, data.data() + 4 + vertex_bytes + i * 4, 4);
      if (v >= n) throw Error(path + ": a triangle names vertex " + std::to_string(v) + " of " + std::to_string(n));
      whole.triangles.push_back(local[v]);
    }
  }
  return whole;
}

std::uint64_t write_ply(const std::string& path, const Fragment& mesh) {
  std::string out = "ply\nformat binary_little_endian 1.0\ncomment volseg mesh\nelement vertex " +
                    std::to_string(mesh.vertex_count()) +
                    "\nproperty float x\nproperty float y\nproperty float z\nelement face " +
                    std::to_string(mesh.triangle_count()) + "\nproperty list uchar uint vertex_indices\nend_header\n";
  append(out, mesh.vertices.data(), mesh.vertices.size());
  const std::uint8_t three = 3;
  for (std::size_t t = 0; t < mesh.triangle_count(); ++t) {
    append(out, &three, 1);
    append(out, &mesh.triangles[3 * t], 3);
  }
  return write_whole(path, out.data(), out.size());
}

// VTK XML PolyData with its arrays appended raw, each after its UInt64
// byte count.
std::uint64_t write_vtp(const std::string& path, const Fragment& mesh, std::uint64_t id) {
  const std::uint64_t points = mesh.vertices.size() * 4, connectivity = mesh.triangles.size() * 8,
                      offsets = mesh.triangle_count() * 8;
  const std::string n = std::to_string(mesh.vertex_count()), t = std::to_string(mesh.triangle_count());
  std::string out =
      "<?xml version=\"1.0\"?>\n<VTKFile type=\"PolyData\" version=\"1.0\" byte_order=\"LittleEndian\" "
      "header_type=\"UInt64\">\n<PolyData>\n<FieldData><DataArray type=\"UInt64\" Name=\"object_id\" "
      "NumberOfTuples=\"1\" format=\"ascii\">" +
      std::to_string(id) + "</DataArray></FieldData>\n<Piece NumberOfPoints=\"" + n + "\" NumberOfPolys=\"" + t +
      "\">\n<Points><DataArray type=\"Float32\" NumberOfComponents=\"3\" format=\"appended\" offset=\"0\"/></Points>\n"
      "<Polys><DataArray type=\"Int64\" Name=\"connectivity\" format=\"appended\" offset=\"" +
      std::to_string(8 + points) + "\"/><DataArray type=\"Int64\" Name=\"offsets\" format=\"appended\" offset=\"" +
      std::to_string(16 + points + connectivity) +
      "\"/></Polys>\n</Piece>\n</PolyData>\n<AppendedData encoding=\"raw\">\n_";
  append(out, &points, 1);
  append(out, mesh.vertices.data(), mesh.vertices.size());
  append(out, &connectivity, 1);
  for (const std::uint32_t v : mesh.triangles) {
    const std::int64_t w = v;
    append(out, &w, 1);
  }
  append(out, &offsets, 1);
  for (std::int64_t k = 1; k <= static_cast<std::int64_t>(mesh.triangle_count()); ++k) {
    const std::int64_t end = 3 * k;
    append(out, &end, 1);
  }
  out += "\n</AppendedData>\n</VTKFile>\n";
  return write_whole(path, out.data(), out.size());
}

std::uint64_t write_vtm(const std::string& path, const std::vector<std::uint64_t>& ids) {
  std::string out =
      "<?xml version=\"1.0\"?>\n<VTKFile type=\"vtkMultiBlockDataSet\" version=\"1.0\" "
      "byte_order=\"LittleEndian\">\n<vtkMultiBlockDataSet>\n";
  for (std::size_t i = 0; i < ids.size(); ++i)
    out += "<DataSet index=\"" + std::to_string(i) + "\" name=\"object " + std::to_string(ids[i]) + "\" file=\"vtp/" +
           std::to_string(ids[i]) + ".vtp\"/>\n";
  out += "</vtkMultiBlockDataSet>\n</VTKFile>\n";
  return write_text(path, out);
}

std::vector<std::uint64_t> mesh_ids(const std::string& folder) {
  std::vector<std::uint64_t> ids;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(folder, ec)) {
    const std::string name = entry.path().filename().string();
    const auto colon = name.find(':');
    if (colon == std::string::npos || name.compare(colon, std::string::npos, ":0") != 0) continue;
    std::uint64_t id = 0;
    const auto [end, error] = std::from_chars(name.data(), name.data() + colon, id);
    if (error == std::errc() && end == name.data() + colon) ids.push_back(id);
  }
  if (ec) throw Error(folder + ": cannot list the mesh folder: " + ec.message());
  std::sort(ids.begin(), ids.end());
  return ids;
}

Fragment read_mesh(const std::string& folder, std::uint64_t id) {
  const std::string manifest = folder + "/" + std::to_string(id) + ":0";
  if (!std::filesystem::exists(manifest))
    throw Error(folder + ": no mesh of object " + std::to_string(id) + " (no manifest " + std::to_string(id) + ":0)");
  const auto text = read_whole(manifest);
  const auto doc = nlohmann::json::parse(text.begin(), text.end(), nullptr, false);
  if (doc.is_discarded() || !doc.contains("fragments") || !doc["fragments"].is_array())
    throw Error(manifest + ": not a mesh manifest ({\"fragments\": [...]})");
  std::vector<std::string> names;
  for (const auto& name : doc["fragments"]) {
    if (!name.is_string() || name.get<std::string>().find('/') != std::string::npos)
      throw Error(manifest + ": a fragment that is not a file name of the folder");
    names.push_back(name.get<std::string>());
  }
  io::VolumeInfo info;  // as stored, unless the info says the labels' grid
  info.spacing = {0, 0, 0};
  if (std::filesystem::exists(folder + "/info")) {
    const auto raw = read_whole(folder + "/info");
    const auto meta = nlohmann::json::parse(raw.begin(), raw.end(), nullptr, false);
    if (!meta.is_discarded() && meta.contains("volseg") && meta["volseg"].contains("spacing_xyz") &&
        meta["volseg"].contains("origin_xyz")) {
      info.spacing = meta["volseg"]["spacing_xyz"].get<std::array<double, 3>>();
      info.origin = meta["volseg"]["origin_xyz"].get<std::array<double, 3>>();
    }
  }
  return read_object(folder, names, info);
}

}  // namespace volseg::mesh
