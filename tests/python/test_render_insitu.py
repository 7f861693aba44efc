# SPDX-License-Identifier: MIT
"""volseg.render and volseg.insitu.Hook (python/), under `mpirun -np N
xvfb-run python3 -m pytest` (the core build: no render, no Xvfb): every rank
runs every test.
render is checked against the command line's PNG of the same view (on one
rank, so the N-rank IceT composite is compared with a 1-rank image, within
the e2e render tests' tolerance); the hook's masks against numpy's
threshold of the Gray-Scott field the example simulation published."""
import os
import shutil
import sys
import tempfile

import numpy as np
import pytest
from mpi4py import MPI

import volseg

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "examples", "python"))
import gray_scott  # noqa: E402

from test_api import cli, shared_dir  # noqa: E402

COMM = MPI.COMM_WORLD
DIMS = (24, 30, 36)


@pytest.fixture(scope="module")
def folder():
    path = shared_dir()
    yield path
    COMM.Barrier()
    if COMM.rank == 0:
        shutil.rmtree(path, ignore_errors=True)


needs_render = pytest.mark.skipif(not volseg._build.WITH_RENDER, reason="built without ParaView (test_api checks the refusal)")


@needs_render
def test_render_equals_the_cli_png(folder):
    import matplotlib.image as mpimg

    volume = os.path.join(folder, "v.nhdr")
    if COMM.rank == 0:
        proc = cli("generate", volume, "--field", "smooth", "--dims", "%d,%d,%d" % DIMS, "--quiet")
        assert proc.returncode == 0, proc.stderr
    COMM.Barrier()
    view = dict(lo=0.3, hi=0.45, size=(200, 160), camera=(40, 25, 1.2), level=0, annotations=False)
    written = os.path.join(folder, "py.png")
    image = volseg.render(volume, mode="volume,mask", out=written, **view)
    if COMM.rank != 0:
        assert image is None
        return
    assert image.shape == (160, 200, 3) and image.dtype == np.uint8
    reference = os.path.join(folder, "cli.png")
    proc = cli("render", volume, "--out", reference, "--mode", "volume,mask", "--lo", "0.3", "--hi", "0.45",
               "--size", "200x160", "--camera", "40,25,1.2", "--level", "0", "--no-annotations", "--quiet")
    assert proc.returncode == 0, proc.stderr
    ref = (mpimg.imread(reference)[..., :3] * 255).round()
    # out= wrote the very image returned
    np.testing.assert_array_equal((mpimg.imread(written)[..., :3] * 255).round(), image)
    difference = np.abs(ref - image.astype(float)).max(axis=2)
    assert difference.mean() <= 3.0, "mean difference %.3f" % difference.mean()
    assert (difference > 24).mean() <= 0.02
    assert (image.max(axis=2) > 40).mean() > 0.05, "nothing drawn"


@needs_render
def test_render_bad_input(folder):
    with pytest.raises(volseg.Error, match="No such file|no such file"):
        volseg.render(os.path.join(folder, "missing.nhdr"))
    with pytest.raises(volseg.Error, match="size"):
        volseg.render(os.path.join(folder, "missing.nhdr"), size=(10,))


def test_gray_scott_masks_equal_numpy(folder):
    """The example simulation publishes V every step; the hook writes a mask every 10th; each rank's block of
    each mask equals numpy's threshold of the field it published."""
    pattern = os.path.join(folder, "gs_%03d.nhdr")
    lo, hi = 0.2, 1.0
    kept, box = gray_scott.simulate(COMM, n=24, steps=30, keep=(0, 10, 20, 30),
                                    hook_options="--lo %g --hi %g --every 10 --out %s" % (lo, hi, pattern))
    (z0, _, _), (nz, ny, nx) = box
    total = 0
    for step, field in kept.items():
        with volseg.open(pattern % step) as vol:
            mask = vol.read((z0, 0, 0), (nz, ny, nx))
        np.testing.assert_array_equal(mask, ((field >= lo) & (field <= hi)).astype(np.uint8), "step %d" % step)
        total += int(mask.sum())
    assert COMM.allreduce(total) > 0, "the simulation never reached the range: the check would be empty"


