# SPDX-License-Identifier: MIT
"""volseg for Python: parallel, out-of-core threshold segmentation of large volumes.

The same libraries as the `volseg` command, with numpy and mpi4py: every call
takes comm= (default MPI.COMM_WORLD) and runs on every rank of it, under
`mpirun -np N python3 script.py` or in a notebook on one rank.

    import volseg
    vol = volseg.open("ocean.nc", var="temp", time=3)
    block = vol.read((0, 0, 0), (16, 256, 256))          # numpy, this rank's block
    mask = volseg.threshold(block, 4.0, 7.0)              # uint8, segment's kernel
    report = volseg.segment("ocean.nc", lo=4, hi=7, out="mask.nc", var="temp", time=3, force=True)
    volseg.label_file("mask.nc", out="labels.nc", connectivity=26, stats="objects.csv")
    hist = volseg.histogram("ocean.nc", var="temp", time=3)  # exact counts, as the GUI's
    labels, table = volseg.label(mask, connectivity=26)   # in memory, as scipy.ndimage.label
    image = volseg.render("ocean.nc", var="temp", lo=4, hi=7)  # HxWx3 uint8 on rank 0

Errors raise volseg.Error with the command line's message, on every rank of a
collective call. See docs/python.md.
"""
import os

from mpi4py import MPI  # initialises MPI before the extension uses it

from ._volseg import Error, Histogram, Volume, label, threshold  # noqa: F401
from ._volseg import __version__  # the release and the git commit built from: "0.1.0+g1a2b3c4d5e6f"
from . import _build, _volseg

__all__ = ["Error", "Histogram", "Volume", "open", "threshold", "label", "segment", "label_file", "distance_file", "convert",
           "histogram", "render", "insitu"]


def _comm(comm):
    return MPI.COMM_WORLD if comm is None else comm


def _selection(var, time, glob="", expr=None, where=None, operands=None):
    """The volume a call reads, typed as the command line's --var, --time,
    --glob, --expr, --where and --operand build it: a variable's name, or a
    derived field (expr= or where=) and the operands it reads from other
    files (operands=: {"S": "salt.nc"} or {"S": ("salt.nc", "SALT")})."""
    given = [name for name, value in (("var", var), ("expr", expr), ("where", where)) if value is not None]
    if len(given) > 1:
        raise Error("give one of %s: an expression names the variables it reads" % " and ".join(given))
    if operands and expr is None and where is None:
        raise Error("operands= reads variables of expr= or where= from other files: give one")
    selection = _volseg._Selection()
    if var is not None:
        selection.variable = str(var)
    selection.step = time
    selection.glob = str(glob or "")
    if expr is not None or where is not None:
        selection.expression = str(expr if expr is not None else where)
        selection.condition = where is not None
    named = []
    for name, operand in (operands or {}).items():
        path, variable = (operand, "") if isinstance(operand, (str, os.PathLike)) else operand
        named.append("%s=%s%s" % (name, os.fspath(path), ":" + variable if variable else ""))
    selection.operands = named
    return selection


def open(path, var=None, time=None, backend="auto", glob="", comm=None, expr=None, where=None,
         operands=None):  # noqa: A001
    """Open a volume on every rank of comm (collective): any format volseg
    reads (NRRD, NIfTI, VTK image data, TIFF, NetCDF, HDF5, Zarr). var names
    a NetCDF/HDF5 variable (/group/name) or a .vti array; time a step of a 4D
    one; glob a folder's TIFF slices. expr="sqrt(u*u + v*v)" opens a field
    computed from the file's variables, where="T > 10 && S < 34.5" a
    condition (1 where it holds, 0 where not), as --expr and --where do;
    operands={"S": "salt.nc"} or {"S": ("salt.nc", "SALT")} reads a variable
    of the expression from another file of the same shape, as --operand. Use
    it in a `with` block, or close() it on every rank: closing is collective."""
    return _volseg._open(str(path), _selection(var, time, glob, expr, where, operands), backend, _comm(comm))


def _threshold_text(value):
    """A threshold as the command line takes it: a number (exactly), or a
    rule ("otsu", "multiotsu:K:I", "p95")."""
    return value if isinstance(value, str) else repr(float(value))


