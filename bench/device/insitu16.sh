# Run on a lent machine from the checkout root, after pack.sh (PROGRAMS="build/app/cli/volseg
# build/app/insitu/volseg-sim") and with setup.sh copied into .devpkg/ (the device tool's notes):
# carry [".devpkg"], command "bash bench/device/insitu16.sh".
# The 16-core study of in situ off the critical path: Gray-Scott at GRID (default 768,512,512: 16 slabs of 48x512x512 doubles on
# 16 ranks) for STEPS steps, the full pipeline (threshold, statistics, labels, mask writes to /dev/shm) every
# step: no hook on 16 and on 12 ranks, the synchronous hook on 16, and 12 simulation + 4 analysis ranks
# (--analysis-ranks 4, with and without --borrow), the same grid. Wall time from volseg-sim's report.
set -u
source .devpkg/setup.sh || exit 1
SIM=/opt/volseg/root/bin/volseg-sim
GRID=${GRID:-768,512,512}
STEPS=${STEPS:-30}
mkdir -p /dev/shm/is && cd /dev/shm/is || exit 1
hook="--insitu --lo 0.1 --hi 1 --label --stats stats.csv --out masks/m_%04d.nhdr --force"
run() {  # name ranks args...
  local name=$1 n=$2; shift 2
  rm -rf masks; sync
  mpi "$n" "$SIM" --dims "$GRID" --steps "$STEPS" --quiet --report "$name.json" "$@" 2> "$name.err" || { cat "$name.err"; exit 1; }
  python3 -c "
import json; r=json.load(open('$name.json')); h=r.get('hand_off', {})
print('%-22s ranks %2d wall %.2f s, simulation %.2f s, hook %.2f s, hand-off %.2f ms/step' % ('$name', $n,
      r['wall_seconds'], r['simulate_seconds'], r['hook_seconds'], 1e3 * h.get('seconds', 0) / max(1, h.get('steps', 1))))
" | tee -a "$OUT/insitu16.txt"
}
for k in 1 2 3; do
  run base16 16
  run base12 12
  run sync16 16 $hook
  run ranks12+4 16 $hook --analysis-ranks 4
  run ranks12+4-borrow 16 $hook --analysis-ranks 4 --borrow
done
