// SPDX-License-Identifier: MIT
// volseg.open and its Volume: a reader of the I/O layer, as `volseg info` and
// every job open one.
#include <memory>

#include "common.hpp"
#include "volseg/io/auto_backend.hpp"
#include "volseg/io/comm.hpp"
#include "volseg/io/error.hpp"
#include "volseg/io/format.hpp"
#include "volseg/io/registry.hpp"
#include "volseg/segment/expression.hpp"

namespace volseg::python {
namespace {

// A volume open for reading: `volseg.open(...)`.
class Volume {
 public:
  Volume(const std::string& path, const io::Selection& selection, const std::string& backend, const py::object& comm)
      : path_(path) {
    const MPI_Comm handle = mpi_comm(comm);
    py::gil_scoped_release release;
    comm_ = std::make_unique<Comm>(handle);
    format_ = io::detect_format(*comm_, path);
    backend_ = io::resolve_backend(*comm_, backend, format_, path, io::Access::stream).backend;
    reader_ = segment::open_input(backend_, {path, selection}, *comm_, {});  // a variable, or a derived field
  }

  const io::VolumeInfo& info() const { return reader().info(); }
  py::tuple shape() const { return py::make_tuple(info().dims[0], info().dims[1], info().dims[2]); }
  py::dtype dtype() const { return py::dtype(numpy_name(info().dtype)); }
  py::tuple spacing() const { return py::make_tuple(info().spacing[0], info().spacing[1], info().spacing[2]); }
  py::tuple origin() const { return py::make_tuple(info().origin[0], info().origin[1], info().origin[2]); }
  py::dict attrs() const {
    py::dict out;
    const auto& i = info();
    for (const auto& [key, value] : i.attributes) out[py::str(key)] = value;
    if (!i.variable.empty()) out["variable"] = i.variable;
    if (i.fill_value) out["_FillValue"] = static_cast<double>(*i.fill_value);
    if (i.missing_value) out["missing_value"] = static_cast<double>(*i.missing_value);
    if (i.valid_range) out["valid_range"] = py::make_tuple((*i.valid_range)[0], (*i.valid_range)[1]);
    if (i.scale_factor) out["scale_factor"] = *i.scale_factor;
    if (i.add_offset) out["add_offset"] = *i.add_offset;
    return out;
  }
  // The axes' coordinate variables in file order (z, y, x):
  // {name: (values, {"units": ..., "positive": ...})}; xarray's own form
  // is (dims, values, attrs): xr.DataArray(coords={k: ((k,), v, a) ...}).
  py::dict coords() const {
    py::dict out;
    for (int a = 2; a >= 0; --a) {
      const auto& c = info().coordinates[static_cast<std::size_t>(a)];
      if (!c) continue;
      py::dict attributes;
      if (!c->units.empty()) attributes["units"] = c->units;
      if (c->down) attributes["positive"] = "down";
      py::array_t<double> values(static_cast<py::ssize_t>(c->values.size()));
      std::copy(c->values.begin(), c->values.end(), values.mutable_data());
      out[py::str(c->name)] = py::make_tuple(values, attributes);
    }
    return out;
  }
  std::string describe() const { return io::describe(path_, format_, backend_, info()); }
  std::string backend() const { return backend_; }
  bool collective() const { return reader().capabilities().collective; }
  std::string path() const { return path_; }

  // This rank's block [offset, offset + count), as stored (native byte order).
  py::array read(const std::vector<std::int64_t>& offset, const std::vector<std::int64_t>& count) {
    if (offset.size() != 3 || count.size() != 3)
      throw Error("read((z0, y0, x0), (nz, ny, nx)): three numbers each, not " + std::to_string(offset.size()) +
                  " and " + std::to_string(count.size()));
    const io::Extent extent{{offset[0], offset[1], offset[2]}, {count[0], count[1], count[2]}};
    for (int a = 0; a < 3; ++a)
      if (extent.offset[a] < 0 || extent.count[a] < 0 || extent.offset[a] + extent.count[a] > info().dims[a])
        throw Error(path_ + ": read outside the volume: offset (" + std::to_string(offset[0]) + ", " +
                    std::to_string(offset[1]) + ", " + std::to_string(offset[2]) + ") count (" +
                    std::to_string(count[0]) + ", " + std::to_string(count[1]) + ", " + std::to_string(count[2]) +
                    ") of dims (" + std::to_string(info().dims[0]) + ", " + std::to_string(info().dims[1]) + ", " +
                    std::to_string(info().dims[2]) + ")");
    py::array out(dtype(), std::vector<py::ssize_t>{count[0], count[1], count[2]});
    void* buffer = out.mutable_data();
    {
      py::gil_scoped_release release;
      if (reader().capabilities().collective) {
        // NetCDF and HDF5 readers read collectively: every rank calls read()
        // as often as the others (a rank with nothing asks for a count of 0).
        std::vector<io::Extent> extents;
        if (extent.voxels() > 0) extents.push_back(extent);
        void* buffers[] = {buffer};
        reader().read_all(extents, {buffers, extents.size()});
      } else if (extent.voxels() > 0) {
        reader().read(extent, buffer);
      }
    }
    return out;
  }

  void close() {
    if (!reader_) return;
    py::gil_scoped_release release;
    auto reader = std::move(reader_);
    reader->close();
  }

 private:
  io::VolumeReader& reader() const {
    if (!reader_) throw Error(path_ + ": the volume is closed");
    return *reader_;
  }

  std::string path_, backend_;
  io::FileFormat format_ = io::FileFormat::raw;
  std::unique_ptr<Comm> comm_;
  std::unique_ptr<io::VolumeReader> reader_;
};

}  // namespace

void bind_volume(py::module_& m) {
  py::class_<Volume>(m, "Volume", "A volume open for reading on every rank of comm (volseg.open)")
      .def_property_readonly("shape", &Volume::shape, "(nz, ny, nx)")
      .def_property_readonly("dtype", &Volume::dtype, "numpy dtype of read()'s arrays (native byte order)")
      .def_property_readonly("spacing", &Volume::spacing, "(x, y, z), as NRRD and `volseg info` give it")
      .def_property_readonly("origin", &Volume::origin, "(x, y, z) of voxel (0, 0, 0)")
      .def_property_readonly("attrs", &Volume::attrs, "the volume's attributes (NetCDF's, fill, packing, ...)")
      .def_property_readonly("coords", &Volume::coords,
                             "the axes' coordinate variables (CF, xarray's Zarr), z, y, x order: "
                             "{name: (numpy values, {'units', 'positive'})}")
      .def_property_readonly("backend", &Volume::backend)
      .def_property_readonly("collective", &Volume::collective,
                             "True when read() is collective (NetCDF, HDF5): every rank calls it as often")
      .def_property_readonly("path", &Volume::path)
      .def("info", &Volume::describe, "What `volseg info` prints")
      .def("read", &Volume::read, py::arg("offset"), py::arg("count"),
           "This rank's block [offset, offset + count) as a numpy array (z, y, x); independent, or collective "
           "where vol.collective (every rank calls it as often, a count of 0 for nothing)")
      .def("close", &Volume::close, "Collective: close on every rank (errors of any rank are raised)")
      .def("__enter__", [](Volume& v) -> Volume& { return v; })
      .def("__exit__", [](Volume& v, py::args) { v.close(); });

  m.def(
      "_open",
      [](const std::string& path, const io::Selection& selection, const std::string& backend, const py::object& comm) {
        return std::make_unique<Volume>(path, selection, backend, comm);
      },
      py::arg("path"), py::arg("selection"), py::arg("backend"), py::arg("comm"));
}

}  // namespace volseg::python
