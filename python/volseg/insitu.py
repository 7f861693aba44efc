# SPDX-License-Identifier: MIT
"""volseg's in-situ hook for a simulation in Python: the library a C, C++ or
Fortran simulation links (libvolseg_insitu), with the same options.

    from mpi4py import MPI
    import volseg.insitu
    with volseg.insitu.Hook(MPI.COMM_WORLD, "--lo 0.2 --hi 1 --every 10 --out masks_%d.nc") as hook:
        for step in range(steps):
            ...  # advance this rank's block
            hook.publish(step=step, time=t, global_dims=(nz, ny, nx), box=((z0, y0, x0), (bz, by, bx)),
                         values=block_with_ghosts, ghost=g)

publish() and finalize() are collective; a failed call raises volseg.Error
on every rank, and the hook then does nothing more. See
examples/python/gray_scott.py and docs/python.md.
"""
from mpi4py import MPI  # noqa: F401  (initialises MPI before the extension)

from . import _volseg  # noqa: F401  (volseg.Error, which the hook raises)
from ._insitu import Hook  # noqa: F401

__all__ = ["Hook"]
