# Run on a lent machine from the checkout root (see percore.sh for what .devpkg/ must hold): the 16-core
# label study to Zarr. Label the study's 768^3 random mask (density 0.3, seed 7) at 6 and 26 to a Zarr output:
# phases at 1 and 16 ranks, cc3d per core on the same mask, then the 1-16 rank study as whole processes
# (bar: 16 ranks >= 10x 1 rank, and >= 1.0x cc3d per core).
set -u
FORMATS="zarr" bash bench/device/label16.sh
bash bench/device/percore.sh
JOBS="${JOBS:-label 6 zarr,label 26 zarr}" LIMIT="${LIMIT:-300}" bash bench/device/study.sh
