# Run on a lent machine from the checkout root, after pack.sh and with setup.sh copied into .devpkg/
# (the device tool's notes): run with carry [".devpkg"], command "bash bench/device/NAME.sh".
# label 6 and 26 on the 768^3 mask of the study (seed 7), 1 and 16 ranks, phases per rank from the report;
# FORMATS (default "nhdr") names the label files' formats (nhdr zarr); the start-up of an empty job beside them.
set -u
source .devpkg/setup.sh || exit 1
mkdir -p /dev/shm/js && cd /dev/shm/js || exit 1
[ -e mask.nhdr ] || python3 -c "import sys; sys.path.insert(0, '$OLDPWD/bench'); import job_scaling as j; j.write_mask('/dev/shm/js/mask.nhdr', 768, 0.3)" || exit 1
for n in 1 16; do s=$(now); mpi $n $V info mask.nhdr > /dev/null || exit 1; e=$(now); echo "start-up: volseg info on $n rank(s), whole process $(sub $e $s) s" | tee -a "$OUT/label16.txt"; done
for f in ${FORMATS:-nhdr}; do for c in 6 26; do for n in 1 16; do
  rm -rf l.zarr; s=$(now); mpi $n $V label mask.nhdr --mask-input --connectivity $c --out l.$f --force --quiet --report r.json || exit 1; e=$(now)
  python3 -c "
import json;r=json.load(open('r.json'));x=r['ranks'];print('$f conn $c ranks $n whole %s s; job %.2f s; label %.2f merge %.2f write %.2f; rss rank0 %d MiB, max %d MiB' % ('$(sub $e $s)', r['seconds'], max(t['label_s'] for t in x), max(t['merge_s'] for t in x), max(t['write_s'] for t in x), x[0]['max_rss_bytes']>>20, max(t['max_rss_bytes'] for t in x)>>20))" | tee -a "$OUT/label16.txt"
done; done; done
