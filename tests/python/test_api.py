# SPDX-License-Identifier: MIT
"""`import volseg` (python/, docs/python.md) under `mpirun -np N python3 -m
pytest`: every rank runs every test, so the collective calls meet. Checked
against independent references: numpy for threshold and read, the CLI's
own mask byte for byte for segment, scipy.ndimage.label for label_file;
bad input raises volseg.Error with one message on every rank."""
import json
import os
import re
import shutil
import subprocess
import tempfile

import numpy as np
import pytest
from mpi4py import MPI

import volseg

COMM = MPI.COMM_WORLD
DIMS = (24, 30, 36)  # z, y, x


def shared_dir():
    """A folder every rank names: rank 0 makes it."""
    path = tempfile.mkdtemp(prefix="volseg-python-") if COMM.rank == 0 else None
    return COMM.bcast(path)


def cli(*args):
    """The volseg command line as a singleton MPI process on rank 0 (Open MPI's
    variables of this job stripped, so it starts its own)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OMPI_COMM", "OMPI_MCA_orte", "PMIX", "OMPI_FILE", "OMPI_APP", "OMPI_UNIVERSE", "OMPI_FIRST", "OMPI_NUM_APP", "OMPI_ARGV", "OMPI_MCA_ess", "OMPI_MCA_pmix", "OMPI_MCA_initial"))}
    env.update(OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    return subprocess.run([os.environ["VOLSEG"], *args], env=env, capture_output=True, text=True)


@pytest.fixture(scope="module")
def volume():
    """A smooth f32 field written by `volseg generate` on rank 0, as (path, numpy array)."""
    folder = shared_dir()
    path = os.path.join(folder, "v.nhdr")
    if COMM.rank == 0:
        proc = cli("generate", path, "--field", "smooth", "--dims", "%d,%d,%d" % DIMS, "--quiet")
        assert proc.returncode == 0, proc.stderr
    COMM.Barrier()
    values = np.memmap(os.path.join(folder, "v.raw"), dtype="<f4", mode="r", shape=DIMS)  # numpy's own view of the file
    yield path, values, folder
    COMM.Barrier()
    if COMM.rank == 0:
        shutil.rmtree(folder, ignore_errors=True)


def test_version_is_the_cli_s():
    """volseg.__version__: the release and the git commit, as `volseg --version` says."""
    assert re.match(r"^0\.\d+\.\d+(\+g[0-9a-f]{12}(\.dirty)?)?$", volseg.__version__), volseg.__version__
    if COMM.rank == 0:
        proc = cli("--version")
        assert proc.stdout.split() == ["volseg", volseg.__version__], proc.stdout


def test_open_read_and_describe(volume):
    path, values, _ = volume
    with volseg.open(path) as vol:
        assert vol.shape == DIMS
        assert vol.dtype == np.float32
        assert len(vol.spacing) == 3 and len(vol.origin) == 3
        assert "dims (z,y,x):  24 30 36" in vol.info()
        # each rank reads its own slab, as a user splits the work
        z0 = COMM.rank * DIMS[0] // COMM.size
        z1 = (COMM.rank + 1) * DIMS[0] // COMM.size
        block = vol.read((z0, 3, 5), (z1 - z0, 20, 25))
        np.testing.assert_array_equal(block, values[z0:z1, 3:23, 5:30])
        with pytest.raises(volseg.Error, match="outside the volume"):
            vol.read((0, 0, 0), (DIMS[0] + 1, 1, 1))
    with pytest.raises(volseg.Error, match="closed"):
        vol.read((0, 0, 0), (1, 1, 1))


def test_collective_reads_of_netcdf(volume):
    """A NetCDF-4 volume's reads are collective: every rank calls read() as often, a count of 0 for nothing."""
    path, values, folder = volume
    nc = os.path.join(folder, "v.nc4")
    volseg.convert(path, nc, force=True)
    with volseg.open(nc) as vol:
        assert vol.collective
        for z in range(0, DIMS[0], 4):
            mine = z // 4 % COMM.size == COMM.rank
            block = vol.read((z, 0, 0), (4, DIMS[1], DIMS[2]) if mine else (0, 0, 0))
            if mine:
                np.testing.assert_array_equal(block, values[z:z + 4])
            else:
                assert block.size == 0