def test_insitu_expression_over_published_arrays(folder):
    """--where and --expr over the field and more published arrays (named as
    published; the field by --var): each rank's block of each mask equals
    numpy's, a NaN in any operand leaves its point out; an unknown name is
    refused on every rank with its column and the names published."""
    shape = (10, 12, 14)
    rng = np.random.default_rng(5)
    v = rng.random(shape, dtype=np.float32)
    u = rng.random(shape)  # float64: the expression is computed in double, as numpy does
    u[3, 4, 5] = np.nan
    z0, nz = gray_scott.slab(shape[0], COMM.rank, COMM.size)
    box = ((z0, 0, 0), (nz,) + shape[1:])
    mine = lambda a: np.ascontiguousarray(a[z0:z0 + nz])  # noqa: E731
    cases = {
        "where": ("--var v --where 'v > 0.2 && u < 0.5'", (v > 0.2) & (u < 0.5)),
        "expr": ("--var v --expr 'sqrt(u*u + v*v)' --lo 0.5 --hi 1",
                 (lambda m: (m >= 0.5) & (m <= 1))(np.sqrt(u * u + v.astype(np.float64) ** 2).astype(np.float32))),
    }
    for name, (options, want) in cases.items():
        pattern = os.path.join(folder, "expr_%s_%%d.nhdr" % name)
        with volseg.insitu.Hook(COMM, "%s --out %s" % (options, pattern)) as hook:
            hook.publish(step=0, time=0.0, global_dims=shape, box=box, values=mine(v), arrays={"u": mine(u)})
        COMM.Barrier()
        with volseg.open(pattern % 0) as vol:
            mask = vol.read((z0, 0, 0), (nz,) + shape[1:])
        np.testing.assert_array_equal(mask, mine(want).astype(np.uint8), name)
        assert COMM.allreduce(int(mask.sum())) > 0 and not want[3, 4, 5], name  # the NaN is out, the mask not empty
    with volseg.insitu.Hook(COMM, "--var v --where 'v > w'") as hook:
        with pytest.raises(volseg.Error, match=r"unknown variable 'w' at column 5 \(the simulation publishes v, u\)"):
            hook.publish(step=0, time=0.0, global_dims=shape, box=box, values=mine(v), arrays={"u": mine(u)})
    with pytest.raises(volseg.Error, match=r"--expr 'sqrt \(u\)': write sqrt\(\.\.\.\) with no space"):
        volseg.insitu.Hook(COMM, "--expr 'sqrt (u)' --lo 0 --hi 1")


def test_hook_bad_input(folder):
    with pytest.raises(volseg.Error, match="unknown in-situ option '--bogus'"):
        volseg.insitu.Hook(COMM, "--bogus 3")
    z0, nz = gray_scott.slab(8, COMM.rank, COMM.size)
    with volseg.insitu.Hook(COMM, "--lo 0 --hi 1 --out %s" % os.path.join(folder, "bad_%d.nhdr")) as hook:
        with pytest.raises(volseg.Error, match="axis 0 has"):  # checked on each rank before the collective call
            hook.publish(step=0, time=0, global_dims=(8, 8, 8), box=((z0, 0, 0), (nz, 8, 8)),
                         values=np.zeros((nz + 3, 8, 8), np.float32))
        # wrong on one rank only: raised on every rank (agreed before the hook's collective call), naming it
        wrong = COMM.size - 1
        with pytest.raises(volseg.Error, match="axis 1 has" if COMM.rank == wrong else "rank %d: .*axis 1 has" % wrong):
            hook.publish(step=0, time=0, global_dims=(8, 8, 8), box=((z0, 0, 0), (nz, 8, 8)),
                         values=np.zeros((nz, 9 if COMM.rank == wrong else 8, 8), np.float32))
        with pytest.raises(volseg.Error, match="not a type the hook takes"):
            hook.publish(step=0, time=0, global_dims=(8, 8, 8), box=((z0, 0, 0), (nz, 8, 8)),
                         values=np.zeros((nz, 8, 8), np.complex64))
    with pytest.raises(volseg.Error, match="finalized"):
        hook.publish(step=1, time=0, global_dims=(8, 8, 8), box=((z0, 0, 0), (nz, 8, 8)),
                     values=np.zeros((nz, 8, 8), np.float32))


