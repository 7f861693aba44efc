# SPDX-License-Identifier: MIT
"""What the Python benchmark drivers share: the environment mpirun needs
here (as root, oversubscribed, no single-copy shared memory in containers),
and files or Zarr folders read into the page cache, sized and removed."""
import os
import shutil

MPI_ENV = {"OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1",
           "OMPI_MCA_rmaps_base_oversubscribe": "1", "OMPI_MCA_btl_vader_single_copy_mechanism": "none"}


def files_of(path):
    """A file, or every file below a folder."""
    if os.path.isdir(path):
        return [os.path.join(d, f) for d, _, names in os.walk(path) for f in names]
    return [path]


def warm(path):
    """Reads path (every file of a folder) once, so runs after find it in the page cache."""
    for name in files_of(path):
        with open(name, "rb") as f:
            while f.read(1 << 24):
                pass


def size_of(path):
    return sum(os.path.getsize(name) for name in files_of(path))


def remove(path):
    if os.path.isdir(path):
        shutil.rmtree(path)
    elif os.path.exists(path):
        os.remove(path)