@pytest.mark.parametrize("dtype", ["float32", "float64", "int16", "uint8", "uint16", "int32", "int64", "uint64"])
def test_threshold_equals_numpy(dtype):
    rng = np.random.default_rng(3)
    a = (rng.random((17, 19, 23)) * 100).astype(dtype)
    lo, hi = 20, 70
    np.testing.assert_array_equal(volseg.threshold(a, lo, hi), ((a >= lo) & (a <= hi)).astype(np.uint8))


def test_threshold_of_a_large_array_on_every_core():
    """Arrays of 16 Mi values and more are split among threads: every value, the last included, is thresholded
    (an odd count that the pieces of 64 Ki do not divide)."""
    a = (np.arange(2 * (1 << 24) + 1, dtype=np.uint64) + 100).astype(np.uint8)  # the last value is in range
    m = volseg.threshold(a, 10, 200)
    np.testing.assert_array_equal(m, ((a >= 10) & (a <= 200)).astype(np.uint8))
    assert m[-1] == (10 <= a[-1] <= 200)


def test_threshold_nan_fill_and_valid_range():
    a = np.linspace(0, 10, 1000, dtype=np.float32).reshape(10, 10, 10)
    a[0, 0, :5] = np.nan
    a[1, 1, 1] = -999
    m = volseg.threshold(a, -1000, 5, fill=-999, valid_range=(0, 4))
    expected = ((a >= 0) & (a <= 4) & (a != -999)).astype(np.uint8)
    np.testing.assert_array_equal(m, expected)


def test_segment_equals_the_cli_byte_for_byte(volume):
    path, values, folder = volume
    py_out, cli_out = os.path.join(folder, "py%d.nhdr" % COMM.size), os.path.join(folder, "cli.nhdr")
    seen = []
    report = volseg.segment(path, lo=0.25, hi=0.5, out=py_out, force=True, brick=(5, 30, 36),
                            progress=lambda done, total: seen.append((done, total)))
    assert report["stats"]["voxels"] == values.size
    assert report["ranks"] == COMM.size
    if COMM.rank == 0:
        assert seen and seen[-1] == (report["bricks"]["count"], report["bricks"]["count"])
        proc = cli("segment", path, "--lo", "0.25", "--hi", "0.5", "--out", cli_out, "--force", "--quiet",
                   "--brick", "5,30,36")
        assert proc.returncode == 0, proc.stderr
        with open(py_out[:-5] + ".raw", "rb") as a, open(cli_out[:-5] + ".raw", "rb") as b:
            assert a.read() == b.read()
        mask = np.fromfile(py_out[:-5] + ".raw", dtype=np.uint8).reshape(DIMS)
        np.testing.assert_array_equal(mask, ((values >= 0.25) & (values <= 0.5)).astype(np.uint8))
        assert report["stats"]["in_range"] == int(mask.sum())


def test_label_file_counts_as_scipy(volume):
    path, values, folder = volume
    scipy_ndimage = pytest.importorskip("scipy.ndimage")
    mask_path, labels_path = os.path.join(folder, "m.nhdr"), os.path.join(folder, "l.nhdr")
    volseg.segment(path, lo=0.3, hi=0.45, out=mask_path, force=True)
    result = volseg.label_file(mask_path, out=labels_path, connectivity=6, force=True)
    mask = (values >= 0.3) & (values <= 0.45)
    _, count = scipy_ndimage.label(mask)
    assert result["objects"] == count
    assert result["foreground_voxels"] == int(mask.sum())


def test_distance_file_equals_scipy(volume):
    path, values, folder = volume
    scipy_ndimage = pytest.importorskip("scipy.ndimage")
    out = os.path.join(folder, "d.nhdr")
    result = volseg.distance_file(path, out=out, mask_input=False, lo=0.3, hi=0.7, spacing=(2.0, 1.0, 0.5),
                                  black_border=True, type="f64", force=True)
    mask = (values >= 0.3) & (values <= 0.7)
    expected = scipy_ndimage.distance_transform_edt(np.pad(mask, 1), sampling=(2.0, 1.0, 0.5))[1:-1, 1:-1, 1:-1]
    got = np.fromfile(os.path.join(folder, "d.raw"), dtype="<f8").reshape(DIMS)
    assert np.abs(got - expected).max() <= np.spacing(expected).max()
    assert result["foreground_voxels"] == int(mask.sum())
    assert result["largest"] == pytest.approx(expected.max())
    with pytest.raises(volseg.Error, match="spacing"):
        volseg.distance_file(path, out=out, mask_input=False, lo=0.3, hi=0.7, spacing=(1, 0, 1), force=True)


