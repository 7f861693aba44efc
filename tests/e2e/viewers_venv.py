# SPDX-License-Identifier: MIT
"""The viewers' own Python libraries (ome-zarr, cloud-volume, trimesh; zmesh
for the mesh benchmark), which Debian does not package: a virtual
environment over Debian's Python (its numpy, netCDF4 and h5py stay visible),
made once and reused, at $VOLSEG_VIEWERS_VENV or in the temporary folder."""
import os
import subprocess
import sys
import tempfile

PACKAGES = ["ome-zarr", "cloud-volume", "trimesh"]
MODULES = ["ome_zarr", "cloudvolume", "trimesh"]


def venv_path():
    return os.environ.get("VOLSEG_VIEWERS_VENV") or os.path.join(
        tempfile.gettempdir(), "volseg-viewers-venv-%d" % os.getuid())


def ensure_venv(packages=PACKAGES, modules=MODULES):
    """The venv's python, with packages installed (pip, from PyPI, once)."""
    venv = venv_path()
    python = os.path.join(venv, "bin", "python")
    probe = "import " + ", ".join(modules)
    if os.path.exists(python) and subprocess.run([python, "-c", probe], capture_output=True).returncode == 0:
        return python
    print("viewers: installing %s into %s" % (" ".join(packages), venv), file=sys.stderr)
    if not os.path.exists(python):
        subprocess.run(["/usr/bin/python3", "-m", "venv", "--system-site-packages", venv], check=True)
    # numpy stays at 1.x: Debian's scipy, scikit-image, h5py and netCDF4,
    # visible in the venv, are built against numpy 1 and fail to import under
    # numpy 2 (dask imports scipy.sparse), and zarr 3 wants numpy >= 1.25,
    # newer than Debian's. A pip numpy 1.26 serves both. First, so that a venv
    # that got numpy 2 from an earlier install is mended.
    constraints = os.path.join(venv, "volseg-constraints.txt")
    with open(constraints, "w") as f:
        f.write("numpy<2\n")
    pip = [python, "-m", "pip", "install", "-q", "-c", constraints]
    subprocess.run(pip + ["numpy>=1.25,<2"], check=True, timeout=900)
    # One package at a time: together, ome-zarr's s3fs (aiobotocore pins
    # botocore) and cloud-volume's boto3 send pip's resolver backtracking
    # through botocore releases for many minutes; one after the other, the
    # second moves botocore on, which s3 access alone would need.
    for package in packages:
        subprocess.run(pip + [package], check=True, timeout=900)
    subprocess.run([python, "-c", probe], check=True)
    return python


def reexec_in_venv(modules=MODULES, packages=PACKAGES):
    """Runs this script again under the venv's python unless it already has
    the modules."""
    try:
        for name in modules:
            __import__(name)
        return
    except ImportError:
        pass
    python = ensure_venv(packages, modules)
    os.execv(python, [python] + sys.argv)
