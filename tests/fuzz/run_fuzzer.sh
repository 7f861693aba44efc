#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# run_fuzzer.sh FUZZER CORPUS WORK SECONDS DICT [LIBFUZZER_OPTION...]
# Fuzzes a fresh copy of the seed corpus CORPUS in WORK/corpus for SECONDS
# (libFuzzer adds what it finds to the copy, never to the source tree), with
# the dictionary DICT ('' for none). A crash, a leak, a timeout or an
# out-of-memory input is saved under WORK/ and fails the run.
set -euo pipefail
fuzzer=$1 corpus=$2 work=$3 seconds=$4 dict=$5
shift 5
rm -rf "$work"
mkdir -p "$work/corpus"
cp "$corpus"/* "$work/corpus/"
args=(-max_total_time="$seconds" -timeout=10 -rss_limit_mb=4096 -print_final_stats=1 -artifact_prefix="$work/")
if [ -n "$dict" ]; then args+=(-dict="$dict"); fi
exec "$fuzzer" "${args[@]}" "$@" "$work/corpus"
