// SPDX-License-Identifier: MIT
// volseg._render: volseg.render, the render job of `volseg render` (the same
// call: run_render) handing rank 0's image back as numpy. Its own extension,
// loaded on the first volseg.render call, so that `import volseg` does not
// load VTK; absent from a build without ParaView.
#include <cmath>
#include <cstring>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "common.hpp"
#include "volseg/io/error.hpp"
#include "volseg/render/job.hpp"
#include "volseg/render/render.hpp"

namespace volseg::python {
namespace {

std::vector<std::string> split_modes(const std::string& text) {
  std::vector<std::string> modes;
  std::stringstream in(text);
  for (std::string item; std::getline(in, item, ',');)
    if (!item.empty()) modes.push_back(item);
  return modes;
}

py::object render(const std::string& input, const std::optional<std::string>& mask, const std::string& mode,
                  const std::vector<double>& iso, const std::optional<double>& lo, const std::optional<double>& hi,
                  const std::vector<int>& size, const std::vector<double>& camera, const std::string& view,
                  const std::string& level, const std::string& colormap, const std::string& opacity,
                  const std::string& out, const std::string& title, bool annotations, const py::object& comm,
                  const io::Selection& selection, const std::string& backend, std::uint64_t memory,
                  const std::string& mask_surface, const std::vector<double>& scale) {
  const MPI_Comm handle = mpi_comm(comm);
  if (size.size() != 2) throw Error("size=(width, height): two numbers");
  if (!camera.empty() && camera.size() != 2 && camera.size() != 3)
    throw Error("camera=(azimuth, elevation[, zoom]) in degrees: two or three numbers");
  render::RenderOptions o;
  o.input = input;
  o.backend = backend;
  o.selection = selection;
  if (mask) o.mask = *mask;
  o.output = out;
  o.keep_image = true;
  o.lo = lo;
  o.hi = hi;
  o.level = render::parse_level(level);
  o.memory = memory;
  o.opacity = opacity;
  o.progress = segment::ProgressMode::none;
  render::FrameSettings& f = o.frame;
  f.width = size[0];
  f.height = size[1];
  if (!camera.empty()) {
    std::string text = std::to_string(camera[0]) + "," + std::to_string(camera[1]);
    if (camera.size() == 3) text += "," + std::to_string(camera[2]);
    f.camera = render::parse_camera(text);
  }
  if (!view.empty()) {
    if (!camera.empty()) throw Error("view= and camera=: give one of them");
    f.camera.view = view;
  }
  const auto modes = split_modes(mode);
  f.modes = render::parse_modes(modes, iso);
  render::check_colormap(colormap);
  f.transfer.colormap = colormap;
  f.title = title;
  f.annotations = annotations;
  f.mask_surface = render::parse_mask_surface(mask_surface);
  if (!scale.empty()) {
    if (scale.size() != 3) throw Error("scale=(z, y, x): three numbers");
    for (double v : scale)
      if (!(v > 0) || !std::isfinite(v)) throw Error("scale=(z, y, x): each factor must be positive and finite");
    f.scale = {scale[2], scale[1], scale[0]};
  }
  render::RenderResult result;
  {
    py::gil_scoped_release release;
    const Comm c(handle);
    result = render::run_render(c, o);
  }
  if (result.image.rgba.empty()) return py::none();
  const render::Image& image = result.image;
  py::array_t<std::uint8_t> rgb({image.height, image.width, 3});
  std::uint8_t* p = rgb.mutable_data();
  const std::size_t pixels = static_cast<std::size_t>(image.width) * static_cast<std::size_t>(image.height);
  for (std::size_t i = 0; i < pixels; ++i) std::memcpy(p + 3 * i, &image.rgba[4 * i], 3);
  return rgb;
}

}  // namespace
}  // namespace volseg::python

PYBIND11_MODULE(_render, m) {
  using namespace volseg::python;
  init_mpi4py();
  // This extension's volseg::Error (its own copy of the libraries) raises
  // the one volseg.Error.
  static py::handle error = py::object(py::module_::import("volseg._volseg").attr("Error")).release();
  py::register_local_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const volseg::Error& e) {
      PyErr_SetString(error.ptr(), e.what());
    }
  });
  m.def("render", &render, py::arg("input"), py::arg("mask"), py::arg("mode"), py::arg("iso"), py::arg("lo"),
        py::arg("hi"), py::arg("size"), py::arg("camera"), py::arg("view"), py::arg("level"), py::arg("colormap"),
        py::arg("opacity"), py::arg("out"), py::arg("title"), py::arg("annotations"), py::arg("comm"),
        py::arg("selection"), py::arg("backend"), py::arg("memory"), py::arg("mask_surface"), py::arg("scale"));
}
