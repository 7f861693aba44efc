// SPDX-License-Identifier: MIT
// The hook's --image, kept behind plain types so hook.cpp needs no VTK:
// image.cpp renders with the render library (VTK and IceT), image_none.cpp
// stands in for it in a build without ParaView and refuses --image.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "volseg/insitu/insitu.hpp"
#include "volseg/io/comm.hpp"
#include "volseg/segment/segment.hpp"

namespace volseg::insitu::detail {

// Checks --image and --camera; part of the hook's collective option check.
void check_image_options(const Options& options);

// Collective over comm: checks the display (VTK aborts without one) and creates the renderer.
class ImageOutput {
 public:
  ImageOutput(const Comm& comm, const Options& options);
  ~ImageOutput();  // collective: before MPI_Finalize
  ImageOutput(const ImageOutput&) = delete;
  ImageOutput& operator=(const ImageOutput&) = delete;

  // Collective. Renders this step's block (`stored`: the memory extent of
  // field.values) with the mask over it when `ghosted_mask` is not empty,
  // writes the PNG on rank 0 and returns its path.
  std::string render(const Field& field, const io::Extent& stored, const std::vector<std::uint8_t>& ghosted_mask,
                     const segment::Stats& stats, bool small);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// Whether --image and --catalyst-script can work (a build with ParaView), and
// a newly created hook must check the X display first.
void check_display_for(const Comm& comm, const Options& options);

}  // namespace volseg::insitu::detail
