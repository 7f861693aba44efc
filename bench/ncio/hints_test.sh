#!/bin/sh
# volseg-ncio's --hint: a two-phase hint is accepted by a launch of other
# methods alone (volseg-bench bar launches POSIX and MPI-IO by themselves),
# and a name the two-phase engine does not know is refused with one line.
# usage: hints_test.sh VOLSEG_NCIO SCRATCH_DIR
set -u
exe=$1; dir=$2
mkdir -p "$dir" || exit 1
run() { "$exe" --dir "$dir" --reps 1 --pause-ms 0 --case nc-nc --count 16 --size 8 --spacing 16 --method posix "$@"; }
run --hint cb_nodes=1 --hint direct_write=false > /dev/null || { echo "FAIL: posix with two-phase hints was refused"; exit 1; }
out=$(run --hint bogus=1 2>&1) && { echo "FAIL: an unknown hint was accepted"; exit 1; }
echo "$out" | grep -q "unknown hint 'bogus'" || { echo "FAIL: the refusal does not name the hint: $out"; exit 1; }
echo "ok"