def test_label_file_split_equals_the_cli(volume):
    path, values, folder = volume
    spheres = os.path.join(folder, "spheres.nhdr")
    if COMM.rank == 0:
        proc = cli("generate", spheres, "--field", "spheres", "--count", "30", "--dims", "48", "--dtype", "u8",
                   "--quiet", "--force")
        assert proc.returncode == 0, proc.stderr
    COMM.Barrier()
    out = os.path.join(folder, "split.nhdr")
    result = volseg.label_file(spheres, out=out, split=True, h=0.5, force=True, label_type="u32")
    whole = volseg.label_file(spheres, out=out, force=True, label_type="u32")["objects"]
    result = volseg.label_file(spheres, out=out, split=True, h=0.5, force=True, label_type="u32")
    assert result["objects"] == result["markers"] > whole  # touching balls apart, one object a marker
    ours = np.fromfile(os.path.join(folder, "split.raw"), dtype="<u4")
    COMM.Barrier()
    if COMM.rank == 0:
        cli_out = os.path.join(folder, "split_cli.nhdr")
        proc = cli("label", spheres, "--mask-input", "--split", "--h", "0.5", "--out", cli_out, "--label-type", "u32",
                   "--quiet")
        assert proc.returncode == 0, proc.stderr
        assert np.array_equal(ours, np.fromfile(os.path.join(folder, "split_cli.raw"), dtype="<u4"))
    COMM.Barrier()
    # split_on= floods a field: the negated distance given as one is split=True itself.
    distance = os.path.join(folder, "distance.nhdr")
    volseg.distance_file(spheres, out=distance, mask_input=True, force=True)
    on = volseg.label_file(spheres, out=out, split=True, split_on="-" + distance, force=True, label_type="u32")
    assert on["objects"] == result["objects"]
    assert np.array_equal(np.fromfile(os.path.join(folder, "split.raw"), dtype="<u4"), ours)
    with pytest.raises(volseg.Error, match="--split-on input"):
        volseg.label_file(spheres, out=out, split=True, split_on="input", force=True)
    with pytest.raises(volseg.Error, match="h="):
        volseg.label_file(spheres, out=out, split=True, h=-1, force=True)
    with pytest.raises(volseg.Error, match="split=True"):
        volseg.label_file(spheres, out=out, h=1, force=True)


def test_label_file_types_periodic_and_mask_out(volume):
    """label_type=, periodic= and mask_out= as the command line's --label-type, --periodic and
    --mask-out: u64 labels equal to u32's, wrapping joins objects, the mask equals segment's."""
    path, values, folder = volume
    mask_path = os.path.join(folder, "pm.nhdr")
    volseg.segment(path, lo=0.3, hi=0.45, out=mask_path, force=True)
    out32, out64, outp = (os.path.join(folder, "%s%d.nhdr" % (n, COMM.size)) for n in ("l32", "l64", "lp"))
    mask_out = os.path.join(folder, "mo%d.nhdr" % COMM.size)
    plain = volseg.label_file(path, out=out32, mask_input=False, lo=0.3, hi=0.45, connectivity=6, force=True,
                              mask_out=mask_out)
    wide = volseg.label_file(mask_path, out=out64, connectivity=6, force=True, label_type="u64")
    wrapped = volseg.label_file(mask_path, out=outp, connectivity=6, force=True, periodic="zyx")
    assert wide["label_type"] == "u64" and plain["label_type"] == "u32"
    assert wide["objects"] == plain["objects"]
    assert 0 < wrapped["objects"] <= plain["objects"]
    if COMM.rank == 0:
        a = np.fromfile(out32[:-5] + ".raw", dtype=np.uint32)
        b = np.fromfile(out64[:-5] + ".raw", dtype=np.uint64)
        np.testing.assert_array_equal(a.astype(np.uint64), b)
        with open(mask_out[:-5] + ".raw", "rb") as x, open(mask_path[:-5] + ".raw", "rb") as y:
            assert x.read() == y.read()
    with pytest.raises(volseg.Error, match="not an axis"):
        volseg.label_file(mask_path, out=outp, force=True, periodic="w")


