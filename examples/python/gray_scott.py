# SPDX-License-Identifier: MIT
"""A Gray-Scott reaction-diffusion simulation in numpy, split into slabs of
z over the ranks, that hands its field to volseg's in-situ hook: the masks
lo <= v <= hi are written every few steps while it runs (docs/python.md).

    mpirun -np 4 python3 examples/python/gray_scott.py --n 64 --steps 200 \\
        --hook "--lo 0.2 --hi 1 --every 50 --out masks/mask_%06d.nhdr --stats masks/series.csv"

The model is volseg-sim's (Pearson's: U + 2V -> 3V, V fed at F and killed
at F + k; diffusion by the 7-point Laplacian, periodic in x and y, the z
faces closed), with the same numbers by default.
"""
import argparse

import numpy as np
from mpi4py import MPI

import volseg.insitu


def slab(n, rank, size):
    """This rank's planes of z: [z0, z0 + nz)."""
    z0 = n * rank // size
    return z0, n * (rank + 1) // size - z0


def exchange(comm, a):
    """Fills a's ghost planes (a[0], a[-1]) from the neighbouring ranks; the
    grid's own z faces mirror their neighbour plane (no flux)."""
    up, down = comm.rank + 1, comm.rank - 1
    if comm.size > 1:
        reqs = []
        if down >= 0:
            reqs += [comm.Isend(np.ascontiguousarray(a[1]), down, 0), comm.Irecv(a[0], down, 1)]
        if up < comm.size:
            reqs += [comm.Isend(np.ascontiguousarray(a[-2]), up, 1), comm.Irecv(a[-1], up, 0)]
        MPI.Request.Waitall(reqs)
    if down < 0:
        a[0] = a[1]
    if up >= comm.size:
        a[-1] = a[-2]


def laplacian(a):
    """Of the interior planes of a (ghost planes in z; periodic in y and x)."""
    c = a[1:-1]
    return (a[:-2] + a[2:] + np.roll(c, 1, 1) + np.roll(c, -1, 1) + np.roll(c, 1, 2) + np.roll(c, -1, 2) - 6 * c)


def simulate(comm, n=48, steps=100, hook_options=None, keep=(), du=0.16, dv=0.08, feed=0.035, kill=0.060, dt=1.0,
             seed=7):
    """Runs the model, publishing V to a hook made with hook_options (every
    step; the hook's --every picks). Returns {step: this rank's V} for the
    steps in keep, and this rank's box ((z0, 0, 0), (nz, n, n)); on an
    analysis rank (the hook's --analysis-ranks K), which never simulates,
    ({}, None)."""
    hook = volseg.insitu.Hook(comm, hook_options) if hook_options else None
    if hook and hook.analysis_rank:
        return {}, None  # it has served the simulation's steps
    if hook:
        comm = hook.simulation_comm  # comm's ranks, or its first N-K
    if n < 16:
        raise ValueError(f"n={n}: the seeds need a grid of at least 16 points a side")
    if comm.size > n:
        raise ValueError(f"{comm.size} ranks for {n} planes: at most one rank a plane")
    z0, nz = slab(n, comm.rank, comm.size)
    u = np.ones((nz + 2, n, n))
    v = np.zeros((nz + 2, n, n))
    # Seeds: the same cubes of V on every rank count, from one generator.
    rng = np.random.default_rng(seed)
    for _ in range(max(1, n // 8)):
        c = rng.integers(4, n - 4, size=3)
        lo, hi = c - 3, c + 3
        zl, zh = max(lo[0], z0), min(hi[0], z0 + nz)
        if zl < zh:
            u[1 + zl - z0:1 + zh - z0, lo[1]:hi[1], lo[2]:hi[2]] = 0.5
            v[1 + zl - z0:1 + zh - z0, lo[1]:hi[1], lo[2]:hi[2]] = 0.25
    box = ((z0, 0, 0), (nz, n, n))
    kept = {}
    try:
        for step in range(steps + 1):
            if step > 0:
                exchange(comm, u)
                exchange(comm, v)
                uvv = u[1:-1] * v[1:-1] ** 2
                u[1:-1] += dt * (du * laplacian(u) - uvv + feed * (1 - u[1:-1]))
                v[1:-1] += dt * (dv * laplacian(v) + uvv - (feed + kill) * v[1:-1])
            exchange(comm, v)  # the ghost planes the hook is given
            if hook:
                # The hook's ghost convention (VTK's): none beyond the grid's faces.
                first = 0 if z0 > 0 else 1
                last = nz + 2 if z0 + nz < n else nz + 1
                hook.publish(step=step, time=step * dt, global_dims=(n, n, n), box=box,
                             values=np.ascontiguousarray(v[first:last], dtype=np.float32), ghost=1)
            if step in keep:
                kept[step] = v[1:-1].astype(np.float32)
        if hook:
            hook.finalize()
    finally:
        del hook
    return kept, box


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=48, help="grid points per axis")
    parser.add_argument("--steps", type=int, default=100)
    parser.add_argument("--hook", default="--lo 0.2 --hi 1 --every 25 --out gs_masks/mask_%06d.nhdr --force",
                        help="the in-situ hook's options (volseg-sim --insitu-help)")
    args = parser.parse_args()
    comm = MPI.COMM_WORLD
    simulate(comm, args.n, args.steps, args.hook)
    if comm.rank == 0:
        print(f"gray_scott: {args.steps} steps of {args.n}^3 on {comm.size} ranks, hook: {args.hook}")


if __name__ == "__main__":
    main()