def test_insitu_track_equals_the_batch_one(folder):
    """--label --track in situ (each rank publishes its slab of each step)
    writes the same track and per-step tables as `volseg label --time all
    --track` over a file holding the same steps."""
    netCDF4 = pytest.importorskip("netCDF4")
    ndimage = pytest.importorskip("scipy.ndimage")
    shape, steps, lo, hi = (12, 14, 16), 4, 0.15, 10.0
    rng = np.random.default_rng(21)
    base = ndimage.gaussian_filter(rng.normal(size=shape), 1.5) * 4
    fields = [(np.roll(base, t, axis=2) + 0.1 * rng.normal(size=shape)).astype(np.float32) for t in range(steps)]
    path = os.path.join(folder, "track.nc")
    if COMM.rank == 0:
        with netCDF4.Dataset(path, "w") as d:
            d.createDimension("time", None)
            for name, n in zip("zyx", shape):
                d.createDimension(name, n)
            d.createVariable("u", "f4", ("time", "z", "y", "x"))[:] = np.stack(fields)
        proc = cli("label", path, "--var", "u", "--time", "all", "--lo", str(lo), "--hi", str(hi), "--out",
                   os.path.join(folder, "batch_%d.nc"), "--track", os.path.join(folder, "batch.csv"), "--no-plot",
                   "--quiet")
        assert proc.returncode == 0, proc.stderr
    COMM.Barrier()
    z0, nz = gray_scott.slab(shape[0], COMM.rank, COMM.size)
    insitu = os.path.join(folder, "insitu.csv")
    with volseg.insitu.Hook(COMM, "--lo %g --hi %g --label --track %s" % (lo, hi, insitu)) as hook:
        for t in range(steps):
            hook.publish(step=t, time=float(t), global_dims=shape, box=((z0, 0, 0), (nz,) + shape[1:]),
                         values=np.ascontiguousarray(fields[t][z0:z0 + nz]))
    COMM.Barrier()
    if COMM.rank == 0:
        for name in ("%s.csv", "%s.steps.csv"):
            with open(os.path.join(folder, name % "batch")) as f:
                batch = f.read()
            with open(os.path.join(folder, name % "insitu")) as f:
                assert f.read() == batch, name
        assert batch.count("\n") == steps + 1 and "0,0,0,0,0" in batch.splitlines()[1]


def test_insitu_off_the_critical_path_equals_synchronous(folder):
    """--async (a helper thread per rank; mpi4py initialises MPI with
    MPI_THREAD_MULTIPLE) writes the synchronous hook's masks and track, byte
    for byte. (--analysis-ranks from Python: tests/e2e/test_insitu_offload.py,
    a process each, as Catalyst takes one communicator a process.)"""
    options = "--lo 0.2 --hi 1 --every 4 --label --track %s/%s.csv --out %s/%s_%%04d.nhdr --force"
    modes = {"sync": "", "async": "--async --queue 3"}
    for name, extra in modes.items():
        gray_scott.simulate(COMM, n=24, steps=12, hook_options=options % (folder, name, folder, name) + " " + extra)
    COMM.Barrier()
    if COMM.rank != 0:
        return
    for name in modes:
        for step in (0, 4, 8, 12):
            with open(os.path.join(folder, "sync_%04d.raw" % step), "rb") as f:
                reference = f.read()
            with open(os.path.join(folder, "%s_%04d.raw" % (name, step)), "rb") as f:
                assert f.read() == reference, (name, step)
        with open(os.path.join(folder, "%s.csv" % name)) as f, open(os.path.join(folder, "sync.csv")) as g:
            assert f.read() == g.read(), name
    assert sum(reference) > 0
