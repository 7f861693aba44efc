# Run on a lent machine from the checkout root, after pack.sh, with setup.sh and cc3d.tar.xz copied into .devpkg/
# (the device tool's notes). cc3d.tar.xz: the cc3d package folder for that machine's Python (3.12 there):
#   pip download connected-components-3d --python-version 3.12 --only-binary=:all: --no-deps \
#     --platform manylinux_2_28_x86_64 -d W && unzip W/*.whl 'cc3d/*' -d W && tar -C W -cJf .devpkg/cc3d.tar.xz cc3d
# Per-core labelling on the study's 768^3 mask (density 0.3, seed 7): cc3d file to file (read the u8 mask,
# label, write u32 labels, in one process) against `volseg label` on 1 rank, at 6 and 26; labels compared.
set -u
source .devpkg/setup.sh || exit 1
mkdir -p /dev/shm/js /dev/shm/cc3d && cd /dev/shm/js || exit 1
tar -C /dev/shm/cc3d -xJf "$OLDPWD/.devpkg/cc3d.tar.xz" || exit 1
[ -e mask.nhdr ] || python3 -c "import sys; sys.path.insert(0, '$OLDPWD/bench'); import job_scaling as j; j.write_mask('/dev/shm/js/mask.nhdr', 768, 0.3)" || exit 1
python3 --version; python3 -c "import numpy; print('numpy', numpy.__version__)"
for c in 6 26; do
  for round in 1 2; do
    PYTHONPATH=/dev/shm/cc3d python3 -c "
import time, numpy as np, cc3d
t0 = time.perf_counter(); m = np.fromfile('mask.raw', np.uint8).reshape(768, 768, 768); t1 = time.perf_counter()
l, n = cc3d.connected_components(m, connectivity=$c, out_dtype=np.uint32, return_N=True); t2 = time.perf_counter()
l.tofile('cc3d.u32'); t3 = time.perf_counter()
print('cc3d conn $c round $round: %d objects, file to file %.2f s (compute %.2f)' % (n, t3 - t0, t2 - t1))" 2>&1 | tee -a "$OUT/percore.txt"
    s=$(now); mpi 1 $V label mask.nhdr --mask-input --connectivity $c --out l.nhdr --force --quiet --report r.json || exit 1; e=$(now)
    python3 -c "
import json; r = json.load(open('r.json')); x = r['ranks'][0]
print('volseg conn $c round $round: %d objects, job %.2f s (label %.2f merge %.2f write %.2f), whole process %s s' % (r['objects'], r['seconds'], x['label_s'], x['merge_s'], x['write_s'], '$(sub $e $s)'))" | tee -a "$OUT/percore.txt"
  done
  cmp -s cc3d.u32 l.raw && echo "conn $c: labels identical to cc3d's" | tee -a "$OUT/percore.txt" || echo "conn $c: labels DIFFER from cc3d's" | tee -a "$OUT/percore.txt"
done
rm -f cc3d.u32
