# Run on a lent machine from the checkout root, after pack.sh and with setup.sh copied into .devpkg/
# (the device tool's notes): run with carry [".devpkg"], command "bash bench/device/NAME.sh".
# The 16-core scaling study: segment, label (6, 26) and pyramid at 1-16 ranks, data in /dev/shm.
# JOBS and ROUNDS choose the jobs (bench/job_scaling.py --jobs) and the rounds; RANKS the rank counts.
set -u
source .devpkg/setup.sh || exit 1
nproc; grep -m1 "model name" /proc/cpuinfo; free -g | head -2
$V info --help | head -1
mkdir -p "$OUT/results"
timeout "${LIMIT:-540}" python3 bench/job_scaling.py --ranks "${RANKS:-1,2,4,8,16}" --rounds "${ROUNDS:-2}" \
  --jobs "${JOBS:-segment,label 6,label 26,pyramid}" --dir /dev/shm/js --out "$OUT/results" \
  --volseg "$V" --launcher "/opt/volseg/root/bin/mpirun -np {n} --bind-to core --map-by core" 2>&1 | tee "$OUT/log.txt"
echo "rc ${PIPESTATUS[0]}"