def _seed(seed):
    if seed is None:
        return None
    low, high = seed
    return (float(low), float(high))


def segment(input, lo, hi, out, comm=None, force=False, backend="auto", brick=None, progress=None, var=None,
            time=None, format="", hints=(), resume=False, histogram=False, expr=None, where=None,
            operands=None, seed=None, open=0, close=0, fill_holes=False, connectivity=26):
    """Threshold input into the mask out (lo <= v <= hi), as `volseg segment`
    does, byte for byte: collective; returns the JSON report as a dict.
    lo and hi are numbers, or rules chosen from the input's histogram:
    "otsu", "multiotsu:K:I", "p95" (the report's threshold says the numbers).
    Then, in this order: seed=(C, D) keeps the components (connectivity)
    holding a voxel with C <= v <= D (hysteresis); open=R and close=R open
    and close with a ball of radius R; fill_holes=True fills the holes.
    progress: a callable (bricks done, total) called on rank 0, or "bar" or
    "lines" for the command line's progress, or None. histogram=True also
    bins the mask's voxels (the report's stats.histogram), as --histogram.
    expr= / where= threshold a derived field (see open)."""
    return _volseg._segment(str(input), _threshold_text(lo), _threshold_text(hi), str(out), _comm(comm), force,
                            backend, None if brick is None else list(brick), progress,
                            _selection(var, time, "", expr, where, operands), format, list(hints), resume, histogram,
                            _seed(seed), int(open), int(close), bool(fill_holes), int(connectivity))


def label_file(input, out, connectivity=26, stats="", comm=None, mask_input=True, lo=None, hi=None,
               min_voxels=0, force=False, backend="auto", var=None, time=None, expr=None, where=None,
               operands=None, seed=None, open=0, close=0, fill_holes=False, label_type="auto", periodic="",
               mask_out="", values=(), values_expr=(), report="", split=False, markers="", h=None,
               classes=False, split_on=""):
    """Label the connected components of a mask file (or of lo <= v <= hi of
    a volume, or of a derived field: expr=, where=) into out, as `volseg
    label`: collective; returns counts. lo, hi, seed, open, close and
    fill_holes as segment's (the operators run before the labeling).
    label_type: "auto" (u32, u64 past 2^32 - 1 objects), "u8" ... "u64";
    periodic: the axes that wrap around ("x", "zyx"); mask_out: also write
    the labelled mask there, from the same read. values: fields measured per
    object into the stats table, "FILE" or "FILE:VAR" each; values_expr:
    "[NAME=]EXPR" each, of the variables of the one FILE given without :VAR
    (else of input); report: a JSON report with the table's first rows.
    split=True: touching objects apart, a watershed of the distance
    transform from markers: markers="FILE[:VAR]" (a labels volume, each
    nonzero id one) or h=H (the h-maxima of the distance, default 0.5), as
    `volseg label --split`; split_on="input", "FILE[:VAR]" or either after
    "-" floods that field instead of the distance (`--split-on`, lowest
    first). classes=True: input is a u8 class image, its
    objects the connected regions of one value (skimage.measure.label)."""
    if isinstance(values, (str, os.PathLike)):
        values = [values]
    if isinstance(values_expr, str):
        values_expr = [values_expr]
    return _volseg._label_file(str(input), str(out), _comm(comm), connectivity, mask_input,
                               None if lo is None else _threshold_text(lo),
                               None if hi is None else _threshold_text(hi), stats, min_voxels, force, backend,
                               _selection(var, time, "", expr, where, operands), _seed(seed), int(open), int(close),
                               bool(fill_holes), str(label_type), str(periodic), str(mask_out),
                               [str(v) for v in values], [str(v) for v in values_expr], str(report), bool(split),
                               str(markers), None if h is None else float(h), bool(classes), str(split_on))


