// SPDX-License-Identifier: MIT
// The jobs over files, each the library call its command makes:
// volseg.segment, volseg.label_file, volseg.distance_file, volseg.convert,
// volseg.histogram.
#include <cmath>
#include <optional>
#include <string>
#include <vector>

#include "common.hpp"
#include "volseg/io/comm.hpp"
#include "volseg/io/error.hpp"
#include "volseg/pyramid/pyramid.hpp"
#include "volseg/segment/convert.hpp"
#include "volseg/segment/distance.hpp"
#include "volseg/segment/label.hpp"
#include "volseg/segment/segment.hpp"

namespace volseg::python {
namespace {

// seed=(C, D) or None, open=, close=, fill_holes=: the operators after the
// threshold, as the command line's options.
segment::MaskOperators mask_operators(const std::optional<std::pair<double, double>>& seed, int open, int close,
                                      bool fill_holes, int connectivity) {
  segment::MaskOperators o;
  o.seed = seed;
  o.open = open;
  o.close = close;
  o.fill_holes = fill_holes;
  o.connectivity = segment::check_connectivity(connectivity);
  return o;
}

// lo and hi as text (numbers, or rules over the input's histogram), chosen
// on every rank of c.
pyramid::ChosenThresholds chosen(const Comm& c, const std::string& input, const std::string& backend,
                                 const io::Selection& selection, const std::string& lo, const std::string& hi) {
  pyramid::HistogramOptions h;
  h.input = input;
  h.backend = backend;
  h.selection = selection;
  return pyramid::choose_thresholds(c, h, lo, hi);
}

py::object segment_file(const std::string& input, const std::string& lo, const std::string& hi, const std::string& out,
                        const py::object& comm, bool force, const std::string& backend,
                        const std::optional<std::vector<std::int64_t>>& brick, const py::object& progress,
                        const io::Selection& selection, const std::string& format,
                        const std::vector<std::string>& hints, bool resume, bool histogram,
                        const std::optional<std::pair<double, double>>& seed, int open, int close, bool fill_holes,
                        int connectivity) {
  const MPI_Comm handle = mpi_comm(comm);
  segment::SegmentOptions o;
  o.input = input;
  o.output = out;
  o.operators = mask_operators(seed, open, close, fill_holes, connectivity);
  o.force = force;
  o.resume = resume;
  o.backend = backend;
  o.format = format;
  o.hints = hints;
  o.histogram = histogram;
  o.selection = selection;
  if (brick) {
    if (brick->size() != 3) throw Error("brick=(z, y, x): three numbers");
    o.brick_shape = io::Index3{(*brick)[0], (*brick)[1], (*brick)[2]};
  }
  o.progress = progress_mode(progress);
  const auto callback = ProgressCallback::of(progress);
  if (callback) o.on_progress = *callback;
  o.command_line = "volseg.segment(" + input + ", lo=" + lo + ", hi=" + hi + ", out=" + out + ") from Python";
  std::string report;
  {
    py::gil_scoped_release release;
    const Comm c(handle);
    chosen(c, input, backend, o.selection, lo, hi).apply_to(o);
    const auto result = segment::run_segment(c, o);
    report = segment::report_json(o, result);
  }
  if (callback) callback->check(handle);
  return json_loads(report);
}

py::dict label_file(const std::string& input, const std::string& out, const py::object& comm, int connectivity,
                    bool mask_input, const std::optional<std::string>& lo, const std::optional<std::string>& hi,
                    const std::string& stats, std::uint64_t min_voxels, bool force, const std::string& backend,
                    const io::Selection& selection, const std::optional<std::pair<double, double>>& seed, int open,
                    int close, bool fill_holes, const std::string& label_type, const std::string& periodic,
                    const std::string& mask_out, const std::vector<std::string>& values,
                    const std::vector<std::string>& values_expr, const std::string& report, bool split,
                    const std::string& markers, const std::optional<double>& h, bool classes,
                    const std::string& split_on) {
  const MPI_Comm handle = mpi_comm(comm);
  segment::LabelOptions o;
  o.classes = classes;
  o.split.on = split;
  if (!split && (!markers.empty() || h || !split_on.empty()))
    throw Error("label_file: markers=, h= and split_on= go with split=True");
  if (!split_on.empty()) segment::parse_split_on(split_on, o.split);
  if (!markers.empty()) {
    const auto [file, variable] = segment::file_and_variable(markers);
    o.split.markers = file;
    o.split.markers_selection.variable = variable;
  }
  if (h) {
    if (!(*h > 0) || !std::isfinite(*h)) throw Error("label_file: h= must be a positive number of distance units");
    if (!markers.empty()) throw Error("label_file: give markers= or h=, not both");
    o.split.h = *h;
  }
  o.type = label_type;
  if (!periodic.empty()) o.periodic = segment::parse_periodic(periodic);
  o.mask_output = mask_out;
  o.input = input;
  o.output = out;
  o.connectivity = connectivity;
  o.mask_input = mask_input;
  if (!mask_input && !classes && (!lo || !hi))
    throw Error("label_file: give lo= and hi=, or mask_input=True for a 0/1 mask");
  o.operators = mask_operators(seed, open, close, fill_holes, connectivity);
  o.stats = stats;
  o.min_voxels = min_voxels;
  o.force = force;
  o.backend = backend;
  o.selection = selection;
  io::Selection at_step;  // the input's step: where the expressions of values_expr read
  at_step.step = selection.step;
  o.values = segment::value_fields({values, values_expr, "", std::nullopt, input, at_step});
  o.report = report;
  o.progress = segment::ProgressMode::none;
  o.command_line = "volseg.label_file(" + input + ", out=" + out + ") from Python";
  segment::LabelResult result;
  {
    py::gil_scoped_release release;
    const Comm c(handle);
    if (!mask_input && !classes) {
      chosen(c, input, backend, o.selection, *lo, *hi).apply_to(o);
    }
    result = segment::run_label(c, o);
  }
  py::dict d;
  d["objects"] = result.summary.objects;
  d["dropped"] = result.summary.dropped;
  d["foreground_voxels"] = result.summary.foreground;
  d["largest"] = result.summary.largest;
  d["label_type"] = result.label_type;
  d["output_format"] = result.output_format;
  d["backend"] = result.backend;
  if (result.split) {
    d["markers"] = result.split->markers;
    d["components_split"] = result.split->flooded;
  }
  return d;
}

py::dict distance_file(const std::string& input, const std::string& out, const py::object& comm, bool mask_input,
                       const std::optional<std::string>& lo, const std::optional<std::string>& hi,
                       const std::optional<std::vector<double>>& spacing, bool black_border, const std::string& type,
                       bool force, const std::string& backend, const io::Selection& selection,
                       const std::optional<std::pair<double, double>>& seed, int open, int close, bool fill_holes,
                       int connectivity) {
  const MPI_Comm handle = mpi_comm(comm);
  segment::DistanceOptions o;
  o.input = input;
  o.output = out;
  o.mask_input = mask_input;
  if (!mask_input && (!lo || !hi)) throw Error("distance_file: give lo= and hi=, or mask_input=True for a mask");
  o.operators = mask_operators(seed, open, close, fill_holes, connectivity);
  if (spacing) {
    if (spacing->size() != 3) throw Error("distance_file: spacing=(z, y, x), three numbers");
    for (const double s : *spacing)
      if (!(s > 0)) throw Error("distance_file: spacing must be positive in every entry");
    o.spacing = std::array<double, 3>{(*spacing)[0], (*spacing)[1], (*spacing)[2]};
  }
  o.black_border = black_border;
  if (type == "f32")
    o.type = io::DType::f32;
  else if (type == "f64")
    o.type = io::DType::f64;
  else
    throw Error("distance_file: type is \"f32\" or \"f64\", not \"" + type + "\"");
  o.force = force;
  o.backend = backend;
  o.selection = selection;
  o.progress = segment::ProgressMode::none;
  o.command_line = "volseg.distance_file(" + input + ", out=" + out + ") from Python";
  segment::DistanceResult result;
  {
    py::gil_scoped_release release;
    const Comm c(handle);
    if (!mask_input) chosen(c, input, backend, o.selection, *lo, *hi).apply_to(o);
    result = segment::run_distance(c, o);
  }
  py::dict d;
  d["foreground_voxels"] = result.foreground;
  d["largest"] = result.largest;
  d["spacing"] = py::make_tuple(result.spacing[0], result.spacing[1], result.spacing[2]);
  d["no_background"] = result.no_background;
  d["output_format"] = result.output_format;
  d["seconds"] = result.seconds;
  return d;
}

py::dict convert_file(const std::string& input, const std::string& out, const py::object& comm, bool force,
                      const std::string& format, const io::Selection& selection,
                      const std::vector<std::string>& out_hints) {
  const MPI_Comm handle = mpi_comm(comm);
  segment::ConvertOptions o;
  o.input = input;
  o.output = out;
  o.force = force;
  o.format = format;
  o.selection = selection;
  o.output_hints = out_hints;
  o.progress = segment::ProgressMode::none;
  o.command_line = "volseg.convert(" + input + ", " + out + ") from Python";
  segment::ConvertResult result;
  {
    py::gil_scoped_release release;
    const Comm c(handle);
    result = segment::run_convert(c, o);
  }
  py::dict d;
  d["output_format"] = result.output_format;
  d["backend"] = result.backend;
  d["output_backend"] = result.output_backend;
  d["bricks"] = result.bricks;
  d["seconds"] = result.seconds;
  d["dropped"] = result.dropped;
  return d;
}

segment::Histogram histogram(const std::string& input, int bins, const py::object& comm, const io::Selection& selection,
                             const std::string& backend, const std::string& pyramid, const py::object& progress) {
  const MPI_Comm handle = mpi_comm(comm);
  pyramid::HistogramOptions o;
  o.input = input;
  o.bins = bins;
  o.selection = selection;
  o.backend = backend;
  o.directory = pyramid;
  o.progress = progress_mode(progress);
  const auto callback = ProgressCallback::of(progress);
  if (callback) o.on_progress = *callback;
  segment::Histogram result;
  {
    py::gil_scoped_release release;
    const Comm c(handle);
    result = pyramid::histogram(c, o);
  }
  if (callback) callback->check(handle);
  return result;
}

py::array_t<double> edges(const segment::Histogram& h) {
  const auto& e = h.edges();
  py::array_t<double> out(e.bins + 1);
  double* p = out.mutable_data();
  for (int i = 0; i <= e.bins; ++i) p[i] = e.edge(i);
  return out;
}

}  // namespace

void bind_jobs(py::module_& m) {
  m.def("_segment", &segment_file, py::arg("input"), py::arg("lo"), py::arg("hi"), py::arg("out"), py::arg("comm"),
        py::arg("force"), py::arg("backend"), py::arg("brick"), py::arg("progress"), py::arg("selection"),
        py::arg("format"), py::arg("hints"), py::arg("resume"), py::arg("histogram"), py::arg("seed"), py::arg("open"),
        py::arg("close"), py::arg("fill_holes"), py::arg("connectivity"));
  m.def("_label_file", &label_file, py::arg("input"), py::arg("out"), py::arg("comm"), py::arg("connectivity"),
        py::arg("mask_input"), py::arg("lo"), py::arg("hi"), py::arg("stats"), py::arg("min_voxels"), py::arg("force"),
        py::arg("backend"), py::arg("selection"), py::arg("seed"), py::arg("open"), py::arg("close"),
        py::arg("fill_holes"), py::arg("label_type"), py::arg("periodic"), py::arg("mask_out"), py::arg("values"),
        py::arg("values_expr"), py::arg("report"), py::arg("split"), py::arg("markers"), py::arg("h"),
        py::arg("classes"), py::arg("split_on"));
  m.def("_distance_file", &distance_file, py::arg("input"), py::arg("out"), py::arg("comm"), py::arg("mask_input"),
        py::arg("lo"), py::arg("hi"), py::arg("spacing"), py::arg("black_border"), py::arg("type"), py::arg("force"),
        py::arg("backend"), py::arg("selection"), py::arg("seed"), py::arg("open"), py::arg("close"),
        py::arg("fill_holes"), py::arg("connectivity"));
  m.def("_convert", &convert_file, py::arg("input"), py::arg("out"), py::arg("comm"), py::arg("force"),
        py::arg("format"), py::arg("selection"), py::arg("out_hints"));

  py::class_<segment::Histogram>(m, "Histogram",
                                 "Exact voxel counts over fixed bins (volseg.histogram): the pyramid's and the GUI's")
      .def_property_readonly(
          "counts",
          [](const segment::Histogram& h) {
            return py::array_t<std::uint64_t>(static_cast<py::ssize_t>(h.counts().size()), h.counts().data());
          },
          "numpy uint64, one count a bin")
      .def_property_readonly("edges", &edges, "numpy float64, bins + 1 edges (as numpy.histogram's)")
      .def_property_readonly("bins", [](const segment::Histogram& h) { return h.edges().bins; })
      .def_property_readonly(
          "integers", [](const segment::Histogram& h) { return h.edges().integers; },
          "True when each bin holds one integer (counts exact for any integer range)")
      .def_property_readonly("total", &segment::Histogram::total, "valid voxels counted")
      .def(
          "count",
          [](const segment::Histogram& h, double lo, double hi) {
            const auto c = h.count_between(lo, hi);
            return py::make_tuple(c.voxels, c.exact);
          },
          py::arg("lo"), py::arg("hi"),
          "(voxels with lo <= v <= hi, exact): exact when lo and hi fall on bin edges, or on integers with integer "
          "bins")
      .def("__repr__", [](const segment::Histogram& h) {
        return "<volseg.Histogram " + std::to_string(h.edges().bins) + " bins over [" + std::to_string(h.edges().lo) +
               ", " + std::to_string(h.edges().hi) + "], " + std::to_string(h.total()) + " voxels>";
      });
  m.def("_histogram", &histogram, py::arg("input"), py::arg("bins"), py::arg("comm"), py::arg("selection"),
        py::arg("backend"), py::arg("pyramid"), py::arg("progress"));
}

}  // namespace volseg::python
