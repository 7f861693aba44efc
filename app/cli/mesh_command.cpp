// SPDX-License-Identifier: MIT
// `volseg mesh`: a triangle surface for every object of a label volume.
#include <cstdio>

#include "command.hpp"
#include "volseg/io/error.hpp"
#include "volseg/mesh/mesh.hpp"
#include "volseg/segment/brick_layout.hpp"

namespace volseg::cli {
namespace {

class MeshCommand final : public Command {
 public:
  CLI::App* add_to(CLI::App& app) override {
    auto* sub = app.add_subcommand(
        "mesh",
        "Mesh every object of a label volume, brick by brick on every rank: Neuroglancer precomputed meshes "
        "(a manifest per id), and .ply / .vtp per object for ParaView and Blender");
    auto& o = options_;
    sub->add_option("labels", o.input, "Labels (volseg label's output, or any integer volume with --as-labels)")
        ->required();
    sub->add_option("--out", o.output,
                    "Mesh folder: info, ID:0 manifests and their fragments (Neuroglancer's precomputed legacy mesh "
                    "format; put it as the mesh folder of a precomputed volume)")
        ->required();
    sub->add_option("--ids", ids_, "Objects to mesh: 1,4,7-9 (default: all)");
    sub->add_flag("!--no-smooth", o.smooth,
                  "The voxels' own surface (chamfered cubes) instead of the smooth one `volseg render` draws");
    sub->add_option("--simplify", o.simplify,
                    "Mesh the labels halved N times by the mode (the multiscale outputs' level N): about 4^N fewer "
                    "triangles, smoothed over the halved voxels")
        ->capture_default_str();
    sub->add_flag("--ply", o.ply, "Also ply/ID.ply per object (binary), in the volume's coordinates");
    sub->add_flag("--vtp", o.vtp, "Also vtp/ID.vtp per object and objects.vtm (all, for ParaView)");
    sub->add_flag("--as-labels", o.as_labels, "Mesh an integer volume that does not say it holds labels");
    sub->add_option("--var", o.selection.variable, "NetCDF variable of the labels");
    sub->add_option("--backend", o.backend, "Backend that reads (auto: by format)")->capture_default_str();
    sub->add_option("--hint", o.input_hints, "Reader hint key=value (repeatable)");
    sub->add_option(
        "--brick", brick_,
        "Brick shape Z,Y,X (default 128; over a chunked input, whole chunks stacked towards 128): an object's "
        "fragment per brick");
    sub->add_flag("--force", o.force, "Replace an existing mesh folder");
    verbosity_.add_to(*sub);
    return sub;
  }

  void run(const Context& context) override {
    auto& o = options_;
    if (!ids_.empty()) o.ids = mesh::parse_ids(ids_);
    if (!brick_.empty()) o.brick_shape = segment::parse_shape(brick_);
    o.progress = verbosity_.mode();
    o.command_line = context.command_line;
    const auto result = mesh::run_mesh(context.comm, o);
    if (context.comm.rank() == 0 && !verbosity_.quiet) {
      std::fputs(mesh::mesh_summary(o, result).c_str(), stdout);
      std::fflush(stdout);
    }
  }

 private:
  mesh::MeshOptions options_;
  std::string ids_, brick_;
  Verbosity verbosity_;
};

}  // namespace

std::unique_ptr<Command> make_mesh_command() { return std::make_unique<MeshCommand>(); }

}  // namespace volseg::cli
