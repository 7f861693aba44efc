#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Installs every Debian package volseg needs (docs/dependencies.md lists them).
# Idempotent: packages already present are not touched, and apt-get runs
# only when something is missing.
set -euo pipefail

packages=(
  # build; clang-format (14) for scripts/check-style.sh
  cmake ninja-build g++ pkg-config ccache clang-format
  # MPI and parallel I/O libraries (all built against OpenMPI)
  libopenmpi-dev openmpi-bin
  libpnetcdf-dev pnetcdf-bin
  libnetcdf-pnetcdf-dev libhdf5-mpi-dev
  # ParaView SDK (VTK, IceT, Catalyst) and Qt5
  paraview-dev python3-paraview libqt5opengl5-dev libglew-dev qtbase5-dev
  libxml2-dev libboost-dev
  # the SDK's vtkIOFFMPEG (render --movie) finds FFmpeg's headers when configured
  libavformat-dev libavcodec-dev libavutil-dev libswscale-dev
  # tests and benchmarks
  libgtest-dev libgmock-dev libbenchmark-dev
  # headless display, checking tools, Python for plots and independent checks
  xvfb xauth netcdf-bin hdf5-tools
  python3-numpy python3-netcdf4 python3-h5py python3-matplotlib
  # connected components: scipy.ndimage.label as the reference, the Colin27 MRI
  python3-scipy mricron-data python3-venv
  # the operators' references: binary_opening with ball(R), threshold_otsu, threshold_multiotsu
  python3-skimage
  # real data of docs/gallery.md and tests: the Levitus climatology (CF coordinates)
  ferret-datasets
  # libraries used by the code
  libcli11-dev nlohmann-json3-dev liburing-dev libmuparser-dev
  # Zarr's codecs, and zarr-python to write and read stores in tests
  libblosc-dev libzstd-dev zlib1g-dev python3-zarr python3-numcodecs
  # nibabel and tifffile write and read the NIfTI and TIFF files of tests
  python3-nibabel python3-tifffile
  # the Python API (python/): pybind11 over the libraries, mpi4py's communicators, pytest, and
  # nbconvert with a kernel to execute docs/notebooks/quickstart.ipynb
  pybind11-dev python3-mpi4py python3-pytest
  python3-nbconvert jupyter-nbconvert python3-ipykernel
  # TIFF reading; VTK image data's LZ4 and LZMA blocks
  libtiff-dev libtiff-tools liblz4-dev liblzma-dev
  # measurement
  time fio stress-ng
  # volseg web: Boost.Beast (libboost-dev, above) serves the page; libjpeg encodes the streamed
  # frames; the page is tested in headless Chromium driven by Selenium
  libjpeg-dev chromium chromium-driver python3-selenium
  # its launchers' tests: Ruby's ERB renders the Open OnDemand templates, PyYAML reads them
  ruby python3-yaml
  # fuzzing (VOLSEG_FUZZ: libFuzzer targets built with clang)
  clang-14 libfuzzer-14-dev libclang-rt-14-dev
)

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#packages[@]} packages present"
  exit 0
fi

echo "install-deps: installing ${#missing[@]} missing packages: ${missing[*]}"
sudo_cmd=()
if [ "$(id -u)" -ne 0 ]; then sudo_cmd=(sudo); fi
export DEBIAN_FRONTEND=noninteractive
"${sudo_cmd[@]}" apt-get update -q
"${sudo_cmd[@]}" apt-get install -y -q --no-install-recommends "${missing[@]}"
echo "install-deps: done"