def test_label_file_fields(volume):
    """values= and values_expr= as --values and --values-expr: each field's columns in the table (a
    NetCDF variable and an expression of the input's variables; one raw file as value_*), equal to numpy
    over the labels the job wrote, and the report's fields."""
    import csv
    path, values, folder = volume
    out = os.path.join(folder, "lf%d.nhdr" % COMM.size)
    stats, report = (os.path.join(folder, "lf%d.%s" % (COMM.size, x)) for x in ("csv", "json"))
    nc = os.path.join(folder, "lf%d.nc" % COMM.size)  # a NetCDF copy: expressions name its variable, "data"
    volseg.convert(path, out=nc, force=True)
    counts = volseg.label_file(nc, var="data", out=out, mask_input=False, lo=0.3, hi=0.45, connectivity=6,
                               force=True, stats=stats, report=report, values=[nc + ":data"],
                               values_expr=["twice=data * 2"])
    one = volseg.label_file(path, out=out, mask_input=False, lo=0.3, hi=0.45, connectivity=6, force=True,
                            stats=stats + ".one.csv", values=path)
    assert counts["objects"] == one["objects"] > 1
    if COMM.rank == 0:
        labels = np.fromfile(out[:-5] + ".raw", dtype=np.uint32).reshape(DIMS)
        with open(stats) as f:
            rows = list(csv.DictReader(f))
        with open(stats + ".one.csv") as f:
            plain = list(csv.DictReader(f))
        assert len(rows) == len(plain) == counts["objects"]
        v = np.asarray(values, dtype=np.float64)
        for k in (0, len(rows) // 2, len(rows) - 1):
            inside = v[labels == k + 1]
            assert float(rows[k]["data_max"]) == pytest.approx(inside.max())
            assert float(rows[k]["data_sum"]) == pytest.approx(inside.sum(), rel=1e-6)
            assert float(rows[k]["twice_mean"]) == pytest.approx(2 * inside.mean(), rel=1e-6)
            assert float(plain[k]["value_min"]) == pytest.approx(inside.min())
        with open(report) as f:
            assert [x["name"] for x in json.load(f)["fields"]] == ["data", "twice"]
    with pytest.raises(volseg.Error, match="two fields are named v"):
        volseg.label_file(path, out=out, mask_input=False, lo=0.3, hi=0.45, force=True, stats=stats,
                          values=[path, path])


def test_segment_operators_equal_the_cli_and_otsu_is_chosen(volume):
    """seed=, open=, close=, fill_holes= and lo="otsu" give the command
    line's mask byte for byte, and the report says the number chosen."""
    path, values, folder = volume
    py_out, cli_out = os.path.join(folder, "ops%d.nhdr" % COMM.size), os.path.join(folder, "ops-cli.nhdr")
    report = volseg.segment(path, lo="otsu", hi=1, out=py_out, force=True, brick=(8, 10, 12), seed=(0.8, 1),
                            open=1, close=1, fill_holes=True)
    chosen = report["threshold"]["lo"]
    assert report["threshold"]["rules"] == {"lo": "otsu", "hi": None}
    assert report["pipeline"] == "operators"
    assert report["operators"]["seed"] == [0.8, 1.0] and report["operators"]["fill_holes"]
    assert values.min() < chosen < values.max()
    counts = volseg.label_file(path, out=os.path.join(folder, "ops-labels.nhdr"), mask_input=False, lo=chosen, hi=1,
                               seed=(0.8, 1), open=1, close=1, fill_holes=True, force=True)
    if COMM.rank == 0:
        proc = cli("segment", path, "--lo", "otsu", "--hi", "1", "--seed-lo", "0.8", "--seed-hi", "1", "--open", "1",
                   "--close", "1", "--fill-holes", "--out", cli_out, "--force", "--quiet", "--brick", "8,10,12")
        assert proc.returncode == 0, proc.stderr
        with open(py_out[:-5] + ".raw", "rb") as a, open(cli_out[:-5] + ".raw", "rb") as b:
            mask = a.read()
            assert mask == b.read()
        assert report["stats"]["in_range"] == sum(mask) == counts["foreground_voxels"]
        assert 0 < report["stats"]["in_range"] < np.count_nonzero(values >= chosen)
    with pytest.raises(volseg.Error, match="radius"):
        volseg.segment(path, lo=0.2, hi=1, out=os.path.join(folder, "bad.nhdr"), open=-1, force=True)


def test_convert_round_trip(volume):
    path, values, folder = volume
    out = os.path.join(folder, "v.nii")
    result = volseg.convert(path, out, force=True)
    assert result["output_format"] == "raw"
    with volseg.open(out) as vol:
        np.testing.assert_array_equal(vol.read((0, 0, 0), DIMS), values)


def test_bad_input_raises_on_every_rank(volume):
    _, _, folder = volume
    with pytest.raises(volseg.Error, match="No such file"):
        volseg.open(os.path.join(folder, "missing.nhdr"))
    with pytest.raises(volseg.Error, match="not C-contiguous"):
        volseg.threshold(np.zeros((4, 4, 4), np.float32)[:, ::2], 0, 1)
    with pytest.raises(volseg.Error, match="not a volseg type"):
        volseg.threshold(np.zeros(8, np.complex64), 0, 1)
    with pytest.raises(volseg.Error, match="byte order"):
        volseg.threshold(np.zeros(8, ">f4"), 0, 1)
    with pytest.raises(volseg.Error, match="above hi"):
        volseg.threshold(np.zeros(8, np.float32), 2, 1)
    with pytest.raises(TypeError, match="mpi4py communicator"):
        volseg.open("x.nhdr", comm="not a communicator")
    # a failure on the job's ranks is raised on each, and leaves no mask
    with pytest.raises(volseg.Error):
        volseg.segment(os.path.join(folder, "missing.nhdr"), lo=0, hi=1, out=os.path.join(folder, "none.nhdr"))
    assert not os.path.exists(os.path.join(folder, "none.nhdr"))


def test_histogram_equals_numpy(volume):
    """Exact counts over the volume's range, from a pass over it and, once a pyramid exists, from its tables."""
    path, values, folder = volume
    seen = []
    h = volseg.histogram(path, bins=50, progress=lambda done, total: seen.append((done, total)))
    if COMM.rank == 0:
        assert seen and seen[-1][0] == seen[-1][1]
    assert h.bins == 50 and h.edges.shape == (51,) and h.counts.dtype == np.uint64
    assert h.edges[0] == pytest.approx(values.min()) and h.edges[-1] == pytest.approx(values.max())
    reference, _ = np.histogram(values.astype(np.float64), bins=h.edges)
    np.testing.assert_array_equal(h.counts, reference)
    assert h.total == values.size
    lo, hi = h.edges[10], h.edges[20]
    voxels, exact = h.count(lo, hi)
    assert exact and voxels == reference[10:20].sum()
    if COMM.rank == 0:
        proc = cli("pyramid", path, "--bins", "50", "--force", "--quiet")
        assert proc.returncode == 0, proc.stderr
    COMM.Barrier()
    np.testing.assert_array_equal(volseg.histogram(path, bins=50).counts, reference)
    with pytest.raises(volseg.Error, match="at least one bin"):
        volseg.histogram(path, bins=0)


def test_histogram_of_integers_is_one_value_a_bin(volume):
    _, _, folder = volume
    path = os.path.join(folder, "i16.nhdr")
    values = (np.arange(6 * 7 * 8) % 37 - 5).astype(np.int16).reshape(6, 7, 8)
    values[0, 0, 0] = -999  # the fill value: not counted
    if COMM.rank == 0:
        values.tofile(os.path.join(folder, "i16.raw"))
        with open(path, "w") as f:
            f.write("NRRD0004\ntype: int16\ndimension: 3\nsizes: 8 7 6\nendian: little\nencoding: raw\n"
                    "data file: i16.raw\n_FillValue:=-999\n\n")
    COMM.Barrier()
    h = volseg.histogram(path)
    valid = values[values != -999]
    assert h.integers and h.bins == 37 and h.total == valid.size
    np.testing.assert_array_equal(h.counts, np.bincount(valid - valid.min(), minlength=37))
    assert h.count(0, 10) == (((valid >= 0) & (valid <= 10)).sum(), True)


@pytest.mark.parametrize("connectivity, structure", [(6, 1), (18, 2), (26, 3)])
def test_label_equals_scipy(connectivity, structure):
    ndimage = pytest.importorskip("scipy.ndimage")
    rng = np.random.default_rng(connectivity)
    mask = rng.random((40, 300, 37)) > 0.6  # past one brick of 256 along y: objects joined across bricks
    labels, table = volseg.label(mask, connectivity=connectivity)
    reference, count = ndimage.label(mask, ndimage.generate_binary_structure(3, structure))
    assert labels.dtype == np.uint32
    np.testing.assert_array_equal(labels, reference)
    assert len(table["id"]) == count
    np.testing.assert_array_equal(table["voxels"], np.bincount(reference.ravel())[1:])
    objects = ndimage.find_objects(reference)
    for i in (0, count // 2, count - 1):
        z, y, x = objects[i]
        assert (table["z_min"][i], table["y_max"][i], table["x_min"][i]) == (z.start, y.stop - 1, x.start)
    centroid = ndimage.center_of_mass(mask, reference, [1, count])
    np.testing.assert_allclose([table["centroid_z"][0], table["centroid_y"][0], table["centroid_x"][0]],
                               centroid[0])


def test_label_2d_min_voxels_and_bad_input():
    ndimage = pytest.importorskip("scipy.ndimage")
    image = np.zeros((20, 20), np.uint8)
    image[2:5, 2:5] = 1      # 9 voxels
    image[10, 10] = 1        # 1 voxel
    image[11, 11] = 1        # touches it by a corner
    labels, table = volseg.label(image, connectivity=8)
    assert labels.shape == image.shape and len(table["id"]) == 2 and "z_min" not in table
    np.testing.assert_array_equal(labels, ndimage.label(image, np.ones((3, 3)))[0])
    assert list(table["touches_boundary"]) == [False, False]  # a 2D mask's one plane is not a face
    labels, table = volseg.label(image, connectivity=4, min_voxels=2)
    assert list(table["voxels"]) == [9] and labels[10, 10] == 0 and labels.max() == 1
    labels, table = volseg.label(np.zeros((0, 5, 5), bool))  # as scipy: no voxel, no object
    assert labels.shape == (0, 5, 5) and len(table["id"]) == 0 and "centroid_z" in table
    with pytest.raises(volseg.Error, match="uint8 or bool"):
        volseg.label(np.zeros((4, 4, 4), np.float32))
    with pytest.raises(volseg.Error, match="2 or 3 dimensions"):
        volseg.label(np.zeros(4, np.uint8))
    with pytest.raises(volseg.Error, match="not C-contiguous"):
        volseg.label(np.zeros((4, 4, 4), np.uint8)[:, ::2])
    with pytest.raises(volseg.Error, match="connectivity"):
        volseg.label(np.zeros((4, 4, 4), np.uint8), connectivity=5)


def test_render_without_paraview_says_so(volume):
    if volseg._build.WITH_RENDER:
        pytest.skip("this build renders (tests/python/test_render_insitu.py)")
    with pytest.raises(volseg.Error, match="built without ParaView"):
        volseg.render(volume[0])


def test_coords_of_a_cf_file():
    """A NetCDF file with CF coordinate variables (netCDF4-python writes it):
    vol.coords gives them in z, y, x order with units and positive, and
    uniform ones set spacing and origin."""
    netCDF4 = pytest.importorskip("netCDF4")
    folder = shared_dir()
    path = os.path.join(folder, "cf.nc")
    depth = np.array([0.0, 10, 25, 50, 100])
    lat = np.linspace(-10, 10, 6)
    lon = np.arange(8) * 0.5 + 30
    if COMM.rank == 0:
        with netCDF4.Dataset(path, "w") as d:
            for name, values in (("depth", depth), ("lat", lat), ("lon", lon)):
                d.createDimension(name, len(values))
                v = d.createVariable(name, "f8", (name,))
                v[:] = values
            d["depth"].units, d["depth"].positive, d["lon"].units = "m", "down", "degrees_east"
            d.createVariable("T", "f4", ("depth", "lat", "lon"))[:] = np.zeros((5, 6, 8), np.float32)
    COMM.Barrier()
    with volseg.open(path) as vol:
        coords = vol.coords
        assert list(coords) == ["depth", "lat", "lon"]
        np.testing.assert_array_equal(coords["depth"][0], depth)
        assert coords["depth"][1] == {"units": "m", "positive": "down"}
        np.testing.assert_array_equal(coords["lon"][0], lon)
        assert coords["lon"][1] == {"units": "degrees_east"}
        assert vol.spacing == (0.5, 4.0, 1.0)  # x, y uniform; depth uneven: index spacing
        assert vol.origin == (30.0, -10.0, 0.0)
    COMM.Barrier()
    if COMM.rank == 0:
        shutil.rmtree(folder, ignore_errors=True)


def test_derived_fields_open_segment_and_label():
    """expr= and where= (the command line's --expr and --where): a field
    computed from a file's variables reads as numpy computes it (float32
    operands in float, a missing operand missing), segments and labels as
    numpy and scipy do; var= beside an expression is refused on every rank."""
    netCDF4 = pytest.importorskip("netCDF4")
    ndimage = pytest.importorskip("scipy.ndimage")
    folder = shared_dir()
    path = os.path.join(folder, "uv.nc")
    rng = np.random.default_rng(5)
    u = rng.normal(size=(6, 7, 9)).astype(np.float32)
    v = rng.normal(size=(6, 7, 9)).astype(np.float32)
    u[0, 0, :3] = -999.0
    if COMM.rank == 0:
        with netCDF4.Dataset(path, "w") as d:
            for name, n in zip("zyx", u.shape):
                d.createDimension(name, n)
            d.createVariable("u", "f4", ("z", "y", "x"), fill_value=-999.0)[:] = np.ma.masked_equal(u, -999.0)
            d.createVariable("v", "f4", ("z", "y", "x"))[:] = v
    COMM.Barrier()
    speed = np.sqrt(u * u + v * v)  # float32, as numpy computes float32 arrays
    speed[0, 0, :3] = np.nan
    with volseg.open(path, expr="sqrt(u*u + v*v)") as vol:
        assert vol.dtype == np.float32
        got = vol.read((0, 0, 0), u.shape)
    np.testing.assert_allclose(got, speed, rtol=1e-6, equal_nan=True)
    out = os.path.join(folder, "fast.nc")
    report = volseg.segment(path, 1, 2, out, expr="sqrt(u*u + v*v)", force=True)
    assert report["stats"]["in_range"] == int(((speed >= 1) & (speed <= 2)).sum())
    labels = os.path.join(folder, "where.nc")
    counts = volseg.label_file(path, labels, where="u > 0 && v > 0", mask_input=False, lo=1, hi=1, force=True)
    want, objects = ndimage.label((u > 0) & (v > 0) & (u != -999.0), structure=np.ones((3, 3, 3)))
    assert counts["objects"] == objects
    with pytest.raises(volseg.Error, match="give one of var and expr"):
        volseg.open(path, var="u", expr="u")
    # An operand from another file of the same shape (the command line's --operand).
    salt = os.path.join(folder, "salt.nc")
    if COMM.rank == 0:
        with netCDF4.Dataset(salt, "w") as d:
            for name, n in zip("zyx", u.shape):
                d.createDimension(name, n)
            d.createVariable("SALT", "f4", ("z", "y", "x"))[:] = v * 2
    COMM.Barrier()
    for operands in ({"s": (salt, "SALT")}, {"s": salt}):
        with volseg.open(path, expr="v - s", operands=operands) as vol:
            np.testing.assert_allclose(vol.read((0, 0, 0), u.shape), v - v * 2, rtol=1e-6)
    report = volseg.segment(path, 1, 1, out, where="s > v", operands={"s": salt}, force=True)
    assert report["stats"]["in_range"] == int((v * 2 > v).sum())
    with pytest.raises(volseg.Error, match="operands= reads variables of expr= or where="):
        volseg.open(path, var="u", operands={"s": salt})
    with pytest.raises(volseg.Error, match="has no variable q"):
        volseg.open(path, expr="u + v", operands={"q": salt})
    COMM.Barrier()
    if COMM.rank == 0:
        shutil.rmtree(folder, ignore_errors=True)
