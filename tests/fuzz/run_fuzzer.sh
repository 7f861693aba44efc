#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# run_fuzzer.sh MODE FUZZER CORPUS WORK AMOUNT DICT [LIBFUZZER_OPTION...]
#   MODE ci:   replays every input of the seed corpus CORPUS, then runs a
#              campaign of AMOUNT executions from a fixed seed ($VOLSEG_FUZZ_SEED,
#              default 44): the same commit gives the same result on any machine.
#   MODE long: AMOUNT seconds from a random seed, going on past what it finds
#              (libFuzzer's fork mode); findings are saved under
#              $VOLSEG_FUZZ_FINDINGS/TARGET/ and the run fails if there are any.
# Either fuzzes a fresh copy of CORPUS in WORK/corpus (what libFuzzer adds
# goes there, never into the source tree) with the dictionary DICT ('' for
# none). Every run has the same limits: an input that makes the target
# allocate more than 512 MiB at once, or hold more than 1 GiB, fails it.
set -euo pipefail
mode=$1 fuzzer=$2 corpus=$3 work=$4 amount=$5 dict=$6
shift 6
name=$(basename "$fuzzer")
rm -rf "$work"
mkdir -p "$work/corpus"
cp "$corpus"/* "$work/corpus/"
args=(-rss_limit_mb=1024 -malloc_limit_mb=512 -print_final_stats=1)
if [ -n "$dict" ]; then args+=(-dict="$dict"); fi
case $mode in
  ci)
    # The same executions every time: a fixed seed and number of runs, no
    # re-reading of the corpus folder on a timer (-reload=0), and the same
    # addresses (no ASLR, where setarch may turn it off): compared pointers
    # feed libFuzzer's mutations. A generous per-input limit: a timeout must
    # mean a hang, not a slow machine.
    same_addresses=()
    if setarch "$(uname -m)" -R true 2> /dev/null; then same_addresses=(setarch "$(uname -m)" -R); fi
    # An empty working folder: a relative path in an input names nothing
    # that another target or an earlier run left there.
    mkdir -p "$work/cwd"
    cd "$work/cwd"
    exec "${same_addresses[@]}" "$fuzzer" "${args[@]}" -timeout=60 -reload=0 -seed="${VOLSEG_FUZZ_SEED:-44}" \
      -runs="$amount" -artifact_prefix="$work/" "$@" "$work/corpus"
    ;;
  long)
    findings=${VOLSEG_FUZZ_FINDINGS:?set VOLSEG_FUZZ_FINDINGS to the folder of findings}/$name
    mkdir -p "$findings"
    status=0
    "$fuzzer" "${args[@]}" -timeout=10 -seed=0 -max_total_time="$amount" -fork=1 -ignore_crashes=1 \
      -ignore_ooms=1 -ignore_timeouts=1 -artifact_prefix="$findings/" "$@" "$work/corpus" \
      > "$findings/log.txt" 2>&1 || status=$?
    tail -n 25 "$findings/log.txt"
    found=$(find "$findings" -maxdepth 1 -type f \( -name 'crash-*' -o -name 'leak-*' -o -name 'oom-*' \
      -o -name 'timeout-*' -o -name 'slow-unit-*' \) | wc -l)
    echo "$name: $found finding(s) in $findings (libFuzzer exit $status)"
    [ "$found" -eq 0 ] && [ "$status" -eq 0 ]
    ;;
  *)
    echo "run_fuzzer.sh: unknown mode $mode (ci or long)" >&2
    exit 2
    ;;
esac
