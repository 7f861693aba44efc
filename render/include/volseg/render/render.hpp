// SPDX-License-Identifier: MIT
// volseg's parallel renderer. Every rank draws only its own part of the
// volume (a box from partition(), with ghost layers for interpolation and
// surfaces) into a transparent RGBA image; IceT blends the ranks' images in
// visibility order to rank 0, which puts the background, the colour bar,
// axes and title under and over it. The types here are plain structs so the
// GUI and the in-situ hook use the renderer without VTK's headers.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "volseg/io/comm.hpp"
#include "volseg/io/types.hpp"

class vtkRenderer;

namespace volseg::render {

struct Rgb {
  double r = 0, g = 0, b = 0;
};

// Where the camera looks from. Azimuth and elevation turn the camera about
// the volume's centre from the default view (down -z, y up), as ParaView's
// and VTK's Azimuth() and Elevation() do; zoom > 1 magnifies. A view
// ("+x", "-y", ...: ParaView's "set view direction to") replaces them.
struct Camera {
  double azimuth = 30, elevation = 20, zoom = 1;
  std::string view;       // empty, or +x -x +y -y +z -z
  bool parallel = false;  // orthographic projection
  double orbit = 0;       // degrees turned about the view up, after all else (--orbit frames)
};
Camera parse_camera(const std::string& text);  // "azimuth,elevation[,zoom]"
// The direction a view ("+x", ...) looks along and its up vector; throws
// volseg::Error for an unknown view.
void view_direction(const std::string& view, double direction[3], double up[3]);
// Places renderer's active camera as volseg's frames place it: looking at
// the centre of bounds (x0, x1, y0, y1, z0, z1, world coordinates), turned
// by camera, the bounds filling the view at zoom 1. The Qt window draws an
// object alone with it, so that it stands where the frames show it.
void place_camera(vtkRenderer* renderer, const Camera& camera, const std::array<double, 6>& bounds);

struct OpacityPoint {
  double value = 0, alpha = 0;
};

// Colours and opacities over data values. Colours span [lo, hi] (default:
// the data's range); opacity is piecewise linear between points, 0 outside
// them. Presets: "ramp" (0 at lo to 0.6 at hi), "shells" (alternating
// bands), or explicit "v:a,v:a,..." points.
struct TransferFunction {
  std::string colormap = "viridis";
  std::optional<double> lo, hi;
  std::vector<OpacityPoint> opacity;
  double opacity_at(double value) const;
  // Largest opacity over [a, b]: zero means a brick with values only in
  // [a, b] draws nothing and need not be read.
  double max_opacity(double a, double b) const;
};
std::vector<std::string> colormap_names();
// Throws volseg::Error naming the known colormaps.
void check_colormap(const std::string& name);
// Colour of the colormap at t in [0, 1].
Rgb colormap_at(const std::string& name, double t);
// "v:a,v:a,...", "ramp" or "shells" over [lo, hi]; throws volseg::Error.
std::vector<OpacityPoint> parse_opacity(const std::string& text, double lo, double hi);

// What a frame draws; any combination.
struct Modes {
  bool volume = false;
  bool mask = false;        // the mask's surface (or the threshold surface of the scalar)
  bool slices = false;      // three axis-aligned slices with the mask overlaid
  std::vector<double> iso;  // isosurfaces of the scalar
  bool any() const { return volume || mask || slices || !iso.empty(); }
};
// "volume", "mask", "slices", "iso" (comma lists too); throws volseg::Error.
Modes parse_modes(const std::vector<std::string>& names, const std::vector<double>& iso_values);

// How a mask's surface is drawn. smooth: the contour at one half of the mask
// smoothed by a binomial filter ([1 4 6 4 1] / 16 along each axis), with every
// voxel kept on its side, so it crosses the same grid edges as the voxels'
// surface (nothing lost or gained, within half a voxel of the voxels' faces)
// without their terraces; voxels: the exact staircase (the contour of the
// 0/1 mask itself).
enum class MaskSurface { smooth, voxels };
MaskSurface parse_mask_surface(const std::string& name);  // throws volseg::Error
const char* to_string(MaskSurface surface);

// Ghost layers a piece stores around its owned points: the smoothed mask's
// values at the owned points and their gradients reach three voxels out.
constexpr int ghost_layers = 3;

// A surface drawn as it is, in world coordinates x, y, z (volseg mesh's
// objects: `volseg render --mesh DIR`), each rank drawing its box's part.
struct ObjectSurface {
  std::uint64_t id = 0;
  std::vector<float> points;             // x, y, z
  std::vector<std::uint32_t> triangles;  // counter-clockwise seen from outside
  Rgb colour;
};

// Object id's mesh from volseg mesh's folder, in its colour
// (io::segment_rgba): what render --mesh and the sessions draw.
std::shared_ptr<const ObjectSurface> object_surface(const std::string& folder, std::uint64_t id);

struct FrameSettings {
  int width = 512, height = 512;
  Camera camera;
  Modes modes;
  TransferFunction transfer;
  Rgb mask_color{0.95, 0.35, 0.2};
  double mask_opacity = 1.0;
  MaskSurface mask_surface = MaskSurface::smooth;
  Rgb background{0.12, 0.12, 0.16};
  std::array<double, 3> slice_at{0.5, 0.5, 0.5};  // x, y, z, as fractions of the volume
  bool shade = true;                              // gradient shading of the volume
  double sample_distance = 0;                     // world units; 0: the level's smallest spacing / 2
  bool annotations = true;                        // colour bar, axes, title
  std::string title;
  std::string scalar_name = "value";     // the colour bar's title
  std::array<double, 3> scale{1, 1, 1};  // x, y, z: stretches the drawing (--scale Z,Y,X: vertical exaggeration)
  std::vector<std::shared_ptr<const ObjectSurface>> surfaces;  // objects' meshes, drawn in their colours
};

// A rank's part of the scene at one resolution level.
struct Piece {
  io::Index3 dims{};                                        // the level's dims, z, y, x
  std::array<double, 3> spacing{1, 1, 1}, origin{0, 0, 0};  // x, y, z, world position of voxel 0
  std::array<double, 3> full_spacing{1, 1, 1};  // the level-0 spacing (opacity is per full-resolution voxel)
  // x, y, z: -1 draws an axis reversed (a coordinate that decreases, or one
  // that is positive down, as depth), else 1; spacing and origin stay
  // positive-step data coordinates. FrameSettings::scale stretches on top.
  std::array<double, 3> display_scale{1, 1, 1};
  std::array<std::string, 3> axis_titles;  // x, y, z: "depth (m)"; empty: X, Y, Z
  int level = 0;
  io::Extent owned;   // points this rank draws (partition())
  io::Extent stored;  // owned plus ghost layers: what the arrays hold
  // stored.voxels() values as levels (Quantizer below), 0 where invalid;
  // or empty. Half the memory of floats, here and in the GL texture, at
  // 1/16382 of the value range: finer than any colour map.
  std::vector<std::uint16_t> field;
  std::vector<std::uint8_t> mask;                  // stored.voxels() 0/1; or empty
  std::optional<std::array<double, 2>> threshold;  // lo, hi: the threshold surface when there is no mask
  double field_min = 0, field_max = 1;             // over the whole volume (every rank the same)
};

// A triangle surface in world coordinates as drawn (display_scale applied).
struct Mesh {
  std::vector<float> points, normals;    // x, y, z
  std::vector<std::uint32_t> triangles;  // three point indices each
};
// The surface of a whole piece's mask (owned = stored = the piece), as
// `volseg render` draws a mask by default: smoothed, closed at the volume's
// faces. For a front end that draws it itself (volseg web's page).
Mesh mask_mesh(const Piece& piece);

// Values in [lo, hi] to levels 1..top (0 marks invalid voxels), the same on
// every rank: lo and hi are the volume's range. 14 bits, because VTK's volume
// mapper wants one opacity table entry per level of an integer texture and
// OpenGL here allows 16384.
struct Quantizer {
  double lo = 0, hi = 1;
  static constexpr std::uint16_t invalid = 0;
  static constexpr int top = 16383;
  // The level a value has, as a real number (for transfer function points,
  // contour values and thresholds, which need not be levels).
  double level(double value) const { return 1 + (value - lo) / (hi > lo ? hi - lo : 1) * (top - 1); }
  std::uint16_t quantize(double value) const;  // NaN -> invalid
  double value(std::uint16_t level) const { return lo + (level - 1) * (hi > lo ? hi - lo : 1) / (top - 1); }
};
inline Quantizer quantizer(const Piece& piece) { return {piece.field_min, piece.field_max}; }

// An RGBA image, 8 bits a channel, rows from the top.
struct Image {
  int width = 0, height = 0;
  std::vector<std::uint8_t> rgba;
};

struct FrameTimes {
  double scene = 0;      // building this rank's VTK scene from its piece
  double render = 0;     // drawing this rank's part
  double composite = 0;  // IceT ordered blending
  double annotate = 0;   // rank 0: background, colour bar, axes, title
};

// What the camera did, so a user can set the same view elsewhere.
struct CameraState {
  std::array<double, 3> position{}, focal_point{}, view_up{};
  double view_angle = 30, parallel_scale = 1;
  bool parallel = false;
  // x0, x1, y0, y1, z0, z1 in world coordinates as drawn (display_scale
  // applied): the volume's box, and the box of what any rank drew (NaN
  // when nothing was).
  std::array<double, 6> bounds{}, drawn{};
};

// The renderer: one offscreen window per rank and an IceT context. Collective
// lifetime: create and destroy it on every rank of comm, and destroy it
// before MPI_Finalize.
class Renderer {
 public:
  explicit Renderer(const Comm& comm);  // collective; throws when no X display can be opened
  ~Renderer();
  Renderer(const Renderer&) = delete;
  Renderer& operator=(const Renderer&) = delete;