def distance_file(input, out, mask_input=True, lo=None, hi=None, spacing=None, black_border=False, type="f32",
                  comm=None, force=False, backend="auto", var=None, time=None, expr=None, where=None,
                  operands=None, seed=None, open=0, close=0, fill_holes=False, connectivity=26):
    """The exact Euclidean distance of every foreground voxel to the nearest
    background voxel, written to out, as `volseg distance`: collective;
    returns counts and the largest distance. The mask: input's nonzero
    voxels (mask_input=True), or lo <= v <= hi then the operators, as
    segment's. spacing=(z, y, x): distances in those units (default: the
    input's own); black_border=True: outside the volume is background;
    type: "f32" or "f64". Equal to scipy.ndimage.distance_transform_edt(mask,
    sampling=spacing) within an ulp, whatever the ranks."""
    return _volseg._distance_file(str(input), str(out), _comm(comm), bool(mask_input),
                                  None if lo is None else _threshold_text(lo),
                                  None if hi is None else _threshold_text(hi),
                                  None if spacing is None else [float(s) for s in spacing], bool(black_border),
                                  str(type), force, backend, _selection(var, time, "", expr, where, operands),
                                  _seed(seed), int(open), int(close), bool(fill_holes), int(connectivity))


def convert(input, out, comm=None, force=False, format="", var=None, time=None, glob="", out_hints=(), expr=None,
            where=None, operands=None):
    """Copy a volume (or a derived field: expr=, where=) into another format,
    as `volseg convert`: collective."""
    return _volseg._convert(str(input), str(out), _comm(comm), force, format, _selection(var, time, glob, expr, where, operands),
                            list(out_hints))


def histogram(input, bins=1024, comm=None, var=None, time=None, glob="", backend="auto", pyramid="",
              progress=None, expr=None, where=None, operands=None):
    """The exact histogram of a volume's valid voxels (NaN, fill and values
    outside valid_range left out), over bins equal bins of its range (one
    integer a bin for integer data of a narrower range): the GUI's. A current
    pyramid's tables when there is one (volseg pyramid), else one pass over
    the volume (two when its range is not declared). Collective; returns a
    volseg.Histogram (counts, edges, count(lo, hi)) on every rank."""
    return _volseg._histogram(str(input), int(bins), _comm(comm), _selection(var, time, glob, expr, where, operands), backend,
                              str(pyramid), progress)


def render(input, mask=None, mode=None, lo=None, hi=None, size=(800, 600), camera=None, view="",
           level="auto", colormap="viridis", opacity="ramp", iso=(), out="", title="", annotations=True, comm=None,
           var=None, time=None, backend="auto", memory=512 << 20, mask_surface="smooth", scale=None, expr=None,
           where=None, operands=None):
    """Render a volume (and a mask) as `volseg render` does, on every rank of
    comm (collective, IceT compositing): an HxWx3 uint8 numpy image on rank 0,
    None elsewhere. camera=(azimuth, elevation[, zoom]) in degrees (default
    (30, 20, 1)), or view="+x" ... "-z" as ParaView's buttons. mode: "volume", "mask", "slices", "iso", comma-separated
    (default volume, and mask when a mask or lo and hi are given); lo/hi draw the surface of
    lo <= v <= hi without a mask file. mask_surface: "smooth" (default) or
    "voxels" (the voxels' exact staircase), as --mask-surface. scale=(z, y, x)
    stretches the drawing (vertical exaggeration), as --scale. out= also writes the PNG (replacing
    one there, as `volseg render --out` does). Needs an X
    display (xvfb-run in batch) and a build with ParaView; otherwise
    volseg.Error says so."""
    if not _build.WITH_RENDER:
        raise Error("volseg.render: this volseg was built without ParaView (VOLSEG_WITH_PARAVIEW=OFF): no rendering")
    from . import _render
    if mode is None:
        mode = "volume,mask" if mask is not None or (lo is not None and hi is not None) else "volume"
    level = str(level)
    return _render.render(str(input), None if mask is None else str(mask), mode, list(iso), lo, hi, list(size),
                          list(camera) if camera is not None else [], view, level, colormap, opacity, str(out), title,
                          annotations, _comm(comm), _selection(var, time, "", expr, where, operands), backend, int(memory),
                          mask_surface,
                          [float(v) for v in scale] if scale is not None else [])


def __getattr__(name):  # volseg.insitu on first use: it loads the in-situ library
    if name == "insitu":
        import importlib
        return importlib.import_module(".insitu", __name__)
    raise AttributeError(f"module 'volseg' has no attribute {name!r}")
