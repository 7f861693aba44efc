# Run on a lent machine from the checkout root (see percore.sh for what .devpkg/ must hold): the per-core
# comparison with cc3d, label 6 and 26 at 1 and 16 ranks with their phases, then the label study at 1-16 ranks.
set -u
FORMATS="nhdr zarr" bash bench/device/label16.sh
bash bench/device/percore.sh
JOBS="${JOBS:-label 6,label 26}" LIMIT="${LIMIT:-300}" bash bench/device/study.sh