  // This rank's part of the scene (not collective; every rank must set one
  // before render()).
  void set_piece(Piece piece);
  // Collective. The finished image on rank 0; an empty image elsewhere.
  // Throws volseg::Error on every rank if any rank fails.
  Image render(const FrameSettings& settings);
  const FrameTimes& last_times() const;
  const CameraState& last_camera() const;
  // The largest image side this OpenGL can draw.
  int max_size() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// What a program draws: frames offscreen (a batch job, a server's frames),
// or a window a user looks at.
enum class Drawing { offscreen, window };

// Collective; call it before any work that draws. Makes sure every rank can
// draw: an existing DISPLAY is used as it is; where ranks have none (a
// cluster's compute node), one private Xvfb per node serves them, started
// here and stopped when the last rank of its node ends, however it ends (a
// window needs the user's display: no private server for Drawing::window).
// Returns the line a program prints (on rank 0) to say which way it draws
// ("drawing on a private Xvfb, :3 ..." or "drawing on the X display :0 ..."). Throws
// volseg::Error on every rank alike with one clear line when it cannot (no
// Xvfb installed, DISPLAY naming a server that does not answer): VTK would
// abort the process instead.
std::string check_display(const Comm& comm, Drawing drawing = Drawing::offscreen);
// That line after a check_display of this process; "" before.
std::string display_way();

// Writes the image as PNG under a temporary name beside path, then renames it.
void write_png(const Image& image, const std::string& path);

}  // namespace volseg::render
