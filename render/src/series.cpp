// SPDX-License-Identifier: MIT
#include "volseg/render/series.hpp"

#include <vtkFFMPEGWriter.h>
#include <vtkNew.h>
#include <vtkPNGReader.h>

extern "C" {
#include <libavutil/log.h>
}

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>

#include "volseg/io/error.hpp"
#include "volseg/io/files.hpp"
#include "volseg/pyramid/pyramid.hpp"
#include "volseg/segment/series.hpp"

namespace volseg::render {
namespace fs = std::filesystem;

namespace {

std::vector<std::string> at_step(std::vector<std::string> hints, std::int64_t t) {
  std::erase_if(hints, [](const std::string& h) { return h.rfind("time=", 0) == 0; });
  hints.push_back("time=" + std::to_string(t));
  return hints;
}

// The frames, in order, into one AVI (rank 0): under a temporary name,
// renamed when the writer has closed it without an error.
void encode(const std::vector<std::string>& frames, const std::string& movie, int rate) {
  const std::string temp = io::temporary_path(movie) + ".avi";  // the writer's container from the name
  av_log_set_level(AV_LOG_ERROR);  // no notes about pixel formats; errors still print
  vtkNew<vtkPNGReader> reader;
  vtkNew<vtkFFMPEGWriter> writer;
  writer->SetInputConnection(reader->GetOutputPort());
  writer->SetFileName(temp.c_str());
  writer->SetRate(rate);
  writer->SetQuality(2);
  bool started = false;
  try {
    for (const auto& frame : frames) {
      reader->SetFileName(frame.c_str());
      reader->Update();
      if (reader->GetErrorCode() != 0) throw Error("--movie: cannot read the frame " + frame);
      if (!started) {
        writer->Start();
        started = true;
      }
      writer->Write();
      if (writer->GetError() != 0) throw Error("--movie " + movie + ": VTK's FFMPEG writer failed on " + frame);
    }
    writer->End();
    if (writer->GetError() != 0) throw Error("--movie " + movie + ": VTK's FFMPEG writer failed to finish the file");
    if (!fs::exists(temp) || fs::file_size(temp) == 0) throw Error("--movie " + movie + ": no file was written");
    if (io::rename_file(temp, movie) != 0) throw_errno("rename " + temp + " to", movie);
    io::sync_folder_of(movie);
  } catch (...) {
    std::error_code ignored;
    fs::remove(temp, ignored);
    throw;
  }
}

}  // namespace

RenderSeriesResult run_render_series(const Comm& comm, RenderOptions options, const std::vector<std::int64_t>& steps,
                                     const std::string& movie, int frames_per_second) {
  const auto start = std::chrono::steady_clock::now();
  if (!segment::names_steps(options.output))
    throw Error("render --time with several steps: name the frames with %d in --out (frame_%04d.png)");
  if (options.orbit > 0 || options.progressive)
    throw Error("render --time with several steps draws one frame a step: --orbit and --progressive take one step");
  if (!movie.empty()) {
    if (fs::path(movie).extension() != ".avi")
      throw Error("--movie " + movie + ": VTK's FFMPEG writer writes AVI (MPEG-4 video): name it NAME.avi");
    if (comm.rank() == 0) io::refuse_existing(movie, options.force);
    agree(comm, nullptr);
  }
  RenderSeriesResult result;
  result.steps = steps;
  // One colour range for the series: the steps' ranges, from their
  // histograms (a pyramid's when there is one, else a pass over the step).
  auto& transfer = options.frame.transfer;
  if (!transfer.lo || !transfer.hi) {
    double lo = INFINITY, hi = -INFINITY;
    for (const std::int64_t t : steps) {
      pyramid::HistogramOptions h;
      h.input = options.input;
      h.backend = options.backend;
      h.input_hints = at_step(options.input_hints, t);
      if (!options.pyramid_dir.empty() && segment::names_steps(options.pyramid_dir))
        h.directory = segment::step_path(options.pyramid_dir, t);
      const auto histogram = pyramid::histogram(comm, h);
      lo = std::min(lo, histogram.edges().lo);
      hi = std::max(hi, histogram.edges().hi);
    }
    if (!transfer.lo) transfer.lo = lo;
    if (!transfer.hi) transfer.hi = hi;
  }
  result.lo = *transfer.lo;
  result.hi = *transfer.hi;
  const std::string frames = options.output, mask = options.mask, pyramids = options.pyramid_dir;
  const bool mask_per_step = !mask.empty() && segment::names_steps(mask);
  const bool pyramid_per_step = !pyramids.empty() && segment::names_steps(pyramids);
  for (const std::int64_t t : steps) {
    RenderOptions step = options;
    step.input_hints = at_step(options.input_hints, t);
    step.output = segment::step_path(frames, t);
    if (mask_per_step) step.mask = segment::step_path(mask, t);
    if (pyramid_per_step) step.pyramid_dir = segment::step_path(pyramids, t);
    run_render(comm, step);
    result.frames.push_back(step.output);
  }
  if (!movie.empty()) {
    std::exception_ptr error;
    if (comm.rank() == 0) try {
        encode(result.frames, movie, frames_per_second);
      } catch (...) {
        error = std::current_exception();
      }
    agree(comm, error);
    result.movie = movie;
  }
  result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return result;
}

}  // namespace volseg::render
